"""A real OAuth 2.1 / OpenID authorization server for the OAuth tests: node ``oidc-provider``.

:func:`install` puts the version pinned in ``tests/support/oidc/package.json`` (and its lock file)
into a cache, ``$MCPSERVE_OIDC_HOME`` or ``~/.cache/mcpserve/oidc-provider``, with ``npm ci``
under a file lock; it installs again only when those files change (a hash marker). The pin
is oidc-provider 8.x, the newest line that supports Node 20 (9.x wants Node 22). Nothing
here is optional: without npm or a recent enough node the tests fail, naming what to install.

:func:`authorization_server` runs ``tests/support/oidc/provider.mjs`` (copied next to the installed
packages, where ESM resolves them) with one JSON configuration: the resource indicators it
issues tokens for, their scopes, the access token lifetime, and fresh secrets for its static
clients. The script listens on a free 127.0.0.1 port of its own choosing and prints
``READY <issuer>``; then the discovery document is read, and the yielded
:class:`AuthorizationServer` knows every endpoint. Every wait is bounded (start 30 s, each
helper 30 s), the node stderr tail is in every failure, and the process is stopped on the
way out: stdin closed, then SIGTERM, then SIGKILL.

What the server issues (see the script's header for its configuration):

- For a configured resource, access tokens are RS256 JWTs (RFC 9068, ``typ: at+jwt``) with
  ``iss``, ``aud`` (the resource), ``sub`` (the user; the client id for client credentials),
  ``client_id``, ``scope`` (space-delimited: the requested scopes the resource knows; unknown
  ones are dropped silently), ``iat``, ``exp`` and ``jti``. These JWTs are not introspectable:
  oidc-provider introspects only opaque tokens, and answers ``active: false`` for a JWT.
- The :attr:`AuthorizationServer.opaque` client gets opaque tokens for the same resources,
  which introspect ``active: true`` with ``aud``, ``scope``, ``client_id``, ``exp`` (no
  ``sub``: no user) and can be revoked (oidc-provider 8: by the client they were issued to).
- Login and consent are oidc-provider's development interactions, plain HTML forms that take
  any username; :func:`drive_login` fills them in over HTTP, no browser.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx2

import npm_cache
from wire_helpers import SUPPORT

SOURCE = SUPPORT / "oidc"
SCRIPT = "provider.mjs"
START_TIMEOUT = 30.0
REQUEST_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
NODE_MAJOR = 18  # oidc-provider 8.x: Node 18 LTS or newer
DEFAULT_TTL = 600
DEFAULT_USERNAME = "alice"
# Registered for the public client; being a native app, any port on 127.0.0.1 matches too.
DEFAULT_REDIRECT_URI = "http://127.0.0.1/callback"
MAX_LOGIN_STEPS = 20


def home() -> Path:
    return Path(
        os.environ.get("MCPSERVE_OIDC_HOME") or Path.home() / ".cache/mcpserve/oidc-provider"
    )


def _fail(message: str) -> NoReturn:
    npm_cache.fail(message)


def node_binary() -> str:
    """``node``, version 18 or newer; fails (never skips) otherwise."""
    return npm_cache.node_binary(NODE_MAJOR, "the OAuth tests (oidc-provider 8)")


def install() -> Path:
    """The cache directory with the pinned oidc-provider installed (``npm ci``, at most once)."""
    package = Path("node_modules/oidc-provider/package.json")
    target = npm_cache.npm_ci(SOURCE, home(), needed_by="the OAuth tests", installed=package)
    # The script sits next to node_modules; replaced atomically, as other runs may read it.
    script = (SOURCE / SCRIPT).read_bytes()
    installed = target / SCRIPT
    if not installed.exists() or installed.read_bytes() != script:
        staged = target / f".{SCRIPT}.{os.getpid()}"
        staged.write_bytes(script)
        staged.replace(installed)
    return target


@dataclass(frozen=True)
class OAuthClient:
    """A static client of the server; ``client_secret`` is ``None`` for the public one."""

    client_id: str
    client_secret: str | None = None

    @property
    def auth(self) -> httpx2.BasicAuth:
        """``client_secret_basic`` credentials (confidential clients only)."""
        assert self.client_secret is not None, f"{self.client_id} is a public client"
        return httpx2.BasicAuth(self.client_id, self.client_secret)


def pkce_pair() -> tuple[str, str]:
    """A PKCE ``(code_verifier, code_challenge)`` for ``code_challenge_method=S256``."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _answer(response: httpx2.Response, what: str) -> Any:
    """The JSON body of a 2xx answer; otherwise an assertion naming ``what`` and the body."""
    assert response.is_success, f"{what}: HTTP {response.status_code}: {response.text[:2000]}"
    return response.json()


@dataclass
class AuthorizationServer:
    """A running oidc-provider; the helpers talk to it over HTTP, as its clients would."""

    issuer: str
    metadata: dict[str, Any]
    resources: tuple[str, ...]
    scopes: tuple[str, ...]
    machine: OAuthClient
    """Confidential, ``client_credentials`` with ``client_secret_basic``: JWT access tokens."""
    opaque: OAuthClient
    """Like :attr:`machine`, but its access tokens are opaque (introspectable, revocable)."""
    resource_server: OAuthClient
    """Confidential, no grants: may introspect any token (others only their own)."""
    public: OAuthClient
    """Public native app: authorization code + PKCE S256, redirect ``http://127.0.0.1:*/callback``."""
    http: httpx2.AsyncClient = field(repr=False)
    upstream: OAuthClient | None = None
    """Confidential, registered by hand for an ``OIDCProxy`` in front of this server (given
    ``upstream_redirect_uris``): its ``client_secret_basic`` credentials."""

    @property
    def jwks_uri(self) -> str:
        return str(self.metadata["jwks_uri"])

    @property
    def token_endpoint(self) -> str:
        return str(self.metadata["token_endpoint"])

    @property
    def authorization_endpoint(self) -> str:
        return str(self.metadata["authorization_endpoint"])

    @property
    def introspection_endpoint(self) -> str:
        return str(self.metadata["introspection_endpoint"])

    @property
    def revocation_endpoint(self) -> str:
        return str(self.metadata["revocation_endpoint"])

    @property
    def registration_endpoint(self) -> str:
        return str(self.metadata["registration_endpoint"])

    async def jwks(self) -> dict[str, Any]:
        """The server's public signing keys (a JWK Set)."""
        return dict(_answer(await self.http.get(self.jwks_uri), "JWKS"))

    async def token(
        self, data: Mapping[str, str], client: OAuthClient | None = None
    ) -> dict[str, Any]:
        """The token endpoint's answer to ``data``, sent as ``client`` (Basic auth if given)."""
        response = await self.http.post(
            self.token_endpoint,
            data=dict(data),
            auth=client.auth if client is not None else httpx2.USE_CLIENT_DEFAULT,
        )
        return dict(_answer(response, f"token request {dict(data)}"))

    async def client_credentials_token(
        self,
        resource: str,
        scopes: Iterable[str],
        *,
        ttl: int | None = None,
        client: OAuthClient | None = None,
    ) -> str:
        """A client credentials access token for ``resource``: a JWT, unless ``client`` is
        :attr:`opaque`. ``ttl`` (seconds) sets this token's life, e.g. short for expiry tests."""
        data = {"grant_type": "client_credentials", "resource": resource, "scope": " ".join(scopes)}
        if ttl is not None:
            data["ttl"] = str(ttl)
        answer = await self.token(data, client or self.machine)
        return str(answer["access_token"])

    async def opaque_token(
        self, scopes: Iterable[str], *, resource: str | None = None, ttl: int | None = None
    ) -> str:
        """An opaque client credentials token (for introspection), for ``resource`` or the
        first configured resource."""
        return await self.client_credentials_token(
            resource or self.resources[0], scopes, ttl=ttl, client=self.opaque
        )

    def authorization_url(
        self,
        resource: str,
        scopes: Iterable[str],
        *,
        code_challenge: str,
        state: str,
        redirect_uri: str = DEFAULT_REDIRECT_URI,
        client_id: str | None = None,
    ) -> str:
        """An authorization code request (PKCE S256) for ``resource``."""
        query = {
            "response_type": "code",
            "client_id": client_id or self.public.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(scopes),
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
            "resource": resource,
        }
        return f"{self.authorization_endpoint}?{urlencode(query)}"

    async def authorization_code_token(
        self,
        resource: str,
        scopes: Iterable[str],
        *,
        username: str = DEFAULT_USERNAME,
        redirect_uri: str = DEFAULT_REDIRECT_URI,
    ) -> str:
        """A user's JWT access token for ``resource``: the public client's authorization code
        flow with PKCE, ``username`` logging in and consenting headlessly (:func:`drive_login`)."""
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(16)
        url = self.authorization_url(
            resource, scopes, code_challenge=challenge, state=state, redirect_uri=redirect_uri
        )
        final = await drive_login(url, redirect_uri, username=username)
        answer = {key: values[0] for key, values in parse_qs(urlsplit(final).query).items()}
        assert "code" in answer, f"the authorization request failed: {final}"
        assert answer.get("state") == state, f"state mismatch in {final}"
        assert answer.get("iss") == self.issuer, f"iss mismatch in {final}"
        grant = await self.token(
            {
                "grant_type": "authorization_code",
                "client_id": self.public.client_id,
                "code": answer["code"],
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "resource": resource,
            }
        )
        return str(grant["access_token"])

    async def introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662 introspection of ``token``, asked by :attr:`resource_server`."""
        response = await self.http.post(
            self.introspection_endpoint, data={"token": token}, auth=self.resource_server.auth
        )
        return dict(_answer(response, "introspection"))

    async def revoke(self, token: str, client: OAuthClient | None = None) -> None:
        """RFC 7009 revocation of an opaque ``token`` (a JWT cannot be revoked) by ``client``.

        oidc-provider 8 lets only the client a token was issued to revoke it; by default that
        client is looked up by introspection among the static ones.
        """
        if client is None:
            introspected = await self.introspect(token)
            assert introspected["active"], "inactive (a JWT, expired, revoked): nothing to revoke"
            owner = introspected["client_id"]
            statics = (self.machine, self.opaque, self.resource_server, self.public)
            owners = [static for static in statics if static.client_id == owner]
            assert owners, f"a token of {owner!r}, not of a static client: pass its client"
            client = owners[0]
        data = {"token": token}
        if client.client_secret is None:
            data["client_id"] = client.client_id
        response = await self.http.post(
            self.revocation_endpoint,
            data=data,
            auth=client.auth if client.client_secret is not None else httpx2.USE_CLIENT_DEFAULT,
        )
        assert response.is_success, f"revocation: HTTP {response.status_code}: {response.text}"

    async def register_client(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """RFC 7591 dynamic registration (open: no initial access token); the client record."""
        response = await self.http.post(self.registration_endpoint, json=dict(metadata))
        return dict(_answer(response, "registration"))


class _Forms(HTMLParser):
    """The ``<form>`` elements of a page: action, method and their ``<input>`` elements."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, str, list[dict[str, str]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append((values.get("action", ""), values.get("method", "get"), []))
        elif tag == "input" and self.forms and "name" in values:
            self.forms[-1][2].append(values)
        elif tag == "button" and self.forms and "name" in values:  # mcpserve's consent page
            self.forms[-1][2].append({**values, "type": "button"})


def _filled(inputs: list[dict[str, str]], username: str, decision: str) -> dict[str, str]:
    """A form's fields: hidden ones as given, the username and a password typed in, and of
    named buttons the one whose value is ``decision`` (mcpserve's consent: allow or deny)."""
    fields: dict[str, str] = {}
    for element in inputs:
        kind = element.get("type", "text").lower()
        if kind == "button":
            if element.get("value") == decision:
                fields[element["name"]] = decision
            continue
        if kind == "password":
            fields[element["name"]] = "any password"
        elif kind in ("text", "email"):
            fields[element["name"]] = username
        elif kind in ("hidden", "submit"):
            fields[element["name"]] = element.get("value", "")
    return fields


def _lands_on(location: str, redirect_uri: str) -> bool:
    if not location.startswith(redirect_uri):
        return False
    rest = location[len(redirect_uri) :]
    return rest == "" or rest[0] in "?#"


async def drive_login(
    authorization_url: str,
    redirect_uri: str,
    *,
    username: str = DEFAULT_USERNAME,
    decision: str = "allow",
    pages: list[str] | None = None,
    browser: httpx2.AsyncClient | None = None,
) -> str:
    """The redirect back to the client, ``redirect_uri?code=...&state=...&iss=...``: what a
    browser would reach from ``authorization_url`` with ``username`` logging in and consenting.

    ``decision`` is the button pressed on mcpserve's own consent page; each page with a form
    is appended to ``pages``; ``browser`` is the user agent (its cookies kept between logins),
    by default a fresh one.

    Redirects are followed by hand, with a cookie jar of its own (a fresh user agent), until
    one points at ``redirect_uri``; no one needs to listen there. Each page with a form (login,
    then consent) is submitted filled in. An OAuth error sent back to the redirect URI is
    returned like a code; an error page of the server's fails the test, with its text. The
    whole walk is bounded by ``REQUEST_TIMEOUT``.
    """
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(asyncio.timeout(REQUEST_TIMEOUT))
        if browser is None:
            browser = await stack.enter_async_context(
                httpx2.AsyncClient(trust_env=False, timeout=REQUEST_TIMEOUT)
            )
        response = await browser.get(authorization_url)
        for _ in range(MAX_LOGIN_STEPS):
            if response.is_redirect:
                location = urljoin(str(response.url), response.headers["location"])
                if _lands_on(location, redirect_uri):
                    return location
                response = await browser.get(location)
                continue
            forms = _Forms()
            forms.feed(response.text)
            posted = [form for form in forms.forms if form[1].lower() == "post"]
            stopped = f"login stopped at {response.url}: HTTP {response.status_code}:\n"
            assert response.status_code == 200, stopped + response.text[-2000:]
            assert posted, stopped + "a page without a form to submit:\n" + response.text[-2000:]
            if pages is not None:
                pages.append(response.text)
            action, _, inputs = posted[0]
            response = await browser.post(
                urljoin(str(response.url), action), data=_filled(inputs, username, decision)
            )
    raise AssertionError(f"no redirect to {redirect_uri} after {MAX_LOGIN_STEPS} steps")


@dataclass
class _Node:
    """The node process, its stderr collected (for failure messages) while it runs."""

    process: asyncio.subprocess.Process
    stderr: bytearray = field(default_factory=bytearray)
    drain: asyncio.Task[None] | None = None

    async def collect_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr.extend(chunk)

    def tail(self) -> str:
        return self.stderr.decode(errors="replace")[-3000:]

    async def ready(self) -> str:
        """The issuer from the ``READY`` line; fails with stderr if it does not come in time."""
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(START_TIMEOUT):
                while line := await self.process.stdout.readline():
                    if line.startswith(b"READY "):
                        return line.decode().split()[1]
        except TimeoutError:
            _fail(f"oidc-provider was not ready within {START_TIMEOUT} s; stderr:\n{self.tail()}")
        with contextlib.suppress(TimeoutError):  # the exit status, and all of stderr
            await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
            if self.drain is not None:
                await asyncio.wait_for(asyncio.shield(self.drain), STOP_TIMEOUT)
        _fail(f"oidc-provider exited ({self.process.returncode}) before READY:\n{self.tail()}")

    async def stop(self) -> None:
        """Stdin closed (the script exits), then SIGTERM, then SIGKILL; each wait bounded."""
        if self.process.returncode is None and self.process.stdin is not None:
            with contextlib.suppress(Exception):
                self.process.stdin.close()
        for escalate in (self.process.terminate, self.process.kill, None):
            try:
                await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
                break
            except TimeoutError:
                if escalate is None:
                    message = f"oidc-provider (pid {self.process.pid}) would not exit"
                    raise AssertionError(message) from None
                with contextlib.suppress(ProcessLookupError):
                    escalate()
        if self.drain is not None:
            try:
                await asyncio.wait_for(self.drain, STOP_TIMEOUT)
            except TimeoutError:
                self.drain.cancel()


@contextlib.asynccontextmanager
async def authorization_server(
    resources: Sequence[str],
    scopes: Sequence[str],
    *,
    access_token_ttl: int = DEFAULT_TTL,
    port: int = 0,
    registration: bool = True,
    upstream: OAuthClient | None = None,
    upstream_redirect_uris: Sequence[str] = (),
) -> AsyncIterator[AuthorizationServer]:
    """A running oidc-provider issuing tokens for ``resources`` with ``scopes``; always
    stopped on the way out. ``port`` 0 lets it pick a free one. ``registration=False`` turns
    dynamic registration off (as GitHub and Google have it); ``upstream`` (a confidential
    client, credentials chosen by the caller) is registered with ``upstream_redirect_uris``."""
    assert resources, "an authorization server for no resource issues no useful token"
    node = await asyncio.to_thread(node_binary)
    installed = await asyncio.to_thread(install)  # the first time, npm ci: minutes at most
    clients = {
        "machine": OAuthClient("mcp-machine", secrets.token_urlsafe(24)),
        "opaque": OAuthClient("mcp-machine-opaque", secrets.token_urlsafe(24)),
        "resource_server": OAuthClient("mcp-resource-server", secrets.token_urlsafe(24)),
        "public": OAuthClient("mcp-public"),
    }
    redirects: dict[str, Any] = {}
    if upstream is not None:
        clients["upstream"] = upstream
        redirects["upstream"] = {"redirect_uris": list(upstream_redirect_uris)}
    config = {
        "port": port,
        "resources": list(resources),
        "scopes": list(scopes),
        "access_token_ttl": access_token_ttl,
        "registration": registration,
        "clients": {
            role: {
                "client_id": client.client_id,
                "client_secret": client.client_secret,
                **redirects.get(role, {}),
            }
            for role, client in clients.items()
        },
    }
    env = {key: value for key, value in os.environ.items() if not key.startswith("NODE_")}
    process = await asyncio.create_subprocess_exec(
        node,
        str(installed / SCRIPT),
        json.dumps(config),
        cwd=str(installed),
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    running = _Node(process)
    running.drain = asyncio.create_task(running.collect_stderr())
    try:
        issuer = await running.ready()
        async with httpx2.AsyncClient(trust_env=False, timeout=REQUEST_TIMEOUT) as http:
            discovery = await http.get(f"{issuer}/.well-known/openid-configuration")
            assert discovery.is_success, (
                f"discovery: HTTP {discovery.status_code}; stderr:\n{running.tail()}"
            )
            yield AuthorizationServer(
                issuer=issuer,
                metadata=discovery.json(),
                resources=tuple(resources),
                scopes=tuple(scopes),
                http=http,
                **clients,
            )
    finally:
        await running.stop()
