"""What an OAuth client keeps: tokens per MCP server, client registrations per issuer.

:class:`Tokens` is one token endpoint answer, with what it was for (the resource, the
issuer, the scopes) so that it can be refreshed or replaced later without asking anyone.
:class:`TokenStorage` is where they are kept; :class:`MemoryTokenStorage` (the default)
keeps them for the life of the :class:`~.flow.OAuth` object, so every ``Client`` that shares
one shares its tokens. :class:`FileTokenStorage` keeps them in a JSON file (mode 0600), so a
command-line tool logs in once. A storage of your own (a keyring, a database) implements the
four methods; entries are plain dicts (``to_dict`` / ``from_dict``), the key of tokens is the
MCP endpoint's canonical URL and the key of a registration is the issuer.

Secrets never appear in a ``repr`` (so never in a log line or a traceback's locals).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..._types import JSONDict
from .assertion import PrivateKeyJWT

#: A token this close to its expiry is renewed before it is sent.
EXPIRY_LEEWAY = 30.0


@dataclass(frozen=True)
class Tokens:
    """An access token (and maybe a refresh token) for one MCP server."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    #: Seconds since the epoch; ``None``: the authorization server did not say.
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    #: The scopes granted (as the answer says, else as asked for); ``None``: none asked.
    scopes: tuple[str, ...] | None = None
    #: The scopes asked for (which the server may have granted only in part).
    requested_scopes: tuple[str, ...] | None = None
    #: The authorization server that issued them.
    issuer: str | None = None
    #: The ``resource`` they were asked for (exactly as the server publishes it).
    resource: str | None = None

    def expired(self, now: float | None = None, leeway: float = EXPIRY_LEEWAY) -> bool:
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - leeway

    def to_dict(self) -> JSONDict:
        entry: JSONDict = {"access_token": self.access_token, "token_type": self.token_type}
        for name in ("expires_at", "refresh_token", "issuer", "resource"):
            if getattr(self, name) is not None:
                entry[name] = getattr(self, name)
        for name in ("scopes", "requested_scopes"):
            if getattr(self, name) is not None:
                entry[name] = list(getattr(self, name))
        return entry

    @classmethod
    def from_dict(cls, entry: JSONDict) -> Tokens:
        return cls(
            access_token=str(entry["access_token"]),
            token_type=str(entry.get("token_type", "Bearer")),
            expires_at=_number(entry.get("expires_at")),
            refresh_token=_text(entry.get("refresh_token")),
            scopes=_scopes(entry.get("scopes")),
            requested_scopes=_scopes(entry.get("requested_scopes")),
            issuer=_text(entry.get("issuer")),
            resource=_text(entry.get("resource")),
        )

    def renewed(self, answer: Tokens) -> Tokens:
        """``answer`` to a refresh, keeping this refresh token if no new one came."""
        return replace(
            answer,
            refresh_token=answer.refresh_token or self.refresh_token,
            requested_scopes=self.requested_scopes,
        )


@dataclass(frozen=True)
class ClientRegistration:
    """A client identity at one authorization server."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    #: ``client_secret_basic``, ``client_secret_post``, ``private_key_jwt`` or ``none``;
    #: ``None``: choose.
    token_endpoint_auth_method: str | None = None
    redirect_uris: tuple[str, ...] = ()
    #: Seconds since the epoch the secret expires at (RFC 7591); ``None``: never.
    client_secret_expires_at: float | None = None
    #: Signs ``private_key_jwt`` assertions: held in memory only, never stored.
    client_assertion: PrivateKeyJWT | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> JSONDict:
        entry: JSONDict = {
            "client_id": self.client_id,
            "redirect_uris": list(self.redirect_uris),
        }
        for name in ("client_secret", "token_endpoint_auth_method", "client_secret_expires_at"):
            if getattr(self, name) is not None:
                entry[name] = getattr(self, name)
        return entry

    @classmethod
    def from_dict(cls, entry: JSONDict) -> ClientRegistration:
        uris = entry.get("redirect_uris")
        return cls(
            client_id=str(entry["client_id"]),
            client_secret=_text(entry.get("client_secret")),
            token_endpoint_auth_method=_text(entry.get("token_endpoint_auth_method")),
            redirect_uris=tuple(str(uri) for uri in uris) if isinstance(uris, list) else (),
            client_secret_expires_at=_number(entry.get("client_secret_expires_at")) or None,
        )


def _scopes(value: Any) -> tuple[str, ...] | None:
    return tuple(str(scope) for scope in value) if isinstance(value, list) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class TokenStorage(Protocol):
    """Where an OAuth client keeps its tokens and registrations. ``None`` saved: forget."""

    async def load_tokens(self, server: str) -> Tokens | None: ...
    async def save_tokens(self, server: str, tokens: Tokens | None) -> None: ...
    async def load_client(self, issuer: str) -> ClientRegistration | None: ...
    async def save_client(self, issuer: str, client: ClientRegistration | None) -> None: ...


class MemoryTokenStorage:
    """Tokens and registrations in this process, for as long as the object lives."""

    def __init__(self) -> None:
        self._tokens: dict[str, Tokens] = {}
        self._clients: dict[str, ClientRegistration] = {}

    async def load_tokens(self, server: str) -> Tokens | None:
        return self._tokens.get(server)

    async def save_tokens(self, server: str, tokens: Tokens | None) -> None:
        if tokens is None:
            self._tokens.pop(server, None)
        else:
            self._tokens[server] = tokens

    async def load_client(self, issuer: str) -> ClientRegistration | None:
        return self._clients.get(issuer)

    async def save_client(self, issuer: str, client: ClientRegistration | None) -> None:
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client


class FileTokenStorage:
    """Tokens and registrations in one JSON file, readable by its owner only (0600).

    Each change rewrites the file through a temporary one renamed into place, so a crash
    never leaves half a file. Meant for one process at a time (a command-line tool).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = asyncio.Lock()

    def _read(self) -> JSONDict:
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return {"tokens": {}, "clients": {}}
        if not isinstance(data, dict):
            return {"tokens": {}, "clients": {}}
        data.setdefault("tokens", {})
        data.setdefault("clients", {})
        return data

    def _write(self, data: JSONDict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staged = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(data, file, indent=2)
        staged.replace(self.path)

    async def _update(self, section: str, key: str, entry: JSONDict | None) -> None:
        async with self._lock:
            data = self._read()
            if entry is None:
                data[section].pop(key, None)
            else:
                data[section][key] = entry
            self._write(data)

    async def load_tokens(self, server: str) -> Tokens | None:
        entry = self._read()["tokens"].get(server)
        return Tokens.from_dict(entry) if isinstance(entry, dict) else None

    async def save_tokens(self, server: str, tokens: Tokens | None) -> None:
        await self._update("tokens", server, None if tokens is None else tokens.to_dict())

    async def load_client(self, issuer: str) -> ClientRegistration | None:
        entry = self._read()["clients"].get(issuer)
        return ClientRegistration.from_dict(entry) if isinstance(entry, dict) else None

    async def save_client(self, issuer: str, client: ClientRegistration | None) -> None:
        await self._update("clients", issuer, None if client is None else client.to_dict())
