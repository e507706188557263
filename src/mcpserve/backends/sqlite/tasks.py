"""Task records in a SQLite file, so that they outlive the server process and every process
on the machine that opens the file shares them.

One table, ``tasks``: the id, the principal, when the record expires (indexed, for the
sweep and for counting a principal's live tasks) and the record itself as JSON
(:meth:`TaskRecord.to_dict`). The file is in WAL mode with ``synchronous=FULL``: readers
never wait for the writer, and a task exists on disk once ``create`` returns, so a client
that got a task id can poll it after a crash or a restart.

sqlite3 blocks, so every operation is one function run on the store's own thread (a
single-thread executor, which also serializes the one connection): the event loop never
waits on the disk, and an operation whose caller is cancelled still ends its transaction.
Each write is a ``BEGIN IMMEDIATE`` transaction that reads the row before it writes it:
processes sharing the file take turns (waiting up to ``busy_timeout`` seconds), and the
rules of ``tasks.py`` (a passed lease fails the task, terminal states never change) hold
against all of them.

Expired rows are invisible at once and deleted in batches by each ``create``, so a server
that has created and forgotten any number of tasks keeps about as many rows as are live.
A failure of SQLite (a missing directory, a full disk, a file locked too long) raises
:class:`TaskStoreUnavailable`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import orjson

from ..._types import JSONDict
from ...extensions.tasks.records import (
    TaskRecord,
    TaskStoreUnavailable,
    TooManyTasks,
    claim_lease,
    expire_lease,
    release_lease,
    renew_lease,
    saved_state,
)
from .connect import open_database

logger = logging.getLogger("mcpserve.tasks")

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    principal TEXT,
    expires_at REAL NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (expires_at);
CREATE INDEX IF NOT EXISTS tasks_by_principal ON tasks (principal, expires_at);
"""

#: Expired rows deleted per ``create``: more than one, so the sweep outruns any creation
#: rate, and few enough that no create waits on a long delete.
SWEEP_BATCH = 100


class SQLiteTaskStore:
    """Task records in the SQLite file at ``path`` (created if missing), bounded per
    principal, surviving restarts."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_tasks_per_principal: int = 1000,
        busy_timeout: float = 5.0,
    ) -> None:
        self.path = os.fspath(path)
        self.max_tasks_per_principal = max_tasks_per_principal
        self.busy_timeout = busy_timeout
        self.available = True
        self._executor: ThreadPoolExecutor | None = None
        # The connection of the executor's thread (a store reopened after close has a new
        # thread, and a new connection, while the old one closes its own).
        self._local = threading.local()

    async def create(self, record: TaskRecord) -> None:
        await self._run("create a task", self._create, record)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await self._run("read a task", self._get, task_id)

    async def save(self, record: TaskRecord) -> None:
        await self._run("save a task", self._save, record)

    async def renew(self, task_ids: Collection[str], owner: str, until: float) -> None:
        if task_ids:
            await self._run("renew task leases", self._renew, list(task_ids), owner, until)

    async def claim(
        self, task_id: str, owner: str, until: float, retries: int = 0
    ) -> TaskRecord | None:
        return await self._run("claim a task", self._claim, task_id, owner, until, retries)

    async def release(self, task_id: str, owner: str, until: float | None) -> TaskRecord | None:
        return await self._run("release a task", self._release, task_id, owner, until)

    async def close(self) -> None:
        if self._executor is None:
            return
        executor, self._executor = self._executor, None
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._disconnect)
        finally:
            executor.shutdown(wait=True)  # its thread is idle by now: this does not block

    # -- on the store's thread ------------------------------------------------------------

    async def _run(self, what: str, operation: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="mcpserve-tasks")
        loop = asyncio.get_running_loop()
        try:
            outcome = await loop.run_in_executor(self._executor, operation, *args)
        except sqlite3.Error as exc:
            if self.available:
                logger.warning(
                    "Task store: SQLite at %s failed (%s: %s) while trying to %s; "
                    "task requests get errors until it works",
                    self.path,
                    type(exc).__name__,
                    exc,
                    what,
                )
                self.available = False
            raise TaskStoreUnavailable(f"The task store could not {what}") from exc
        if not self.available:
            logger.warning("Task store: SQLite at %s works again", self.path)
            self.available = True
        return outcome

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

    def _create(self, record: TaskRecord) -> None:
        now = time.time()
        with self._write() as db:
            db.execute(
                "DELETE FROM tasks WHERE task_id IN "
                "(SELECT task_id FROM tasks WHERE expires_at <= ? LIMIT ?)",
                (now, SWEEP_BATCH),
            )
            (live,) = db.execute(
                "SELECT COUNT(*) FROM tasks WHERE principal IS ? AND expires_at > ?",
                (record.principal, now),
            ).fetchone()
            if live >= self.max_tasks_per_principal:
                raise TooManyTasks
            try:
                db.execute(
                    "INSERT INTO tasks VALUES (?, ?, ?, ?)",
                    (record.task_id, record.principal, record.expires_at, _dumps(record.to_dict())),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"Task {record.task_id} exists already") from None

    def _get(self, task_id: str) -> TaskRecord | None:
        now = time.time()
        record = _read(self._connect(), task_id, now)
        if record is None or not expire_lease(record, now):
            return record
        # The lease passed: fail the task, unless another process ended it since the read.
        with self._write() as db:
            record = _read(db, task_id, now)
            if record is not None and expire_lease(record, now):
                _update(db, task_id, record.to_dict())
        return record

    def _save(self, record: TaskRecord) -> None:
        now = time.time()
        with self._write() as db:
            stored = _read(db, record.task_id, now)
            if stored is None:  # expired, or never created: a save brings nothing back
                return
            state = saved_state(stored, record, now)
            if state is not None:
                _update(db, record.task_id, state)

    def _renew(self, task_ids: list[str], owner: str, until: float) -> None:
        now = time.time()
        with self._write() as db:
            for task_id in task_ids:
                record = _read(db, task_id, now)
                if record is not None and renew_lease(record, owner, until, now):
                    _update(db, task_id, record.to_dict())

    def _claim(self, task_id: str, owner: str, until: float, retries: int) -> TaskRecord | None:
        now = time.time()
        with self._write() as db:
            record = _read(db, task_id, now)
            if record is not None and claim_lease(record, owner, until, now, retries):
                _update(db, task_id, record.to_dict())
        return record

    def _release(self, task_id: str, owner: str, until: float | None) -> TaskRecord | None:
        now = time.time()
        with self._write() as db:
            record = _read(db, task_id, now)
            if record is not None and release_lease(record, owner, until, now):
                _update(db, task_id, record.to_dict())
        return record


def _read(db: sqlite3.Connection, task_id: str, now: float) -> TaskRecord | None:
    row = db.execute(
        "SELECT record FROM tasks WHERE task_id = ? AND expires_at > ?", (task_id, now)
    ).fetchone()
    return None if row is None else TaskRecord.from_dict(orjson.loads(row[0]))


def _update(db: sqlite3.Connection, task_id: str, state: JSONDict) -> None:
    db.execute("UPDATE tasks SET record = ? WHERE task_id = ?", (_dumps(state), task_id))


def _dumps(state: JSONDict) -> str:
    return orjson.dumps(state).decode()
