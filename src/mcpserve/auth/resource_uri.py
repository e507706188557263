"""One spelling of a resource server's URI, so that an audience compares as the URI it names.

A token's audience names the server it was issued for: RFC 8707 has the client ask for a
token for the server's *canonical* URI, and the MCP authorization spec asks servers to
accept the spellings that mean the same URI, an uppercase scheme or host in particular.
:func:`canonical_resource` gives every such spelling one form, the one both sides of a
comparison are reduced to: scheme and host in lowercase, the scheme's default port dropped,
one trailing slash of the path dropped. Everything else (userinfo, path case, query) is
kept as written, and a value that is not a URL with a host (an audience such as ``my-api``
or ``urn:example:api``) comes back with only its scheme lowercased.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_resource(uri: str) -> str:
    """``uri`` in the one form every spelling of the same resource URI shares."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:  # an unparsable port or bracket: leave it to compare as written
        return uri
    scheme = parts.scheme.lower()
    netloc = parts.netloc
    if parts.hostname is not None:
        host = parts.hostname  # urlsplit lowercases it and drops the IPv6 brackets
        if ":" in host:
            host = f"[{host}]"
        userinfo = netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{host}" if "@" in netloc else host
        if port is not None and port != _DEFAULT_PORTS.get(scheme):
            netloc = f"{netloc}:{port}"
    path = parts.path[:-1] if parts.path.endswith("/") else parts.path
    return urlunsplit((scheme, netloc, path, parts.query, parts.fragment))


def canonical_audiences(audience: str | Iterable[str]) -> frozenset[str]:
    """The configured audience (one URI or several), each in canonical form."""
    values = [audience] if isinstance(audience, str) else list(audience)
    if not values or not all(isinstance(value, str) and value for value in values):
        raise ValueError("audience must be a non-empty string or a list of them")
    return frozenset(canonical_resource(value) for value in values)


def audience_matches(claim: Any, accepted: frozenset[str]) -> bool:
    """Whether an ``aud`` claim (a string or a list of strings) names an accepted audience.

    A claim of any other shape matches nothing: it is not an audience this server can read.
    """
    if isinstance(claim, str):
        return canonical_resource(claim) in accepted
    if isinstance(claim, list):
        return any(isinstance(item, str) and canonical_resource(item) in accepted for item in claim)
    return False
