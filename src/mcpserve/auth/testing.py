"""Access tokens for tests, with no authorization server: :class:`TestIssuer`.

A protected server is tested the way clients meet it: over HTTP, with a bearer token that
its real :class:`~mcpserve.auth.JWTVerifier` checks. What a test lacks is an issuer. A
``TestIssuer`` is one in memory: it makes an EC P-256 key pair when created (a few
milliseconds; the private key never leaves the object), signs ES256 JWT access tokens in
the shape authorization servers issue them (RFC 9068: ``iss``, ``sub``, ``aud``,
``scope``, ``client_id``, ``iat``, ``exp``, ``jti``, header ``typ: at+jwt`` and ``kid``),
and makes verifiers that trust its public key, given to them directly
(``JWTVerifier(jwks=...)``): nothing is fetched, there is no network at all. Tokens from
another ``TestIssuer`` do not verify, as tokens signed with another key would not.

It is reached as ``mcpserve.testing.TestIssuer``; it loads PyJWT (the ``auth`` extra) only
when used.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from .._types import JSONDict
from .jwt import JWTVerifier

#: The audience of tokens and verifiers unless one is given: a URL in the ``.test`` domain,
#: which no real server has (RFC 2606).
DEFAULT_AUDIENCE = "https://mcp.test/mcp"
DEFAULT_ISSUER = "https://issuer.test"


class TestIssuer:
    """Signs test access tokens and makes the verifier that accepts them.

    ::

        issuer = TestIssuer()
        server = Server("notes", auth=issuer.verifier())
        token = issuer.token(subject="ada", scopes=["notes:read"])
        # Client.http(url, headers={"Authorization": f"Bearer {token}"})

    ``issuer`` is the ``iss`` of its tokens; ``audience`` the ``aud`` of its tokens and of
    its verifiers unless they are given another.
    """

    # Named Test... for what it is; pytest must not take it for a class of tests when a
    # test module imports it.
    __test__ = False

    def __init__(self, issuer: str = DEFAULT_ISSUER, *, audience: str = DEFAULT_AUDIENCE) -> None:
        self.issuer = issuer
        self.audience = audience
        self._private_key = ec.generate_private_key(ec.SECP256R1())
        #: The ``kid`` of its key, in each token's header and in :attr:`jwks`.
        self.key_id = secrets.token_urlsafe(8)
        public = ECAlgorithm.to_jwk(self._private_key.public_key(), as_dict=True)
        #: Its public key as a JWK Set, as an authorization server publishes it.
        self.jwks: JSONDict = {
            "keys": [{**public, "kid": self.key_id, "use": "sig", "alg": "ES256"}]
        }

    def __repr__(self) -> str:
        return f"TestIssuer({self.issuer!r}, audience={self.audience!r})"

    def token(
        self,
        *,
        subject: str = "test-user",
        scopes: Iterable[str] | str = (),
        audience: str | list[str] | None = None,
        expires_in: float = 300,
        client_id: str = "test-client",
        claims: Mapping[str, Any] | None = None,
    ) -> str:
        """A signed access token (a compact JWT) for ``subject`` granting ``scopes`` (a list,
        or one space-separated string), for ``audience`` (default: the issuer's), valid for
        ``expires_in`` seconds from now.

        A negative ``expires_in`` makes an expired token; verifiers allow 30 s of clock skew
        by default (``leeway``), so go back further than that. ``claims`` are added to the
        token's, or replace them (``{"iss": "https://elsewhere.test"}``); a claim given as
        ``None`` is left out.
        """
        now = int(time.time())
        granted = scopes.split() if isinstance(scopes, str) else list(scopes)
        payload: JSONDict = {
            "iss": self.issuer,
            "sub": subject,
            "aud": self.audience if audience is None else audience,
            "client_id": client_id,
            "iat": now,
            "exp": now + int(expires_in),
            "jti": secrets.token_urlsafe(12),
        }
        if granted:
            payload["scope"] = " ".join(granted)
        payload.update(claims or {})
        payload = {name: value for name, value in payload.items() if value is not None}
        headers = {"kid": self.key_id, "typ": "at+jwt"}
        return jwt.encode(payload, self._private_key, algorithm="ES256", headers=headers)

    def verifier(self, audience: str | list[str] | None = None, **options: Any) -> JWTVerifier:
        """A :class:`~mcpserve.auth.JWTVerifier` that accepts this issuer's tokens for
        ``audience`` (default: the issuer's), its public key given directly (no fetching).
        ``options`` are the verifier's others (``leeway``, ``cache``, ``algorithms``)."""
        chosen = self.audience if audience is None else audience
        return JWTVerifier(self.issuer, chosen, jwks=self.jwks, **options)
