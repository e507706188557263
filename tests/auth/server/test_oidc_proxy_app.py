"""``OIDCProxy`` in an HTTP app, in process: what it publishes (the protected resource
metadata naming it, its RFC 8414 metadata, its keys), how its endpoints answer requests they
cannot read, and the one-line errors of a misconfiguration. No identity provider is needed:
nothing here reaches one.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Any

import jwt
import pytest

from mcpserve import Server
from mcpserve.auth import JWTVerifier, OIDCProxy
from mcpserve.auth.server.signing import SigningKeys, TokenIssuer
from redis_server import REDIS_PARAM
from wire_helpers import asgi_client, free_port

BASE = "https://mcp.example.com"
RING = [("k1", os.urandom(32))]


def proxy(**options: object) -> OIDCProxy:
    return OIDCProxy(
        issuer="https://accounts.example.com",
        client_id="registered",
        client_secret="secret",
        base_url=BASE,
        signing_keys=RING,
        **options,  # type: ignore[arg-type]
    )


def notes_server(**options: object) -> Server:
    return notes_server_of(proxy(**options))


def notes_server_of(auth: OIDCProxy) -> Server:
    server = Server("notes", auth=auth)

    @server.tool(scopes=["notes:read"])
    def list_notes() -> list[str]:
        return []

    @server.tool(scopes=["notes:write"])
    def add_note(text: str) -> str:
        return text

    return server


async def test_the_resource_metadata_names_the_server_itself_as_its_authorization_server() -> None:
    app = notes_server().http_app()
    async with asgi_client(app, host="mcp.example.com") as http:
        document = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        refused = await http.post("/mcp", json={})
    assert document == {
        "resource": f"{BASE}/mcp",
        "authorization_servers": [BASE],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["notes:read", "notes:write"],
    }
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"' in challenge


async def test_the_authorization_server_metadata_lists_its_endpoints_and_what_it_supports() -> None:
    app = notes_server().http_app()
    async with asgi_client(app, host="mcp.example.com") as http:
        answer = await http.get("/.well-known/oauth-authorization-server")
        openid = await http.get("/.well-known/openid-configuration")
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "no-store"
    assert (
        answer.json()
        == openid.json()
        == {
            "issuer": BASE,
            "authorization_endpoint": f"{BASE}/authorize",
            "token_endpoint": f"{BASE}/token",
            "registration_endpoint": f"{BASE}/register",
            "revocation_endpoint": f"{BASE}/revoke",
            "jwks_uri": f"{BASE}/.well-known/jwks.json",
            "scopes_supported": ["notes:read", "notes:write"],
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "revocation_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
    )


async def test_its_tokens_verify_against_its_published_keys_and_open_the_endpoint() -> None:
    server = notes_server()
    app = server.http_app()
    issuer = TokenIssuer(SigningKeys(RING), issuer=BASE, audience=f"{BASE}/mcp")
    token = issuer.access_token("alice", ["notes:read"], "client-1", extra={"sid": "login-1"})
    async with asgi_client(app, host="mcp.example.com") as http:
        keys = (await http.get("/.well-known/jwks.json")).json()
        verified = await JWTVerifier(BASE, f"{BASE}/mcp", jwks=keys).verify(token)
        listed = await http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "list_notes",
                    "arguments": {},
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                },
            },
            headers={
                "authorization": f"Bearer {token}",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "list_notes",
            },
        )
    assert [key["kid"] for key in keys["keys"]] == ["k1.sig"]
    assert verified.principal == "alice"
    assert verified.claims["sid"] == "login-1"
    assert listed.status_code == 200, listed.text
    assert listed.json()["result"]["content"] == [{"type": "text", "text": "[]"}]
    # Another ring's key signs a token this server refuses.
    forged = TokenIssuer(
        SigningKeys([("k1", os.urandom(32))]), issuer=BASE, audience=f"{BASE}/mcp"
    ).access_token("mallory", ["notes:read"], "client-1")
    assert jwt.get_unverified_header(forged)["kid"] == "k1.sig"
    async with asgi_client(app, host="mcp.example.com") as http:
        refused = await http.post("/mcp", json={}, headers={"authorization": f"Bearer {forged}"})
    assert refused.status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/token", "POST"),
        ("GET", "/register", "POST"),
        ("GET", "/revoke", "POST"),
        ("GET", "/auth/consent", "POST"),
        ("POST", "/authorize", "GET"),
        ("POST", "/auth/callback", "GET"),
        ("POST", "/.well-known/oauth-authorization-server", "GET"),
    ],
)
async def test_each_endpoint_answers_a_wrong_method_with_405(
    method: str, path: str, allowed: str
) -> None:
    async with asgi_client(notes_server().http_app(), host="mcp.example.com") as http:
        response = await http.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed


async def test_the_token_endpoint_refuses_what_it_cannot_read_with_invalid_request() -> None:
    async with asgi_client(notes_server().http_app(), host="mcp.example.com") as http:
        as_json = await http.post("/token", json={"grant_type": "authorization_code"})
        repeated = await http.post(
            "/token",
            content=b"grant_type=refresh_token&grant_type=authorization_code",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        not_utf8 = await http.post(
            "/token",
            content=b"grant_type=\xff\xfe",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        huge = await http.post(
            "/token",
            content=b"x=" + b"a" * 70_000,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        unknown_client = await http.post(
            "/token", data={"grant_type": "authorization_code", "client_id": "nobody"}
        )
        bad_basic = await http.post(
            "/token",
            data={"grant_type": "authorization_code"},
            headers={"authorization": "Basic " + base64.b64encode(b"no-colon").decode()},
        )
    for response in (as_json, repeated, not_utf8, huge):
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "invalid_request"
    assert "more than once" in repeated.json()["error_description"]
    assert unknown_client.status_code == 401
    assert unknown_client.json()["error"] == "invalid_client"
    assert bad_basic.status_code == 401
    assert bad_basic.headers["www-authenticate"] == 'Basic realm="token"'


async def test_an_authorization_request_for_an_unknown_client_is_a_page_not_a_redirect() -> None:
    async with asgi_client(notes_server().http_app(), host="mcp.example.com") as http:
        response = await http.get(
            "/authorize?response_type=code&client_id=nobody"
            "&redirect_uri=https%3A%2F%2Fattacker.example%2Fcb"
        )
        repeated = await http.get("/authorize?client_id=a&client_id=b")
    assert response.status_code == 400
    assert "location" not in response.headers
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert "no client is registered" in response.text
    assert repeated.status_code == 400
    assert "more than once" in repeated.text


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"base_url": "mcp.example.com"}, "is the URL clients reach this server at"),
        ({"client_secret": ""}, "with the redirect URI https://mcp.example.com/auth/callback"),
        ({"token_ttl": 0}, "OIDCProxy(token_ttl=...) must be a positive number of seconds"),
    ],
)
def test_a_misconfiguration_is_one_line_naming_the_fix(
    options: dict[str, object], message: str
) -> None:
    arguments: dict[str, object] = {
        "issuer": "https://accounts.example.com",
        "client_id": "registered",
        "client_secret": "secret",
        "base_url": BASE,
        **options,
    }
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        OIDCProxy(**arguments)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)


def test_the_presets_know_their_providers() -> None:
    from mcpserve.auth.providers import Entra, GitHub, Google

    github = GitHub(client_id="Iv1.x", client_secret="s", base_url=BASE)
    assert github.upstream.identity_source == "github"
    assert github.upstream.scopes == ["read:user"]
    assert github.callback_url == f"{BASE}/auth/callback"
    google = Google(client_id="g", client_secret="s", base_url=BASE)
    assert google.upstream.issuer == "https://accounts.google.com"
    assert google.upstream.authorize_params == {"access_type": "offline", "prompt": "consent"}
    entra = Entra(client_id="e", client_secret="s", base_url=BASE, tenant="contoso.com")
    assert entra.upstream.issuer == "https://login.microsoftonline.com/contoso.com/v2.0"
    with pytest.raises(ValueError, match="directory's id or domain"):
        Entra(client_id="e", client_secret="s", base_url=BASE, tenant="")


async def authorize_page(http: Any, client_id: str) -> Any:
    return await http.get(
        "/authorize",
        params={
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": "http://127.0.0.1:49152/callback",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
            "state": "s",
        },
    )


@pytest.mark.parametrize("kind", ["sqlite", REDIS_PARAM])
async def test_two_servers_on_one_store_finish_each_others_steps(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        store = f"sqlite:///{tmp_path / 'auth.db'}"
    else:
        redis = request.getfixturevalue("redis")
        store = redis.url
    proxies = [proxy(store=store), proxy(store=store)]
    first, second = (notes_server_of(each) for each in proxies)
    async with (
        asgi_client(first.http_app(), host="mcp.example.com") as one,
        asgi_client(second.http_app(), host="mcp.example.com") as other,
    ):
        registered = await one.post(
            "/register", json={"redirect_uris": ["http://127.0.0.1:49152/callback"]}
        )
        client_id = registered.json()["client_id"]
        elsewhere = await authorize_page(other, client_id)
        unknown = await authorize_page(other, "never-registered")
    for each in proxies:  # no lifespan ran in process: close what the app would have
        await each.aclose()
    assert registered.status_code == 201
    assert elsewhere.status_code == 200
    assert 'value="allow">Allow</button>' in elsewhere.text
    assert unknown.status_code == 400


async def test_a_store_that_cannot_be_reached_answers_503_and_logs_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = f"redis://127.0.0.1:{free_port()}/0"  # nobody listens
    unreachable = proxy(store=store)
    async with asgi_client(notes_server_of(unreachable).http_app(), host="mcp.example.com") as http:
        registered = await http.post("/register", json={"redirect_uris": ["https://a.example/cb"]})
        authorizing = await authorize_page(http, "some-client")
        token = await http.post("/token", data={"grant_type": "refresh_token", "client_id": "x"})
    await unreachable.aclose()
    for response in (registered, authorizing, token):
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert response.json()["error"] == "temporarily_unavailable"
    assert "its records cannot be reached" in caplog.text
    assert "Traceback" not in caplog.text
