"""The official Python client (``mcp`` 2.3, ``OAuthClientProvider``) logs a user in through
an mcpserve ``OIDCProxy`` in front of a real OpenID provider that allows no dynamic
registration (``login_stack.py``).

The client starts with nothing: the 401 names the protected resource metadata, which names
mcpserve as the authorization server; the client registers there (RFC 7591), is sent through
mcpserve's consent page and the provider's login, gets mcpserve's tokens and calls tools whose
handlers see the user (the provider's ``sub``) and the provider's own token.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jwt
import pytest
from mcp import Client

from login_stack import REDIRECT, LoginUser, MemoryStorage, login_stack, python_client

pytestmark = [pytest.mark.subprocess, pytest.mark.node]


async def structured(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, result
    return result.structured_content or json.loads(result.content[0].text)  # type: ignore[union-attr]


async def test_the_python_client_logs_in_through_the_consent_page_and_calls_tools_as_the_user(
    tmp_path: Path,
) -> None:
    async with login_stack(tmp_path) as stack:
        user = LoginUser("alice")
        storage = MemoryStorage()
        async with python_client(stack, user, storage) as client:
            me = await structured(client, "whoami")
            userinfo = await structured(client, "provider_userinfo")
            added = await structured(client, "add_note", {"text": "hello"})

        # One login: registered at mcpserve, consent shown once, naming the client.
        assert storage.client_info is not None
        assert len(user.authorization_urls) == 1
        assert user.authorization_urls[0].startswith(f"{stack.base_url}/authorize?")
        consent = user.consent_pages()
        assert len(consent) == 1
        assert "Notes for Python" in consent[0]
        assert REDIRECT in consent[0]
        assert ">Allow</button>" in consent[0]
        assert ">Deny</button>" in consent[0]
        assert user.callbacks[0]["iss"] == stack.base_url

        # The principal is the provider's subject; the token is mcpserve's, for this resource.
        assert me["principal"] == "alice"
        assert me["iss"] == stack.base_url
        assert me["aud"] == stack.url
        assert me["client_id"] == storage.client_info.client_id
        assert me["scopes"] == ["notes:read", "notes:write"]
        assert added == {"author": "alice", "count": 1}
        # The handler called the provider as the user, with the provider's token.
        assert userinfo == {"status": 200, "sub": "alice"}

        assert storage.tokens is not None
        access = storage.tokens.access_token
        header = jwt.get_unverified_header(access)
        assert header["alg"] == "EdDSA"
        assert header["typ"] == "at+jwt"
        assert storage.tokens.refresh_token
        # The provider's token never reached the client.
        claims = jwt.decode(access, options={"verify_signature": False})
        assert set(claims) >= {"iss", "sub", "aud", "exp", "iat", "jti", "client_id", "scope"}
        assert all("upstream" not in str(value) for value in claims.values())


def token_requests(log: str, endpoint: str) -> int:
    """How many token requests the server's HTTP client logged to ``endpoint``."""
    return log.count(f'HTTP Request: POST {endpoint} "HTTP/1.1 200 OK"')


async def test_the_python_client_refreshes_an_expired_token_without_a_second_login(
    tmp_path: Path,
) -> None:
    async with login_stack(tmp_path, env={"MCPSERVE_TEST_TOKEN_TTL": "2"}) as stack:
        user = LoginUser("alice")
        storage = MemoryStorage()
        async with python_client(stack, user, storage) as client:
            first = await structured(client, "whoami")
            await asyncio.sleep(3)  # past the access token's life
            second = await structured(client, "whoami")

    assert first["principal"] == second["principal"] == "alice"
    assert len(user.authorization_urls) == 1  # one login
    assert len(storage.saved) == 2  # its tokens, then the refreshed ones
    old, new = storage.saved
    assert new.access_token != old.access_token
    assert new.refresh_token != old.refresh_token  # rotated
    assert new.expires_in == 2


async def test_a_handler_gets_the_provider_token_renewed_once_when_it_expires(
    tmp_path: Path,
) -> None:
    # The provider's tokens live 40 s: fresh for the first 10 (renewed 30 s before the end).
    async with login_stack(tmp_path, access_token_ttl=40) as stack:
        user = LoginUser("alice")
        async with python_client(stack, user, MemoryStorage()) as client:
            assert await structured(client, "provider_userinfo") == {"status": 200, "sub": "alice"}
            token_endpoint = stack.provider.token_endpoint
            log = stack.server.log.read_text()
            assert token_requests(log, token_endpoint) == 1  # the login's code exchange
            await asyncio.sleep(11)
            answers = await asyncio.gather(
                *(structured(client, "provider_userinfo") for _ in range(5))
            )
            assert answers == [{"status": 200, "sub": "alice"}] * 5
            log = stack.server.log.read_text()
            assert token_requests(log, token_endpoint) == 2  # one renewal for five calls
