"""Short-lived records every instance of a server shares: a key-value store with expiry.

The authorization server keeps its registered clients, pending logins, codes, refresh
tokens, consents and upstream tokens here, and a cluster of instances behind a load
balancer completes any step of a login on any of them, so each operation is one atomic
step on the shared store, never a read followed by a write:

* :meth:`KeyValueStore.take` reads and deletes (an authorization code is used once,
  whichever instance is asked twice at the same moment);
* :meth:`KeyValueStore.add` writes only if the key is absent (a lock, a first use);
* :meth:`KeyValueStore.incr` counts within a window (a rate limit);
* :meth:`KeyValueStore.take_token` takes a token from a bucket that refills at a steady
  rate (a rate limit that allows bursts).

Every record has a life in seconds and is gone after it: nothing needs sweeping by hand.
Only :meth:`KeyValueStore.put` may keep a record without one (``ttl=None``), for state that
lasts until it is deleted (``ctx.store``: ``server/context/store.py``).

Three stores keep the same promises: :class:`MemoryKeyValue` (one process), Redis
(``backends/redis/keyvalue.py``: every instance) and SQLite (``backends/sqlite/keyvalue.py``:
every process on one machine). :func:`keyvalue_from_url` picks one by URL; Redis and SQLite
load only when named. A store that cannot be reached raises :class:`StoreUnavailable`;
what every store refuses alike (a ttl that is not a positive number of seconds up to ten
years, a value that is not bytes, ``incr`` of a key that holds no counter) is
``keyvalue_rules.py``.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

from .keyvalue_rules import StoreUnavailable as StoreUnavailable
from .keyvalue_rules import (
    bucket_record,
    bucket_state,
    check_bucket,
    check_life,
    check_ttl,
    check_value,
    counter_value,
    refill,
)


class KeyValueStore(Protocol):
    """Records of bytes under string keys, each living ``ttl`` seconds (positive)."""

    async def get(self, key: str) -> bytes | None:
        """The value, or None when absent or expired."""
        ...

    async def get_many(self, keys: list[str]) -> list[bytes | None]:
        """The values of ``keys``, in order, read in one step (one round trip)."""
        ...

    async def put(self, key: str, value: bytes, ttl: float | None) -> None:
        """Set ``key`` to ``value`` for ``ttl`` seconds (None: until deleted), replacing any
        value and its life."""
        ...

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        """Set ``key`` only if it is absent (or expired); whether it was set."""
        ...

    async def take(self, key: str) -> bytes | None:
        """The value, deleted in the same step: of two concurrent takes, one gets it."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key`` (nothing happens when it is absent)."""
        ...

    async def incr(self, key: str, ttl: float) -> int:
        """Add one to the counter at ``key`` and return it; a counter that did not exist
        starts at 1 and lives ``ttl`` seconds from then (later increments keep that end)."""
        ...

    async def take_token(self, key: str, rate: float, burst: float) -> float:
        """Take one token from the bucket at ``key``, which holds at most ``burst`` tokens
        and gains ``rate`` a second (a bucket that did not exist is full). 0.0 when a token
        was taken; else none was, and the seconds until one will be there. The bucket's
        record lives until it would be full again."""
        ...

    async def aclose(self) -> None:
        """Release connections; the store is not used afterwards."""
        ...


class MemoryKeyValue:
    """A :class:`KeyValueStore` in this process's memory: for one process, and tests.

    Expired records are dropped when read, and in a sweep once the store has grown by
    ``sweep_every`` writes, so records written and never read again do not pile up.
    """

    def __init__(self, *, sweep_every: int = 1024) -> None:
        self._records: dict[str, tuple[float, bytes]] = {}
        self._sweep_every = sweep_every
        self._writes = 0

    def _live(self, key: str) -> bytes | None:
        record = self._records.get(key)
        if record is None:
            return None
        if record[0] <= time.monotonic():
            del self._records[key]
            return None
        return record[1]

    def __len__(self) -> int:
        """How many records are held, expired ones not swept yet included."""
        return len(self._records)

    def _set(self, key: str, value: bytes, ttl: float | None) -> None:
        self._writes += 1
        if self._writes % self._sweep_every == 0:
            now = time.monotonic()
            for stale in [k for k, (until, _) in self._records.items() if until <= now]:
                del self._records[stale]
        self._records[key] = (math.inf if ttl is None else time.monotonic() + ttl, value)

    async def get(self, key: str) -> bytes | None:
        return self._live(key)

    async def get_many(self, keys: list[str]) -> list[bytes | None]:
        return [self._live(key) for key in keys]

    async def put(self, key: str, value: bytes, ttl: float | None) -> None:
        check_value(value)
        check_life(ttl)
        self._set(key, value, ttl)

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        check_value(value)
        check_ttl(ttl)
        if self._live(key) is not None:
            return False
        self._set(key, value, ttl)
        return True

    async def take(self, key: str) -> bytes | None:
        value = self._live(key)
        if value is not None:
            del self._records[key]
        return value

    async def delete(self, key: str) -> None:
        self._records.pop(key, None)

    async def incr(self, key: str, ttl: float) -> int:
        check_ttl(ttl)
        record = self._records.get(key)
        if record is None or record[0] <= time.monotonic():
            self._set(key, b"1", ttl)
            return 1
        count = counter_value(key, record[1]) + 1
        self._records[key] = (record[0], str(count).encode())
        return count

    async def take_token(self, key: str, rate: float, burst: float) -> float:
        check_bucket(rate, burst)
        now = time.monotonic()  # one process: its own clock serves
        raw = self._live(key)
        held = None if raw is None else bucket_state(key, raw)
        tokens, wait, life = refill(held, now, rate, burst)
        self._set(key, bucket_record(tokens, now), life)
        return wait

    async def aclose(self) -> None:
        self._records.clear()


def keyvalue_from_url(url: str, *, namespace: str) -> KeyValueStore:
    """The store a URL names: ``memory://``, ``sqlite:///path/to/file.db`` or
    ``redis://host:port/db`` (keys under ``namespace``)."""
    if url in ("", "memory://", "memory"):
        return MemoryKeyValue()
    if url.startswith("sqlite://"):
        from .sqlite.keyvalue import SQLiteKeyValue

        rest = url.removeprefix("sqlite://")  # sqlite:///relative.db, sqlite:////absolute.db
        if not rest.startswith("/") or len(rest) < 2:
            raise ValueError("sqlite:// needs a path: sqlite:///auth.db, sqlite:////var/auth.db")
        return SQLiteKeyValue(rest[1:], namespace=namespace)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis.keyvalue import RedisKeyValue

        return RedisKeyValue(url, namespace=namespace)
    raise ValueError(f"Unknown store {url[:60]!r}: use memory://, sqlite:///path or redis://")
