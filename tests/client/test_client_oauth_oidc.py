"""mcpserve's OAuth client against a real authorization server and mcpserve's own resource server.

One node oidc-provider (``oidc_server.py``: dynamic registration, PKCE, refresh tokens,
client credentials, RFC 9207 ``iss``) and one mcpserve server protected by a
``ResourceServer`` around a ``JWTVerifier`` for it (served by uvicorn in a thread, on a
socket bound before the server is built, so the resource URL is known) serve the module.
The server asks for ``notes:read`` first; ``add_note`` needs ``notes:write``; ``purge``
asks at run time for ``notes:root``, a scope the authorization server does not know. A
second server at :attr:`Stack.names_more` requires ``notes:read`` (its 401 asks for that
alone) but names ``notes:write`` too in its metadata, for what its lists hide.

Each test starts with a fresh ``OAuth`` or ``ClientCredentials`` (so a fresh storage) and
finds everything from the first 401. Its pool records every exchange (method, URL path,
status, whether a bearer token went, the form of a token request), so the tests assert
the requests in order. The browser is :func:`oidc_server.drive_login`: it logs ``alice``
in and consents over plain HTTP, and stops at the redirect back to the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2
import pytest
import pytest_asyncio

from http_serving import serve_asgi
from mcpserve import Client, ClientCredentials, Context, MCPError, OAuth, Server
from mcpserve.auth import JWTVerifier, ResourceServer
from mcpserve.client.oauth import (
    FileTokenStorage,
    LoopbackRedirect,
    MemoryTokenStorage,
    OAuthError,
)
from oidc_server import AuthorizationServer, authorization_server, drive_login
from wire_helpers import SUPPORT, child_env, free_port

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.subprocess, pytest.mark.node]

READ, WRITE = "notes:read", "notes:write"
REDIRECT = "http://127.0.0.1:49153/callback"  # nobody listens: the login stops there
START_TIMEOUT = 15.0


def build_server(url: str, issuer: str) -> Server:
    verifier = JWTVerifier(issuer=issuer, audience=url)
    server = Server("oauth-client-target", auth=ResourceServer(verifier, scopes_supported=[READ]))

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        """The caller, as the token says."""
        return {"principal": ctx.principal, "scopes": sorted(ctx.scopes),
                "aud": ctx.auth.claims.get("aud")}  # fmt: skip

    @server.tool(scopes=[WRITE])
    def add_note(text: str, ctx: Context) -> dict[str, Any]:
        """Needs notes:write."""
        return {"author": ctx.principal, "scopes": sorted(ctx.scopes)}

    @server.tool
    def purge(ctx: Context) -> str:
        """Needs a scope nobody can get."""
        ctx.require_scopes("notes:root")
        return "purged"

    return server


def build_server_naming_more(url: str, issuer: str) -> Server:
    """Its 401 asks for notes:read; its metadata names notes:write too."""
    verifier = JWTVerifier(issuer=issuer, audience=url)
    server = Server("names-more", auth=ResourceServer(verifier, required_scopes=[READ],
                                                      scopes_supported=[READ, WRITE]))  # fmt: skip

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        return {"principal": ctx.principal, "scopes": sorted(ctx.scopes)}

    @server.tool(scopes=[WRITE])
    def add_note(text: str, ctx: Context) -> dict[str, Any]:
        """Hidden from a token without notes:write."""
        return {"text": text, "scopes": sorted(ctx.scopes)}

    @server.tool
    def publish(ctx: Context) -> str:
        """Listed for everyone; refused (403) without notes:write."""
        ctx.require_scopes(WRITE)
        return "published"

    @server.prompt(scopes=[WRITE])
    def draft(topic: str) -> str:
        return f"Draft a note on {topic}."

    return server


@dataclass
class Stack:
    url: str
    oidc: AuthorizationServer
    #: The server whose metadata names more scopes than its 401 asks for.
    names_more: str = ""

    @property
    def metadata_path(self) -> str:
        return "/.well-known/oauth-protected-resource/mcp"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack() -> AsyncIterator[Stack]:
    issuer_port = free_port()
    issuer = f"http://127.0.0.1:{issuer_port}"
    with socket.socket() as sock, socket.socket() as other:
        sock.bind(("127.0.0.1", 0))
        other.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        names_more = f"http://127.0.0.1:{other.getsockname()[1]}/mcp"
        with (
            serve_asgi(build_server(url, issuer).http_app(), sock=sock),
            serve_asgi(build_server_naming_more(names_more, issuer).http_app(), sock=other),
        ):
            resources = [url, names_more]
            async with authorization_server(resources, [READ, WRITE], port=issuer_port) as oidc:
                yield Stack(url, oidc, names_more)


# --------------------------------------------------------------------------- recording


@dataclass
class Exchange:
    method: str
    host: str
    path: str
    status: int
    bearer: bool
    form: dict[str, str]
    basic: bool

    @property
    def shape(self) -> tuple[str, str, int, bool]:
        return self.method, self.path, self.status, self.bearer


@dataclass
class Recorded:
    """What one client's pool sent, and what its browser saw."""

    exchanges: list[Exchange] = field(default_factory=list)
    authorization_urls: list[str] = field(default_factory=list)
    tokens_seen: list[str] = field(default_factory=list)

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        form: dict[str, str] = {}
        if request.headers.get("content-type", "").startswith("application/x-www-form"):
            form = dict(parse_qsl(request.content.decode()))
        authorization = request.headers.get("authorization", "")
        if authorization.startswith("Bearer "):
            self.tokens_seen.append(authorization[7:])
        self.exchanges.append(
            Exchange(
                request.method,
                request.url.host,
                request.url.path,
                response.status_code,
                authorization.startswith("Bearer "),
                form,
                authorization.startswith("Basic "),
            )
        )

    def pool(self) -> httpx2.AsyncClient:
        timeout = httpx2.Timeout(30.0, read=None)
        hooks = {"response": [self.on_response]}
        return httpx2.AsyncClient(timeout=timeout, trust_env=False, event_hooks=hooks)

    async def browser(self, url: str) -> str:
        self.authorization_urls.append(url)
        return await drive_login(url, REDIRECT)

    def token_requests(self) -> list[dict[str, str]]:
        return [e.form for e in self.exchanges if e.path == "/token"]

    def shapes(self) -> list[tuple[str, str, int, bool]]:
        return [e.shape for e in self.exchanges]


@contextlib.asynccontextmanager
async def connected(stack: Stack, auth: Any, recorded: Recorded) -> AsyncIterator[Client]:
    async with recorded.pool() as pool, Client.http(stack.url, http_client=pool, auth=auth) as c:
        yield c


def user_oauth(recorded: Recorded, **options: Any) -> OAuth:
    return OAuth(redirect_uri=REDIRECT, on_authorize=recorded.browser, **options)


def query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


# --------------------------------------------------------------------------- client credentials


async def test_client_credentials_find_the_issuer_from_the_401_and_call_as_the_client(
    stack: Stack,
) -> None:
    recorded = Recorded()
    machine = stack.oidc.machine
    auth = ClientCredentials(machine.client_id, str(machine.client_secret))
    async with connected(stack, auth, recorded) as client:
        result = await client.call_tool("whoami")
    who = result["structuredContent"]
    assert who["principal"] == machine.client_id
    assert who["aud"] == stack.url
    assert who["scopes"] == [READ]
    assert recorded.shapes()[:5] == [
        ("POST", "/mcp", 401, False),
        ("GET", stack.metadata_path, 200, False),
        ("GET", "/.well-known/oauth-authorization-server", 200, False),
        ("POST", "/token", 200, False),
        ("POST", "/mcp", 200, True),
    ]
    [grant] = recorded.token_requests()
    assert grant == {"grant_type": "client_credentials", "scope": READ, "resource": stack.url}
    assert [e.basic for e in recorded.exchanges if e.path == "/token"] == [True]


async def test_client_credentials_step_up_to_the_scope_a_tool_needs(stack: Stack) -> None:
    recorded = Recorded()
    machine = stack.oidc.machine
    auth = ClientCredentials(machine.client_id, str(machine.client_secret))
    async with connected(stack, auth, recorded) as client:
        result = await client.call_tool("add_note", {"text": "hi"})
    assert result["structuredContent"]["scopes"] == [READ, WRITE]
    grants = recorded.token_requests()
    assert [g["scope"] for g in grants] == [READ, f"{READ} {WRITE}"]
    assert ("POST", "/mcp", 403, True) in recorded.shapes()


def ec_key() -> tuple[Any, str, dict[str, Any]]:
    """A P-256 key: the key, its PEM, and its public JWK."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()  # fmt: skip
    return key, pem, json.loads(ECAlgorithm.to_jwk(key.public_key()))


async def registered_with_key(stack: Stack, jwk: dict[str, Any]) -> str:
    """A client registered (RFC 7591) to authenticate with private_key_jwt and ``jwk``."""
    registered = await stack.oidc.register_client({
        "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": [],
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_signing_alg": "ES256", "jwks": {"keys": [jwk]},
    })  # fmt: skip
    return str(registered["client_id"])


async def test_client_credentials_with_a_private_key_instead_of_a_secret(stack: Stack) -> None:
    import jwt

    key, pem, jwk = ec_key()
    client_id = await registered_with_key(stack, {**jwk, "kid": "k1"})
    recorded = Recorded()
    auth = ClientCredentials(client_id, private_key=pem, key_id="k1")
    async with connected(stack, auth, recorded) as client:
        result = await client.call_tool("whoami")
    assert result["structuredContent"]["principal"] == client_id
    [grant] = recorded.token_requests()
    assert grant["client_id"] == client_id
    assert (
        grant["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    )
    assert jwt.get_unverified_header(grant["client_assertion"]) == {
        "alg": "ES256", "kid": "k1", "typ": "JWT"}  # fmt: skip
    claims = jwt.decode(grant["client_assertion"], key.public_key(), algorithms=["ES256"],
                        audience=stack.oidc.issuer)  # fmt: skip
    assert claims["iss"] == claims["sub"] == client_id
    assert claims["exp"] - claims["iat"] == 60
    assert [e.basic for e in recorded.exchanges if e.path == "/token"] == [False]  # no secret


async def test_an_assertion_signed_with_another_key_is_refused(stack: Stack) -> None:
    _, _, jwk = ec_key()
    client_id = await registered_with_key(stack, jwk)
    _, wrong, _ = ec_key()
    auth = ClientCredentials(client_id, private_key=wrong)
    with pytest.raises(OAuthError, match="401 invalid_client"):
        async with connected(stack, auth, Recorded()) as client:
            await client.call_tool("whoami")


async def test_client_credentials_take_a_secret_or_a_key() -> None:
    _, pem, _ = ec_key()
    with pytest.raises(ValueError, match="either a client_secret or a private_key"):
        ClientCredentials("bot", "secret", private_key=pem)
    with pytest.raises(ValueError, match="either a client_secret or a private_key"):
        ClientCredentials("bot")
    with pytest.raises(ValueError, match="not an unencrypted PEM private key"):
        ClientCredentials("bot", private_key="not a key")
    assert "BEGIN" not in repr(ClientCredentials("bot", private_key=pem).client_assertion)


# --------------------------------------------------------------------------- a user


async def test_a_user_logs_in_with_pkce_after_the_client_registers_itself(stack: Stack) -> None:
    recorded = Recorded()
    auth = user_oauth(recorded)
    async with connected(stack, auth, recorded) as client:
        result = await client.call_tool("whoami")
    assert result["structuredContent"]["principal"] == "alice"
    assert result["structuredContent"]["aud"] == stack.url
    assert recorded.shapes()[:5] == [
        ("POST", "/mcp", 401, False),
        ("GET", stack.metadata_path, 200, False),
        ("GET", "/.well-known/oauth-authorization-server", 200, False),
        ("POST", "/reg", 201, False),
        ("POST", "/token", 200, False),
    ]
    [url] = recorded.authorization_urls
    asked = query(url)
    assert url.startswith(stack.oidc.authorization_endpoint + "?")
    assert asked["response_type"] == "code"
    assert asked["code_challenge_method"] == "S256"
    assert len(asked["code_challenge"]) == 43
    assert asked["resource"] == stack.url
    assert asked["redirect_uri"] == REDIRECT
    assert asked["scope"] == f"{READ} offline_access"  # the AS lists offline_access
    assert len(asked["state"]) >= 32
    [grant] = recorded.token_requests()
    assert grant["grant_type"] == "authorization_code"
    assert grant["resource"] == stack.url
    assert grant["client_id"] == asked["client_id"]  # a public client: no secret
    assert len(grant["code_verifier"]) >= 43
    tokens = await auth.storage.load_tokens(stack.url)
    assert tokens is not None
    assert tokens.refresh_token is not None
    assert tokens.issuer == stack.oidc.issuer


async def test_dynamic_registration_asks_for_a_native_public_client_without_scope(
    stack: Stack,
) -> None:
    bodies: list[bytes] = []

    async def keep(request: httpx2.Request) -> None:
        if request.url.path == "/reg":
            bodies.append(request.content)

    recorded = Recorded()
    async with (
        httpx2.AsyncClient(trust_env=False, event_hooks={"request": [keep]}) as pool,
        Client.http(stack.url, http_client=pool, auth=user_oauth(recorded)) as client,
    ):
        await client.call_tool("whoami")
    [body] = [json.loads(b) for b in bodies]
    assert body["application_type"] == "native"
    assert body["redirect_uris"] == [REDIRECT]
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["token_endpoint_auth_method"] == "none"
    assert "scope" not in body


async def test_a_403_steps_up_with_the_union_of_the_scopes_held_and_challenged(
    stack: Stack,
) -> None:
    recorded = Recorded()
    async with connected(stack, user_oauth(recorded), recorded) as client:
        result = await client.call_tool("add_note", {"text": "hello"})
    assert result["structuredContent"] == {"author": "alice", "scopes": [READ, WRITE]}
    first, second = (query(url)["scope"] for url in recorded.authorization_urls)
    assert first == f"{READ} offline_access"
    assert second == f"{READ} {WRITE} offline_access"
    assert [e.path for e in recorded.exchanges].count("/reg") == 1  # registered once


async def test_a_scope_never_granted_is_asked_for_once_then_the_403_is_the_answer(
    stack: Stack,
) -> None:
    recorded = Recorded()
    async with connected(stack, user_oauth(recorded), recorded) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("purge")
        assert refused.value.code == -32010
        assert "notes:root" in str(refused.value)
        assert len(recorded.authorization_urls) == 2  # the first login, one step-up
        assert "notes:root" in query(recorded.authorization_urls[-1])["scope"]
        assert (await client.call_tool("whoami"))["structuredContent"]["principal"] == "alice"
    assert len(recorded.authorization_urls) == 2


async def test_an_expired_token_is_refreshed_before_it_is_sent(stack: Stack) -> None:
    recorded = Recorded()
    auth = user_oauth(recorded)
    async with connected(stack, auth, recorded) as client:
        await client.call_tool("whoami")
        before = await auth.storage.load_tokens(stack.url)
        assert before is not None
        await auth.storage.save_tokens(stack.url, replace(before, expires_at=time.time() - 1))
        del recorded.exchanges[:]
        result = await client.call_tool("whoami")
    assert result["structuredContent"]["principal"] == "alice"
    assert recorded.shapes() == [("POST", "/token", 200, False), ("POST", "/mcp", 200, True)]
    [grant] = recorded.token_requests()
    assert grant["grant_type"] == "refresh_token"
    assert grant["resource"] == stack.url
    after = await auth.storage.load_tokens(stack.url)
    assert after is not None
    assert after.access_token != before.access_token
    assert len(recorded.authorization_urls) == 1  # the user was not asked again


async def test_a_refused_token_is_refreshed_and_the_request_sent_again(stack: Stack) -> None:
    recorded = Recorded()
    auth = user_oauth(recorded)
    async with connected(stack, auth, recorded) as client:
        await client.call_tool("whoami")
        held = await auth.storage.load_tokens(stack.url)
        assert held is not None
        await auth.storage.save_tokens(stack.url, replace(held, access_token="revoked.token.x"))
        del recorded.exchanges[:]
        result = await client.call_tool("whoami")
    assert result["structuredContent"]["principal"] == "alice"
    assert recorded.shapes() == [
        ("POST", "/mcp", 401, True),
        ("POST", "/token", 200, False),
        ("POST", "/mcp", 200, True),
    ]
    assert recorded.token_requests()[0]["grant_type"] == "refresh_token"
    assert len(recorded.authorization_urls) == 1


async def test_a_refresh_token_the_server_refuses_leads_to_a_new_login(stack: Stack) -> None:
    recorded = Recorded()
    auth = user_oauth(recorded)
    async with connected(stack, auth, recorded) as client:
        await client.call_tool("whoami")
        held = await auth.storage.load_tokens(stack.url)
        assert held is not None
        broken = replace(held, access_token="revoked.token.x", refresh_token="not-a-refresh-token")
        await auth.storage.save_tokens(stack.url, broken)
        result = await client.call_tool("whoami")
    assert result["structuredContent"]["principal"] == "alice"
    assert len(recorded.authorization_urls) == 2


async def test_tokens_kept_in_a_file_serve_the_next_client_without_a_login(
    stack: Stack, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    first = Recorded()
    async with connected(stack, user_oauth(first, storage=FileTokenStorage(path)), first) as c:
        await c.call_tool("whoami")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    second = Recorded()
    auth = user_oauth(second, storage=FileTokenStorage(path))
    async with connected(stack, auth, second) as client:
        result = await client.call_tool("whoami")
    assert result["structuredContent"]["principal"] == "alice"
    assert second.authorization_urls == []
    assert second.shapes()[0] == ("POST", "/mcp", 200, True)


async def test_the_default_loopback_listener_receives_the_redirect(stack: Stack) -> None:
    recorded = Recorded()
    pages: list[int] = []

    async def open_browser(url: str) -> None:
        recorded.authorization_urls.append(url)
        redirect = query(url)["redirect_uri"]
        callback = await drive_login(url, redirect)
        async with httpx2.AsyncClient(trust_env=False) as browser:
            pages.append((await browser.get(callback)).status_code)

    auth = OAuth(on_authorize=LoopbackRedirect(open_browser=open_browser, timeout=30))
    async with connected(stack, auth, recorded) as client:
        result = await client.call_tool("whoami")
    assert result["structuredContent"]["principal"] == "alice"
    redirect = urlsplit(query(recorded.authorization_urls[0])["redirect_uri"])
    assert (redirect.scheme, redirect.hostname, redirect.path) == ("http", "127.0.0.1", "/callback")
    assert pages == [200]


async def test_one_oauth_shared_by_clients_at_once_authorizes_once(stack: Stack) -> None:
    recorded = Recorded()
    auth = user_oauth(recorded)

    async def call() -> str:
        async with connected(stack, auth, recorded) as client:
            result = await client.call_tool("whoami")
        return str(result["structuredContent"]["principal"])

    assert await asyncio.gather(call(), call(), call()) == ["alice"] * 3
    assert len(recorded.authorization_urls) == 1


async def test_nothing_secret_is_logged(stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    recorded = Recorded()
    machine = stack.oidc.machine
    # Everything of the client (mcpserve at DEBUG, httpx2's request lines); not httpcore2's
    # DEBUG, which shows the test browser's redirects, with the code the server issued.
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="mcpserve")
    auth = user_oauth(recorded, storage=MemoryTokenStorage())
    async with connected(stack, auth, recorded) as client:
        await client.call_tool("add_note", {"text": "x"})
    cc = ClientCredentials(machine.client_id, str(machine.client_secret))
    async with connected(stack, cc, recorded) as client:
        await client.call_tool("whoami")
    tokens = await auth.storage.load_tokens(stack.url)
    assert tokens is not None
    assert tokens.refresh_token is not None
    secrets = [*recorded.tokens_seen, tokens.refresh_token, str(machine.client_secret)]
    secrets += [e.form["code"] for e in recorded.exchanges if "code" in e.form]
    assert "Authorizing at" in caplog.text  # the log was captured
    for secret in secrets:
        assert secret not in caplog.text
        assert secret not in repr(tokens)
    assert str(machine.client_secret) not in repr(cc)


# --------------------------------------------------------------------------- the command line


async def mcpserve_cli(*args: str, **env: str) -> tuple[int, str, str]:
    """``python -m mcpserve.cli ARGS`` in a child process: (status, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcpserve.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=child_env(**env),
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_cli_calls_a_protected_server_as_an_oauth_client(stack: Stack) -> None:
    machine = stack.oidc.machine
    status, out, err = await mcpserve_cli(
        "call", stack.url, "whoami", "--json",
        "--client-id", machine.client_id, "--client-secret", str(machine.client_secret),
    )  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["structuredContent"] == {
        "principal": machine.client_id, "scopes": [READ], "aud": stack.url}  # fmt: skip
    assert str(machine.client_secret) not in out + err


async def test_the_cli_reads_the_client_credentials_from_the_environment(stack: Stack) -> None:
    machine = stack.oidc.machine
    status, out, err = await mcpserve_cli(
        "call", stack.url, "whoami", "--json",
        MCPSERVE_CLIENT_ID=machine.client_id, MCPSERVE_CLIENT_SECRET=str(machine.client_secret),
    )  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["structuredContent"]["principal"] == machine.client_id


async def test_the_cli_sends_a_token_of_your_own_with_header(stack: Stack) -> None:
    token = await stack.oidc.client_credentials_token(stack.url, [READ])
    status, out, err = await mcpserve_cli(
        "call", stack.url, "whoami", "--json", "--header", f"Authorization: Bearer {token}"
    )
    assert status == 0, err
    assert json.loads(out)["structuredContent"]["principal"] == stack.oidc.machine.client_id


async def test_the_cli_without_credentials_says_the_server_wants_authorization(
    stack: Stack,
) -> None:
    status, out, err = await mcpserve_cli("inspect", stack.url)
    assert (status, out) == (1, "")
    assert "error -32600: Unauthorized: No access token was sent" in err
    assert "Traceback" not in err


async def test_the_cli_with_a_wrong_secret_says_authorization_failed(stack: Stack) -> None:
    status, out, err = await mcpserve_cli(
        "inspect", stack.url, "--client-id", stack.oidc.machine.client_id,
        "--client-secret", "not-the-secret",
    )  # fmt: skip
    assert (status, out) == (1, "")
    assert "Authorization failed:" in err
    assert "invalid_client" in err
    assert "not-the-secret" not in err
    assert "Traceback" not in err


async def test_the_cli_logs_a_user_in_once_and_keeps_the_tokens_for_the_next_command(
    stack: Stack, tmp_path: Path
) -> None:
    browser = SUPPORT / "login_browser.py"
    env = {
        "BROWSER": f"{sys.executable} {browser} %s",
        "LOGIN_LOG": str(tmp_path / "logins"),
        "MCPSERVE_TOKEN_FILE": str(tmp_path / "tokens.json"),
        "PYTHONPATH": str(browser.parent),
    }
    for _ in range(2):
        status, out, err = await mcpserve_cli("call", stack.url, "whoami", "--json", "--oauth",
                                              **env)  # fmt: skip
        assert status == 0, err
        assert json.loads(out)["structuredContent"]["principal"] == "alice"
    assert len((tmp_path / "logins").read_text().splitlines()) == 1
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600


def browser_env(tmp_path: Path) -> dict[str, str]:
    """The user's browser for ``--oauth``: ``login_browser.py`` logs alice in."""
    browser = SUPPORT / "login_browser.py"
    return {
        "BROWSER": f"{sys.executable} {browser} %s",
        "LOGIN_LOG": str(tmp_path / "logins"),
        "MCPSERVE_TOKEN_FILE": str(tmp_path / "tokens.json"),
        "PYTHONPATH": str(browser.parent),
    }


def logins(tmp_path: Path) -> list[dict[str, str]]:
    """The query of each authorization URL the browser was sent to, in order."""
    lines = (tmp_path / "logins").read_text().splitlines()
    return [query(line) for line in lines]


async def test_the_cli_steps_up_for_a_tool_the_tokens_scopes_hide_from_its_list(
    stack: Stack, tmp_path: Path
) -> None:
    """add_note is not in tools/list for a notes:read token: instead of "no tool", the
    command logs in again for every scope the metadata names, lists again, and calls."""
    status, out, err = await mcpserve_cli(
        "call", stack.names_more, "add_note", "text=hi", "--json", "--oauth",
        **browser_env(tmp_path),
    )  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["structuredContent"] == {"text": "hi", "scopes": [READ, WRITE]}
    assert [login["scope"].split() for login in logins(tmp_path)] == [
        [READ, "offline_access"], [READ, WRITE, "offline_access"]
    ]  # fmt: skip
    assert (
        f"No tool 'add_note' is listed for this token: authorizing again for scope {READ} "
        f"{WRITE}..." in err
    )


async def test_the_cli_steps_up_for_a_hidden_prompt_with_client_credentials(
    stack: Stack,
) -> None:
    machine = stack.oidc.machine
    status, out, err = await mcpserve_cli(
        "prompt", stack.names_more, "draft", "topic=tea",
        "--client-id", machine.client_id, "--client-secret", str(machine.client_secret),
    )  # fmt: skip
    assert status == 0, err
    assert out == "[user]\nDraft a note on tea.\n"


async def test_the_cli_steps_up_when_a_listed_tool_answers_403(stack: Stack) -> None:
    machine = stack.oidc.machine
    status, out, err = await mcpserve_cli(
        "call", stack.names_more, "publish",
        "--client-id", machine.client_id, "--client-secret", str(machine.client_secret),
    )  # fmt: skip
    assert (status, out) == (0, "published\n"), err


async def test_a_tool_no_scope_reveals_is_still_no_tool_after_one_step_up(
    stack: Stack, tmp_path: Path
) -> None:
    env = browser_env(tmp_path)
    status, out, err = await mcpserve_cli("call", stack.names_more, "remove_note", "--oauth",
                                          **env)  # fmt: skip
    assert (status, out) == (2, "")
    assert "has no tool 'remove_note' (its tools: whoami, add_note, publish)" in err
    assert len(logins(tmp_path)) == 2  # the first login, then one for every scope named
    again = await mcpserve_cli("call", stack.names_more, "remove_note", "--oauth", **env)
    assert again[0] == 2
    assert len(logins(tmp_path)) == 2  # nothing more to ask for: no third login


async def test_without_oauth_a_missing_tool_is_said_at_once(tmp_path: Path) -> None:
    """An unprotected server hides nothing by scope: no step-up, no metadata asked for."""
    from wire_helpers import http_server_process

    with http_server_process(tmp_path) as served:
        status, _, err = await mcpserve_cli("call", served.url, "nope", "--oauth")
    assert status == 2
    assert "has no tool 'nope'" in err
    assert "Authorization failed" not in err
