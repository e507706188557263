"""PKCE (RFC 7636), S256 only: what an authorization request must carry, and the check of
the verifier a token request brings.

MCP requires PKCE and ``S256`` (the specification's security considerations); ``plain``
would hand the code's secret to whoever reads the authorization request, so a request
without a challenge, or with another method, is refused rather than served weaker.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

from .errors import AuthorizationError

#: A verifier: 43 to 128 of the unreserved characters (RFC 7636 §4.1).
_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
#: An S256 challenge: the base64url SHA-256 of a verifier, without padding: 43 characters.
_CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")


def challenge_of(verifier: str) -> str:
    """The S256 challenge of ``verifier``."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def check_challenge(method: object, challenge: object) -> str:
    """The challenge of an authorization request, or ``invalid_request`` saying why not."""
    if challenge is None:
        raise AuthorizationError("invalid_request", "code_challenge is required (PKCE, S256)")
    if method != "S256":
        raise AuthorizationError(
            "invalid_request", "code_challenge_method must be S256 (plain is not accepted)"
        )
    if not isinstance(challenge, str) or not _CHALLENGE.fullmatch(challenge):
        raise AuthorizationError("invalid_request", "code_challenge is not an S256 challenge")
    return challenge


def check_verifier(challenge: str, verifier: object) -> None:
    """A token request's ``code_verifier`` against the challenge its code was issued for:
    ``invalid_grant`` unless it is the one."""
    if not isinstance(verifier, str) or not _VERIFIER.fullmatch(verifier):
        raise AuthorizationError("invalid_grant", "code_verifier is missing or malformed")
    if not hmac.compare_digest(challenge_of(verifier), challenge):
        raise AuthorizationError("invalid_grant", "code_verifier does not match the challenge")
