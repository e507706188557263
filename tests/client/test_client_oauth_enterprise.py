"""Enterprise-managed authorization in the OAuth client: the two exchanges on the wire.

An enterprise identity provider, the MCP server's authorization server and the MCP server
behind a guard (``oauth_stand.py``), each on a port of 127.0.0.1 of its own. The client
holds the user's ID token; the tests assert what it sends the IdP (an RFC 8693 token
exchange for an ID-JAG, for the authorization server and the MCP server), what it sends
the authorization server (the ID-JAG with the JWT-bearer grant, as the registered
client) and that only the access token reaches the MCP server.
"""

from __future__ import annotations

import base64
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from starlette.responses import JSONResponse, Response

from mcpserve import Client, OAuthError
from mcpserve.client.oauth import EnterpriseAuthorization
from oauth_stand import GuardedEndpoint, Seen, TokenServer, oauth_error, serving

ID_TOKEN = "id-token-of-alice"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class IdentityProvider:
    """Token exchange answers: ID-JAGs ``id-jag-1``, ``id-jag-2``... (or ``refuse``)."""

    def __init__(self, *, refuse: str | None = None, issued_type: str = ID_JAG) -> None:
        self.refuse = refuse
        self.issued_type = issued_type
        self.issued = 0

    def __call__(self, seen: Seen) -> Response:
        if self.refuse is not None:
            return oauth_error(self.refuse)
        self.issued += 1
        return JSONResponse({"access_token": f"id-jag-{self.issued}", "token_type": "N_A",
                             "issued_token_type": self.issued_type, "expires_in": 300})  # fmt: skip


def grant_access(*, expires_in: int = 3600) -> Any:
    """The authorization server: an access token ``mcp-N`` for each JWT-bearer grant."""
    issued = 0

    def answer(seen: Seen) -> Response:
        nonlocal issued
        issued += 1
        return JSONResponse({"access_token": f"mcp-{issued}", "token_type": "Bearer",
                             "expires_in": expires_in})  # fmt: skip

    return answer


def bearer_guard(seen: Seen) -> Response | None:
    if seen.headers.get("authorization", "").startswith("Bearer mcp-"):
        return None
    return JSONResponse({}, 401, {"WWW-Authenticate": "Bearer"})


def enterprise(idp: TokenServer, **options: Any) -> EnterpriseAuthorization:
    settings: dict[str, Any] = {
        "idp_token_endpoint": idp.token_endpoint,
        "idp_client_id": "desktop-at-idp",
        "client_id": "desktop",
        "client_secret": "s3cret",
        **options,
    }
    return EnterpriseAuthorization(settings.pop("id_token", ID_TOKEN), **settings)


@contextlib.asynccontextmanager
async def connected(endpoint: GuardedEndpoint, auth: Any) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(trust_env=False) as pool,
        Client.http(endpoint.mcp, http_client=pool, auth=auth, timeout=10) as mcp,
    ):
        yield mcp


async def test_the_id_token_becomes_an_id_jag_and_the_id_jag_an_access_token() -> None:
    idp = TokenServer(IdentityProvider())
    issuer = TokenServer(grant_access(), metadata={"grant_types_supported": [JWT_BEARER]})
    endpoint = GuardedEndpoint(issuer, bearer_guard)
    async with serving(idp, issuer, endpoint):
        async with connected(endpoint, enterprise(idp, scopes=["notes:read"])) as mcp:
            assert [tool["name"] for tool in await mcp.list_tools()] == ["hello"]

        (exchange,) = idp.token_requests()
        assert exchange.form == {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": issuer.url,  # the authorization server's issuer identifier
            "resource": endpoint.mcp,  # the MCP server, as its metadata names it
            "scope": "notes:read",
            "subject_token": ID_TOKEN,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "client_id": "desktop-at-idp",
        }
        assert "authorization" not in exchange.headers

        (grant,) = issuer.token_requests()
        assert grant.form == {
            "grant_type": JWT_BEARER,
            "assertion": "id-jag-1",
            "scope": "notes:read",
            "resource": endpoint.mcp,
        }
        basic = base64.b64encode(b"desktop:s3cret").decode()
        assert grant.headers["authorization"] == f"Basic {basic}"  # the client registered there

    tokens = {seen.headers.get("authorization") for seen in endpoint.mcp_requests()}
    assert tokens == {None, "Bearer mcp-1"}  # the ID token and the ID-JAG never went there


async def test_an_expired_token_is_replaced_with_the_id_token_read_again() -> None:
    id_tokens = iter(["id-token-1", "id-token-2", "id-token-3"])
    idp = TokenServer(IdentityProvider())
    issuer = TokenServer(grant_access(expires_in=1))  # expired at once (renewed 30 s early)
    endpoint = GuardedEndpoint(issuer, bearer_guard)
    async with serving(idp, issuer, endpoint):
        auth = enterprise(idp, id_token=lambda: next(id_tokens), idp_client_secret="idp-secret")
        async with connected(endpoint, auth) as mcp:
            await mcp.list_tools()
    first, second, *_ = idp.token_requests()
    assert (first.form["subject_token"], second.form["subject_token"]) == (
        "id-token-1",
        "id-token-2",
    )
    assert first.form["client_secret"] == "idp-secret"
    assert [seen.form["assertion"] for seen in issuer.token_requests()][:2] == [
        "id-jag-1",
        "id-jag-2",
    ]


async def test_a_refusal_by_the_identity_provider_is_the_error_and_nothing_reaches_the_server(
) -> None:  # fmt: skip
    idp = TokenServer(IdentityProvider(refuse="access_denied"))
    issuer = TokenServer(grant_access())
    endpoint = GuardedEndpoint(issuer, bearer_guard)
    with pytest.raises(OAuthError, match=r"ID-JAG was refused by .*/token \(400 access_denied\)"):
        async with serving(idp, issuer, endpoint), connected(endpoint, enterprise(idp)):
            pass
    assert len(idp.token_requests()) == 1  # the IdP's policy said no: not asked again
    assert issuer.token_requests() == []


async def test_an_answer_that_is_not_an_id_jag_is_refused() -> None:
    idp = TokenServer(IdentityProvider(issued_type="urn:ietf:params:oauth:token-type:access_token"))
    issuer = TokenServer(grant_access())
    endpoint = GuardedEndpoint(issuer, bearer_guard)
    with pytest.raises(OAuthError, match="answered no ID-JAG"):
        async with serving(idp, issuer, endpoint), connected(endpoint, enterprise(idp)):
            pass
    assert issuer.token_requests() == []


def test_misconfigurations_are_refused_at_construction() -> None:
    endpoint = "https://idp.example/token"
    with pytest.raises(ValueError, match="needs the user's ID token"):
        EnterpriseAuthorization("", idp_token_endpoint=endpoint, idp_client_id="c")
    with pytest.raises(ValueError, match="needs idp_client_id="):
        EnterpriseAuthorization(ID_TOKEN, idp_token_endpoint=endpoint, idp_client_id="")
    with pytest.raises(
        ValueError,
        match=re.escape("idp_token_endpoint 'http://idp.example/token' is not an https URL"),
    ):
        EnterpriseAuthorization(ID_TOKEN, idp_token_endpoint="http://idp.example/token",
                                idp_client_id="c")  # fmt: skip
    auth = EnterpriseAuthorization(ID_TOKEN, idp_token_endpoint=endpoint, idp_client_id="c",
                                   client_id="desktop", client_secret="s3cret")  # fmt: skip
    assert ID_TOKEN not in repr(auth)
    assert "s3cret" not in repr(auth)
