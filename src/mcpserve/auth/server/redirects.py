"""Redirect URIs: which a client may register, and when a request's matches a registered one.

Registered URIs are HTTPS, or HTTP on the loopback interface for apps running on the user's
machine (the specification's security considerations; RFC 8252 §7.3 and §8.3). No
fragment (RFC 6749 §3.1.2), no user information, an absolute URI.

A request's ``redirect_uri`` matches a registered one exactly, string for string. The one
exception is RFC 8252 §7.3's: a loopback redirect may name any port, since a native app
listens on whichever port was free when it started; everything else (scheme, host, path,
query) must still be the same.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from .errors import AuthorizationError

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
#: A URI longer than this is refused before it is parsed.
MAX_LENGTH = 2048


def _loopback(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and "@" not in parts.netloc and parts.hostname in LOOPBACK_HOSTS


def check_registered(uri: object) -> str:
    """A redirect URI a client registers, or ``invalid_redirect_uri`` saying why not."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_LENGTH:
        raise AuthorizationError("invalid_redirect_uri", "a redirect URI must be a URI string")
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - parsing the port raises for a malformed one
    except ValueError:
        raise AuthorizationError("invalid_redirect_uri", f"{uri[:200]!r} is not a URI") from None
    shown = uri[:200]
    if parts.fragment or "#" in uri:
        raise AuthorizationError("invalid_redirect_uri", f"{shown!r} has a fragment")
    if "@" in parts.netloc:
        raise AuthorizationError("invalid_redirect_uri", f"{shown!r} carries user information")
    if not parts.hostname:
        raise AuthorizationError("invalid_redirect_uri", f"{shown!r} is not an absolute URI")
    if parts.scheme == "https" or _loopback(uri):
        return uri
    raise AuthorizationError(
        "invalid_redirect_uri", f"{shown!r} must be https, or http on the loopback interface"
    )


def matches(registered: str, presented: str) -> bool:
    """Whether a request's ``presented`` redirect URI is the ``registered`` one."""
    if presented == registered:
        return True
    if not (_loopback(registered) and _loopback(presented)):
        return False
    mine, theirs = urlsplit(registered), urlsplit(presented)
    try:
        theirs.port  # noqa: B018 - a malformed port is no match
    except ValueError:
        return False
    same = (mine.hostname, mine.path, mine.query) == (theirs.hostname, theirs.path, theirs.query)
    return same and not theirs.fragment
