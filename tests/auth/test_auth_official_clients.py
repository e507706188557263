"""The official MCP clients against a real authorization server and a real protected server.

Each test runs its own stack: oidc-provider (``tests/support/oidc_server.py``, a real OAuth 2.1
authorization server with open dynamic client registration), and ``tests/support/servers/
oauth_notes.py`` in a uvicorn process, an mcpserve server with ``auth=`` a
``ResourceServer`` around a ``JWTVerifier`` for that issuer, whose audience is its own MCP
URL. It asks for ``notes:read`` first (``scopes_supported``, the 401 ``scope``), and its tool
``add_note`` needs ``notes:write``.

The clients start with no token and find everything themselves: the 401 names the protected
resource metadata (``resource_metadata``), that names the authorization server, whose
metadata names its endpoints. What each client sends is recorded on the client's side (an
``httpx2`` response hook for the Python SDK, a recording ``fetch`` for the TypeScript SDK),
so the tests assert the exchanges in order, not just the end result.

- The Python SDK (``mcp`` 2.3, ``mcp.client.auth.OAuthClientProvider``, an ``httpx2.Auth``):
  authorization code with PKCE, the login and consent driven headlessly
  (:func:`oidc_server.drive_login`) from its ``redirect_handler``. It registers itself
  dynamically when its storage holds no client; given the pre-registered public client in
  its storage it does not register. On a 403 ``insufficient_scope`` it authorizes again for
  the union of the scopes it asked for before and the challenged ones, inside the same HTTP
  request, and retries that request once.
- The TypeScript SDK (``@modelcontextprotocol/client`` 2.4.0, ``tests/support/ts/driver.mjs``): its
  ``ClientCredentialsProvider`` gets tokens with no user, and steps up on a 403 by itself; an
  interactive ``OAuthClientProvider`` hands its authorization URL to the test (the connect,
  or the call that needed more scope, fails with ``UnauthorizedError``), and
  ``transport.finishAuth`` takes the code back.
- Both SDKs register a client with the scope of the first challenge (``notes:read
  offline_access``), and oidc-provider lets a registered client ask for nothing more: a
  dynamically registered client's step-up is refused by the authorization server
  (``invalid_scope``). Step-up that succeeds uses a client registered without that limit.

One test runs ``tests/support/servers/oauth_verifier_only.py`` instead: ``Server(auth=JWTVerifier(
...))`` with no ``ResourceServer``, which tells clients to ask for every scope its tools
declare; the Python SDK, registering itself, gets them all with its first login.

Every test ends by stopping the server and reading everything it wrote (uvicorn at debug
with its access log, every other logger at DEBUG, stdout and stderr): no access token the
clients held, nor its payload or signature segment, is in it.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)

from login_stack import MemoryStorage
from oidc_server import AuthorizationServer, authorization_server, drive_login
from ts_client import TSClient, ts_client
from wire_helpers import SERVERS, TIMEOUT, HTTPServerProcess, free_port, http_server_process

pytestmark = [pytest.mark.subprocess, pytest.mark.node]

NOTES = SERVERS / "oauth_notes.py"
VERIFIER_ONLY = SERVERS / "oauth_verifier_only.py"
READ, WRITE, ARCHIVE = "notes:read", "notes:write", "notes:archive"
SCOPES = [READ, WRITE]
# Nobody listens here: the login is driven headlessly and stops at the redirect to it.
REDIRECT = "http://127.0.0.1:49152/callback"
FLOW_TIMEOUT = 60.0  # one whole test's client side, logins included
STOP_TIMEOUT = 10.0
# What both SDKs ask for first: the 401's scope, plus offline_access, which the
# authorization server supports and a client with the refresh_token grant asks for.
FIRST_SCOPE = f"{READ} offline_access"


# --------------------------------------------------------------------------- the stack


@dataclass
class Stack:
    """The running authorization server and protected MCP server of one test."""

    server: HTTPServerProcess
    issuer: AuthorizationServer

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def metadata_url(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource/mcp"

    @property
    def issuer_metadata_url(self) -> str:
        return f"{self.issuer.issuer}/.well-known/oauth-authorization-server"

    def stopped_log(self) -> str:
        """Everything the server wrote, once it has exited (bounded)."""
        process = self.server.process
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)
        return self.server.log.read_text()

    def assert_tokens_not_logged(self, tokens: Iterable[str]) -> None:
        tokens = list(tokens)
        assert tokens, "no access token to look for"
        log = self.stopped_log()
        # The log is this server's, with the requests the clients made in it.
        assert f"Uvicorn running on http://127.0.0.1:{self.server.port}" in log, log
        assert '"POST /mcp HTTP/1.1" 401' in log, log
        assert '"POST /mcp HTTP/1.1" 200' in log, log
        assert f"GET {self.issuer.jwks_uri}" in log, log  # httpx2's log of the key fetch
        for token in tokens:
            _, payload, signature = token.split(".")
            assert len(payload) > 100, token
            assert len(signature) > 100, token
            for part in (token, payload, signature):
                assert part not in log, (
                    f"the server logged an access token (or part of one):\n{log}"
                )


@asynccontextmanager
async def running_stack(tmp_path: Path, script: Path, scopes: list[str]) -> AsyncIterator[Stack]:
    """oidc-provider (issuing ``scopes``) and the server ``script``, each knowing the other's
    URL; both stopped after.

    The authorization server's port is chosen first, so the MCP server can be started with
    its issuer; it fetches the keys only when the first token arrives.
    """
    issuer_port = free_port()
    env = {"MCPSERVE_TEST_ISSUER": f"http://127.0.0.1:{issuer_port}"}
    with http_server_process(tmp_path, args=[sys.executable, str(script)], env=env) as server:
        async with authorization_server([server.url], scopes, port=issuer_port) as issuer:
            assert issuer.issuer == env["MCPSERVE_TEST_ISSUER"]
            yield Stack(server, issuer)


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    """oidc-provider and the notes server."""
    async with running_stack(tmp_path, NOTES, SCOPES) as running:
        yield running


# --------------------------------------------------------------------------- helpers


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


def challenge(header: str | None) -> dict[str, str]:
    """A ``WWW-Authenticate: Bearer`` challenge's parameters (all quoted, as mcpserve sends)."""
    assert header is not None, "no WWW-Authenticate header"
    scheme, _, parameters = header.partition(" ")
    assert scheme == "Bearer", header
    return dict(re.findall(r'([a-z_]+)="([^"]*)"', parameters))


@dataclass
class Exchange:
    """One HTTP exchange a client made (no header values: never a token)."""

    method: str
    url: str
    status: int
    bearer: bool  # whether it sent a bearer token
    www_authenticate: str | None
    mcp_method: str | None = None  # for a POST to the MCP endpoint
    body: Any = None  # the form or JSON document of any other POST

    @property
    def shape(self) -> tuple[str, str, int, bool]:
        return self.method, self.url, self.status, self.bearer


def shapes(exchanges: Iterable[Exchange]) -> list[tuple[str, str, int, bool]]:
    return [exchange.shape for exchange in exchanges]


def ts_exchanges(state: dict[str, Any]) -> list[Exchange]:
    return [
        Exchange(
            item["method"],
            item["url"],
            item["status"],
            item["bearer"],
            item["wwwAuthenticate"],
            item.get("mcpMethod"),
            json.loads(item["form"]) if isinstance(item.get("form"), str) else item.get("form"),
        )
        for item in state["exchanges"]
    ]


# --------------------------------------------------------------------------- Python SDK


class AuthorizationRefused(Exception):
    """The authorization server sent the browser back with an error instead of a code."""


@dataclass
class Browser:
    """The user agent of the SDK's ``redirect_handler`` and ``callback_handler``: it logs
    ``username`` in and consents headlessly, and hands back the redirect's parameters."""

    username: str
    authorization_urls: list[str] = field(default_factory=list)
    callbacks: list[dict[str, str]] = field(default_factory=list)

    async def redirect(self, authorization_url: str) -> None:
        self.authorization_urls.append(authorization_url)
        final = await drive_login(authorization_url, REDIRECT, username=self.username)
        self.callbacks.append(query_of(final))

    async def callback(self) -> AuthorizationCodeResult:
        answer = self.callbacks[-1]
        if "code" not in answer:
            raise AuthorizationRefused(answer)
        return AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )


@dataclass
class PythonClient:
    """What a test needs of one Python SDK client: its storage, browser and exchanges."""

    stack: Stack
    storage: MemoryStorage
    browser: Browser
    exchanges: list[Exchange] = field(default_factory=list)

    async def record(self, response: httpx2.Response) -> None:
        request = response.request
        content = request.content
        kind = request.headers.get("content-type", "")
        exchange = Exchange(
            request.method,
            str(request.url),
            response.status_code,
            request.headers.get("authorization", "").lower().startswith("bearer "),
            response.headers.get("www-authenticate"),
        )
        if exchange.url == self.stack.url and content:
            exchange.mcp_method = json.loads(content).get("method")
        elif kind.startswith("application/x-www-form-urlencoded"):
            exchange.body = query_of("?" + content.decode())
        elif kind.startswith("application/json") and content:
            exchange.body = json.loads(content)
        self.exchanges.append(exchange)

    @property
    def tokens(self) -> list[str]:
        return [token.access_token for token in self.storage.saved]

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Client]:
        """The SDK's ``Client`` over streamable HTTP, its ``httpx2`` client carrying the
        SDK's ``OAuthClientProvider`` as ``auth``; both closed on the way out."""
        provider = OAuthClientProvider(
            self.stack.url,
            OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="mcpserve-test-python"),
            self.storage,
            redirect_handler=self.browser.redirect,
            callback_handler=self.browser.callback,
        )
        async with (
            httpx2.AsyncClient(
                auth=provider,
                timeout=httpx2.Timeout(TIMEOUT),
                trust_env=False,
                event_hooks={"response": [self.record]},
            ) as http,
            Client(
                streamable_http_client(self.stack.url, http_client=http),
                read_timeout_seconds=TIMEOUT,
                cache=None,
            ) as client,
        ):
            yield client


def python_client(
    stack: Stack, username: str, client_info: OAuthClientInformationFull | None = None
) -> PythonClient:
    return PythonClient(stack, MemoryStorage(client_info), Browser(username))


def public_client(stack: Stack) -> OAuthClientInformationFull:
    """The pre-registered public client (no scope limit), as the SDK's storage holds it."""
    return OAuthClientInformationFull(
        client_id=stack.issuer.public.client_id,
        redirect_uris=[REDIRECT],
        token_endpoint_auth_method="none",
        issuer=stack.issuer.issuer,
    )


async def structured(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    return result.structured_content


async def tool_names(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


async def test_the_python_client_registers_logs_in_with_pkce_and_calls_a_tool_as_the_user(
    stack: Stack,
) -> None:
    py = python_client(stack, "ada")
    async with asyncio.timeout(FLOW_TIMEOUT):
        async with py.connect() as client:
            me = await structured(client, "whoami", {})
            names = await tool_names(client)

    issuer = stack.issuer
    # What the 401 pointed the client at (here and at the bare well-known path).
    async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as http:
        documents = [
            (await http.get(url)).json()
            for url in (stack.metadata_url, stack.metadata_url.removesuffix("/mcp"))
        ]
    assert (
        documents
        == [
            {
                "resource": stack.url,
                "authorization_servers": [issuer.issuer],
                "bearer_methods_supported": ["header"],
                "scopes_supported": [READ],
                "resource_name": "OAuth notes (tests)",
            }
        ]
        * 2
    )
    registered = py.storage.client_info
    assert registered is not None
    client_id = registered.client_id
    assert client_id not in (issuer.public.client_id, issuer.machine.client_id)
    assert me == {"principal": "ada", "scopes": [READ], "client_id": client_id, "aud": stack.url}
    assert names == ["whoami", "list_notes"]  # add_note needs notes:write

    # No token; the 401 of the first request; then discovery, registration, the login, the
    # code exchanged for a token; then the same request again, with it.
    first = py.exchanges[:6]
    assert shapes(first) == [
        ("POST", stack.url, 401, False),
        ("GET", stack.metadata_url, 200, False),
        ("GET", stack.issuer_metadata_url, 200, False),
        ("POST", issuer.registration_endpoint, 201, False),
        ("POST", issuer.token_endpoint, 200, False),
        ("POST", stack.url, 200, True),
    ]
    assert first[0].mcp_method == first[5].mcp_method == "server/discover"
    assert challenge(first[0].www_authenticate) == {
        "error": "invalid_token",
        "error_description": "No access token was sent",
        "resource_metadata": stack.metadata_url,
        "scope": READ,
    }
    assert first[3].body["redirect_uris"] == [REDIRECT]
    assert first[3].body["scope"] == FIRST_SCOPE
    [authorization_url] = py.browser.authorization_urls
    assert authorization_url.startswith(issuer.authorization_endpoint + "?")
    asked = query_of(authorization_url)
    assert asked["client_id"] == client_id
    assert asked["resource"] == stack.url
    assert asked["scope"] == FIRST_SCOPE
    assert asked["code_challenge_method"] == "S256"
    assert asked["redirect_uri"] == REDIRECT
    [callback] = py.browser.callbacks
    assert callback["state"] == asked["state"]
    assert callback["iss"] == issuer.issuer
    exchanged = first[4].body
    assert exchanged["grant_type"] == "authorization_code"
    assert exchanged["code"] == callback["code"]
    assert exchanged["client_id"] == client_id
    assert exchanged["resource"] == stack.url
    assert exchanged["redirect_uri"] == REDIRECT
    assert len(exchanged["code_verifier"]) >= 43
    assert [exchange.status for exchange in py.exchanges[6:]] == [200] * len(py.exchanges[6:])
    stack.assert_tokens_not_logged(py.tokens)


async def test_the_python_client_steps_up_on_403_and_its_retried_call_succeeds(
    stack: Stack,
) -> None:
    py = python_client(stack, "ada", public_client(stack))
    async with asyncio.timeout(FLOW_TIMEOUT):
        async with py.connect() as client:
            before = await tool_names(client)
            mark = len(py.exchanges)
            added = await structured(client, "add_note", {"text": "first"})
            step_up = py.exchanges[mark:]
            after = await tool_names(client)
            me = await structured(client, "whoami", {})

    issuer = stack.issuer
    assert before == ["whoami", "list_notes"]
    assert after == ["whoami", "list_notes", "add_note"]
    assert added == {"author": "ada", "scopes": [READ, WRITE], "count": 1}
    assert me["principal"] == "ada"
    assert me["client_id"] == issuer.public.client_id
    # A client from storage registers nothing.
    assert issuer.registration_endpoint not in [exchange.url for exchange in py.exchanges]

    # One HTTP request to the endpoint: refused 403, a second login for more scope inside
    # it (the metadata known from the 401 is reused), and the request sent once more. Then
    # the SDK lists the tools, to learn the output schema of a tool it had not seen listed.
    assert shapes(step_up) == [
        ("POST", stack.url, 403, True),
        ("POST", issuer.token_endpoint, 200, False),
        ("POST", stack.url, 200, True),
        ("POST", stack.url, 200, True),
    ]
    methods = [exchange.mcp_method for exchange in step_up]
    assert methods == ["tools/call", None, "tools/call", "tools/list"]
    assert challenge(step_up[0].www_authenticate) == {
        "error": "insufficient_scope",
        "error_description": f"This request needs the scope {WRITE}",
        "resource_metadata": stack.metadata_url,
        "scope": WRITE,
    }
    first, second = py.browser.authorization_urls
    assert query_of(first)["scope"] == FIRST_SCOPE
    # The union, in the SDK's order: what it asked for before, then what the 403 asked for.
    assert query_of(second)["scope"] == f"{FIRST_SCOPE} {WRITE}"
    assert query_of(second)["resource"] == stack.url
    assert step_up[1].body["resource"] == stack.url
    assert [token.scope for token in py.storage.saved] == [READ, f"{READ} {WRITE}"]
    stack.assert_tokens_not_logged(py.tokens)


async def test_a_dynamically_registered_python_client_is_refused_the_step_up_scope(
    stack: Stack,
) -> None:
    """The SDK registers with the first challenge's scope, and oidc-provider holds a
    registered client to it: the step-up authorization comes back ``invalid_scope``, the
    flow raises out of the client, and no second token is asked for."""
    py = python_client(stack, "ada")
    with pytest.RaisesGroup(AuthorizationRefused, flatten_subgroups=True):
        async with asyncio.timeout(FLOW_TIMEOUT), py.connect() as client:
            assert (await structured(client, "whoami", {}))["scopes"] == [READ]
            mark = len(py.exchanges)
            await client.call_tool("add_note", {"text": "refused"})

    registration = next(e for e in py.exchanges if e.url == stack.issuer.registration_endpoint)
    assert registration.body["scope"] == FIRST_SCOPE
    assert shapes(py.exchanges[mark:]) == [("POST", stack.url, 403, True)]
    assert len(py.browser.authorization_urls) == 2
    assert query_of(py.browser.authorization_urls[1])["scope"] == f"{FIRST_SCOPE} {WRITE}"
    refused = py.browser.callbacks[1]
    assert refused["error"] == "invalid_scope"
    assert refused["scope"] == WRITE
    assert len(py.storage.saved) == 1
    stack.assert_tokens_not_logged(py.tokens)


async def test_a_server_with_a_verifier_alone_has_the_python_client_ask_for_every_scope_it_needs(
    tmp_path: Path,
) -> None:
    """``Server(auth=JWTVerifier(...))``, no ``ResourceServer``: the 401 and the metadata
    name every scope the server's tools declare (``archive``'s too, registered when the
    server started), so a client that registers itself asks for those and no others (not
    the authorization server's own list, ``openid`` first, which it falls back to without
    them), all at once, and never meets a 403."""
    every = [ARCHIVE, READ, WRITE]
    async with running_stack(tmp_path, VERIFIER_ONLY, every) as verifier_only:
        py = python_client(verifier_only, "ada")
        async with asyncio.timeout(FLOW_TIMEOUT), py.connect() as client:
            me = await structured(client, "whoami", {})
            added = await client.call_tool("add_note", {"text": "first"})
            archived = await client.call_tool("archive", {})
            names = await tool_names(client)
        async with httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT) as http:
            metadata = (await http.get(verifier_only.metadata_url)).json()

        issuer = verifier_only.issuer
        first = py.exchanges[:6]
        assert shapes(first) == [
            ("POST", verifier_only.url, 401, False),
            ("GET", verifier_only.metadata_url, 200, False),
            ("GET", verifier_only.issuer_metadata_url, 200, False),
            ("POST", issuer.registration_endpoint, 201, False),
            ("POST", issuer.token_endpoint, 200, False),
            ("POST", verifier_only.url, 200, True),
        ]
        assert challenge(first[0].www_authenticate) == {
            "error": "invalid_token",
            "error_description": "No access token was sent",
            "resource_metadata": verifier_only.metadata_url,
            "scope": " ".join(every),
        }
        asked = f"{' '.join(every)} offline_access"
        assert first[3].body["scope"] == asked
        [authorization_url] = py.browser.authorization_urls
        assert query_of(authorization_url)["scope"] == asked
        assert metadata == {
            "resource": verifier_only.url,
            "authorization_servers": [issuer.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": every,
        }
        assert me == {"principal": "ada", "scopes": every}
        assert not added.is_error, added
        assert not archived.is_error, archived
        assert names == ["whoami", "list_notes", "add_note", "archive"]
        # One login: every later request was answered with the first token.
        assert [exchange.status for exchange in py.exchanges[5:]] == [200] * len(py.exchanges[5:])
        assert len(py.tokens) == 1
        verifier_only.assert_tokens_not_logged(py.tokens)


# --------------------------------------------------------------------------- TypeScript SDK


def client_credentials(stack: Stack) -> dict[str, str]:
    machine = stack.issuer.machine
    assert machine.client_secret is not None
    return {
        "kind": "client_credentials",
        "clientId": machine.client_id,
        "clientSecret": machine.client_secret,
        "issuer": stack.issuer.issuer,
    }


def authorization_code(stack: Stack, *, registered: bool) -> dict[str, str]:
    options = {
        "kind": "authorization_code",
        "redirectUrl": REDIRECT,
        "clientName": "mcpserve-test-typescript",
    }
    if registered:
        options |= {"clientId": stack.issuer.public.client_id, "issuer": stack.issuer.issuer}
    return options


async def ts_login(ts: TSClient, username: str) -> str:
    """Log in at the authorization URL the driver's provider recorded last; the callback."""
    state = await ts.send("oauth")
    return await drive_login(state["authorizationUrls"][-1], REDIRECT, username=username)


async def test_the_typescript_client_gets_a_client_credentials_token_after_the_401(
    stack: Stack, ts_install: tuple[str, Path]
) -> None:
    async with asyncio.timeout(FLOW_TIMEOUT), ts_client(*ts_install) as ts:
        oauth = client_credentials(stack)
        connected = await ts.send("connectOAuth", url=stack.url, mode="auto", oauth=oauth)
        me = await ts.send("call", name="whoami", arguments={})
        names = await ts.send("listTools")
        state = await ts.send("oauth")
        await ts.send("close")

    issuer = stack.issuer
    machine = issuer.machine.client_id
    assert connected["era"] == "modern"
    assert connected["server"] == {"name": "oauth-notes", "version": "1.0.0"}
    assert me["structured"] == {
        "principal": machine,
        "scopes": [READ],
        "client_id": machine,
        "aud": stack.url,
    }
    assert names == {"names": ["whoami", "list_notes"]}
    exchanges = ts_exchanges(state)
    assert shapes(exchanges[:5]) == [
        ("POST", stack.url, 401, False),
        ("GET", stack.metadata_url, 200, False),
        ("GET", stack.issuer_metadata_url, 200, False),
        ("POST", issuer.token_endpoint, 200, False),
        ("POST", stack.url, 200, True),
    ]
    assert exchanges[0].mcp_method == exchanges[4].mcp_method == "server/discover"
    assert challenge(exchanges[0].www_authenticate)["resource_metadata"] == stack.metadata_url
    assert exchanges[3].body == {
        "grant_type": "client_credentials",
        "scope": READ,
        "resource": stack.url,
    }
    assert state["scope"] == READ
    stack.assert_tokens_not_logged(state["accessTokens"])


async def test_the_typescript_client_credentials_provider_steps_up_on_403_by_itself(
    stack: Stack, ts_install: tuple[str, Path]
) -> None:
    async with asyncio.timeout(FLOW_TIMEOUT), ts_client(*ts_install) as ts:
        await ts.send("connectOAuth", url=stack.url, mode="auto", oauth=client_credentials(stack))
        mark = len((await ts.send("oauth"))["exchanges"])
        added = await ts.send("call", name="add_note", arguments={"text": "from a machine"})
        state = await ts.send("oauth")
        names = await ts.send("listTools")
        await ts.send("close")

    issuer = stack.issuer
    machine = issuer.machine.client_id
    assert added["structured"] == {"author": machine, "scopes": [READ, WRITE], "count": 1}
    assert names == {"names": ["whoami", "list_notes", "add_note"]}
    step_up = ts_exchanges(state)[mark:]
    # Refused 403; the metadata discovered again; a token for the union; the call again.
    assert shapes(step_up) == [
        ("POST", stack.url, 403, True),
        ("GET", stack.metadata_url, 200, False),
        ("GET", stack.issuer_metadata_url, 200, False),
        ("POST", issuer.token_endpoint, 200, False),
        ("POST", stack.url, 200, True),
    ]
    assert challenge(step_up[0].www_authenticate) == {
        "error": "insufficient_scope",
        "error_description": f"This request needs the scope {WRITE}",
        "resource_metadata": stack.metadata_url,
        "scope": WRITE,
    }
    assert step_up[3].body == {
        "grant_type": "client_credentials",
        "scope": f"{READ} {WRITE}",
        "resource": stack.url,
    }
    assert state["scope"] == f"{READ} {WRITE}"
    assert len(state["accessTokens"]) == 2
    stack.assert_tokens_not_logged(state["accessTokens"])


async def test_the_typescript_client_registers_hands_back_its_login_and_calls_as_the_user(
    stack: Stack, ts_install: tuple[str, Path]
) -> None:
    async with asyncio.timeout(FLOW_TIMEOUT), ts_client(*ts_install) as ts:
        oauth = authorization_code(stack, registered=False)
        refused = await ts.ask("connectOAuth", url=stack.url, mode="auto", oauth=oauth)
        before = await ts.send("oauth")
        callback = await ts_login(ts, "bob")
        connected = await ts.send("finishAuth", callbackUrl=callback)
        me = await ts.send("call", name="whoami", arguments={})
        state = await ts.send("oauth")
        await ts.send("close")

    issuer = stack.issuer
    assert refused == {
        "ok": False,
        "error": {
            "name": "UnauthorizedError",
            "message": "Unauthorized",
            "code": None,
            "data": None,
        },
    }
    client_id = state["clientId"]
    assert client_id not in (issuer.public.client_id, issuer.machine.client_id)
    assert connected["era"] == "modern"
    assert me["structured"] == {
        "principal": "bob",
        "scopes": [READ],
        "client_id": client_id,
        "aud": stack.url,
    }
    exchanges = ts_exchanges(state)
    assert shapes(exchanges[: len(before["exchanges"])]) == [
        ("POST", stack.url, 401, False),
        ("GET", stack.metadata_url, 200, False),
        ("GET", stack.issuer_metadata_url, 200, False),
        ("POST", issuer.registration_endpoint, 201, False),
    ]
    assert exchanges[3].body["scope"] == FIRST_SCOPE
    assert exchanges[3].body["redirect_uris"] == [REDIRECT]
    [authorization_url] = state["authorizationUrls"]
    asked = query_of(authorization_url)
    assert asked["client_id"] == client_id
    assert asked["resource"] == stack.url
    assert asked["scope"] == FIRST_SCOPE
    assert asked["code_challenge_method"] == "S256"
    after = exchanges[len(before["exchanges"]) :]
    assert shapes(after[:2]) == [
        ("POST", issuer.token_endpoint, 200, False),
        ("POST", stack.url, 200, True),
    ]
    assert after[0].body["grant_type"] == "authorization_code"
    assert after[0].body["code"] == query_of(callback)["code"]
    assert after[0].body["resource"] == stack.url
    assert after[0].body["client_id"] == client_id
    assert len(after[0].body["code_verifier"]) >= 43
    stack.assert_tokens_not_logged(state["accessTokens"])


async def test_the_typescript_client_steps_up_through_a_second_login_and_the_call_is_retried(
    stack: Stack, ts_install: tuple[str, Path]
) -> None:
    """With an interactive provider the SDK's step-up is a redirect: the call that got the
    403 fails with UnauthorizedError once the new authorization URL (for the union of the
    scopes) is handed over; after ``finishAuth`` the same call succeeds."""
    async with asyncio.timeout(FLOW_TIMEOUT), ts_client(*ts_install) as ts:
        oauth = authorization_code(stack, registered=True)
        await ts.ask("connectOAuth", url=stack.url, mode="auto", oauth=oauth)
        await ts.send("finishAuth", callbackUrl=await ts_login(ts, "bob"))
        mark = len((await ts.send("oauth"))["exchanges"])
        refused = await ts.ask("call", name="add_note", arguments={"text": "stepped up"})
        callback = await ts_login(ts, "bob")
        assert await ts.send("finishAuth", callbackUrl=callback) == {}  # still connected
        added = await ts.send("call", name="add_note", arguments={"text": "stepped up"})
        state = await ts.send("oauth")
        await ts.send("close")

    issuer = stack.issuer
    assert refused["ok"] is False
    assert refused["error"]["name"] == "UnauthorizedError"
    assert added["structured"] == {"author": "bob", "scopes": [READ, WRITE], "count": 1}
    first, second = state["authorizationUrls"]
    assert query_of(first)["scope"] == FIRST_SCOPE
    assert query_of(first)["client_id"] == issuer.public.client_id
    assert query_of(second)["scope"] == f"{READ} {WRITE} offline_access"
    assert query_of(second)["resource"] == stack.url
    step_up = ts_exchanges(state)[mark:]
    assert shapes(step_up) == [
        ("POST", stack.url, 403, True),
        ("POST", issuer.token_endpoint, 200, False),
        ("POST", stack.url, 200, True),
    ]
    assert challenge(step_up[0].www_authenticate)["scope"] == WRITE
    assert step_up[1].body["code"] == query_of(callback)["code"]
    assert issuer.registration_endpoint not in [exchange.url for exchange in ts_exchanges(state)]
    stack.assert_tokens_not_logged(state["accessTokens"])


async def test_a_dynamically_registered_typescript_client_is_refused_the_step_up_scope(
    stack: Stack, ts_install: tuple[str, Path]
) -> None:
    async with asyncio.timeout(FLOW_TIMEOUT), ts_client(*ts_install) as ts:
        oauth = authorization_code(stack, registered=False)
        await ts.ask("connectOAuth", url=stack.url, mode="auto", oauth=oauth)
        await ts.send("finishAuth", callbackUrl=await ts_login(ts, "bob"))
        refused = await ts.ask("call", name="add_note", arguments={"text": "refused"})
        callback = await ts_login(ts, "bob")
        finished = await ts.ask("finishAuth", callbackUrl=callback)
        state = await ts.send("oauth")
        await ts.send("close")

    assert refused["error"]["name"] == "UnauthorizedError"
    assert query_of(callback)["error"] == "invalid_scope"
    assert finished == {
        "ok": False,
        "error": {
            "name": "OAuthError",
            "message": "requested scope is not allowed",
            "code": "invalid_scope",
            "data": None,
        },
    }
    registration = next(
        e for e in ts_exchanges(state) if e.url == stack.issuer.registration_endpoint
    )
    assert registration.body["scope"] == FIRST_SCOPE
    assert query_of(state["authorizationUrls"][1])["scope"] == f"{READ} {WRITE} offline_access"
    assert state["scope"] == READ
    stack.assert_tokens_not_logged(state["accessTokens"])
