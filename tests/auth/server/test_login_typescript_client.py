"""The official TypeScript client (``@modelcontextprotocol/client``, ``tests/support/ts/
driver.mjs``) logs a user in through an mcpserve ``OIDCProxy`` in front of a real OpenID
provider that allows no dynamic registration (``login_stack.py``).

Its interactive ``OAuthClientProvider`` registers with mcpserve, records the authorization
URL (the connect fails with ``UnauthorizedError``, as the SDK does before a login), the test's
browser goes through mcpserve's consent page and the provider's login, and
``transport.finishAuth`` hands the code back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from login_stack import REDIRECT, LoginUser, login_stack, query_of
from ts_client import ts_client

pytestmark = [pytest.mark.subprocess, pytest.mark.node]


async def test_the_typescript_client_registers_logs_in_through_consent_and_calls_as_the_user(
    tmp_path: Path, ts_install: tuple[str, Path]
) -> None:
    async with login_stack(tmp_path) as stack, asyncio.timeout(90), ts_client(*ts_install) as ts:
        oauth = {"kind": "authorization_code", "redirectUrl": REDIRECT, "clientName": "Notes TS"}
        refused = await ts.ask("connectOAuth", url=stack.url, mode="auto", oauth=oauth)
        before = await ts.send("oauth")
        user = LoginUser("carol")
        answer = await user.follow(before["authorizationUrls"][-1])
        callback = f"{REDIRECT}?code={answer['code']}&state={answer.get('state', '')}"
        callback += f"&iss={stack.base_url}"
        connected = await ts.send("finishAuth", callbackUrl=callback)
        me = await ts.send("call", name="whoami", arguments={})
        userinfo = await ts.send("call", name="provider_userinfo", arguments={})
        state = await ts.send("oauth")
        await ts.send("close")

    assert refused["ok"] is False
    assert refused["error"]["name"] == "UnauthorizedError"
    url = before["authorizationUrls"][-1]
    assert url.startswith(f"{stack.base_url}/authorize?")
    sent = query_of(url)
    assert sent["code_challenge_method"] == "S256"
    assert sent["resource"] == stack.url
    assert sent["client_id"] == state["clientId"]
    consent = user.consent_pages()
    assert len(consent) == 1
    assert "Notes TS" in consent[0]
    assert connected["era"] == "modern"
    assert me["structured"] == {
        "principal": "carol",
        "scopes": ["notes:read", "notes:write"],
        "client_id": state["clientId"],
        "aud": stack.url,
        "iss": stack.base_url,
    }
    assert userinfo["structured"] == {"status": 200, "sub": "carol"}
    urls = [exchange["url"] for exchange in state["exchanges"]]
    assert f"{stack.base_url}/register" in urls
    assert f"{stack.base_url}/token" in urls
    assert not any(stack.provider.issuer in url for url in urls)  # the client never sees it
