"""Tasks (the ``io.modelcontextprotocol/tasks`` extension): the record of one, and where
records are kept.

A task is a durable handle on a long ``tools/call``: the client gets a ``CreateTaskResult``
at once and polls ``tasks/get`` until the task is ``completed`` (with the call's result),
``failed`` (with its JSON-RPC error) or ``cancelled``; on the way it may be
``input_required`` (questions the client answers with ``tasks/update``). These states and
the extension's identifier are :mod:`mcpserve.protocol.tasks`, shared with the client. A
:class:`TaskRecord` is all a client can see of a task, plain data that any store can keep.

A :class:`TaskStore` keeps records until their TTL runs out. :class:`MemoryTaskStore`, the
default, keeps them in this process: bounded per principal, and swept as they expire, so a
server that has created and forgotten any number of tasks holds only the live ones. The
durable stores, ``sqlite_tasks.py`` and ``redis_tasks.py``, keep :meth:`TaskRecord.to_dict`
and outlive the process; the rules every store applies live here, once:

* a task's function runs in one process, its ``owner``, which holds a lease on it
  (``lease_until``) and renews it while the function runs. A task that is not terminal when
  its lease passes is failed by whoever reads it next (:func:`expire_lease`): its process
  died, and no one else can finish it. A task queued for workers is held by no process,
  and its lease is how long it may wait for one (``queue_timeout``): past it, whoever reads
  it fails it, saying that no worker took it, so this holds with no worker at all.
* terminal states never change, and a save never touches the lease (:func:`saved_state`).

The running side (the handler, its questions, cancellation) is ``runner.py`` and ``running.py``.
"""

from __future__ import annotations

import heapq
import os
import time
from collections import Counter
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from ..._types import JSONDict
from ...protocol.tasks import STATUSES, TERMINAL, Status
from ...protocol.tasks import TASKS_EXTENSION as TASKS_EXTENSION

#: The error of a task whose lease passed before it ended.
LEASE_EXPIRED: JSONDict = {"code": -32603, "message": "The process running the task stopped"}
#: The same, for a task a worker had claimed (``worker.py``).
WORKER_LOST: JSONDict = {"code": -32603, "message": "The worker running the task was lost"}
#: Seconds without a renewal after which the process holding a task is taken for lost. It
#: renews every sixth of its lease (5 s, ``runner.py``); Docket gives a lost worker's job to
#: another no sooner than about 11 s after the worker stopped (``worker.py``).
HOLDER_LOST_AFTER = 10.0


def no_worker(seconds: float) -> JSONDict:
    """The error of a queued task that no worker took within ``seconds`` (``queue.py``)."""
    message = (
        f"No worker took the task within {seconds:g} s: "
        "start one with `mcpserve worker <this server's file>`"
    )
    return {"code": -32603, "message": message}


def iso(timestamp: float) -> str:
    """``2026-12-01T10:30:00.123Z``: ISO 8601, UTC, milliseconds."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskRecord:
    """What a client can see of one task."""

    __slots__ = (
        "attempts",
        "created_at",
        "error",
        "input_requests",
        "lease_until",
        "owner",
        "poll_interval_ms",
        "principal",
        "queue_timeout",
        "result",
        "status",
        "status_message",
        "task_id",
        "ttl_ms",
        "updated_at",
    )

    def __init__(
        self,
        principal: str | None,
        *,
        ttl_ms: int,
        poll_interval_ms: int,
        status_message: str | None = None,
        owner: str | None = None,
        lease_until: float | None = None,
        queue_timeout: float | None = None,
    ) -> None:
        # 192 random bits: the id is the only thing standing between a task and a stranger.
        self.task_id = os.urandom(24).hex()
        self.principal = principal
        self.status: Status = "working"
        self.status_message = status_message
        self.created_at = self.updated_at = time.time()
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: The questions the task waits on, by key, as ``inputRequests`` shows them.
        self.input_requests: dict[str, JSONDict] = {}
        self.result: JSONDict | None = None
        self.error: JSONDict | None = None
        #: The process running the task's function, and until when (epoch seconds) it
        #: holds the task: None for no lease, a task that never fails for want of one.
        self.owner = owner
        self.lease_until = lease_until
        #: How many processes have taken the task to run it (a worker's claim counts one).
        self.attempts = 0
        #: Seconds a queued task may wait for a worker (its lease while held by no process);
        #: None when it was never queued, or waits for as long as it lives.
        self.queue_timeout = queue_timeout

    def to_dict(self) -> JSONDict:
        """Every field, as JSON can carry it (times are epoch seconds)."""
        return {
            "task_id": self.task_id,
            "principal": self.principal,
            "status": self.status,
            "status_message": self.status_message,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "ttl_ms": self.ttl_ms,
            "poll_interval_ms": self.poll_interval_ms,
            "input_requests": dict(self.input_requests),
            "result": self.result,
            "error": self.error,
            "owner": self.owner,
            "lease_until": self.lease_until,
            "attempts": self.attempts,
            "queue_timeout": self.queue_timeout,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskRecord:
        """The record :meth:`to_dict` gave. Raises ValueError (or KeyError) when ``data``
        is not one."""
        if data["status"] not in STATUSES:
            raise ValueError(f"not a task status: {data['status']!r}")
        record = cls.__new__(cls)
        record.task_id = str(data["task_id"])
        record.principal = data["principal"]
        record.status = cast(Status, data["status"])
        record.status_message = data["status_message"]
        record.created_at = float(data["created_at"])
        record.updated_at = float(data["updated_at"])
        record.ttl_ms = int(data["ttl_ms"])
        record.poll_interval_ms = int(data["poll_interval_ms"])
        record.input_requests = dict(data["input_requests"])
        record.result = data["result"]
        record.error = data["error"]
        record.owner = data.get("owner")
        lease_until = data.get("lease_until")
        record.lease_until = None if lease_until is None else float(lease_until)
        record.attempts = int(data.get("attempts", 0))
        queue_timeout = data.get("queue_timeout")
        record.queue_timeout = None if queue_timeout is None else float(queue_timeout)
        return record

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl_ms / 1000

    def touch(self) -> None:
        self.updated_at = time.time()

    def task(self) -> JSONDict:
        """The ``Task`` fields: what ``CreateTaskResult`` carries besides ``resultType``."""
        task: JSONDict = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso(self.created_at),
            "lastUpdatedAt": iso(self.updated_at),
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_interval_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task

    def detailed(self) -> JSONDict:
        """The ``DetailedTask``: what ``tasks/get`` answers and ``notifications/tasks``
        carries, with the status's own payload."""
        task = self.task()
        if self.status == "input_required":
            task["inputRequests"] = dict(self.input_requests)
        elif self.status == "completed":
            task["result"] = self.result
        elif self.status == "failed":
            task["error"] = self.error
        return task


def expire_lease(record: TaskRecord, now: float) -> bool:
    """Fail the task if its lease passed before it ended; True when it did (the caller
    keeps the change). Every store applies this to every record it reads."""
    if record.terminal or record.lease_until is None or record.lease_until > now:
        return False
    if record.owner is None:  # queued: the lease was the time it could wait for a worker
        error = no_worker(record.queue_timeout or record.lease_until - record.created_at)
    else:
        error = WORKER_LOST if record.attempts else LEASE_EXPIRED
    record.status = "failed"
    record.error = dict(error)
    record.status_message = error["message"]
    record.input_requests = {}
    record.updated_at = now
    return True


def renew_lease(record: TaskRecord, owner: str, until: float, now: float) -> bool:
    """Extend ``owner``'s lease on the task to ``until``; True when the record changed
    (renewed, or failed: a lease that has passed is not renewed, the task is over)."""
    if expire_lease(record, now):
        return True
    if record.terminal or record.owner != owner:
        return False
    record.lease_until = until
    return True


def holder_lost(record: TaskRecord, until: float) -> bool:
    """Whether the process holding the task stopped renewing its lease at least
    :data:`HOLDER_LOST_AFTER` ago. ``until`` is the lease the asker would take now; every
    process's lease is as long, so ``until`` less the lease the holder last set is how long
    ago it set it."""
    return record.lease_until is None or until - record.lease_until >= HOLDER_LOST_AFTER


def claim_lease(record: TaskRecord, owner: str, until: float, now: float, retries: int = 0) -> bool:
    """Give the task to ``owner`` until ``until`` and count the attempt; True when the
    record changed. A queued task (held by nobody) is taken, its ``queued`` status message
    cleared. One held by another process is taken over only when that process is lost
    (:func:`holder_lost`) and the task has ``retries`` left (the function is safe to run
    again); otherwise, or once it ended, it is left alone, and the caller reads who holds it
    from the record."""
    if expire_lease(record, now):
        return True
    if record.terminal or record.owner == owner:
        return False
    if record.owner is not None and (record.attempts > retries or not holder_lost(record, until)):
        return False
    record.owner = owner
    record.lease_until = until
    record.attempts += 1
    record.status_message = None
    record.updated_at = now
    return True


def release_lease(record: TaskRecord, owner: str, until: float | None, now: float) -> bool:
    """``owner`` hands the task back to the queue, to wait for a worker until ``until``;
    True when the record changed. Only its holder can, and only while it runs: it reads
    ``working``, ``queued``, as before any worker took it, its questions withdrawn, and the
    run that was stopped stays counted in ``attempts``."""
    if expire_lease(record, now):
        return True
    if record.terminal or record.owner != owner:
        return False
    record.owner = None
    record.lease_until = until
    record.status = "working"
    record.status_message = "queued"
    record.input_requests = {}
    record.updated_at = now
    return True


def saved_state(stored: TaskRecord, record: TaskRecord, now: float) -> JSONDict | None:
    """What a store writes when ``record`` is saved over the state it keeps, ``stored``; None
    for nothing. Terminal states never change, whoever saves what; the identity of the task
    and its lease (which only ``create`` and ``renew`` set) are the store's, not the
    saver's, whose copy may be older."""
    if expire_lease(stored, now):
        return stored.to_dict()  # the save came too late: the task failed when its lease passed
    if stored.terminal:
        return None
    state = record.to_dict()
    for field in (
        "task_id",
        "principal",
        "created_at",
        "ttl_ms",
        "owner",
        "lease_until",
        "attempts",
        "queue_timeout",
    ):
        state[field] = getattr(stored, field)
    return state


class TooManyTasks(Exception):
    """The principal has as many live tasks as the store allows."""


class TaskStoreUnavailable(Exception):
    """The store's database did not answer (or failed); the request that needs it cannot be
    served now."""


class TaskStore(Protocol):
    """Keeps task records until they expire. A store whose database fails raises
    :class:`TaskStoreUnavailable` from any method."""

    async def create(self, record: TaskRecord) -> None:
        """Keep a new record; a ``get`` finds it once this returns. Raises
        :class:`TooManyTasks` when its principal has too many live tasks."""

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record, or None when there is none (or it expired). A task whose lease
        passed reads failed (:func:`expire_lease`), and is kept so."""

    async def save(self, record: TaskRecord) -> None:
        """Keep the record's new state (by :func:`saved_state`'s rules: a terminal task, or
        one that expired, stays as it is)."""

    async def renew(self, task_ids: Collection[str], owner: str, until: float) -> None:
        """Extend to ``until`` the leases of these tasks, which ``owner`` still runs; those
        it does not own, or that ended, are left alone."""

    async def claim(
        self, task_id: str, owner: str, until: float, retries: int = 0
    ) -> TaskRecord | None:
        """A worker takes a task (:func:`claim_lease`): the record as it is now, held by
        ``owner`` unless another holds it or it ended; None when there is no such task."""

    async def release(self, task_id: str, owner: str, until: float | None) -> TaskRecord | None:
        """A worker hands a task back (:func:`release_lease`): the record as it is now,
        queued again unless another holds it or it ended; None when there is no such task."""

    async def close(self) -> None:
        """Let go of the store's connections; a later call opens them again."""


class MemoryTaskStore:
    """Task records in this process, bounded per principal, swept as they expire."""

    def __init__(self, *, max_tasks_per_principal: int = 1000) -> None:
        self.max_tasks_per_principal = max_tasks_per_principal
        self._records: dict[str, TaskRecord] = {}
        self._expiry: list[tuple[float, str]] = []
        self._per_principal: Counter[str | None] = Counter()

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: TaskRecord) -> None:
        self._sweep()
        if self._per_principal[record.principal] >= self.max_tasks_per_principal:
            raise TooManyTasks
        self._records[record.task_id] = record
        self._per_principal[record.principal] += 1
        heapq.heappush(self._expiry, (record.expires_at, record.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is None:
            return None
        now = time.time()
        if record.expires_at <= now:
            self._sweep()
            return None
        expire_lease(record, now)
        return record

    async def save(self, record: TaskRecord) -> None:
        """Records are kept by reference here: nothing to write."""

    async def renew(self, task_ids: Collection[str], owner: str, until: float) -> None:
        now = time.time()
        for task_id in task_ids:
            record = self._records.get(task_id)
            if record is not None and record.expires_at > now:
                renew_lease(record, owner, until, now)

    async def claim(
        self, task_id: str, owner: str, until: float, retries: int = 0
    ) -> TaskRecord | None:
        record = await self.get(task_id)
        if record is not None:
            claim_lease(record, owner, until, time.time(), retries)
        return record

    async def release(self, task_id: str, owner: str, until: float | None) -> TaskRecord | None:
        record = await self.get(task_id)
        if record is not None:
            release_lease(record, owner, until, time.time())
        return record

    async def close(self) -> None:
        """Nothing to let go of."""

    def _sweep(self) -> None:
        now = time.time()
        expiry = self._expiry
        while expiry and expiry[0][0] <= now:
            _, task_id = heapq.heappop(expiry)
            record = self._records.pop(task_id, None)
            if record is not None:
                self._per_principal[record.principal] -= 1
                if not self._per_principal[record.principal]:
                    del self._per_principal[record.principal]
