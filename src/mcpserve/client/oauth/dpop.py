"""DPoP (RFC 9449): access tokens bound to a key the client holds, proven on every request.

A client that uses DPoP holds a key pair (:class:`DPoPKey`; an ES256 key made for the
occasion unless one is given) and sends, with each token request and each request that
carries the token, a *proof*: a JWT it signs with that key, whose header names its type
(``dpop+jwt``), its algorithm and the public key (``jwk``, never the private parts), and
whose claims say which request it is for: ``htm`` (the method), ``htu`` (the URL without
query or fragment), ``iat`` (now), a fresh ``jti``, ``ath`` (the SHA-256 of the access
token, base64url) when it presents one, and ``nonce`` when the server gave one. The
authorization server binds the token to the key (``token_type`` ``DPoP``, the key's
thumbprint in the token), so a stolen token is useless without the key; the client presents
it as ``Authorization: DPoP <token>``. Building a proof is pure: :func:`proof_claims` and
:meth:`DPoPKey.proof` take the request and the time, nothing else.

**Nonces.** A server may insist that proofs carry a nonce of its choosing (sections 8 and
9): it refuses a proof without the current one, with ``400`` ``use_dpop_nonce`` at the
token endpoint or ``401`` and ``WWW-Authenticate: DPoP error="use_dpop_nonce"`` at the
resource, and names the nonce in a ``DPoP-Nonce`` header, which any answer may carry.
:class:`DPoPProofs` keeps the latest nonce of each server (by origin) and puts it in every
proof for that server; a request refused for its nonce is sent once more with the new
one, and a second such refusal ends the request (the server is not converging).

**When it is used** is the client's choice: DPoP is an extension, off unless the flow is
given ``dpop=`` (``docs/decisions.md``, "DPoP is the client's choice"). Signing uses PyJWT
(the ``auth`` extra), as client assertions do.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..._extras import needs_extra
from ..._types import JSONDict
from .assertion import algorithm_for, load_private_key
from .challenge import parse_challenges
from .errors import OAuthError

#: The answer of a server that wants a (new) nonce in the proof.
USE_NONCE = "use_dpop_nonce"
#: The members of each key type's JWK that its thumbprint covers (RFC 7638 section 3.2).
_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"),
                       "OKP": ("crv", "kty", "x")}  # fmt: skip


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def target_uri(url: str) -> str:
    """A request URL as a proof's ``htu`` names it: without query and fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def token_hash(access_token: str) -> str:
    """A proof's ``ath``: the base64url SHA-256 of the access token's ASCII bytes."""
    return _base64url(hashlib.sha256(access_token.encode("ascii")).digest())


def thumbprint(jwk: JSONDict) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (an authorization request's
    ``dpop_jkt``; what a DPoP-bound token's ``cnf.jkt`` holds)."""
    members = {name: jwk[name] for name in _THUMBPRINT_MEMBERS[str(jwk["kty"])]}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True)
    return _base64url(hashlib.sha256(canonical.encode()).digest())


def proof_claims(
    method: str,
    url: str,
    *,
    issued_at: int,
    unique_id: str,
    access_token: str | None = None,
    nonce: str | None = None,
) -> JSONDict:
    """The claims of the proof for one request (RFC 9449 section 4.2)."""
    claims: JSONDict = {
        "jti": unique_id,
        "htm": method.upper(),
        "htu": target_uri(url),
        "iat": issued_at,
    }
    if access_token is not None:
        claims["ath"] = token_hash(access_token)
    if nonce is not None:
        claims["nonce"] = nonce
    return claims


class DPoPKey:
    """The key a client proves its DPoP-bound tokens with.

    ::

        key = DPoPKey()                                     # a new ES256 (P-256) key
        key = DPoPKey(Path("dpop-key.pem").read_text())     # yours: RSA, EC or Ed25519

    A key made here lives as long as the object: tokens bound to it are useless to another
    process, so a program that keeps its tokens across runs (``FileTokenStorage``) gives
    its own key. ``algorithm`` defaults to the one the key's type calls for (``ES256`` for
    P-256, ``RS256`` for RSA, ...). The private key is never shown, stored or sent.
    """

    def __init__(
        self, private_key: str | bytes | None = None, *, algorithm: str | None = None
    ) -> None:
        if private_key is None:
            from cryptography.hazmat.primitives.asymmetric import ec

            self._key: Any = ec.generate_private_key(ec.SECP256R1())
        else:
            self._key = load_private_key(private_key, "The DPoP key")
        self.algorithm = algorithm or algorithm_for(self._key)
        with needs_extra("DPoP (signed proofs of possession)", extra="auth"):
            import jwt
        try:
            signer = jwt.get_algorithm_by_name(self.algorithm)
            public: JSONDict = signer.to_jwk(self._key.public_key(), as_dict=True)
        except (NotImplementedError, TypeError, ValueError, jwt.PyJWTError) as exc:
            raise ValueError(f"The DPoP key cannot sign {self.algorithm}: {exc}") from None
        #: The public key, as every proof's header carries it.
        self.jwk: JSONDict = {name: public[name] for name in _THUMBPRINT_MEMBERS[public["kty"]]}
        #: Its RFC 7638 thumbprint (``dpop_jkt``).
        self.thumbprint = thumbprint(self.jwk)

    def __repr__(self) -> str:  # never the key
        return f"DPoPKey(algorithm={self.algorithm!r}, thumbprint={self.thumbprint!r})"

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        now: float | None = None,
    ) -> str:
        """A fresh proof for one request (a new ``jti`` each time)."""
        import jwt

        claims = proof_claims(
            method,
            url,
            issued_at=int(time.time() if now is None else now),
            unique_id=secrets.token_urlsafe(18),
            access_token=access_token,
            nonce=nonce,
        )
        headers = {"typ": "dpop+jwt", "jwk": self.jwk}
        try:
            return jwt.encode(claims, self._key, algorithm=self.algorithm, headers=headers)
        except (NotImplementedError, TypeError, ValueError, jwt.PyJWTError) as exc:
            raise OAuthError(f"Cannot sign a DPoP proof with {self.algorithm}: {exc}") from None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def asks_for_nonce(status: int, answer: Any, challenges: Iterable[str]) -> bool:
    """Whether an answer refuses a proof for its nonce: a token endpoint's ``400``
    ``use_dpop_nonce``, or a resource's ``401`` with a DPoP challenge saying so."""
    if status == 400:
        return isinstance(answer, dict) and answer.get("error") == USE_NONCE
    if status != 401:
        return False
    return any(
        challenge.scheme == "dpop" and challenge.parameters.get("error") == USE_NONCE
        for header in challenges
        for challenge in parse_challenges(header)
    )


class DPoPProofs:
    """The proofs of one OAuth flow: its key, and the latest nonce each server gave."""

    def __init__(self, key: DPoPKey) -> None:
        self.key = key
        self._nonces: dict[str, str] = {}

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A proof for a request to ``url``, with the nonce its server last gave."""
        nonce = self._nonces.get(_origin(url))
        return self.key.proof(method, url, access_token=access_token, nonce=nonce)

    def remember(self, url: str, nonce: str | None) -> bool:
        """Keep the nonce an answer from ``url``'s server carried (its ``DPoP-Nonce``);
        whether it named one."""
        if not nonce:
            return False
        self._nonces[_origin(url)] = nonce
        return True

    def check_algorithms(self, issuer: str, supported: tuple[str, ...] | None) -> None:
        """Refuse an authorization server that says it cannot check this key's proofs."""
        if supported is not None and self.key.algorithm not in supported:
            raise OAuthError(
                f"The authorization server {issuer} accepts DPoP proofs signed with "
                f"{', '.join(supported) or 'no algorithm'}, not {self.key.algorithm}: give "
                "dpop= a DPoPKey of a key for one of those"
            )


def proofs_for(dpop: bool | DPoPKey) -> DPoPProofs | None:
    """What a flow's ``dpop=`` option asks for: no DPoP, a new key, or the key given."""
    if dpop is False:
        return None
    if dpop is True:
        return DPoPProofs(DPoPKey())
    if isinstance(dpop, DPoPKey):
        return DPoPProofs(dpop)
    raise ValueError(f"dpop= takes True, False or a DPoPKey, not {type(dpop).__name__}")
