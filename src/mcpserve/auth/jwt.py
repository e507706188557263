"""Verifying JWT access tokens (RFC 9068) against the keys their issuer publishes.

:meth:`JWTVerifier.verify` works from cheap to dear, so that a hostile token costs little:

1. The cache: a token verified before, and still within its expiry, is answered from a
   dict lookup and one clock comparison, nothing else (this runs on every HTTP request).
2. Refusals without cryptography or the network: a token over :data:`MAX_TOKEN_LENGTH`,
   one that is not three base64url segments, a header that is not a JSON object, an
   ``alg`` outside the allow-list (which never holds ``none`` or an HMAC algorithm: the
   issuer's public keys are public, so an HMAC "signed" with one proves nothing), a
   ``crit`` header (no extension is understood here), a ``kid`` that is not a string.
   Header members that point at keys (``jku``, ``jwk``, ``x5u``) are ignored: keys come
   from the issuer, never from the token.
3. The key: the one the ``kid`` names in the issuer's set (:class:`.jwks.KeySet`, or the
   keys given outright, :class:`.jwks.PinnedKeys`, when nothing is to be fetched), and it
   must fit the algorithm (:meth:`.jwks.SigningKey.fits`), which defeats algorithm
   substitution: the header cannot have an RSA key used for PSS when the JWK says RS256,
   nor an EC key on another curve, nor any key as an HMAC secret.
4. The signature (PyJWT, given the key object and exactly the header's algorithm), then
   the claims, checked here so every refusal says what is wrong: ``iss`` is the issuer
   exactly; ``aud`` names this server once both are in canonical form
   (:func:`.resource_uri.canonical_resource`); ``exp`` is present and, like ``nbf`` and
   ``iat``, honoured with ``leeway`` seconds for clocks that disagree.

Every refusal is :class:`InvalidToken` with a fixed description that names no part of the
token, and nothing PyJWT raises on a hostile token escapes as anything else.

Revocation: a JWT cannot be revoked short of its issuer withdrawing the signing key; it is
valid until ``exp`` whether or not it is cached. The cache therefore changes nothing about
which tokens are accepted: it keeps an entry no longer than the token's own ``exp`` (and
``max_age``), and a key withdrawn from the set stops verifying new tokens at the next
refetch, while tokens already cached under it stay accepted until that bound.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import httpx2
import jwt
from jwt.types import Options

from .._types import JSONDict
from .jwks import SIGNING_ALGORITHMS, KeySet, PinnedKeys
from .resource_uri import audience_matches, canonical_audiences
from .tokens import (
    MAX_TOKEN_LENGTH,
    AccessToken,
    InvalidToken,
    TokenCache,
    parse_scopes,
    principal_of,
)

DEFAULT_ALGORITHMS = (
    *("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    *("ES256", "ES384", "ES512", "EdDSA"),
)

MALFORMED = "The access token is malformed"

# The compact serialization: base64url segments without padding. A ``none`` token has an
# empty signature, so that one may be empty here to be refused for its algorithm.
_COMPACT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")

# PyJWT checks the signature only; the claims are checked by _claims below.
_SIGNATURE_ONLY: Options = {
    "verify_signature": True,
    "verify_exp": False,
    "verify_nbf": False,
    "verify_iat": False,
    "verify_aud": False,
    "verify_iss": False,
    "verify_sub": False,
    "verify_jti": False,
    "enforce_minimum_key_length": True,  # a short RSA key refuses, rather than warns
}

_DEFAULT_CACHE: Any = object()  # "a cache of its own"; None is "no cache"


class JWTVerifier:
    """Verifies JWT access tokens from ``issuer`` for ``audience`` (see the module's text).

    ``audience`` is this server's resource URI (or several); with ``None`` the audience is
    not checked, and any token of the issuer is accepted, which is right only when the
    issuer issues tokens for this server alone. The keys come from ``jwks_url``, or from
    the ``jwks_uri`` of the issuer's metadata; ``keys_max_age`` and ``refresh_interval``
    are the :class:`.jwks.KeySet`'s. ``timeout`` bounds each fetch of the keys, in total.

    Or the keys are given, and nothing is fetched: ``jwks`` (a JWK Set document, or one
    JWK, as a dict) or ``public_key`` (a PEM public key), for a pinned key or a test's own::

        JWTVerifier("https://auth.example.com", "https://mcp.example.com/mcp",
                    public_key=Path("issuer-key.pem").read_text())
    """

    def __init__(
        self,
        issuer: str,
        audience: str | Sequence[str] | None = None,
        *,
        jwks_url: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        public_key: Any = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        cache: TokenCache | None = _DEFAULT_CACHE,
        timeout: float = 5.0,
        http: httpx2.AsyncClient | None = None,
        keys_max_age: float = 3600.0,
        refresh_interval: float = 30.0,
    ) -> None:
        unsupported = set(algorithms) - SIGNING_ALGORITHMS
        if unsupported or not algorithms:
            raise ValueError(f"algorithms must be some of {sorted(SIGNING_ALGORITHMS)}")
        self.issuer = issuer
        self.audience = audience
        self.algorithms = frozenset(algorithms)
        self.leeway = leeway
        self.cache = TokenCache() if cache is _DEFAULT_CACHE else cache
        sources = {"jwks_url": jwks_url, "jwks": jwks, "public_key": public_key}
        given = [name for name, value in sources.items() if value is not None]
        if len(given) > 1:
            raise ValueError(f"JWTVerifier takes one source of keys, not {' and '.join(given)}")
        self.keys: KeySet | PinnedKeys
        if jwks is not None or public_key is not None:
            self.keys = PinnedKeys(jwks, public_key=public_key)
        else:
            self.keys = KeySet(
                jwks_url,
                issuer=issuer,
                http=http,
                timeout=timeout,
                max_age=keys_max_age,
                refresh_interval=refresh_interval,
            )
        self._audiences = None if audience is None else canonical_audiences(audience)

    async def verify(self, token: str) -> AccessToken:
        """The token's meaning, or :class:`InvalidToken` / :class:`VerifierUnavailable`."""
        cache = self.cache
        if cache is not None and (hit := cache.get(token)) is not None:
            return hit
        header = self._header(token)
        alg: str = header["alg"]
        key = await self.keys.get(header.get("kid"))
        if not key.fits(alg):
            raise InvalidToken("The access token's algorithm does not match its signing key")
        try:
            claims = jwt.decode(token, key.jwk.key, algorithms=[alg], options=_SIGNATURE_ONLY)
        except jwt.InvalidSignatureError:
            raise InvalidToken("The access token's signature is invalid") from None
        except jwt.InvalidKeyError:
            raise InvalidToken("The access token's signing key is not acceptable") from None
        except Exception:  # anything else a hostile token makes the decoder raise
            raise InvalidToken(MALFORMED) from None
        expires_at = self._check_claims(claims)
        client_id = claims.get("client_id") or claims.get("azp")
        verified = AccessToken(
            principal_of(claims),
            parse_scopes(claims.get("scope", claims.get("scp"))),
            MappingProxyType(claims),  # one object serves every request that presents it
            client_id=client_id if isinstance(client_id, str) else None,
            expires_at=expires_at,
        )
        if cache is not None:
            cache.put(token, verified)
        return verified

    def _header(self, token: str) -> JSONDict:
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken("The access token is too long")
        if _COMPACT.fullmatch(token) is None:
            raise InvalidToken(MALFORMED)
        segment = token[: token.index(".")]
        try:
            header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
        except (binascii.Error, ValueError, RecursionError):
            raise InvalidToken(MALFORMED) from None
        if not isinstance(header, dict) or not isinstance(header.get("kid", ""), str):
            raise InvalidToken(MALFORMED)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken("The access token is signed with an algorithm not accepted here")
        if "crit" in header:
            raise InvalidToken("The access token requires an extension not supported here")
        return header

    def _check_claims(self, claims: Mapping[str, Any]) -> float:
        """The token's expiry, once its claims are found acceptable."""
        if claims.get("iss") != self.issuer:
            raise InvalidToken("The access token was not issued by the expected issuer")
        if self._audiences is not None and not audience_matches(claims.get("aud"), self._audiences):
            raise InvalidToken("The access token is not for this server")
        now, leeway = time.time(), self.leeway
        expires_at = _numeric_date(claims, "exp")
        if expires_at is None:
            raise InvalidToken("The access token does not say when it expires")
        if expires_at + leeway <= now:
            raise InvalidToken("The access token has expired")
        not_before = _numeric_date(claims, "nbf")
        if not_before is not None and not_before - leeway > now:
            raise InvalidToken("The access token is not valid yet")
        issued_at = _numeric_date(claims, "iat")
        if issued_at is not None and issued_at - leeway > now:
            raise InvalidToken("The access token was issued in the future")
        return expires_at

    async def aclose(self) -> None:
        """Close the HTTP client the key set made, if it made one."""
        await self.keys.aclose()


def _numeric_date(claims: Mapping[str, Any], name: str) -> float | None:
    """A NumericDate claim (seconds since the epoch, RFC 7519 section 2), if present."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(MALFORMED)
    try:
        seconds = float(value)
    except OverflowError:
        raise InvalidToken(MALFORMED) from None
    if not math.isfinite(seconds):
        raise InvalidToken(MALFORMED)
    return seconds
