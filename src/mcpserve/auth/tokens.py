"""What a verified access token says, and what every verifier promises.

A verifier turns the bearer token of one HTTP request into an :class:`AccessToken` or
refuses it. It raises :class:`InvalidToken` for anything the client should fix by getting
another token (401), and :class:`VerifierUnavailable` when it cannot decide at all because
what it depends on (the issuer's keys, the introspection endpoint) cannot be reached (503).
Neither exception's text names the token, a key or a claim's value: it is shown to the
client as the challenge's ``error_description``.

Verified tokens are kept in a :class:`TokenCache`, bounded in size and never past the
token's own expiry or ``max_age`` seconds: how long a revoked token can still be accepted.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ..protocol.records import Record

#: The longest token a verifier looks at. Real access tokens are a few kilobytes at most;
#: refusing longer ones before decoding anything bounds what a hostile one can cost.
MAX_TOKEN_LENGTH = 16 * 1024


class InvalidToken(Exception):
    """The token is not acceptable here: missing, malformed, expired, foreign (401)."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class VerifierUnavailable(Exception):
    """The verifier cannot decide, because what it needs cannot be had right now (503)."""

    def __init__(self, description: str, *, retry_after: int = 5) -> None:
        super().__init__(description)
        self.description = description
        self.retry_after = retry_after


class AccessToken(Record):
    """A verified token: who it was issued to, what it grants and until when.

    ``principal`` is the subject (``sub``), or the client itself (``client_id``) for a
    token issued to a machine; ``claims`` are all the token's claims as verified (for a
    JWT) or as the introspection endpoint described them.
    """

    __slots__ = ("claims", "client_id", "expires_at", "principal", "scopes")

    def __init__(
        self,
        principal: str | None,
        scopes: frozenset[str] = frozenset(),
        claims: Mapping[str, Any] | None = None,
        *,
        client_id: str | None = None,
        expires_at: float | None = None,
    ) -> None:
        self.principal = principal
        self.scopes = scopes
        self.claims: Mapping[str, Any] = claims if claims is not None else {}
        self.client_id = client_id
        self.expires_at = expires_at

    def __hash__(self) -> int:  # claims is a mapping: hash what identifies the token
        return hash((self.principal, self.scopes, self.client_id, self.expires_at))


class TokenVerifier(Protocol):
    """Anything that can verify a bearer token for this server."""

    async def verify(self, token: str) -> AccessToken:
        """The token's meaning, or :class:`InvalidToken` / :class:`VerifierUnavailable`."""
        ...


def parse_scopes(value: Any) -> frozenset[str]:
    """Scopes from a ``scope`` claim (space-separated string) or ``scp`` (string or list)."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list | tuple):
        return frozenset(item for item in value if isinstance(item, str) and item)
    return frozenset()


def principal_of(claims: Mapping[str, Any]) -> str | None:
    """``sub``, else ``client_id`` (a client credentials token names only its client)."""
    for name in ("sub", "client_id"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


class TokenCache:
    """Verified tokens by their text, at most ``max_entries``, each kept for at most
    ``max_age`` seconds and never past its own ``expires_at``."""

    def __init__(self, *, max_entries: int = 10_000, max_age: float = 300.0) -> None:
        self.max_entries = max_entries
        self.max_age = max_age
        self._entries: OrderedDict[str, tuple[float, AccessToken]] = OrderedDict()

    def get(self, token: str) -> AccessToken | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        if entry[0] <= time.time():
            del self._entries[token]
            return None
        return entry[1]

    def put(self, token: str, verified: AccessToken) -> None:
        if self.max_entries <= 0 or self.max_age <= 0:
            return
        until = time.time() + self.max_age
        if verified.expires_at is not None:
            until = min(until, verified.expires_at)
        self._entries[token] = (until, verified)
        self._entries.move_to_end(token)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def forget(self, tokens: Iterable[str] | None = None) -> None:
        """Drop the given tokens, or all of them."""
        if tokens is None:
            self._entries.clear()
            return
        for token in tokens:
            self._entries.pop(token, None)

    def __len__(self) -> int:
        return len(self._entries)
