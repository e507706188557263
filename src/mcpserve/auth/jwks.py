"""The issuer's signing keys: fetched, kept, refreshed on rotation, shared by concurrent requests.

A :class:`KeySet` holds the keys of one JWK Set (RFC 7517), from the ``jwks_uri`` it is
given or the one the issuer's metadata names (:mod:`.discovery`, looked up once). It is
fetched on first use and kept for ``max_age`` seconds; after that the next request fetches
it again, and if that fails the old set is not used: keys the issuer may have withdrawn
are not trusted indefinitely, so the verifier answers :class:`VerifierUnavailable`.

A token naming a ``kid`` the set lacks may mean the issuer rotated in a new key, so the set
is fetched again, but at most once per ``refresh_interval`` seconds after the last fetch
(the "cooldown" of other JOSE libraries): a flood of tokens with made-up ``kid`` values
costs the issuer one request per interval, not one each. If that refetch fails, the set in
hand is still young enough and keeps being served; a set that was fetched replaces the old
one whole, so a withdrawn key stops verifying as soon as the issuer stops publishing it.

Whatever the cause, one fetch at a time: a request needing the set while a fetch is under
way awaits that fetch rather than starting another (shielded, so a waiter that gives up,
say because its client went away, does not cancel the fetch for the others).

Only public signing keys are kept: a key whose ``use`` is not ``sig``, a symmetric
(``oct``) key, a key carrying private material, or one PyJWT cannot parse is skipped.

Keys can also be given outright (:class:`PinnedKeys`: a JWK Set or a PEM public key the
operator copied, or a test's own key pair): then nothing is fetched, ever, and the keys
never age.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx2
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from jwt import PyJWK
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from .._types import JSONDict
from ..protocol.records import Record
from .discovery import FetchFailed, discover, request_json
from .tokens import InvalidToken, VerifierUnavailable

logger = logging.getLogger("mcpserve.auth")

UNAVAILABLE = "The issuer's keys could not be fetched"

# What each algorithm may be verified with: the JWK's kty, and the curves it may be on.
_KEY_TYPES: dict[str, tuple[str, frozenset[str] | None]] = {
    **{f"{family}{bits}": ("RSA", None) for family in ("RS", "PS") for bits in (256, 384, 512)},
    "ES256": ("EC", frozenset({"P-256"})),
    "ES384": ("EC", frozenset({"P-384"})),
    "ES512": ("EC", frozenset({"P-521"})),
    "ES256K": ("EC", frozenset({"secp256k1"})),
    "EdDSA": ("OKP", frozenset({"Ed25519", "Ed448"})),
}

#: The algorithms a :class:`SigningKey` can verify: asymmetric ones only.
SIGNING_ALGORITHMS = frozenset(_KEY_TYPES)

# JWK members that only a private key has (RFC 7518 sections 6.2.2, 6.3.2 and RFC 8037).
_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth")


class SigningKey(Record):
    """One public key of the set: its JWK's ``kid``, ``kty``, ``crv`` and ``alg``, parsed."""

    __slots__ = ("alg", "crv", "jwk", "kid", "kty")

    def __init__(self, jwk: PyJWK, data: JSONDict) -> None:
        self.kid: str | None = jwk.key_id
        self.kty: str = data["kty"]
        self.crv: str | None = data.get("crv")
        self.alg: str | None = data.get("alg")
        self.jwk = jwk

    def fits(self, alg: str) -> bool:
        """Whether a signature made with ``alg`` may be checked with this key.

        The key's type must be the algorithm's (an RSA key for RS/PS, an EC key on the
        algorithm's curve for ES, an OKP key for EdDSA), and a JWK that names its ``alg``
        verifies that algorithm only: the header cannot choose another use of the key.
        """
        kind = _KEY_TYPES.get(alg)
        if kind is None or kind[0] != self.kty or (self.alg is not None and self.alg != alg):
            return False
        return kind[1] is None or self.crv in kind[1]


def parse_keys(document: Any) -> list[SigningKey]:
    """The public signing keys of a JWK Set document; :class:`FetchFailed` if it is not one."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise FetchFailed("the document is not a JWK Set")
    keys = []
    for data in document["keys"]:
        if (
            not isinstance(data, dict)
            or data.get("use", "sig") != "sig"
            or data.get("kty") in (None, "oct")
            or any(member in data for member in _PRIVATE_MEMBERS)
            or not isinstance(data.get("kid", ""), str)
        ):
            continue
        try:
            keys.append(SigningKey(PyJWK(data), data))
        except Exception:  # PyJWTError, or whatever odd member values make the parser raise
            continue  # a key this library cannot use; the others may still be fine
    return keys


class KeySet:
    """The signing keys of one issuer, as :meth:`get` finds them for each token."""

    def __init__(
        self,
        jwks_uri: str | None = None,
        *,
        issuer: str | None = None,
        http: httpx2.AsyncClient | None = None,
        timeout: float = 5.0,
        max_age: float = 3600.0,
        refresh_interval: float = 30.0,
    ) -> None:
        if jwks_uri is None and issuer is None:
            raise ValueError("KeySet needs a jwks_uri, or an issuer to discover it from")
        self.jwks_uri = jwks_uri
        self.issuer = issuer
        self.timeout = timeout
        self.max_age = max_age
        self.refresh_interval = refresh_interval
        self._http = http
        self._owns_http = http is None
        self._by_kid: dict[str, SigningKey] = {}
        self._keys: list[SigningKey] = []
        self._fetched_at: float | None = None  # monotonic time of the set in hand
        self._attempted_at = -float("inf")  # of the last fetch, whatever became of it
        self._fetching: asyncio.Task[None] | None = None

    async def get(self, kid: str | None) -> SigningKey:
        """The key a token's header names (by ``kid``, or the only key when it names none).

        :class:`InvalidToken` when the set has no such key, :class:`VerifierUnavailable`
        when there is no set young enough to answer from.
        """
        fetched_at = self._fetched_at
        now = time.monotonic()
        if fetched_at is None or now - fetched_at >= self.max_age:
            await self.refresh()
            fetched_at = self._fetched_at
            if fetched_at is None or time.monotonic() - fetched_at >= self.max_age:
                raise VerifierUnavailable(UNAVAILABLE)
        elif (
            kid is not None
            and kid not in self._by_kid
            and now - self._attempted_at >= self.refresh_interval
        ):
            await self.refresh()  # a failure leaves the set in hand, still young enough
        return _choose(self._keys, self._by_kid, kid)

    async def refresh(self) -> None:
        """Fetch the set now, or await the fetch already under way."""
        if self._fetching is None:
            self._fetching = asyncio.get_running_loop().create_task(self._fetch())
        await asyncio.shield(self._fetching)

    async def _fetch(self) -> None:
        self._attempted_at = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):  # discovery and keys together
                uri = await self._uri()
                document = await request_json(self._client(), "GET", uri)
            keys = parse_keys(document)
        except (FetchFailed, TimeoutError) as failure:
            source = self.jwks_uri or self.issuer
            logger.warning(
                "The keys at %s could not be fetched: %s",
                source,
                str(failure) or "no answer in time",
            )
            return
        finally:
            self._fetching = None
        self._keys, self._by_kid = keys, _by_kid(keys)
        self._fetched_at = time.monotonic()

    async def _uri(self) -> str:
        if self.jwks_uri is None:
            assert self.issuer is not None
            metadata = await discover(self.issuer, self._client())
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str) or not jwks_uri:
                raise FetchFailed("the issuer's metadata names no jwks_uri")
            self.jwks_uri = jwks_uri
        return self.jwks_uri

    def _client(self) -> httpx2.AsyncClient:
        if self._http is None:  # made on first use, inside the event loop that uses it
            self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(self.timeout))
        return self._http

    async def aclose(self) -> None:
        """Close the HTTP client, if this set made it."""
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None


class PinnedKeys:
    """Keys given up front, used as :class:`KeySet` uses fetched ones, with nothing fetched.

    ``jwks`` is a JWK Set document (``{"keys": [...]}``) or one JWK; ``public_key`` a PEM
    public key (text or bytes) or a ``cryptography`` public key object. A token naming a
    ``kid`` gets the key with that ``kid``, or, when exactly one key was given and it has
    none (a PEM has none), that key: a pinned key is the operator's choice, not a lookup.
    """

    def __init__(self, jwks: Mapping[str, Any] | None = None, *, public_key: Any = None) -> None:
        if (jwks is None) == (public_key is None):
            raise ValueError("PinnedKeys takes jwks= or public_key=, one of them")
        if jwks is not None:
            if not isinstance(jwks, Mapping):
                raise ValueError("jwks= must be a JWK Set ({'keys': [...]}) or one JWK, as a dict")
            document = dict(jwks) if "keys" in jwks else {"keys": [dict(jwks)]}
            try:
                self._keys = parse_keys(document)
            except FetchFailed:
                raise ValueError("jwks= must be a JWK Set ({'keys': [...]}) or one JWK") from None
            if not self._keys:
                raise ValueError(
                    "jwks= holds no public signing key (private, symmetric or unreadable "
                    "keys are left out): give the issuer's public keys"
                )
        else:
            self._keys = [_signing_key(public_key)]
        self._by_kid = _by_kid(self._keys)

    async def get(self, kid: str | None) -> SigningKey:
        """The key for a token's ``kid`` (see the class), or :class:`InvalidToken`."""
        if kid is not None and kid not in self._by_kid and len(self._keys) == 1:
            only = self._keys[0]
            if only.kid is None:
                return only
        return _choose(self._keys, self._by_kid, kid)

    async def aclose(self) -> None:
        """Nothing to close: nothing was opened."""


def _by_kid(keys: list[SigningKey]) -> dict[str, SigningKey]:
    by_kid: dict[str, SigningKey] = {}
    for key in keys:
        if key.kid is not None:
            by_kid.setdefault(key.kid, key)  # the first of a repeated kid, as published
    return by_kid


def _choose(keys: list[SigningKey], by_kid: dict[str, SigningKey], kid: str | None) -> SigningKey:
    if kid is None:
        if len(keys) == 1:
            return keys[0]
        if keys:
            raise InvalidToken("The access token does not name its signing key")
    elif (key := by_kid.get(kid)) is not None:
        return key
    raise InvalidToken("The access token is signed with a key the issuer does not publish")


def _signing_key(public_key: Any) -> SigningKey:
    """A PEM public key (or a ``cryptography`` public key object) as a :class:`SigningKey`."""
    key = public_key
    if isinstance(key, str | bytes):
        pem = key.encode() if isinstance(key, str) else key
        if b"PRIVATE KEY-----" in pem:
            raise ValueError("public_key= is a private key: give its public key instead")
        try:
            key = serialization.load_pem_public_key(pem)
        except ValueError:
            raise ValueError(
                "public_key= must be a PEM public key (-----BEGIN PUBLIC KEY-----...)"
            ) from None
    if isinstance(key, rsa.RSAPublicKey):
        data = RSAAlgorithm.to_jwk(key, as_dict=True)
    elif isinstance(key, ec.EllipticCurvePublicKey):
        data = ECAlgorithm.to_jwk(key, as_dict=True)
    elif isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        data = OKPAlgorithm.to_jwk(key, as_dict=True)
    else:
        raise ValueError(
            f"public_key= must be an RSA, EC or Ed25519/Ed448 public key, not {type(key).__name__}"
        )
    return SigningKey(PyJWK(data), data)
