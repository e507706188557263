"""The OAuth client against broken and hostile servers, and its parts on their own.

A fake deployment behind ``httpx2.MockTransport`` (no sockets): an MCP endpoint at
``https://mcp.example/mcp`` that answers 401 until it sees the token its fake authorization
server ``https://auth.example`` issued, and whatever metadata each test sets. Each test
breaks one thing (an issuer that differs, a resource for another server, garbage, 500s,
no PKCE, a refused grant, a redirect that does not check out) and asserts the error says
what is wrong and that nothing went where it should not (no registration, no token
request, no authorization). The real flows, against a real authorization server, are in
``test_client_oauth_oidc.py``; the conformance suite's scenarios run in ``scripts/conformance``.
"""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx2
import pytest

from mcpserve import Client, ClientCredentials, JWTBearer, MCPError, OAuth, OAuthError, Server
from mcpserve.client.oauth import (
    ClientRegistration,
    FileTokenStorage,
    LoopbackRedirect,
    MemoryTokenStorage,
    Tokens,
)
from mcpserve.client.oauth.challenge import bearer_challenge, parse_challenges
from mcpserve.client.oauth.metadata import resource_covers
from mcpserve.client.oauth.redirect import authorization_code

MCP = "https://mcp.example/mcp"
AS = "https://auth.example"
PRM = "https://mcp.example/.well-known/oauth-protected-resource/mcp"
REDIRECT = "http://127.0.0.1:8765/callback"
GOOD = "the-good-token"

Handler = Callable[[httpx2.Request], httpx2.Response]


def json_response(document: Any, status: int = 200) -> httpx2.Response:
    return httpx2.Response(status, json=document)


def issuer_metadata(**changes: Any) -> dict[str, Any]:
    document = {
        "issuer": AS,
        "authorization_endpoint": f"{AS}/authorize",
        "token_endpoint": f"{AS}/token",
        "registration_endpoint": f"{AS}/register",
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
    }
    document.update(changes)
    return {key: value for key, value in document.items() if value is not None}


@dataclass
class Fake:
    """The fake deployment: routes by ``METHOD url`` (no query), every request kept."""

    routes: dict[str, Handler | httpx2.Response] = field(default_factory=dict)
    seen: list[httpx2.Request] = field(default_factory=list)
    challenge: str = f'Bearer error="invalid_token", resource_metadata="{PRM}", scope="read"'
    authorizations: list[str] = field(default_factory=list)
    #: What the fake authorization server adds to its redirect (``iss``, ``error``...).
    redirect_extra: dict[str, str] = field(default_factory=dict)
    redirect_state: str | None = None

    def __post_init__(self) -> None:
        metadata = {"resource": MCP, "authorization_servers": [AS], "scopes_supported": ["read"]}
        self.routes.setdefault(f"GET {PRM}", json_response(metadata))
        self.routes.setdefault(f"GET {AS}/.well-known/oauth-authorization-server",
                               json_response(issuer_metadata()))  # fmt: skip
        self.routes.setdefault(f"POST {AS}/register", json_response({"client_id": "c1"}, 201))
        self.routes.setdefault(f"POST {AS}/token", json_response(
            {"access_token": GOOD, "token_type": "Bearer", "expires_in": 3600}))  # fmt: skip
        self.routes.setdefault(f"POST {MCP}", self.mcp)

    def mcp(self, request: httpx2.Request) -> httpx2.Response:
        if request.headers.get("authorization") != f"Bearer {GOOD}":
            return httpx2.Response(401, headers={"WWW-Authenticate": self.challenge})
        message = json.loads(request.content)
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake", "version": "1"}}  # fmt: skip
        return json_response({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(request)
        url = str(request.url.copy_with(query=None))
        route = self.routes.get(f"{request.method} {url}")
        if route is None:
            return httpx2.Response(404, text="not found")
        return route(request) if callable(route) else route

    async def authorize(self, url: str) -> str:
        """The fake user agent: consents at once, and comes back the way the server says."""
        self.authorizations.append(url)
        asked = dict(parse_qsl(urlsplit(url).query))
        back = {"code": "the-code", "state": self.redirect_state or asked["state"], "iss": AS}
        back.update(self.redirect_extra)
        return f"{asked['redirect_uri']}?{urlencode({k: v for k, v in back.items() if v})}"

    def oauth(self, **options: Any) -> OAuth:
        return OAuth(redirect_uri=REDIRECT, on_authorize=self.authorize, **options)

    def client(self, auth: Any) -> Client:
        pool = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        return Client.http(MCP, http_client=pool, auth=auth, timeout=10)

    def requests_to(self, prefix: str) -> list[str]:
        return [f"{r.method} {r.url.copy_with(query=None)}" for r in self.seen
                if str(r.url).startswith(prefix)]  # fmt: skip


async def connect_fails(fake: Fake, auth: Any, match: str) -> OAuthError:
    with pytest.raises(OAuthError, match=match) as failure:
        async with fake.client(auth):
            pass
    return failure.value


# --------------------------------------------------------------------------- a working flow


async def test_the_fake_deployment_authorizes_and_serves() -> None:
    fake = Fake()
    async with fake.client(fake.oauth()) as client:
        assert client.server_info == {"name": "fake", "version": "1"}
    assert fake.requests_to(AS) == [
        f"GET {AS}/.well-known/oauth-authorization-server",
        f"POST {AS}/register",
        f"POST {AS}/token",
    ]


# --------------------------------------------------------------------------- hostile metadata


async def test_metadata_naming_another_issuer_is_not_used() -> None:
    forged = json_response(issuer_metadata(issuer="https://attacker.example"))
    fake = Fake(routes={f"GET {AS}/.well-known/oauth-authorization-server": forged,
                        f"GET {AS}/.well-known/openid-configuration": forged})  # fmt: skip
    error = await connect_fails(fake, fake.oauth(), "names the issuer 'https://attacker.example'")
    assert "openid-configuration names the issuer" in str(error)
    assert fake.requests_to(AS) == [
        f"GET {AS}/.well-known/oauth-authorization-server",
        f"GET {AS}/.well-known/openid-configuration",
    ]
    assert fake.authorizations == []


async def test_resource_metadata_for_another_server_is_refused_before_any_authorization() -> None:
    evil = json_response({"resource": "https://evil.example/mcp", "authorization_servers": [AS]})
    fake = Fake(routes={f"GET {PRM}": evil})
    await connect_fails(fake, fake.oauth(), "is for 'https://evil.example/mcp', not for")
    assert fake.requests_to(AS) == []


async def test_garbage_and_missing_resource_metadata_say_what_each_address_answered() -> None:
    fake = Fake(
        challenge='Bearer resource_metadata="https://mcp.example/custom.json"',
        routes={
            "GET https://mcp.example/custom.json": httpx2.Response(200, text="<html>oops"),
            f"GET {PRM}": httpx2.Response(500, text="boom"),
        },
    )
    error = await connect_fails(fake, fake.oauth(), "No protected resource metadata")
    message = str(error)
    assert "custom.json did not answer with JSON" in message
    assert "oauth-protected-resource/mcp answered 500" in message
    assert "oauth-protected-resource answered 404" in message
    assert fake.requests_to(AS) == []


async def test_metadata_without_authorization_servers_is_not_metadata() -> None:
    fake = Fake(routes={f"GET {PRM}": json_response({"resource": MCP})})
    await connect_fails(fake, fake.oauth(), "is not protected resource metadata")


async def test_an_authorization_server_answering_500_is_named_with_each_address() -> None:
    fake = Fake(routes={f"GET {AS}/.well-known/oauth-authorization-server": httpx2.Response(500)})
    error = await connect_fails(fake, fake.oauth(), "No usable metadata")
    assert "oauth-authorization-server answered 500" in str(error)
    assert "openid-configuration answered 404" in str(error)


async def test_an_authorization_server_without_pkce_s256_is_refused_before_the_user_is_asked(
) -> None:  # fmt: skip
    plain = json_response(issuer_metadata(code_challenge_methods_supported=["plain"]))
    fake = Fake(routes={f"GET {AS}/.well-known/oauth-authorization-server": plain})
    await connect_fails(fake, fake.oauth(), "does not list PKCE S256")
    assert fake.authorizations == []
    assert f"POST {AS}/register" not in fake.requests_to(AS)


async def test_an_endpoint_over_plain_http_is_refused() -> None:
    insecure = json_response(issuer_metadata(token_endpoint="http://auth.example/token"))
    fake = Fake(routes={f"GET {AS}/.well-known/oauth-authorization-server": insecure})
    await connect_fails(fake, fake.oauth(), "token_endpoint 'http://auth.example/token' is not")


async def test_a_refused_grant_raises_the_servers_error_code_and_description() -> None:
    refusal = json_response({"error": "invalid_grant", "error_description": "code used"}, 400)
    fake = Fake(routes={f"POST {AS}/token": refusal})
    error = await connect_fails(fake, fake.oauth(), r"refused .*\(400 invalid_grant\): code used")
    assert error.error == "invalid_grant"


async def test_a_token_endpoint_answering_html_says_so_without_the_body() -> None:
    fake = Fake(routes={f"POST {AS}/token": httpx2.Response(502, text="<h1>Bad gateway</h1>")})
    error = await connect_fails(fake, fake.oauth(), "answered HTTP 502 without an OAuth answer")
    assert "Bad gateway" not in str(error)


async def test_a_token_of_another_type_is_refused() -> None:
    dpop = json_response({"access_token": "x", "token_type": "DPoP"})
    fake = Fake(routes={f"POST {AS}/token": dpop})
    await connect_fails(fake, fake.oauth(), "'DPoP' token; this client uses Bearer tokens only")


async def test_a_registration_refusal_says_why() -> None:
    refusal = json_response({"error": "invalid_redirect_uri", "error_description": "no"}, 400)
    fake = Fake(routes={f"POST {AS}/register": refusal})
    error = await connect_fails(fake, fake.oauth(), "Registering the client was refused")
    assert error.error == "invalid_redirect_uri"


# --------------------------------------------------------------------------- the redirect


async def test_a_redirect_with_another_state_is_refused_and_the_code_not_exchanged() -> None:
    fake = Fake(redirect_state="forged")
    await connect_fails(fake, fake.oauth(), "state does not match")
    assert f"POST {AS}/token" not in fake.requests_to(AS)


async def test_a_redirect_from_another_issuer_is_refused_without_reading_its_error() -> None:
    fake = Fake(redirect_extra={"iss": "https://evil.example", "error": "access_denied",
                                "error_description": "click here", "code": ""})  # fmt: skip
    error = await connect_fails(fake, fake.oauth(), "came from the issuer 'https://evil.example'")
    assert "click here" not in str(error)
    assert error.error is None


async def test_a_refusal_by_the_user_is_the_servers_error() -> None:
    fake = Fake(redirect_extra={"error": "access_denied", "error_description": "no", "code": ""})
    error = await connect_fails(fake, fake.oauth(), r"refused \(access_denied\): no")
    assert error.error == "access_denied"


def test_the_iss_rules_of_the_authorization_response() -> None:
    ok = "http://127.0.0.1/cb?code=c&state=s"
    assert authorization_code(ok, state="s", issuer=AS, iss_required=False) == "c"
    assert authorization_code(f"{ok}&iss={AS}", state="s", issuer=AS, iss_required=True) == "c"
    with pytest.raises(OAuthError, match="has no iss"):
        authorization_code(ok, state="s", issuer=AS, iss_required=True)
    with pytest.raises(OAuthError, match=r"not 'https://auth\.example'"):  # no normalization
        authorization_code(f"{ok}&iss={AS}/", state="s", issuer=AS, iss_required=False)
    with pytest.raises(OAuthError, match=r"not 'https://auth\.example'"):
        authorization_code(f"{ok}&iss=HTTPS://auth.example", state="s", issuer=AS,
                           iss_required=False)  # fmt: skip


# --------------------------------------------------------------------------- refusals at the server


async def test_a_fresh_token_refused_again_ends_with_the_servers_description() -> None:
    fake = Fake(challenge='Bearer error="invalid_token", error_description="wrong audience"')
    fake.routes[f"POST {MCP}"] = httpx2.Response(
        401, headers={"WWW-Authenticate": fake.challenge}
    )  # always refused
    await connect_fails(fake, fake.oauth(), "refused the access token just obtained .*audience")
    assert len(fake.authorizations) == 1


async def test_step_up_stops_when_the_challenge_asks_for_scopes_already_held() -> None:
    fake = Fake()
    step_ups: list[str] = []

    def mcp(request: httpx2.Request) -> httpx2.Response:
        message = json.loads(request.content)
        if message["method"] != "tools/call" or request.headers.get("authorization") is None:
            return fake.mcp(request)
        step_ups.append(request.headers["authorization"])
        error = {"code": -32010, "message": "Insufficient scope: admin"}
        return httpx2.Response(
            403,
            headers={"WWW-Authenticate": 'Bearer error="insufficient_scope", scope="admin"'},
            json={"jsonrpc": "2.0", "id": message["id"], "error": error},
        )

    fake.routes[f"POST {MCP}"] = mcp
    async with fake.client(fake.oauth()) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("purge")
    assert refused.value.code == -32010
    scopes = [dict(parse_qsl(urlsplit(url).query)).get("scope") for url in fake.authorizations]
    assert scopes == ["read", "read admin"]  # the first login, then one step-up only
    assert len(step_ups) == 2


async def test_a_pre_registered_client_is_not_shown_to_another_authorization_server() -> None:
    fake = Fake()
    auth = fake.oauth(client_id="mine", client_secret="s3cret", issuer="https://other.example")
    await connect_fails(fake, auth, "registered at https://other.example")
    assert f"POST {AS}/token" not in fake.requests_to(AS)


async def test_a_client_id_metadata_document_replaces_registration_where_accepted() -> None:
    accepting = json_response(issuer_metadata(client_id_metadata_document_supported=True))
    fake = Fake(routes={f"GET {AS}/.well-known/oauth-authorization-server": accepting})
    document = "https://app.example/oauth/client.json"
    async with fake.client(fake.oauth(client_metadata_url=document)):
        pass
    assert dict(parse_qsl(urlsplit(fake.authorizations[0]).query))["client_id"] == document
    assert f"POST {AS}/register" not in fake.requests_to(AS)


async def test_client_secret_post_when_that_is_all_the_server_offers() -> None:
    offered = json_response(
        issuer_metadata(token_endpoint_auth_methods_supported=["client_secret_post"])
    )
    fake = Fake(routes={f"GET {AS}/.well-known/oauth-authorization-server": offered})
    async with fake.client(ClientCredentials("bot", "s3cret")):
        pass
    [token] = [r for r in fake.seen if r.url.path == "/token"]
    form = dict(parse_qsl(token.content.decode()))
    assert form == {"grant_type": "client_credentials", "scope": "read", "resource": MCP,
                    "client_id": "bot", "client_secret": "s3cret"}  # fmt: skip
    assert "authorization" not in token.headers


async def test_well_known_addresses_are_tried_in_the_specs_order() -> None:
    tenant = f"{AS}/tenant1"
    fake = Fake(
        challenge='Bearer scope="read"',
        redirect_extra={"iss": tenant},
        routes={
            f"GET {PRM}": httpx2.Response(404),
            "GET https://mcp.example/.well-known/oauth-protected-resource": json_response(
                {"resource": "https://mcp.example", "authorization_servers": [tenant]}),
            f"GET {AS}/tenant1/.well-known/openid-configuration": json_response(
                issuer_metadata(issuer=tenant, token_endpoint=f"{AS}/token")),
        },
    )  # fmt: skip
    async with fake.client(fake.oauth()):
        pass
    assert [f"{r.method} {r.url}" for r in fake.seen if r.method == "GET"] == [
        f"GET {PRM}",
        "GET https://mcp.example/.well-known/oauth-protected-resource",
        f"GET {AS}/.well-known/oauth-authorization-server/tenant1",
        f"GET {AS}/.well-known/openid-configuration/tenant1",
        f"GET {AS}/tenant1/.well-known/openid-configuration",
    ]
    asked = dict(parse_qsl(urlsplit(fake.authorizations[0]).query))
    assert asked["resource"] == "https://mcp.example"  # exactly as published: no "/" added


def test_a_resource_covers_its_own_origin_and_paths_below_it() -> None:
    assert resource_covers("https://mcp.example/mcp", MCP)
    assert resource_covers("HTTPS://MCP.example:443/mcp/", MCP)
    assert resource_covers("https://mcp.example", MCP)
    assert not resource_covers("https://mcp.example/other", MCP)
    assert not resource_covers("https://mcp.example/mc", MCP)
    assert not resource_covers("https://evil.example/mcp", MCP)
    assert not resource_covers("http://mcp.example/mcp", MCP)


# --------------------------------------------------------------------------- the parts


def test_challenges_are_read_whatever_their_quoting_and_company() -> None:
    header = (
        'Basic realm="x", Bearer error="insufficient_scope", scope="a b", '
        'resource_metadata="https://m.example/x?y=1,2", error_description="say \\"hi\\""'
    )
    assert [c.scheme for c in parse_challenges(header)] == ["basic", "bearer"]
    bearer = bearer_challenge([header])
    assert bearer.scope == ("a", "b")
    assert bearer.resource_metadata == "https://m.example/x?y=1,2"
    assert bearer.error == "insufficient_scope"
    assert bearer.error_description == 'say "hi"'
    assert bearer_challenge(["bearer Scope=read"]).scope == ("read",)  # tokens, any case
    assert bearer_challenge(["Negotiate abc123==", "Bearer"]).scope is None
    assert bearer_challenge(['Bearer ,,, =="', "garbage ==== ,"]) is not None  # never raises


async def test_the_loopback_listener_answers_the_redirect_and_nothing_else() -> None:
    async with LoopbackRedirect(open_browser=False, timeout=10).session() as session:
        uri = session.redirect_uri
        assert uri.startswith("http://127.0.0.1:")
        assert uri.endswith("/callback")
        waiting = asyncio.ensure_future(session.authorize("https://auth.example/authorize"))
        async with httpx2.AsyncClient(trust_env=False) as browser:
            origin = uri.removesuffix("/callback")
            assert (await browser.get(f"{origin}/favicon.ico")).status_code == 404
            page = await browser.get(f"{uri}?code=c&state=s")
        assert page.status_code == 200
        assert "close this window" in page.text
        assert await waiting == f"{uri}?code=c&state=s"


async def test_the_loopback_listener_gives_up_after_its_timeout() -> None:
    async with LoopbackRedirect(open_browser=False, timeout=0.01).session() as session:
        with pytest.raises(OAuthError, match="No authorization came back"):
            await session.authorize("https://auth.example/authorize")


def test_secrets_stay_out_of_reprs() -> None:
    tokens = Tokens("access-secret", refresh_token="refresh-secret", scopes=("a",))
    client = ClientRegistration("id", client_secret="client-secret")
    shown = repr(tokens) + repr(client) + repr(ClientCredentials("id", "cc-secret"))
    for secret in ("access-secret", "refresh-secret", "client-secret", "cc-secret"):
        assert secret not in shown
    assert Tokens.from_dict(tokens.to_dict()) == tokens
    assert ClientRegistration.from_dict(client.to_dict()) == client


async def test_a_token_file_is_private_and_survives_a_new_storage(tmp_path: Path) -> None:
    path = tmp_path / "state" / "tokens.json"
    await FileTokenStorage(path).save_tokens(MCP, Tokens("t", expires_at=5.0, issuer=AS))
    await FileTokenStorage(path).save_client(AS, ClientRegistration("c", redirect_uris=("x",)))
    again = FileTokenStorage(path)
    assert await again.load_tokens(MCP) == Tokens("t", expires_at=5.0, issuer=AS)
    assert await again.load_client(AS) == ClientRegistration("c", redirect_uris=("x",))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    await again.save_tokens(MCP, None)
    assert await FileTokenStorage(path).load_tokens(MCP) is None
    path.write_text("not json")
    assert await FileTokenStorage(path).load_tokens(MCP) is None


async def test_memory_storage_forgets_on_none() -> None:
    storage = MemoryTokenStorage()
    await storage.save_tokens(MCP, Tokens("t"))
    await storage.save_tokens(MCP, None)
    assert await storage.load_tokens(MCP) is None


def test_misconfigurations_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="needs the redirect_uri"):
        OAuth(on_authorize=lambda url: url)
    with pytest.raises(ValueError, match="https URL with a path"):
        OAuth(client_metadata_url="http://app.example/client.json")
    with pytest.raises(ValueError, match="not an http loopback URI"):
        OAuth(redirect_uri="https://app.example/callback")
    with pytest.raises(ValueError, match="client_id and either a client_secret or a private_key"):
        ClientCredentials("id", "")
    with pytest.raises(TypeError, match="auth= is for a server URL"):
        Client(Server("memory"), auth=OAuth())


# --------------------------------------------------------------------------- JWT bearer


def token_forms(fake: Fake) -> list[dict[str, str]]:
    return [dict(parse_qsl(r.content.decode())) for r in fake.seen
            if r.method == "POST" and str(r.url) == f"{AS}/token"]  # fmt: skip


async def test_a_workload_jwt_is_exchanged_with_the_jwt_bearer_grant() -> None:
    fake = Fake()
    async with fake.client(JWTBearer("workload.jwt.here")):
        pass
    assert token_forms(fake) == [{
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": "workload.jwt.here", "scope": "read", "resource": MCP,
    }]  # fmt: skip
    assert "authorization" not in fake.seen[-2].headers  # the token request: no client auth
    assert fake.requests_to(f"{AS}/register") == []  # nothing to register


async def test_the_assertion_function_is_asked_for_each_grant() -> None:
    issued = iter(["first.jwt", "second.jwt"])

    async def current() -> str:
        return next(issued)

    fake = Fake(routes={f"POST {AS}/token": json_response(
        {"access_token": GOOD, "token_type": "Bearer", "expires_in": 0})})  # fmt: skip
    auth = JWTBearer(current, client_id="workload-7")
    async with fake.client(auth) as client:
        await client.discover()  # its token has expired: a new grant, with a new assertion
    forms = token_forms(fake)
    assert [form["assertion"] for form in forms] == ["first.jwt", "second.jwt"]
    assert {form["client_id"] for form in forms} == {"workload-7"}


async def test_a_refused_assertion_is_the_error_with_no_retry_and_no_other_grant() -> None:
    refusal = json_response({"error": "invalid_grant", "error_description": "expired"}, 400)
    fake = Fake(routes={f"POST {AS}/token": refusal})
    error = await connect_fails(fake, JWTBearer("old.jwt"), r"\(400 invalid_grant\): expired")
    assert error.error == "invalid_grant"
    assert [form["grant_type"] for form in token_forms(fake)] == [
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    ]
    assert fake.authorizations == []


def test_a_jwt_bearer_needs_an_assertion() -> None:
    with pytest.raises(ValueError, match="needs the assertion"):
        JWTBearer("")
    with pytest.raises(ValueError, match="private_key= needs client_id="):
        JWTBearer("a.jwt", private_key="pem")
