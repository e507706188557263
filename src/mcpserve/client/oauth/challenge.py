"""``WWW-Authenticate`` challenges (RFC 7235 section 4.1), and the Bearer one's parameters.

A header holds one or more challenges, each a scheme followed by either a token68 or
comma-separated ``name=value`` parameters (values are tokens or quoted strings); a response
may also carry several such headers. The grammar is ambiguous only at a comma: what follows
is another parameter when it reads ``name=``, and otherwise a new challenge. Parsing never
fails: what cannot be read is skipped, so a malformed header gives fewer parameters, never
an exception.

:func:`bearer_challenge` picks the first ``Bearer`` challenge, or ``DPoP`` one (RFC 9449:
the same parameters; schemes compare case insensitively, parameter names too), and reads
what an MCP client acts on:
``resource_metadata`` (RFC 9728 section 5.1), ``scope`` (RFC 6750 section 3, space
separated), ``error`` and ``error_description``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_PARAMETER = re.compile(r"([!#$%&'*+\-.^_`|~0-9A-Za-z]+)[ \t]*=[ \t]*")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SPACE = re.compile(r"[ \t]*")
_SEPARATORS = re.compile(r"[ \t,]*")


@dataclass(frozen=True)
class Challenge:
    """One challenge: its scheme (lower-cased) and parameters (names lower-cased)."""

    scheme: str
    parameters: dict[str, str]


@dataclass(frozen=True)
class BearerChallenge:
    """What a ``Bearer`` challenge asks of an OAuth client."""

    error: str | None = None
    error_description: str | None = None
    #: The scopes the operation needs, in the server's order; ``None`` when not said.
    scope: tuple[str, ...] | None = None
    resource_metadata: str | None = None


def parse_challenges(header: str) -> list[Challenge]:
    """Every challenge of one ``WWW-Authenticate`` header value, in order."""
    challenges: list[Challenge] = []
    position = 0
    length = len(header)
    while position < length:
        position = _SEPARATORS.match(header, position).end()  # type: ignore[union-attr]
        scheme = _TOKEN.match(header, position)
        if scheme is None:
            position = _skip_to_comma(header, position)
            continue
        position = _SPACE.match(header, scheme.end()).end()  # type: ignore[union-attr]
        parameters: dict[str, str] = {}
        token68 = _TOKEN68.match(header, position)
        if token68 is not None and _PARAMETER.match(header, position) is None:
            position = token68.end()  # a token68 credential hint: nothing to read in it
        else:
            position = _read_parameters(header, position, parameters)
        challenges.append(Challenge(scheme.group().lower(), parameters))
    return challenges


def _read_parameters(header: str, position: int, into: dict[str, str]) -> int:
    while True:
        parameter = _PARAMETER.match(header, position)
        if parameter is None:
            return position
        position = parameter.end()
        quoted = _QUOTED.match(header, position)
        if quoted is not None:
            value = re.sub(r"\\(.)", r"\1", quoted.group(1))
            position = quoted.end()
        else:
            token = _TOKEN.match(header, position)
            value = token.group() if token is not None else ""
            position = token.end() if token is not None else position
        into.setdefault(parameter.group(1).lower(), value)  # RFC 7235: each name once
        after = _SEPARATORS.match(header, position).end()  # type: ignore[union-attr]
        if after == position or "," not in header[position:after]:
            return _skip_to_comma(header, position) if after < len(header) else after
        if _PARAMETER.match(header, after) is None:
            return after  # a new challenge starts here
        position = after


def _skip_to_comma(header: str, position: int) -> int:
    comma = header.find(",", position)
    return len(header) if comma < 0 else comma + 1


def bearer_challenge(headers: Iterable[str], prefer: str = "bearer") -> BearerChallenge:
    """The first challenge of the scheme ``prefer`` (``bearer`` or ``dpop``) among
    ``WWW-Authenticate`` header values, else the first of the other (an empty one when
    there is neither): a DPoP challenge carries the same parameters (RFC 9449 section
    7.1), and a server names its error in the challenge of the scheme the token was sent
    with."""
    found: dict[str, dict[str, str]] = {}
    for header in headers:
        for challenge in parse_challenges(header):
            if challenge.scheme in ("bearer", "dpop"):
                found.setdefault(challenge.scheme, challenge.parameters)
    parameters = found[prefer] if prefer in found else next(iter(found.values()), None)
    if parameters is None:
        return BearerChallenge()
    scope = parameters.get("scope")
    return BearerChallenge(
        error=parameters.get("error") or None,
        error_description=parameters.get("error_description") or None,
        scope=tuple(scope.split()) if scope is not None else None,
        resource_metadata=parameters.get("resource_metadata") or None,
    )
