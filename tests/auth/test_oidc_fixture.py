"""The oidc-provider fixture itself, against the real server (no mcpserve involved).

Each test gets its own server (about half a second to start): the tokens, sessions and
registrations of one test never meet another's. The helpers of ``oidc_server`` are checked
with what a resource server would do with their tokens: verify a JWT with PyJWT against the
published keys, or introspect an opaque token.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import jwt
import pytest

from oidc_server import AuthorizationServer, authorization_server, drive_login, pkce_pair

pytestmark = pytest.mark.node

NOTES = "http://127.0.0.1:8765/mcp"
OTHER = "http://127.0.0.1:8766/mcp"
SCOPES = ["notes:read", "notes:write", "admin"]


@pytest.fixture
async def server() -> AsyncIterator[AuthorizationServer]:
    async with authorization_server([NOTES, OTHER], SCOPES) as running:
        yield running


async def verified(server: AuthorizationServer, token: str, audience: str) -> dict[str, Any]:
    """The claims of a JWT access token, its signature checked against the server's JWKS."""
    keys = jwt.PyJWKSet.from_dict(await server.jwks())
    header = jwt.get_unverified_header(token)
    assert header["typ"] == "at+jwt"
    key = next(key for key in keys.keys if key.key_id == header["kid"])
    claims: dict[str, Any] = jwt.decode(
        token, key, algorithms=["RS256"], audience=audience, issuer=server.issuer
    )
    return claims


async def test_both_discovery_documents_name_the_issuer_and_its_jwks_uri(
    server: AuthorizationServer,
) -> None:
    async with httpx2.AsyncClient(trust_env=False) as http:
        openid = (await http.get(f"{server.issuer}/.well-known/openid-configuration")).json()
        oauth = (await http.get(f"{server.issuer}/.well-known/oauth-authorization-server")).json()
        keys = (await http.get(openid["jwks_uri"])).json()
    assert oauth == openid
    assert openid["issuer"] == server.issuer
    assert openid["jwks_uri"] == server.jwks_uri
    assert server.jwks_uri.startswith(server.issuer + "/")
    assert [key["alg"] for key in keys["keys"]] == ["RS256"]
    assert openid["code_challenge_methods_supported"] == ["S256"]
    assert openid["response_types_supported"] == ["code"]
    assert set(SCOPES) <= set(openid["scopes_supported"])
    assert openid["introspection_endpoint"] == server.introspection_endpoint


async def test_a_client_credentials_jwt_verifies_for_its_resource_with_the_asked_scopes(
    server: AuthorizationServer,
) -> None:
    token = await server.client_credentials_token(NOTES, ["notes:read", "admin", "unknown"])
    claims = await verified(server, token, NOTES)
    assert claims["aud"] == NOTES
    assert claims["iss"] == server.issuer
    assert claims["scope"] == "notes:read admin"  # space-delimited; unknown scopes dropped
    assert claims["sub"] == claims["client_id"] == server.machine.client_id
    assert claims["exp"] - claims["iat"] == 600
    with pytest.raises(jwt.InvalidAudienceError):
        await verified(server, token, OTHER)


async def test_a_token_for_another_resource_carries_that_audience_and_its_own_ttl(
    server: AuthorizationServer,
) -> None:
    token = await server.client_credentials_token(OTHER, ["notes:write"], ttl=5)
    claims = await verified(server, token, OTHER)
    assert claims["aud"] == OTHER
    assert claims["exp"] - claims["iat"] == 5


async def test_a_resource_the_server_does_not_serve_is_refused_as_invalid_target(
    server: AuthorizationServer,
) -> None:
    with pytest.raises(AssertionError, match="invalid_target"):
        await server.client_credentials_token("http://127.0.0.1:9/elsewhere", ["notes:read"])


async def test_the_authorization_code_flow_with_pkce_yields_a_jwt_for_the_logged_in_user(
    server: AuthorizationServer,
) -> None:
    token = await server.authorization_code_token(NOTES, ["notes:read"], username="bob")
    claims = await verified(server, token, NOTES)
    assert claims["sub"] == "bob"
    assert claims["aud"] == NOTES
    assert claims["client_id"] == server.public.client_id
    assert claims["scope"] == "notes:read"


async def test_drive_login_returns_the_redirect_with_code_and_state_for_a_registered_client(
    server: AuthorizationServer,
) -> None:
    # As an official MCP client does: register itself, then build the authorization URL.
    redirect_uri = "http://localhost:47123/callback"
    registered = await server.register_client(
        {
            "application_type": "native",
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": "notes:read notes:write",
        }
    )
    assert registered["client_id"]
    verifier, challenge = pkce_pair()
    url = server.authorization_url(
        NOTES,
        ["notes:write"],
        code_challenge=challenge,
        state="the-state",
        redirect_uri=redirect_uri,
        client_id=registered["client_id"],
    )
    final = await drive_login(url, redirect_uri, username="carol")
    assert final.startswith(redirect_uri + "?")
    answer = parse_qs(urlsplit(final).query)
    assert answer["state"] == ["the-state"]
    grant = await server.token(
        {
            "grant_type": "authorization_code",
            "client_id": registered["client_id"],
            "code": answer["code"][0],
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": NOTES,
        }
    )
    assert grant["refresh_token"]
    claims = await verified(server, grant["access_token"], NOTES)
    assert (claims["sub"], claims["scope"]) == ("carol", "notes:write")


async def test_an_opaque_token_introspects_active_with_its_scope_until_revoked(
    server: AuthorizationServer,
) -> None:
    token = await server.opaque_token(["notes:read", "notes:write"])
    assert token.count(".") == 0  # not a JWT
    found = await server.introspect(token)
    assert found["active"] is True
    assert found["scope"] == "notes:read notes:write"
    assert found["aud"] == NOTES
    assert found["client_id"] == server.opaque.client_id
    await server.revoke(token)
    assert await server.introspect(token) == {"active": False}


async def test_an_opaque_token_with_a_short_ttl_introspects_inactive_once_expired(
    server: AuthorizationServer,
) -> None:
    token = await server.opaque_token(["admin"], ttl=1)
    assert (await server.introspect(token))["active"] is True
    await asyncio.sleep(2.1)
    assert await server.introspect(token) == {"active": False}
