"""The keys mcpserve signs its access tokens with, and the tokens it issues.

Every instance of a server must verify a token any other instance issued, so the signing
keys are shared; and a cluster already shares one secret, the ``requestState`` key ring
(``MCPSERVE_STATE_KEYS``, ``Server(state_keys=...)``). So the signing keys are *derived*
from it: for each key of the ring, HKDF-SHA256 (with a label of its own, so the signing
key never equals the sealing key) gives the 32-byte seed of an Ed25519 key pair. Same ring,
same keys, on every instance, with nothing new to configure.

Rotation follows the ring. The newest key (the ring's first) signs; every key of the ring
verifies, so a token signed before a rotation stays valid while its key is in the ring.
Each key's ``kid`` is its ring id with ``.sig`` after it: a token names the key that
checks it, and the public keys are a JWK Set (:attr:`SigningKeys.jwks`) that mcpserve's
own :class:`~mcpserve.auth.JWTVerifier` (and any other client of the metadata) reads.

Tokens are RFC 9068 access tokens (``typ: at+jwt``, ``iss``, ``sub``, ``aud``, ``scope``,
``client_id``, ``iat``, ``exp``, ``jti``), signed EdDSA, audience-bound to the one MCP
resource they are for.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence

import jwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from jwt.algorithms import OKPAlgorithm

from ..._types import JSONDict

#: What the derivation is for, so that one ring key gives different keys for each use.
_LABEL = b"mcpserve access token signing key (Ed25519), v1"
#: The suffix of a signing key's ``kid``: the ring key's id, then this.
KID_SUFFIX = ".sig"
ALGORITHM = "EdDSA"


def _derived(secret: bytes) -> Ed25519PrivateKey:
    seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_LABEL).derive(secret)
    return Ed25519PrivateKey.from_private_bytes(seed)


class SigningKeys:
    """Ed25519 keys derived from a key ring of ``(id, 32-byte secret)``, newest first."""

    def __init__(self, ring: Sequence[tuple[str, bytes]]) -> None:
        if not ring:
            raise ValueError("the key ring holds no keys")
        self._keys = [(f"{kid}{KID_SUFFIX}", _derived(secret)) for kid, secret in ring]
        keys = []
        for kid, key in self._keys:
            public = OKPAlgorithm.to_jwk(key.public_key(), as_dict=True)
            keys.append({**public, "kid": kid, "use": "sig", "alg": ALGORITHM})
        #: The public keys, as the JWK Set the authorization server publishes.
        self.jwks: JSONDict = {"keys": keys}

    @property
    def current_kid(self) -> str:
        """The ``kid`` of the key that signs now (the ring's newest)."""
        return self._keys[0][0]

    def sign(self, claims: JSONDict, *, token_type: str = "at+jwt") -> str:
        """``claims`` as a compact JWT signed with the newest key."""
        kid, key = self._keys[0]
        return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": kid, "typ": token_type})


class TokenIssuer:
    """Issues access tokens for one MCP resource (``audience``), as ``issuer``."""

    def __init__(
        self, keys: SigningKeys, *, issuer: str, audience: str, ttl_seconds: float = 3600.0
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.ttl_seconds = ttl_seconds

    def access_token(
        self,
        subject: str,
        scopes: Iterable[str],
        client_id: str,
        *,
        now: float | None = None,
        extra: JSONDict | None = None,
    ) -> str:
        """A token for ``subject`` (the user, as the identity provider names them) granting
        ``scopes`` to the client ``client_id``, valid :attr:`ttl_seconds` from ``now``, with
        ``extra`` claims (never in place of the registered ones)."""
        issued = int(time.time() if now is None else now)
        claims: JSONDict = {
            "iss": self.issuer,
            "sub": subject,
            "aud": self.audience,
            "client_id": client_id,
            "scope": " ".join(sorted(set(scopes))),
            "iat": issued,
            "exp": issued + int(self.ttl_seconds),
            "jti": secrets.token_urlsafe(16),
        }
        if extra:
            claims = {**extra, **claims}
        return self.keys.sign(claims)
