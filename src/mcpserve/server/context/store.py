"""State that outlives a request: ``ctx.store``, a small async key-value namespace.

A 2026-07-28 request carries everything it needs, and the next one may land on another
instance, so what a server remembers between requests (a user's choices, a cursor, a
draft) lives in a store every instance reads: the server's key-value store
(``backends/keyvalue.py``), chosen by ``Server(store=...)`` (a store, or a URL:
``memory://``, ``sqlite:///path``, ``redis://host:port/db``), else the shared Redis when
``redis_url`` (or ``MCPSERVE_REDIS_URL``) is set, else this process's memory. It is made
on first use, so a server that never touches ``ctx.store`` never opens it.

Values are any JSON value, kept as orjson's bytes, at most :data:`MAX_VALUE_BYTES` each.
Each key is namespaced by its scope, so one tool's ``"theme"`` is one record per user:

* ``"principal"`` (``ctx.store``): the caller's principal (a token's ``sub``). A caller
  without one (stdio, HTTP without ``auth=``) is the ``anonymous`` principal: over stdio
  that is the one person who started the server; over open HTTP it is everybody.
* ``"session"`` (``ctx.store_for("session")``): a handshake-era session (HTTP's
  ``Mcp-Session-Id``; over stdio, the connection). A 2026-07-28 request belongs to no
  session, so it is refused there (-32603, whatever kind of handler asked) with a pointer
  to the alternatives, sent to the client: the mistake is the server's code, and hiding it
  behind an unnamed internal error would leave its author reading logs to find it.
* ``"server"`` (``ctx.store_for("server")``): one namespace every caller shares.

The store's own namespace is the server's name (Redis keys ``mcpserve:{<name>}:kv:state:...``),
so two servers on one Redis keep apart; ``docs/decisions.md``, "State that outlives a
request", records why the project's own store is used rather than a library's. When the
store cannot be reached, each operation raises :class:`StateStoreUnavailable`, a
:class:`~mcpserve.ToolError`: a tool's caller reads that it may try again shortly, and
the store's own log says once per outage what failed.
"""

from __future__ import annotations

import uuid
import weakref
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote

import orjson

from ..._types import JSONValue
from ...backends.keyvalue_rules import StoreUnavailable
from ...protocol.errors import InternalError, ToolError

if TYPE_CHECKING:
    from ...backends.keyvalue import KeyValueStore
    from ...protocol.core import Request

StoreScope = Literal["principal", "session", "server"]
SCOPES: tuple[StoreScope, ...] = ("principal", "session", "server")

#: The largest value kept, as JSON bytes: a store is for state, not for files.
MAX_VALUE_BYTES = 1_000_000
#: The longest key a handler may name (the scope's prefix comes on top).
MAX_KEY_CHARS = 512

#: The URLs whose store connects (and loads redis-py) when made: made on first use.
_CONNECTS = ("redis://", "rediss://", "unix://")

# A handshake-era session over stdio (or in memory) has no id on the wire: it gets one here,
# for as long as the session object lives.
_SESSION_IDS: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()


class StateStoreUnavailable(ToolError):
    """The store behind ``ctx.store`` cannot be reached; the operation may not have happened."""

    def __init__(self) -> None:
        super().__init__("The server's state store cannot be reached; try again shortly")


class StateStore:
    """One scope's records (``ctx.store``, ``ctx.store_for(...)``): JSON values by key.

    >>> await ctx.store.set("theme", {"dark": True})
    >>> await ctx.store.get("theme", default={})
    """

    __slots__ = ("_prefix", "_records", "scope")

    def __init__(self, records: KeyValueStore, scope: StoreScope, prefix: str) -> None:
        self._records = records
        self._prefix = prefix
        #: Which callers share these records: "principal", "session" or "server".
        self.scope = scope

    async def get(self, key: str, default: JSONValue = None) -> JSONValue:
        """The value at ``key``, or ``default`` when there is none (or it expired)."""
        try:
            raw = await self._records.get(self._key(key))
        except StoreUnavailable:
            raise StateStoreUnavailable() from None
        return default if raw is None else orjson.loads(raw)

    async def set(self, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Keep ``value`` (any JSON value) at ``key`` for ``ttl`` seconds (None: until
        deleted), replacing what was there."""
        try:
            raw = orjson.dumps(value)
        except TypeError as exc:  # orjson's JSONEncodeError
            raise TypeError(f"ctx.store keeps JSON values; {key[:60]!r}: {exc}") from None
        if len(raw) > MAX_VALUE_BYTES:
            raise ValueError(
                f"The value for {key[:60]!r} is {len(raw)} bytes of JSON; ctx.store keeps at "
                f"most {MAX_VALUE_BYTES}: keep large data elsewhere and store a reference"
            )
        try:
            await self._records.put(self._key(key), raw, ttl)
        except StoreUnavailable:
            raise StateStoreUnavailable() from None

    async def delete(self, key: str) -> None:
        """Forget ``key`` (nothing happens when there is nothing there)."""
        try:
            await self._records.delete(self._key(key))
        except StoreUnavailable:
            raise StateStoreUnavailable() from None

    def _key(self, key: str) -> str:
        if type(key) is not str or not key or len(key) > MAX_KEY_CHARS:
            raise ValueError(
                f"A ctx.store key is a non-empty string of at most {MAX_KEY_CHARS} characters, "
                f"not {key!r:.80}"
            )
        return self._prefix + key


class StateStores:
    """A server's ``ctx.store``: the key-value store, made on first use, and the scopes."""

    def __init__(self, chosen: KeyValueStore | str, *, namespace: str) -> None:
        self._chosen = chosen
        self._namespace = namespace
        self._records: KeyValueStore | None = None
        if isinstance(chosen, str) and not chosen.startswith(_CONNECTS):
            _ = self.records  # memory and SQLite cost nothing to make, and a bad URL fails now

    @property
    def records(self) -> KeyValueStore:
        """The key-value store (made from the URL now, on first use)."""
        if self._records is None:
            if isinstance(self._chosen, str):
                from ...backends.keyvalue import keyvalue_from_url

                self._records = keyvalue_from_url(self._chosen, namespace=self._namespace)
            else:
                self._records = self._chosen
        return self._records

    def scoped(self, request: Request, scope: StoreScope) -> StateStore:
        """The records of ``scope`` as seen by ``request``'s caller."""
        if scope == "principal":
            principal = request.auth.principal
            owner = "anonymous" if principal is None else "p:" + quote(principal, safe="")
            return StateStore(self.records, scope, f"state:principal:{owner}:")
        if scope == "server":
            return StateStore(self.records, scope, "state:server:")
        if scope == "session":
            return StateStore(self.records, scope, f"state:session:{_session_id(request)}:")
        raise ValueError(f"Unknown store scope {scope!r}: use one of {', '.join(SCOPES)}")

    async def aclose(self) -> None:
        """Release the store's connections, when it was made here from a URL (a store object
        given is its owner's to close; one in memory would forget its records)."""
        from ...backends.keyvalue import MemoryKeyValue

        records = self._records
        if isinstance(self._chosen, str) and not isinstance(records, MemoryKeyValue | None):
            self._records = None  # made again on next use: serving may start again
            await records.aclose()


def _session_id(request: Request) -> str:
    session = request.session
    if session is None:
        raise InternalError(
            'ctx.store_for("session") needs a handshake-era session, and a 2026-07-28 request '
            "belongs to no session: keep state per user (ctx.store), per "
            'server (ctx.store_for("server")), or under a handle your tool returns and takes '
            "as an argument"
        )
    if request.http is not None:
        for name, value in request.http.get("headers", ()):
            if name == b"mcp-session-id":
                return quote(value.decode("latin-1"), safe="")
    found = _SESSION_IDS.get(session)
    if found is None:
        found = _SESSION_IDS[session] = uuid.uuid4().hex
    return found
