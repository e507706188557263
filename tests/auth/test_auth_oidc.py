"""OAuth end to end: tokens of a real authorization server, checked by a real uvicorn process.

One oidc-provider (``oidc_server.py``) and one uvicorn process (``servers/oauth_server.py``,
several endpoints, one verifier each) serve the whole module, over real sockets on 127.0.0.1.
The MCP server's port is chosen first, because its endpoint URLs are the resource indicators
the authorization server is configured with; the authorization server is started next, and
the MCP server last, told the issuer and the resource server client's secret.

What the verifiers do with hostile tokens in detail is ``test_auth_verifiers.py`` (a tiny
local issuer, counting its requests): there the refetch of the keys for an unknown ``kid``
happens once per interval (``test_rotation_refetches_once_per_interval``) and ``nbf`` and
``iat`` are checked (``test_claims_are_checked``), so neither is repeated here. This module
proves the whole path: discovery against the real issuer, its real keys and tokens, the HTTP
answer of each refusal, and a server that keeps serving and logs no token.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hashlib
import hmac
import json
import re
import secrets
import select
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from jwt.algorithms import RSAAlgorithm

from oidc_server import AuthorizationServer, authorization_server
from wire_helpers import (
    ROOT,
    SERVERS,
    TIMEOUT,
    Reply,
    call,
    child_env,
    free_port,
    mcp_headers,
    post,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.subprocess, pytest.mark.node]

SERVER = SERVERS / "oauth_server.py"
READ, WRITE = "notes:read", "notes:write"
JWT, INTROSPECT, ELSEWHERE = "/jwt/mcp", "/introspect/mcp", "/elsewhere/mcp"
DOWN, SLOW, OTHER = "/down/mcp", "/slow/mcp", "/other/mcp"  # OTHER: issued for, not served
WELL_KNOWN = "/.well-known/oauth-protected-resource"
KEY_TIMEOUT = 1.0  # seconds, each key fetch of /down and /slow
CACHE_MAX_AGE = 1.5  # seconds a revoked opaque token is still accepted at /introspect
START_TIMEOUT = 30.0

ALGORITHM = "The access token is signed with an algorithm not accepted here"
BAD_SIGNATURE = "The access token's signature is invalid"
UNPUBLISHED = "The access token is signed with a key the issuer does not publish"
WRONG_ISSUER = "The access token was not issued by the expected issuer"
NOT_FOR_US = "The access token is not for this server"
EXPIRED = "The access token has expired"
MALFORMED = "The access token is malformed"
NOT_ACTIVE = "The access token is not active"
TOO_LONG = "The access token is too long"
NO_KEYS = "The issuer's keys could not be fetched"


# -- the deployment: one authorization server, one MCP server ----------------------------


@dataclass
class Deployment:
    oidc: AuthorizationServer
    base: str  # http://127.0.0.1:<port> of the MCP server
    http: httpx2.AsyncClient  # to the MCP server
    log: Path  # its stdout and stderr
    slow: socket.socket  # listens, never accepts
    good: str  # a client credentials JWT for /jwt/mcp with notes:read
    used: list[str] = field(default_factory=list)  # every token and secret sent anywhere

    def url(self, path: str) -> str:
        return self.base + path


def text_of(log: Path) -> str:
    return log.read_text()


@contextlib.asynccontextmanager
async def mcp_server(port: int, env: dict[str, str], log: Path) -> AsyncIterator[None]:
    """``servers/oauth_server.py`` on ``port``, logging to ``log``; always stopped."""
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SERVER),
            cwd=str(ROOT),
            env=child_env(MCPSERVE_TEST_HTTP_PORT=str(port), **env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert process.returncode is None, f"the MCP server exited:\n{text_of(log)}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"no listener:\n{text_of(log)}"
                await asyncio.sleep(0.05)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.wait_for(process.wait(), 10)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def deployed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Deployment]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    resources = [base + path for path in (JWT, INTROSPECT, ELSEWHERE, DOWN, SLOW, OTHER)]
    down_port = free_port()  # nothing listens there: connections are refused
    log = tmp_path_factory.mktemp("oauth") / "mcp-server.log"
    with socket.socket() as slow:
        # The kernel completes the handshake of a listening socket by itself, and takes the
        # request into its buffer: a host that accepts and never answers.
        slow.bind(("127.0.0.1", 0))
        slow.listen(16)
        async with authorization_server(resources, [READ, WRITE]) as oidc:
            env = {
                "MCPSERVE_TEST_ISSUER": oidc.issuer,
                "MCPSERVE_TEST_JWKS": oidc.jwks_uri,
                "MCPSERVE_TEST_INTROSPECTION_CLIENT": oidc.resource_server.client_id,
                "MCPSERVE_TEST_INTROSPECTION_SECRET": str(oidc.resource_server.client_secret),
                "MCPSERVE_TEST_CACHE_MAX_AGE": str(CACHE_MAX_AGE),
                "MCPSERVE_TEST_DOWN_JWKS": f"http://127.0.0.1:{down_port}/jwks",
                "MCPSERVE_TEST_SLOW_JWKS": f"http://127.0.0.1:{slow.getsockname()[1]}/jwks",
                "MCPSERVE_TEST_KEY_TIMEOUT": str(KEY_TIMEOUT),
            }
            async with (
                mcp_server(port, env, log),
                httpx2.AsyncClient(base_url=base, timeout=TIMEOUT, trust_env=False) as http,
            ):
                good = await oidc.client_credentials_token(base + JWT, [READ])
                yield Deployment(oidc, base, http, log, slow, good,
                                 [good, str(oidc.resource_server.client_secret)])  # fmt: skip


# -- asking the MCP server ---------------------------------------------------------------


async def ask(d: Deployment, path: str, token: str | None, tool: str = "whoami") -> Reply:
    """``tool`` called at ``path`` with ``token`` as the bearer token (none if ``None``)."""
    extra = {}
    if token is not None:
        d.used.append(token)
        extra["authorization"] = f"Bearer {token}"
    headers = mcp_headers("tools/call", tool, **extra)
    return await post(d.http, call(1, tool, {}), headers, path=path)


def challenge(d: Deployment, path: str, description: str) -> str:
    return (
        f'Bearer error="invalid_token", error_description="{description}", '
        f'resource_metadata="{d.base}{WELL_KNOWN}{path}", scope="{READ}"'
    )


def assert_refused(d: Deployment, reply: Reply, path: str, description: str) -> None:
    """A 401 with exactly the challenge and JSON-RPC error of ``description``."""
    assert reply.status == 401, (reply.status, reply.body[:300])
    assert reply.headers["www-authenticate"] == challenge(d, path, description)
    assert reply.error == {"code": -32600, "message": f"Unauthorized: {description}"}
    assert "id" not in reply.message


async def assert_serves(d: Deployment) -> None:
    """A good token is still answered, with its caller."""
    reply = await ask(d, JWT, d.good)
    assert reply.status == 200, (reply.status, reply.body[:300])
    assert reply.result["structuredContent"]["principal"] == d.oidc.machine.client_id


def unverified_claims(token: str) -> dict[str, Any]:
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


# -- JWTs: discovery, the caller, the audience -------------------------------------------


async def test_the_challenge_leads_a_client_from_the_mcp_url_to_the_real_issuer(
    deployed: Deployment,
) -> None:
    d = deployed
    reply = await ask(d, JWT, None)
    assert_refused(d, reply, JWT, "No access token was sent")
    found = re.search(r'resource_metadata="([^"]+)"', reply.headers["www-authenticate"])
    assert found is not None
    metadata = await d.http.get(found.group(1))
    assert metadata.status_code == 200
    assert metadata.json() == {
        "resource": d.url(JWT),
        "authorization_servers": [d.oidc.issuer],
        "bearer_methods_supported": ["header"],
        "scopes_supported": [READ],
    }
    issuer = await d.http.get(f"{d.oidc.issuer}/.well-known/oauth-authorization-server")
    assert (issuer.json()["issuer"], issuer.json()["jwks_uri"]) == (d.oidc.issuer, d.oidc.jwks_uri)


async def test_a_client_credentials_jwt_for_the_mcp_url_calls_a_tool_as_its_client(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.client_credentials_token(d.url(JWT), [READ, WRITE])
    reply = await ask(d, JWT, token)
    assert reply.status == 200
    assert reply.result["structuredContent"] == {
        "principal": d.oidc.machine.client_id,  # sub of a client credentials token
        "scopes": [READ, WRITE],
        "client_id": d.oidc.machine.client_id,
    }


async def test_an_authorization_code_jwt_calls_a_tool_as_the_user_who_logged_in(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.authorization_code_token(d.url(JWT), [READ], username="bob")
    reply = await ask(d, JWT, token)
    assert reply.status == 200
    assert reply.result["structuredContent"] == {
        "principal": "bob",
        "scopes": [READ],
        "client_id": d.oidc.public.client_id,
    }


async def test_a_jwt_minted_for_another_resource_is_refused_as_not_for_this_server(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.client_credentials_token(d.url(OTHER), [READ])
    assert unverified_claims(token)["aud"] == d.url(OTHER)
    assert_refused(d, await ask(d, JWT, token), JWT, NOT_FOR_US)
    await assert_serves(d)


# -- opaque tokens: introspection and revocation -----------------------------------------


async def test_an_opaque_token_is_accepted_by_introspection_as_its_client(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.opaque_token([READ, WRITE], resource=d.url(INTROSPECT))
    assert "." not in token
    reply = await ask(d, INTROSPECT, token)
    assert reply.status == 200
    assert reply.result["structuredContent"] == {
        "principal": d.oidc.opaque.client_id,  # no sub: the client_id names the caller
        "scopes": [READ, WRITE],
        "client_id": d.oidc.opaque.client_id,
    }


async def test_a_revoked_opaque_token_is_accepted_until_the_cache_max_age_then_refused(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.opaque_token([READ], resource=d.url(INTROSPECT))
    assert (await ask(d, INTROSPECT, token)).status == 200
    cached_by = time.time()  # the answer is cached before the response is sent
    await d.oidc.revoke(token)
    assert await d.oidc.introspect(token) == {"active": False}
    # Revoked at the issuer, still accepted from the cache: the bounded revocation delay.
    still = await ask(d, INTROSPECT, token)
    assert still.status == 200, (still.status, still.body[:300])
    assert still.result["structuredContent"]["principal"] == d.oidc.opaque.client_id
    await asyncio.sleep(max(0.0, cached_by + CACHE_MAX_AGE - time.time()) + 0.05)
    assert_refused(d, await ask(d, INTROSPECT, token), INTROSPECT, NOT_ACTIVE)


async def test_an_opaque_token_for_another_resource_is_refused_by_introspection(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.opaque_token([READ], resource=d.url(OTHER))
    assert (await d.oidc.introspect(token))["aud"] == d.url(OTHER)
    assert_refused(d, await ask(d, INTROSPECT, token), INTROSPECT, NOT_FOR_US)


# -- hostile tokens ----------------------------------------------------------------------


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None = None) -> str:
    """A JWS PyJWT would not make: HMAC-SHA256 with ``secret``, or unsigned."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    if secret is None:
        return signing_input + "."
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(signature)}"


@functools.cache
def own_key() -> rsa.RSAPrivateKey:
    """An RSA key of this test's, which the issuer never published."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


async def issuer_key(d: Deployment) -> dict[str, Any]:
    """The issuer's one published signing key (a JWK), as served by the issuer."""
    (key,) = (await d.oidc.jwks())["keys"]
    assert key["alg"] == "RS256"
    return dict(key)


async def real_claims(d: Deployment) -> dict[str, Any]:
    """The claims of a fresh real token for /jwt/mcp: only the signature will be wrong."""
    return unverified_claims(await d.oidc.client_credentials_token(d.url(JWT), [READ]))


async def alg_none(d: Deployment) -> tuple[str, str, str]:
    kid = (await issuer_key(d))["kid"]
    return JWT, forge({"alg": "none", "typ": "at+jwt", "kid": kid}, await real_claims(d)), ALGORITHM


async def hs256_with_the_public_key_pem(d: Deployment) -> tuple[str, str, str]:
    key = await issuer_key(d)
    public = RSAAlgorithm.from_jwk(json.dumps(key))
    assert isinstance(public, rsa.RSAPublicKey)
    pem = public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    header = {"alg": "HS256", "typ": "at+jwt", "kid": key["kid"]}
    return JWT, forge(header, await real_claims(d), pem), ALGORITHM


async def own_key_with_the_issuers_kid(d: Deployment) -> tuple[str, str, str]:
    headers = {"typ": "at+jwt", "kid": (await issuer_key(d))["kid"]}
    token = jwt.encode(await real_claims(d), own_key(), "RS256", headers=headers)
    return JWT, token, BAD_SIGNATURE


async def a_kid_the_issuer_does_not_publish(d: Deployment) -> tuple[str, str, str]:
    headers = {"typ": "at+jwt", "kid": "not-published-by-the-issuer"}
    token = jwt.encode(await real_claims(d), own_key(), "RS256", headers=headers)
    return JWT, token, UNPUBLISHED


async def a_real_token_where_another_issuer_is_trusted(d: Deployment) -> tuple[str, str, str]:
    # /elsewhere trusts another issuer but reads the real issuer's keys: the signature of a
    # real token verifies there, so what refuses it is its iss alone.
    return ELSEWHERE, await d.oidc.client_credentials_token(d.url(ELSEWHERE), [READ]), WRONG_ISSUER


async def expired(d: Deployment) -> tuple[str, str, str]:
    # /jwt/mcp verifies with leeway=0: past exp is expired at once.
    token = await d.oidc.client_credentials_token(d.url(JWT), [READ], ttl=1)
    expires_at = unverified_claims(token)["exp"]
    await asyncio.sleep(max(0.0, expires_at - time.time()) + 0.05)
    return JWT, token, EXPIRED


async def a_jwt_at_the_introspection_endpoint(d: Deployment) -> tuple[str, str, str]:
    # oidc-provider introspects opaque tokens only, and says a JWT is not active.
    return INTROSPECT, await d.oidc.client_credentials_token(d.url(INTROSPECT), [READ]), NOT_ACTIVE


async def abc(d: Deployment) -> tuple[str, str, str]:
    return JWT, "abc", MALFORMED


async def a_dot_b_dot_c(d: Deployment) -> tuple[str, str, str]:
    return JWT, "a.b.c", MALFORMED


HOSTILE: list[Callable[[Deployment], Awaitable[tuple[str, str, str]]]] = [
    alg_none,
    hs256_with_the_public_key_pem,
    own_key_with_the_issuers_kid,
    a_kid_the_issuer_does_not_publish,
    a_real_token_where_another_issuer_is_trusted,
    expired,
    a_jwt_at_the_introspection_endpoint,
    abc,
    a_dot_b_dot_c,
]


@pytest.mark.parametrize("make", HOSTILE, ids=[make.__name__ for make in HOSTILE])
async def test_a_hostile_token_is_a_401_saying_what_is_wrong_and_the_server_serves_on(
    deployed: Deployment, make: Callable[[Deployment], Awaitable[tuple[str, str, str]]]
) -> None:
    path, token, description = await make(deployed)
    assert_refused(deployed, await ask(deployed, path, token), path, description)
    await assert_serves(deployed)


async def test_a_megabyte_authorization_header_reaches_the_app_and_is_refused_as_too_long(
    deployed: Deployment,
) -> None:
    d = deployed
    # uvicorn's default parser here is httptools (llhttp), which puts no limit on a header's
    # size: the whole 1 MB value reaches the app, and the resource server refuses a token
    # over 16 KiB before any verifier sees it, 401 "too long". (With h11 uvicorn would answer
    # 400 itself: h11 refuses a request head over 16 KiB.) Pinned: the parser is httptools.
    stack = await ask(d, JWT, d.good, tool="stack")
    assert stack.result["structuredContent"] == {"http": "httptools"}
    huge = secrets.token_urlsafe(750_000)  # 1,000,000 token68 characters
    assert len(huge) == 1_000_000
    assert_refused(d, await ask(d, JWT, huge), JWT, TOO_LONG)
    await assert_serves(d)


# -- the issuer's keys cannot be had -----------------------------------------------------


def assert_unavailable(reply: Reply) -> None:
    assert reply.status == 503, (reply.status, reply.body[:300])
    assert reply.headers["retry-after"] == "5"
    assert "www-authenticate" not in reply.headers
    assert reply.error == {"code": -32603, "message": f"Service unavailable: {NO_KEYS}"}


async def test_keys_at_a_closed_port_answer_503_with_retry_after_within_the_timeout(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.client_credentials_token(d.url(DOWN), [READ])
    started = time.monotonic()
    reply = await ask(d, DOWN, token)
    elapsed = time.monotonic() - started
    assert_unavailable(reply)
    assert elapsed < KEY_TIMEOUT + 2, elapsed
    await assert_serves(d)


async def test_keys_from_a_host_that_never_answers_are_503_once_the_timeout_is_up(
    deployed: Deployment,
) -> None:
    d = deployed
    token = await d.oidc.client_credentials_token(d.url(SLOW), [READ])
    started = time.monotonic()
    reply = await ask(d, SLOW, token)
    elapsed = time.monotonic() - started
    assert_unavailable(reply)
    assert KEY_TIMEOUT * 0.9 < elapsed < KEY_TIMEOUT + 2, elapsed
    # The verifier did reach the host and ask: its request waits, unanswered, in the queue.
    readable, _, _ = select.select([d.slow], [], [], TIMEOUT)
    assert readable, "the verifier never connected to the silent host"
    connection, _ = d.slow.accept()
    with connection:
        connection.settimeout(TIMEOUT)
        assert connection.recv(65536).startswith(b"GET /jwks HTTP/1.1\r\n")
    await assert_serves(d)


# -- the server's log: last, once every token of the module has been sent ----------------


async def test_the_server_log_holds_no_token_and_no_traceback(deployed: Deployment) -> None:
    d = deployed
    await assert_serves(d)
    marker = f"/log-flushed-{secrets.token_hex(8)}"
    assert (await d.http.get(marker)).status_code == 404
    deadline = time.monotonic() + TIMEOUT
    while marker not in (log := text_of(d.log)):  # the access log line of the last request
        assert time.monotonic() < deadline, log[-3000:]
        await asyncio.sleep(0.05)
    assert '"POST /jwt/mcp HTTP/1.1" 200' in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    assert " 500 " not in log, log[-3000:]
    for secret in d.used:
        if len(secret) < 24:  # "abc", "a.b.c": too short to be told from other text
            continue
        for part in (secret[:20_000], secret[-24:]):  # the whole (or its head), and its tail
            assert part not in log, f"the log holds a token: ...{secret[-24:]}"
