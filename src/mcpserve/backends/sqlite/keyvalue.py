"""The key-value store in a SQLite file, so that every process on the machine that opens the
file shares its records (several server processes behind one port, or a restart).

One table, ``keyvalue``: the namespace and the key (together the primary key, so stores of
two namespaces in one file never see each other's records), the value as a BLOB (bytes
come back as they went in, ``b""`` included), and when the record expires, in wall-clock
seconds (``time.time()``: every process reads the same clock, where each process's
monotonic clock starts anywhere; a record put without a life expires at infinity, which
SQLite keeps as a REAL like any other). The file is in WAL mode with ``synchronous=FULL``:
readers never wait for the writer, and a record exists on disk once the call that wrote
or took it returns, so a code taken once stays taken after a crash. The file may hold
the task store's table too.

sqlite3 blocks, so every operation is one function run on the store's own thread (a
single-thread executor, which also serializes the one connection): the event loop never
waits on the disk, and an operation whose caller is cancelled still ends its transaction.
A read is one ``SELECT``. Every write that depends on what is there (``add``, ``take``,
``incr``, ``take_token``) is one ``BEGIN IMMEDIATE`` transaction that reads the row, then
writes: processes sharing the file take turns (waiting up to ``busy_timeout`` seconds for
each other), so of any number of takes of one key, in any number of processes, one gets the value.

An expired row is invisible at once (every read asks for ``expires_at > now``) and deleted
later, in batches of :data:`SWEEP_BATCH` by each write that adds a row, so a file that has
held any number of records keeps about as many rows as are live. A failure of SQLite (a
missing directory, a full disk, a file locked too long) raises :class:`StoreUnavailable`
naming the file, and the log says so once, until the store works again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..keyvalue_rules import (
    StoreUnavailable,
    bucket_record,
    bucket_state,
    check_bucket,
    check_life,
    check_ttl,
    check_value,
    counter_value,
    refill,
)
from .connect import open_database

logger = logging.getLogger("mcpserve.keyvalue")

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS keyvalue (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX IF NOT EXISTS keyvalue_by_expiry ON keyvalue (expires_at);
"""

#: Expired rows deleted by each write that adds one: more than one, so the sweep outruns
#: any rate of writing, and few enough that no write waits on a long delete.
SWEEP_BATCH = 100


class SQLiteKeyValue:
    """Records in the SQLite file at ``path`` (created if missing), shared by every store of
    the same ``namespace`` on that file, in any process."""

    def __init__(
        self, path: str | os.PathLike[str], *, namespace: str, busy_timeout: float = 5.0
    ) -> None:
        self.path = os.fspath(path)
        self.namespace = namespace
        self.busy_timeout = busy_timeout
        self.available = True
        self._executor: ThreadPoolExecutor | None = None
        # The connection of the executor's thread (a store used again after aclose has a new
        # thread, and a new connection, while the old one closed its own).
        self._local = threading.local()

    async def get(self, key: str) -> bytes | None:
        return await self._run("read a record", self._get, key)

    async def get_many(self, keys: list[str]) -> list[bytes | None]:
        return await self._run("read records", self._get_many, keys)

    async def put(self, key: str, value: bytes, ttl: float | None) -> None:
        check_value(value)
        check_life(ttl)
        await self._run("write a record", self._put, key, value, ttl)

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        check_value(value)
        check_ttl(ttl)
        return await self._run("add a record", self._add, key, value, ttl)

    async def take(self, key: str) -> bytes | None:
        return await self._run("take a record", self._take, key)

    async def delete(self, key: str) -> None:
        await self._run("delete a record", self._delete, key)

    async def incr(self, key: str, ttl: float) -> int:
        check_ttl(ttl)
        return await self._run("count", self._incr, key, ttl)

    async def take_token(self, key: str, rate: float, burst: float) -> float:
        check_bucket(rate, burst)
        return await self._run("take a token", self._take_token, key, rate, burst)

    async def aclose(self) -> None:
        if self._executor is None:
            return
        executor, self._executor = self._executor, None
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._disconnect)
        finally:
            executor.shutdown(wait=True)  # its thread is idle by now: this does not block

    async def _run(self, what: str, operation: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="mcpserve-keyvalue")
        loop = asyncio.get_running_loop()
        try:
            outcome = await loop.run_in_executor(self._executor, operation, *args)
        except sqlite3.Error as exc:
            if self.available:
                logger.warning(
                    "Key-value store: SQLite at %s failed (%s: %s) while trying to %s; "
                    "its records cannot be read or written until it works",
                    self.path,
                    type(exc).__name__,
                    exc,
                    what,
                )
                self.available = False
            raise StoreUnavailable(
                f"The key-value store in {self.path} could not {what}: {exc}"
            ) from exc
        if not self.available:
            logger.warning("Key-value store: SQLite at %s works again", self.path)
            self.available = True
        return outcome

    # -- on the store's thread ------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = open_database(self.path, busy_timeout=self.busy_timeout, schema=_SCHEMA)
            self._local.db = db
        return db

    def _disconnect(self) -> None:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        self._local.db = None
        if db is not None:
            db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed when the block ends, rolled back when it raises."""
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _row(self, db: sqlite3.Connection, key: str) -> tuple[bytes, float] | None:
        """The stored value and expiry of ``key``, expired or not."""
        row: tuple[bytes, float] | None = db.execute(
            "SELECT value, expires_at FROM keyvalue WHERE namespace = ? AND key = ?",
            (self.namespace, key),
        ).fetchone()
        return row

    def _store(self, db: sqlite3.Connection, key: str, value: bytes, ttl: float | None) -> None:
        """Write a row (replacing any), after sweeping a batch of expired ones."""
        now = time.time()
        db.execute(
            "DELETE FROM keyvalue WHERE rowid IN "
            "(SELECT rowid FROM keyvalue WHERE expires_at <= ? LIMIT ?)",
            (now, SWEEP_BATCH),
        )
        db.execute(
            "INSERT OR REPLACE INTO keyvalue VALUES (?, ?, ?, ?)",
            (self.namespace, key, value, math.inf if ttl is None else now + ttl),
        )

    def _get(self, key: str) -> bytes | None:
        row: tuple[bytes] | None = (
            self._connect()
            .execute(
                "SELECT value FROM keyvalue WHERE namespace = ? AND key = ? AND expires_at > ?",
                (self.namespace, key, time.time()),
            )
            .fetchone()
        )
        return None if row is None else row[0]

    def _get_many(self, keys: list[str]) -> list[bytes | None]:
        return [self._get(key) for key in keys]  # one connection, one trip to the executor

    def _put(self, key: str, value: bytes, ttl: float | None) -> None:
        with self._write() as db:
            self._store(db, key, value, ttl)

    def _add(self, key: str, value: bytes, ttl: float) -> bool:
        with self._write() as db:
            row = self._row(db, key)
            if row is not None and row[1] > time.time():
                return False
            self._store(db, key, value, ttl)
            return True

    def _take(self, key: str) -> bytes | None:
        with self._write() as db:
            row = self._row(db, key)
            if row is None:
                return None
            db.execute(
                "DELETE FROM keyvalue WHERE namespace = ? AND key = ?", (self.namespace, key)
            )
            value, expires_at = row
            return value if expires_at > time.time() else None

    def _delete(self, key: str) -> None:
        self._connect().execute(
            "DELETE FROM keyvalue WHERE namespace = ? AND key = ?", (self.namespace, key)
        )

    def _incr(self, key: str, ttl: float) -> int:
        with self._write() as db:
            row = self._row(db, key)
            if row is None or row[1] <= time.time():
                self._store(db, key, b"1", ttl)
                return 1
            count = counter_value(key, row[0]) + 1
            db.execute(
                "UPDATE keyvalue SET value = ? WHERE namespace = ? AND key = ?",
                (str(count).encode(), self.namespace, key),
            )
            return count

    def _take_token(self, key: str, rate: float, burst: float) -> float:
        with self._write() as db:
            now = time.time()  # wall-clock: every process sharing the file reads the same
            row = self._row(db, key)
            held = None if row is None or row[1] <= now else bucket_state(key, row[0])
            tokens, wait, life = refill(held, now, rate, burst)
            self._store(db, key, bucket_record(tokens, now), life)
            return wait
