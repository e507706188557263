"""The token verifiers against a real issuer: an HTTP/1.1 server on 127.0.0.1, no mocks.

The issuer serves a JWK Set, metadata documents and an introspection endpoint from
:class:`Issuer`, a minimal responder on ``asyncio.start_server`` that records every request
(so a test can count what the verifier fetched) and answers each path from a table the
test sets. The keys are generated here (RSA 2048, EC P-256, Ed25519), the tokens signed
with PyJWT, or forged by hand where PyJWT would refuse to make them.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import socket
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple
from urllib.parse import parse_qs

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from mcpserve.auth.discovery import metadata_urls
from mcpserve.auth.introspection import IntrospectionVerifier
from mcpserve.auth.jwt import JWTVerifier
from mcpserve.auth.resource_uri import canonical_resource
from mcpserve.auth.tokens import AccessToken, InvalidToken, TokenCache, VerifierUnavailable

AUDIENCE = "https://mcp.example.com/mcp"
MALFORMED = "The access token is malformed"
ALGORITHM = "The access token is signed with an algorithm not accepted here"
UNPUBLISHED = "The access token is signed with a key the issuer does not publish"
MISMATCH = "The access token's algorithm does not match its signing key"
NO_KEYS = "The issuer's keys could not be fetched"
NOT_FOR_US = "The access token is not for this server"
EXPIRED = "The access token has expired"
CANNOT_ASK = "The access token could not be checked with the authorization server"


# -- the issuer -------------------------------------------------------------------------


class Seen(NamedTuple):
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Answer = tuple[int, Any]  # a status and a JSON-able body, or bytes sent as they are
Route = Answer | Callable[[Seen], Awaitable[Answer]]


class Issuer:
    """An HTTP/1.1 responder: one request per connection, answered from ``routes``."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def hits(self, path: str) -> int:
        return sum(seen.path == path for seen in self.seen)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, path, _ = head[0].split(" ", 2)
            fields = (line.partition(":") for line in head[1:] if line)
            headers = {name.lower(): value.strip() for name, _, value in fields}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            seen = Seen(method, path, headers, body)
            self.seen.append(seen)
            route = self.routes.get(path, (404, {"error": "not_found"}))
            status, content = route if isinstance(route, tuple) else await route(seen)
            payload = content if isinstance(content, bytes) else json.dumps(content).encode()
            writer.write(
                b"HTTP/1.1 %d Whatever\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                % (status, len(payload), payload)
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the verifier gave up on this request: that is what some tests are about
        finally:
            writer.close()
            self._handlers.discard(task)

    async def close(self) -> None:
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        self._server.close()
        await asyncio.wait_for(self._server.wait_closed(), 2)


@pytest.fixture
async def issuer(keys: Keys) -> AsyncIterator[Issuer]:
    server = Issuer()
    await server.start()
    server.routes["/jwks"] = (200, jwk_set(keys.rsa1, keys.ec, keys.ed))
    yield server
    await server.close()


def refused_port() -> int:
    """A port nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def slow(answer: Answer, seconds: float) -> Answer:
    await asyncio.sleep(seconds)
    return answer


# -- keys and tokens --------------------------------------------------------------------


class Keys(NamedTuple):
    rsa1: rsa.RSAPrivateKey
    rsa2: rsa.RSAPrivateKey
    ec: ec.EllipticCurvePrivateKey
    ed: ed25519.Ed25519PrivateKey


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys(
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec.generate_private_key(ec.SECP256R1()),
        ed25519.Ed25519PrivateKey.generate(),
    )


def jwk(private: Any, kid: str, **members: Any) -> dict[str, Any]:
    """The public JWK of ``private``, with ``kid`` and any other members given."""
    public = private.public_key()
    if isinstance(private, rsa.RSAPrivateKey):
        data = RSAAlgorithm.to_jwk(public, as_dict=True)
    elif isinstance(private, ec.EllipticCurvePrivateKey):
        data = ECAlgorithm.to_jwk(public, as_dict=True)
    else:
        data = OKPAlgorithm.to_jwk(public, as_dict=True)
    return {**data, "kid": kid, "use": "sig", **members}


def jwk_set(rsa1: Any, ec_key: Any, ed: Any, *more: dict[str, Any]) -> dict[str, Any]:
    """rsa-1 (no ``alg``: any RSA algorithm), ec-1 (``alg`` ES256), ed-1, and ``more``."""
    return {"keys": [jwk(rsa1, "rsa-1"), jwk(ec_key, "ec-1", alg="ES256"), jwk(ed, "ed-1"), *more]}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None = None) -> str:
    """A token PyJWT would not make: HMAC-signed with ``secret``, or unsigned."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    if secret is None:
        return signing_input + "."
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(signature)}"


class Tokens:
    """Claims for the issuer under test, and tokens signed with the test keys."""

    def __init__(self, keys: Keys, issuer: str) -> None:
        self.keys = keys
        self.issuer = issuer

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": "alice",
            "scope": "notes:read notes:write",
            "client_id": "notes-app",
            "iat": now,
            "exp": now + 300,
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def sign(self, alg: str = "RS256", kid: str | None = "rsa-1", **overrides: Any) -> str:
        key = {"RS": self.keys.rsa1, "PS": self.keys.rsa1, "ES": self.keys.ec}.get(alg[:2])
        headers = {} if kid is None else {"kid": kid}
        return jwt.encode(self.claims(**overrides), key or self.keys.ed, alg, headers=headers)


@pytest.fixture
def tokens(keys: Keys, issuer: Issuer) -> Tokens:
    return Tokens(keys, issuer.url)


@pytest.fixture
async def verifiers(issuer: Issuer) -> AsyncIterator[Callable[..., JWTVerifier]]:
    """``verifiers(**options)``: a JWTVerifier for the test issuer, closed at the end."""
    made: list[JWTVerifier] = []

    def make(**options: Any) -> JWTVerifier:
        options.setdefault("jwks_url", issuer.url + "/jwks")
        made.append(JWTVerifier(options.pop("issuer", issuer.url), AUDIENCE, **options))
        return made[-1]

    yield make
    for verifier in made:
        await verifier.aclose()


async def refused(verifier: Any, token: str) -> InvalidToken:
    with pytest.raises(InvalidToken) as caught:
        await verifier.verify(token)
    return caught.value


async def unavailable(verifier: Any, token: str) -> VerifierUnavailable:
    with pytest.raises(VerifierUnavailable) as caught:
        await verifier.verify(token)
    return caught.value


# -- JWTs: the good ones ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("alg", "kid"), [("RS256", "rsa-1"), ("PS256", "rsa-1"), ("ES256", "ec-1"), ("EdDSA", "ed-1")]
)
async def test_a_good_token_verifies(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier], alg: str, kid: str
) -> None:
    claims = tokens.claims()
    token = tokens.sign(alg, kid)
    verified = await verifiers().verify(token)
    assert verified == AccessToken(
        "alice",
        frozenset({"notes:read", "notes:write"}),
        claims,
        client_id="notes-app",
        expires_at=float(claims["exp"]),
    )


async def test_scp_and_azp_stand_for_scope_and_client_id(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    token = tokens.sign(scope=None, client_id=None, sub=None, scp=["a", "b"], azp="cli")
    verified = await verifiers().verify(token)
    assert (verified.principal, verified.scopes, verified.client_id) == (
        None,
        frozenset({"a", "b"}),
        "cli",
    )


@pytest.mark.parametrize(
    "aud",
    [
        "HTTPS://MCP.Example.COM/mcp/",
        "https://mcp.example.com:443/mcp",
        ["other", "https://mcp.example.com/mcp/"],
    ],
)
async def test_the_audience_compares_in_canonical_form(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier], aud: Any
) -> None:
    verified = await verifiers().verify(tokens.sign(aud=aud))
    assert verified.claims["aud"] == aud


async def test_expiry_within_the_leeway_is_accepted(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    exp = int(time.time()) - 10
    verified = await verifiers(leeway=30).verify(tokens.sign(exp=exp))
    assert verified.expires_at == exp


async def test_without_kid_the_only_key_is_used(
    issuer: Issuer, keys: Keys, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    issuer.routes["/jwks"] = (200, {"keys": [jwk(keys.rsa1, "rsa-1")]})
    assert (await verifiers().verify(tokens.sign(kid=None))).principal == "alice"


# -- JWTs: refused before any key is fetched --------------------------------------------


def _header_only(header: dict[str, Any]) -> Callable[[Tokens], str]:
    return lambda tokens: forge(header, tokens.claims(), b"x" * 32)


CHEAP_REFUSALS: list[tuple[str, Callable[[Tokens], str], str]] = [
    ("alg-none", lambda t: forge({"alg": "none", "kid": "rsa-1"}, t.claims()), ALGORITHM),
    ("alg-none-signed", lambda t: forge({"alg": "none"}, t.claims(), b"s" * 32), ALGORITHM),
    ("alg-None", lambda t: forge({"alg": "None"}, t.claims()), ALGORITHM),
    ("hs256-any-secret", lambda t: forge({"alg": "HS256"}, t.claims(), b"secret" * 8), ALGORITHM),
    (
        "hs256-rsa-public-pem",
        lambda t: forge(
            {"alg": "HS256", "kid": "rsa-1"},
            t.claims(),
            t.keys.rsa1.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo),
        ),
        ALGORITHM,
    ),
    ("no-alg", _header_only({"kid": "rsa-1"}), ALGORITHM),
    ("alg-not-a-string", _header_only({"alg": ["RS256"]}), ALGORITHM),
    (
        "crit",
        _header_only({"alg": "RS256", "kid": "rsa-1", "crit": ["exp"]}),
        "The access token requires an extension not supported here",
    ),
    ("kid-not-a-string", _header_only({"alg": "RS256", "kid": 7}), MALFORMED),
    ("header-not-an-object", lambda t: f"{b64url(b'[1]')}.{b64url(b'{}')}.c2ln", MALFORMED),
    ("header-not-json", lambda t: f"{b64url(b'{nope')}.{b64url(b'{}')}.c2ln", MALFORMED),
    ("header-not-utf8", lambda t: f"{b64url(bytes([0xFF, 0xFE]))}.{b64url(b'{}')}.c2ln", MALFORMED),
    ("abc", lambda t: "abc", MALFORMED),
    ("a.b.c", lambda t: "a.b.c", MALFORMED),
    ("not-base64", lambda t: "!!!.@@@.###", MALFORMED),
    ("padded", lambda t: t.sign().replace(".", "=.", 1), MALFORMED),
    ("four-segments", lambda t: t.sign() + ".e30", MALFORMED),
    ("empty", lambda t: "", MALFORMED),
    ("huge", lambda t: "a" * 1_000_000, "The access token is too long"),
]


@pytest.mark.parametrize(
    ("make", "description"), [c[1:] for c in CHEAP_REFUSALS], ids=[c[0] for c in CHEAP_REFUSALS]
)
async def test_refused_without_fetching_keys(
    issuer: Issuer,
    tokens: Tokens,
    verifiers: Callable[..., JWTVerifier],
    make: Callable[[Tokens], str],
    description: str,
) -> None:
    assert (await refused(verifiers(), make(tokens))).description == description
    assert issuer.seen == []


async def test_a_huge_token_is_refused_fast(verifiers: Callable[..., JWTVerifier]) -> None:
    verifier, token = verifiers(), "a." * 500_000
    started = time.perf_counter()
    for _ in range(1000):
        with pytest.raises(InvalidToken):
            await verifier.verify(token)
    assert time.perf_counter() - started < 0.2


@pytest.mark.parametrize("algorithms", [["HS256"], ["RS256", "HS512"], ["none"], []])
def test_no_hmac_or_none_algorithm_can_be_allowed(algorithms: list[str]) -> None:
    with pytest.raises(ValueError, match="algorithms must be some of"):
        JWTVerifier(
            "https://issuer.example", algorithms=algorithms, jwks_url="https://issuer.example/jwks"
        )


# -- JWTs: the key, the signature, the claims -------------------------------------------


async def test_a_key_must_fit_the_algorithm(
    issuer: Issuer, keys: Keys, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    issuer.routes["/jwks"] = (
        200,
        {"keys": [jwk(keys.rsa1, "pinned", alg="RS256"), jwk(keys.ec, "ec-1", alg="ES256")]},
    )
    verifier = verifiers()
    # A PS256 signature by the right key, refused: the JWK says this key is for RS256 only.
    assert (await refused(verifier, tokens.sign("PS256", "pinned"))).description == MISMATCH
    assert (await refused(verifier, tokens.sign("RS256", "ec-1"))).description == MISMATCH
    ec384 = jwt.encode(
        tokens.claims(), ec.generate_private_key(ec.SECP384R1()), "ES384", headers={"kid": "ec-1"}
    )
    assert (await refused(verifier, ec384)).description == MISMATCH


async def test_a_short_rsa_key_is_not_accepted(
    issuer: Issuer, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    issuer.routes["/jwks"] = (200, {"keys": [jwk(weak, "weak")]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyJWT warns about signing with a short key
        token = jwt.encode(tokens.claims(), weak, "RS256", headers={"kid": "weak"})
    description = (await refused(verifiers(), token)).description
    assert description == "The access token's signing key is not acceptable"


async def test_only_public_signing_keys_are_used(
    issuer: Issuer, keys: Keys, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    issuer.routes["/jwks"] = (
        200,
        jwk_set(
            keys.rsa1,
            keys.ec,
            keys.ed,
            jwk(keys.rsa2, "for-encryption", use="enc"),
            {"kty": "oct", "kid": "shared", "k": b64url(b"k" * 32)},
            {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"},
        ),
    )
    verifier = verifiers()
    signed_by_rsa2 = jwt.encode(
        tokens.claims(), keys.rsa2, "RS256", headers={"kid": "for-encryption"}
    )
    assert (await refused(verifier, signed_by_rsa2)).description == UNPUBLISHED
    assert (await refused(verifier, tokens.sign(kid="shared"))).description == UNPUBLISHED
    assert (await refused(verifier, tokens.sign(kid="broken"))).description == UNPUBLISHED
    assert (await verifier.verify(tokens.sign())).principal == "alice"


async def test_without_kid_among_several_keys_is_refused(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    description = (await refused(verifiers(), tokens.sign(kid=None))).description
    assert description == "The access token does not name its signing key"


async def test_a_bad_signature_is_refused(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    header, _, signature = tokens.sign().split(".")
    other_payload = tokens.sign(sub="mallory").split(".")[1]
    description = (await refused(verifiers(), f"{header}.{other_payload}.{signature}")).description
    assert description == "The access token's signature is invalid"


async def test_a_signed_payload_that_is_not_json_is_malformed(
    keys: Keys, verifiers: Callable[..., JWTVerifier]
) -> None:
    token = jwt.api_jws.PyJWS().encode(b"not json", keys.rsa1, "RS256", headers={"kid": "rsa-1"})
    assert (await refused(verifiers(), token)).description == MALFORMED


#: Two minutes after the moment the test runs (resolved then, not at collection).
IN_TWO_MINUTES = object()


@pytest.mark.parametrize(
    ("overrides", "description"),
    [
        ({"iss": "https://evil.example"}, "The access token was not issued by the expected issuer"),
        ({"iss": None}, "The access token was not issued by the expected issuer"),
        ({"aud": "https://other.example.com/mcp"}, NOT_FOR_US),
        ({"aud": ["https://other.example.com", "https://mcp.example.com/mcp/x"]}, NOT_FOR_US),
        ({"aud": None}, NOT_FOR_US),
        ({"aud": {"url": AUDIENCE}}, NOT_FOR_US),
        ({"exp": None}, "The access token does not say when it expires"),
        ({"exp": int(time.time()) - 31}, EXPIRED),
        ({"exp": "9999999999"}, MALFORMED),
        ({"exp": True}, MALFORMED),
        ({"exp": 10**400}, MALFORMED),
        ({"nbf": IN_TWO_MINUTES}, "The access token is not valid yet"),
        ({"iat": IN_TWO_MINUTES}, "The access token was issued in the future"),
    ],
)
async def test_claims_are_checked(
    tokens: Tokens,
    verifiers: Callable[..., JWTVerifier],
    overrides: dict[str, Any],
    description: str,
) -> None:
    # A time is read when the test runs, not when it was collected minutes before.
    claims = {
        name: int(time.time()) + 120 if value is IN_TWO_MINUTES else value
        for name, value in overrides.items()
    }
    assert (await refused(verifiers(leeway=30), tokens.sign(**claims))).description == description


def test_canonical_resource() -> None:
    assert canonical_resource("HTTPS://MCP.Example.COM:443/Mcp/") == "https://mcp.example.com/Mcp"
    assert canonical_resource("http://[::1]:80/") == "http://[::1]"
    assert canonical_resource("http://Host:8080/a?b=C") == "http://host:8080/a?b=C"
    assert canonical_resource("my-api") == "my-api"
    assert canonical_resource("http://host:bad/") == "http://host:bad/"


# -- JWTs: fetching, refetching and caching the keys ------------------------------------


async def test_rotation_refetches_once_per_interval(
    issuer: Issuer, keys: Keys, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    verifier = verifiers(refresh_interval=0.2)
    await verifier.verify(tokens.sign())
    assert issuer.hits("/jwks") == 1
    issuer.routes["/jwks"] = (200, {"keys": [jwk(keys.rsa1, "rsa-1"), jwk(keys.rsa2, "rsa-2")]})
    await asyncio.sleep(0.25)
    rotated = jwt.encode(tokens.claims(), keys.rsa2, "RS256", headers={"kid": "rsa-2"})
    assert (await verifier.verify(rotated)).principal == "alice"
    assert issuer.hits("/jwks") == 2
    # Within the interval an unknown kid is refused from the set in hand.
    assert (await refused(verifier, tokens.sign(kid="made-up"))).description == UNPUBLISHED
    assert issuer.hits("/jwks") == 2
    # The next refetch replaces the set: a key the issuer withdrew stops verifying.
    issuer.routes["/jwks"] = (200, {"keys": [jwk(keys.rsa2, "rsa-2")]})
    await asyncio.sleep(0.25)
    assert (await refused(verifier, tokens.sign(kid="made-up-too"))).description == UNPUBLISHED
    assert issuer.hits("/jwks") == 3
    assert (await refused(verifier, tokens.sign(jti="fresh"))).description == UNPUBLISHED


async def test_concurrent_fetches_are_one(
    issuer: Issuer, keys: Keys, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    async def jwks(seen: Seen) -> Answer:
        return await slow((200, jwk_set(keys.rsa1, keys.ec, keys.ed)), 0.1)

    issuer.routes["/jwks"] = jwks
    verifier = verifiers()
    results = await asyncio.gather(*(verifier.verify(tokens.sign(jti=str(n))) for n in range(20)))
    assert [result.claims["jti"] for result in results] == [str(n) for n in range(20)]
    assert issuer.hits("/jwks") == 1


async def test_a_failed_refetch_keeps_the_set_until_its_max_age(
    issuer: Issuer, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    verifier = verifiers(refresh_interval=0.1, keys_max_age=0.4)
    await verifier.verify(tokens.sign())
    issuer.routes["/jwks"] = (500, {})
    await asyncio.sleep(0.15)
    assert (await refused(verifier, tokens.sign(kid="rotated?"))).description == UNPUBLISHED
    assert issuer.hits("/jwks") == 2
    assert (await verifier.verify(tokens.sign(jti="still-good"))).principal == "alice"
    await asyncio.sleep(0.3)
    assert (await unavailable(verifier, tokens.sign(jti="too-old"))).description == NO_KEYS
    assert issuer.hits("/jwks") == 3


@pytest.mark.parametrize(
    "route",
    [
        (500, {"keys": []}),
        (404, {}),
        (200, b"not json"),
        (200, {"no": "keys"}),
        (200, [1]),
        (200, b"[" * 100_000),
    ],
)
async def test_keys_that_cannot_be_had(
    issuer: Issuer, tokens: Tokens, verifiers: Callable[..., JWTVerifier], route: Answer
) -> None:
    issuer.routes["/jwks"] = route
    error = await unavailable(verifiers(), tokens.sign())
    assert (error.description, error.retry_after) == (NO_KEYS, 5)


async def test_keys_from_a_host_that_refuses_connections(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    verifier = verifiers(jwks_url=f"http://127.0.0.1:{refused_port()}/jwks")
    assert (await unavailable(verifier, tokens.sign())).description == NO_KEYS


async def test_keys_from_a_slow_host_time_out(
    issuer: Issuer, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    async def jwks(seen: Seen) -> Answer:
        return await slow((200, {"keys": []}), 10)

    issuer.routes["/jwks"] = jwks
    started = time.monotonic()
    assert (await unavailable(verifiers(timeout=0.5), tokens.sign())).description == NO_KEYS
    assert 0.45 < time.monotonic() - started < 1.5


async def test_a_cache_hit_fetches_nothing(
    issuer: Issuer, tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    verifier = verifiers(keys_max_age=0.1)
    token = tokens.sign()
    first = await verifier.verify(token)
    await asyncio.sleep(0.15)  # the key set is stale now; the cached token needs none of it
    assert await verifier.verify(token) is first
    assert issuer.hits("/jwks") == 1
    started = time.perf_counter()
    for _ in range(10_000):
        await verifier.verify(token)
    assert time.perf_counter() - started < 0.2
    await verifier.verify(tokens.sign(jti="other"))
    assert issuer.hits("/jwks") == 2


async def test_a_token_is_not_cached_past_its_expiry(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    cache = TokenCache(max_age=60)
    verifier = verifiers(leeway=0, cache=cache)
    token = tokens.sign(exp=time.time() + 0.3)
    await verifier.verify(token)
    assert len(cache) == 1
    await asyncio.sleep(0.35)
    assert (await refused(verifier, token)).description == EXPIRED


async def test_without_a_cache_every_token_is_checked(
    tokens: Tokens, verifiers: Callable[..., JWTVerifier]
) -> None:
    verifier = verifiers(cache=None)
    token = tokens.sign()
    assert await verifier.verify(token) is not await verifier.verify(token)


# -- JWTs: keys given, nothing fetched --------------------------------------------------


def pem(private: Any) -> str:
    return (
        private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
    )


@pytest.mark.parametrize(("alg", "which"), [("RS256", "rsa1"), ("PS256", "rsa1"),
                                            ("ES256", "ec"), ("EdDSA", "ed")])  # fmt: skip
async def test_a_pinned_pem_public_key_verifies_whatever_kid_the_token_names(
    issuer: Issuer, keys: Keys, tokens: Tokens, alg: str, which: str
) -> None:
    verifier = JWTVerifier(issuer.url, AUDIENCE, public_key=pem(getattr(keys, which)))
    for kid in ("rsa-1", "ec-1", "ed-1", None):
        assert (await verifier.verify(tokens.sign(alg, kid, jti=f"{kid}"))).principal == "alice"
    assert issuer.seen == []  # nothing fetched: not the keys, not the metadata


async def test_a_pinned_key_object_verifies_and_another_keys_signature_is_refused(
    issuer: Issuer, keys: Keys, tokens: Tokens
) -> None:
    verifier = JWTVerifier(issuer.url, AUDIENCE, public_key=keys.rsa1.public_key())
    assert (await verifier.verify(tokens.sign())).principal == "alice"
    by_rsa2 = jwt.encode(tokens.claims(), keys.rsa2, "RS256", headers={"kid": "rsa-1"})
    description = (await refused(verifier, by_rsa2)).description
    assert description == "The access token's signature is invalid"
    assert (await refused(verifier, tokens.sign("ES256", "ec-1"))).description == MISMATCH
    assert issuer.seen == []


async def test_a_pinned_jwk_set_picks_keys_by_kid_and_never_fetches(
    issuer: Issuer, keys: Keys, tokens: Tokens
) -> None:
    verifier = JWTVerifier(issuer.url, AUDIENCE, jwks=jwk_set(keys.rsa1, keys.ec, keys.ed))
    for alg, kid in (("RS256", "rsa-1"), ("ES256", "ec-1"), ("EdDSA", "ed-1")):
        assert (await verifier.verify(tokens.sign(alg, kid))).principal == "alice"
    assert (await refused(verifier, tokens.sign(kid="rotated-in"))).description == UNPUBLISHED
    assert (await refused(verifier, tokens.sign(kid=None))).description == (
        "The access token does not name its signing key"
    )
    one = JWTVerifier(issuer.url, AUDIENCE, jwks=jwk(keys.ec, "ec-1", alg="ES256"))
    assert (await one.verify(tokens.sign("ES256", "ec-1"))).principal == "alice"
    assert (await refused(one, tokens.sign("ES256", "ec-2"))).description == UNPUBLISHED
    assert issuer.seen == []


def test_keys_given_wrongly_are_refused_with_what_to_do(keys: Keys) -> None:
    private_pem = keys.rsa1.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
    ).decode()
    private_jwk = {**jwk(keys.rsa1, "rsa-1"), "d": b64url(b"private")}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"jwks_url": "https://auth.example.com/jwks", "public_key": pem(keys.rsa1)},
         "JWTVerifier takes one source of keys, not jwks_url and public_key"),
        ({"public_key": private_pem},
         "public_key= is a private key: give its public key instead"),
        ({"public_key": "not a key"},
         r"public_key= must be a PEM public key \(-----BEGIN PUBLIC KEY-----...\)"),
        ({"public_key": 42}, "public_key= must be an RSA, EC or Ed25519/Ed448 public key, not int"),
        ({"jwks": {"keys": [private_jwk]}}, "jwks= holds no public signing key"),
        ({"jwks": {"keys": "none"}}, r"jwks= must be a JWK Set \({'keys': \[...\]}\) or one JWK"),
        ({"jwks": '{"keys": []}'}, "jwks= must be a JWK Set .* as a dict"),
    ]  # fmt: skip
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            JWTVerifier("https://auth.example.com", AUDIENCE, **options)


# -- JWTs: discovery --------------------------------------------------------------------


def test_metadata_addresses_in_order() -> None:
    assert metadata_urls("https://as.example/tenant/") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant",
        "https://as.example/.well-known/openid-configuration/tenant",
        "https://as.example/tenant/.well-known/openid-configuration",
    ]
    assert metadata_urls("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    "where",
    [
        "/.well-known/oauth-authorization-server/tenant",
        "/.well-known/openid-configuration/tenant",
        "/tenant/.well-known/openid-configuration",
    ],
)
async def test_keys_found_by_discovery(
    issuer: Issuer, keys: Keys, verifiers: Callable[..., JWTVerifier], where: str
) -> None:
    tenant = issuer.url + "/tenant"
    issuer.routes[where] = (200, {"issuer": tenant, "jwks_uri": issuer.url + "/jwks"})
    verifier = verifiers(issuer=tenant, jwks_url=None)
    for n in range(2):  # the second token needs no discovery
        verified = await verifier.verify(Tokens(keys, tenant).sign(jti=str(n)))
        assert verified.claims["iss"] == tenant
    tried = [seen.path for seen in issuer.seen]
    expected = [url.removeprefix(issuer.url) for url in metadata_urls(tenant)]
    assert tried == [*expected[: expected.index(where) + 1], "/jwks"]


async def test_metadata_for_another_issuer_is_not_used(
    issuer: Issuer, keys: Keys, verifiers: Callable[..., JWTVerifier]
) -> None:
    issuer.routes["/.well-known/oauth-authorization-server"] = (
        200,
        {"issuer": "https://evil.example", "jwks_uri": issuer.url + "/jwks"},
    )
    issuer.routes["/.well-known/openid-configuration"] = (200, {"issuer": issuer.url + "/"})
    verifier = verifiers(jwks_url=None)
    assert (await unavailable(verifier, Tokens(keys, issuer.url).sign())).description == NO_KEYS
    assert issuer.hits("/jwks") == 0
    assert len(issuer.seen) == 2


# -- introspection ----------------------------------------------------------------------

BASIC = "Basic " + base64.b64encode(b"mcp-server:p%40ss%3Aword+1").decode()


@pytest.fixture
def answers(issuer: Issuer) -> dict[str, Route]:
    """What the introspection endpoint answers, by token (inactive when not listed)."""
    table: dict[str, Route] = {}

    async def introspect(seen: Seen) -> Answer:
        form = parse_qs(seen.body.decode())
        if seen.headers.get("authorization") != BASIC or form.get("token_type_hint") != [
            "access_token"
        ]:
            return 401, {"error": "invalid_client"}
        route = table.get(form["token"][0], (200, {"active": False}))
        return route if isinstance(route, tuple) else await route(seen)

    issuer.routes["/introspect"] = introspect
    return table


@pytest.fixture
async def introspection(issuer: Issuer) -> AsyncIterator[Callable[..., IntrospectionVerifier]]:
    made: list[IntrospectionVerifier] = []

    def make(**options: Any) -> IntrospectionVerifier:
        options.setdefault("url", issuer.url + "/introspect")
        options.setdefault("audience", AUDIENCE)
        made.append(
            IntrospectionVerifier(client_id="mcp-server", client_secret="p@ss:word 1", **options)
        )
        return made[-1]

    yield make
    for verifier in made:
        await verifier.aclose()


def active(**members: Any) -> Answer:
    answer = {
        "active": True,
        "sub": "alice",
        "scope": "notes:read",
        "client_id": "notes-app",
        "aud": AUDIENCE,
    }
    answer.update(members)
    return 200, {name: value for name, value in answer.items() if value is not None}


async def test_an_active_token_verifies(
    issuer: Issuer, answers: dict[str, Route], introspection: Callable[..., IntrospectionVerifier]
) -> None:
    exp = int(time.time()) + 300
    answers["opaque-1"] = active(exp=exp, aud=["x", "HTTPS://MCP.EXAMPLE.COM/mcp/"])
    verified = await introspection().verify("opaque-1")
    assert verified == AccessToken(
        "alice",
        frozenset({"notes:read"}),
        active(exp=exp, aud=["x", "HTTPS://MCP.EXAMPLE.COM/mcp/"])[1],
        client_id="notes-app",
        expires_at=float(exp),
    )
    (seen,) = issuer.seen
    assert (seen.method, seen.headers["content-type"]) == (
        "POST",
        "application/x-www-form-urlencoded",
    )
    assert parse_qs(seen.body.decode()) == {
        "token": ["opaque-1"],
        "token_type_hint": ["access_token"],
    }


@pytest.mark.parametrize(
    ("answer", "description"),
    [
        ((200, {"active": False}), "The access token is not active"),
        ((200, {"active": "true", "aud": AUDIENCE}), "The access token is not active"),
        (active(exp=int(time.time()) - 5), EXPIRED),
        (active(aud="https://other.example/mcp"), NOT_FOR_US),
        (active(aud=None), NOT_FOR_US),
        (
            active(iss="https://evil.example"),
            "The access token was not issued by the expected issuer",
        ),
    ],
)
async def test_introspection_refusals(
    issuer: Issuer,
    answers: dict[str, Route],
    introspection: Callable[..., IntrospectionVerifier],
    answer: Answer,
    description: str,
) -> None:
    answers["t"] = answer
    assert (await refused(introspection(issuer=issuer.url), "t")).description == description


async def test_without_an_audience_any_aud_is_accepted(
    answers: dict[str, Route], introspection: Callable[..., IntrospectionVerifier]
) -> None:
    answers["t"] = active(aud="https://other.example/mcp")
    assert (await introspection(audience=None).verify("t")).principal == "alice"


@pytest.mark.parametrize(
    "answer", [(500, {"active": True}), (200, b"oops"), (200, [True]), active(exp="soon")]
)
async def test_an_endpoint_that_cannot_answer(
    answers: dict[str, Route], introspection: Callable[..., IntrospectionVerifier], answer: Answer
) -> None:
    answers["t"] = answer
    assert (await unavailable(introspection(), "t")).description == CANNOT_ASK


async def test_wrong_credentials_leave_the_verifier_unable_to_decide(
    issuer: Issuer, answers: dict[str, Route]
) -> None:
    answers["t"] = active()
    verifier = IntrospectionVerifier(issuer.url + "/introspect", "mcp-server", "wrong")
    try:
        assert (await unavailable(verifier, "t")).description == CANNOT_ASK
    finally:
        await verifier.aclose()


async def test_an_endpoint_that_refuses_connections(
    introspection: Callable[..., IntrospectionVerifier],
) -> None:
    verifier = introspection(url=f"http://127.0.0.1:{refused_port()}/introspect")
    assert (await unavailable(verifier, "t")).description == CANNOT_ASK


async def test_a_long_token_is_not_sent(
    issuer: Issuer, introspection: Callable[..., IntrospectionVerifier]
) -> None:
    assert (
        await refused(introspection(), "x" * 20_000)
    ).description == "The access token is too long"
    assert issuer.seen == []


async def test_the_cache_honours_max_age_and_exp(
    issuer: Issuer, answers: dict[str, Route], introspection: Callable[..., IntrospectionVerifier]
) -> None:
    answers["long"] = active(exp=int(time.time()) + 300)
    answers["short"] = active(exp=time.time() + 0.2)
    verifier = introspection(cache=TokenCache(max_age=0.4))
    for _ in range(3):
        await verifier.verify("long")
        await verifier.verify("short")
    assert issuer.hits("/introspect") == 2
    await asyncio.sleep(0.25)  # past short's exp, within max_age
    await verifier.verify("long")
    assert (await refused(verifier, "short")).description == EXPIRED
    assert issuer.hits("/introspect") == 3
    await asyncio.sleep(0.2)  # past max_age: a revoked "long" would be noticed now
    await verifier.verify("long")
    assert issuer.hits("/introspect") == 4


async def test_concurrent_verifications_of_one_token_are_one_request(
    issuer: Issuer, answers: dict[str, Route], introspection: Callable[..., IntrospectionVerifier]
) -> None:
    async def answer(seen: Seen) -> Answer:
        return await slow(active(), 0.1)

    answers["t"] = answer
    verifier = introspection()
    results = await asyncio.gather(*(verifier.verify("t") for _ in range(20)))
    assert all(result is results[0] for result in results)
    assert issuer.hits("/introspect") == 1


async def test_the_endpoint_found_by_discovery(
    issuer: Issuer, answers: dict[str, Route], introspection: Callable[..., IntrospectionVerifier]
) -> None:
    issuer.routes["/.well-known/oauth-authorization-server"] = (
        200,
        {"issuer": issuer.url, "introspection_endpoint": issuer.url + "/introspect"},
    )
    answers["t"] = active()
    answers["u"] = active(sub="bob")
    verifier = introspection(url=None, issuer=issuer.url)
    both = await asyncio.gather(verifier.verify("t"), verifier.verify("u"))
    assert [verified.principal for verified in both] == ["alice", "bob"]
    assert issuer.hits("/.well-known/oauth-authorization-server") == 1
    assert issuer.hits("/introspect") == 2
