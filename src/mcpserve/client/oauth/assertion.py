"""``private_key_jwt``: a client that proves who it is with a JWT signed by its own key.

RFC 7523 section 2.2 and OpenID Connect's ``private_key_jwt``: instead of a secret, each
token request carries ``client_assertion_type`` (``...:jwt-bearer``) and a short-lived
``client_assertion`` signed with the client's private key, whose public half the
authorization server knows (registered as a JWK or at a ``jwks_uri``). The assertion says
``iss`` and ``sub``: the client id; ``aud``: the authorization server's issuer identifier;
``iat``, ``exp`` (a minute later) and a fresh ``jti``, so a captured one cannot be replayed.

The key is a PEM (PKCS#8, or the traditional RSA/EC forms); the algorithm is the one its
type calls for unless given: ``RS256`` for RSA, ``ES256``/``ES384``/``ES512`` for the P-256,
P-384 and P-521 curves, ``EdDSA`` for Ed25519. Signing uses PyJWT (the ``auth`` extra).
The key is never written to a token storage, and never shown.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..._extras import needs_extra
from .errors import OAuthError

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: How long an assertion is valid for (seconds): long enough for one request.
LIFETIME_SECONDS = 60
_CURVES = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


class PrivateKeyJWT:
    """Signs the client assertions of one client key."""

    def __init__(
        self,
        private_key: str | bytes,
        *,
        algorithm: str | None = None,
        key_id: str | None = None,
    ) -> None:
        self._key = load_private_key(private_key, "private_key")
        self.algorithm = algorithm or algorithm_for(self._key)
        self.key_id = key_id

    def __repr__(self) -> str:  # never the key
        return f"PrivateKeyJWT(algorithm={self.algorithm!r}, key_id={self.key_id!r})"

    def assertion(self, client_id: str, audience: str) -> str:
        """A fresh ``client_assertion`` of ``client_id`` for the server ``audience``."""
        with needs_extra("private_key_jwt (a signed client assertion)", extra="auth"):
            import jwt
        now = int(time.time())
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + LIFETIME_SECONDS,
            "jti": os.urandom(16).hex(),
        }
        headers = {"kid": self.key_id} if self.key_id else None
        try:
            return jwt.encode(claims, self._key, algorithm=self.algorithm, headers=headers)
        except (NotImplementedError, TypeError, ValueError, jwt.PyJWTError) as exc:
            raise OAuthError(
                f"Cannot sign a client assertion with {self.algorithm}: {exc}"
            ) from None


def load_private_key(pem: str | bytes, option: str) -> Any:
    """The private key of an unencrypted PEM; ``ValueError`` naming ``option`` otherwise."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        return load_pem_private_key(pem.encode() if isinstance(pem, str) else pem, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{option} is not an unencrypted PEM private key: {exc}") from None


def algorithm_for(key: Any) -> str:
    """The JWS algorithm a private key's type calls for."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        algorithm = _CURVES.get(key.curve.name)
        if algorithm is not None:
            return algorithm
        raise ValueError(
            f"EC keys on {key.curve.name} have no JWS algorithm: use P-256, P-384 or P-521"
        )
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise ValueError(f"A {type(key).__name__} cannot sign JWTs: use an RSA, EC or Ed25519 key")
