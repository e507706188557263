"""Task records in Redis, so that every server process on every machine sees every task, and
a task outlives the process that ran it.

* ``mcpserve:{<namespace>}:task:<id>``, a string: the record as JSON
  (:meth:`TaskRecord.to_dict`), with the task's remaining TTL as its own (``PX``), so
  Redis forgets an expired task by itself;
* ``mcpserve:{<namespace>}:tasks:of:<principal>`` (``tasks:anonymous`` for no principal), a
  sorted set of the principal's task ids scored by when each expires, which bounds how many
  live tasks a principal has across all processes; it expires with its last task.

A create is one script (drop the expired ids, count, refuse or add), so two processes never
both take a principal's last slot. Every other write is a compare-and-set: read the JSON,
apply the rules of ``tasks.py`` to it (a passed lease fails the task; terminal states never
change; a save keeps the stored lease), and write the result only if the key still holds
what was read, else read again. So a process that fails a task whose lease passed never
overwrites the ``completed`` that its owner saved meanwhile, and the rules stay in Python,
in one place, not copied into Lua.

A Redis error raises :class:`TaskStoreUnavailable`, which the caller answers as a clear
JSON-RPC error; redis-py reconnects by itself.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Collection
from typing import Any

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
from .link import RedisLink

logger = logging.getLogger("mcpserve.tasks")

# Drops expired ids, then adds the task if its principal has room (1), refuses it (0), or
# finds its id taken (-1). The set lives as long as its longest-lived task.
_CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
if not redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[4], 'NX') then return -1 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[5])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return 1
"""

# Writes the new record if the key still holds the one that was read (1), keeping its TTL.
_SWAP = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
"""

#: Reads of one task before a write gives up. Terminal states never change, so a retry
#: after a lost race almost always finds nothing left to write.
ATTEMPTS = 5

Change = Callable[[TaskRecord, float], JSONDict | None]


class RedisTaskStore:
    """Task records in the Redis at ``url`` (a redis-py URL such as
    ``redis://127.0.0.1:6379/0``), shared by every process that uses the same namespace."""

    def __init__(
        self, url: str, *, namespace: str = "mcpserve", max_tasks_per_principal: int = 1000
    ) -> None:
        self.url = url
        self.max_tasks_per_principal = max_tasks_per_principal
        # One hash slot for all keys ({...}), so the scripts also run on Redis Cluster.
        self._prefix = f"mcpserve:{{{namespace}}}:"
        self._link = RedisLink(
            url,
            logger=logger,
            name="Task store",
            consequence="task requests get errors until it is back",
            error=TaskStoreUnavailable,
        )
        self._create: Any = None
        self._swap: Any = None

    def _key(self, task_id: str) -> str:
        return f"{self._prefix}task:{task_id}"

    def _principal_key(self, principal: str | None) -> str:
        # "of:" keeps a principal named "anonymous" apart from the callers that have none.
        tail = "anonymous" if principal is None else f"of:{principal}"
        return f"{self._prefix}tasks:{tail}"

    @property
    def available(self) -> bool:
        return self._link.available

    def _client(self) -> Any:
        if not self._link.connected:
            client = self._link.client()
            self._create = client.register_script(_CREATE)
            self._swap = client.register_script(_SWAP)
        return self._link.client()

    async def _run(self, what: str, operation: Any) -> Any:
        return await self._link.run(what, operation)

    async def create(self, record: TaskRecord) -> None:
        self._client()
        now = time.time()
        ttl = max(1, math.ceil((record.expires_at - now) * 1000))
        created = await self._run(
            "create a task",
            self._create(
                keys=[self._principal_key(record.principal), self._key(record.task_id)],
                args=[
                    now,
                    record.expires_at,
                    self.max_tasks_per_principal,
                    ttl,
                    record.task_id,
                    orjson.dumps(record.to_dict()),
                ],
            ),
        )
        if created == 0:
            raise TooManyTasks
        if created == -1:
            raise ValueError(f"Task {record.task_id} exists already")

    async def get(self, task_id: str) -> TaskRecord | None:
        def fail_if_lease_passed(record: TaskRecord, now: float) -> JSONDict | None:
            return record.to_dict() if expire_lease(record, now) else None

        return await self._change(task_id, "read a task", fail_if_lease_passed)

    async def save(self, record: TaskRecord) -> None:
        await self._change(
            record.task_id, "save a task", lambda stored, now: saved_state(stored, record, now)
        )

    async def renew(self, task_ids: Collection[str], owner: str, until: float) -> None:
        def renewing(record: TaskRecord, now: float) -> JSONDict | None:
            return record.to_dict() if renew_lease(record, owner, until, now) else None

        ids = list(dict.fromkeys(task_ids))
        if not ids:
            return
        # Every lease in two round trips (MGET, then the swaps in one pipeline); a task that
        # changed in between is done again on its own.
        raws = await self._run(
            "renew task leases", self._client().mget([self._key(i) for i in ids])
        )
        now = time.time()
        pipe = self._client().pipeline(transaction=False)
        swapped = []
        for task_id, raw in zip(ids, raws, strict=True):
            record = _live(raw, now)
            state = None if record is None else renewing(record, now)
            if state is not None:
                await self._swap(
                    keys=[self._key(task_id)], args=[raw, orjson.dumps(state)], client=pipe
                )  # queued: the pipeline runs it
                swapped.append(task_id)
        if not swapped:
            return
        written = await self._run("renew task leases", pipe.execute())
        for task_id, done in zip(swapped, written, strict=True):
            if not done:
                await self._change(task_id, "renew a task lease", renewing)

    async def claim(
        self, task_id: str, owner: str, until: float, retries: int = 0
    ) -> TaskRecord | None:
        def claiming(record: TaskRecord, now: float) -> JSONDict | None:
            changed = claim_lease(record, owner, until, now, retries)
            return record.to_dict() if changed else None

        return await self._change(task_id, "claim a task", claiming)

    async def release(self, task_id: str, owner: str, until: float | None) -> TaskRecord | None:
        def releasing(record: TaskRecord, now: float) -> JSONDict | None:
            return record.to_dict() if release_lease(record, owner, until, now) else None

        return await self._change(task_id, "release a task", releasing)

    async def _change(self, task_id: str, what: str, change: Change) -> TaskRecord | None:
        """The task as ``change`` leaves it (it returns the state to write, None for none),
        written only over the state it was given; None when there is no such task."""
        key = self._key(task_id)
        client = self._client()
        for _ in range(ATTEMPTS):
            raw = await self._run(what, client.get(key))
            now = time.time()
            record = _live(raw, now)
            if record is None:
                return None
            state = change(record, now)
            if state is None:
                return record
            if await self._run(what, self._swap(keys=[key], args=[raw, orjson.dumps(state)])):
                return TaskRecord.from_dict(state)
        raise TaskStoreUnavailable(
            f"The task store could not {what}: it changed {ATTEMPTS} times while being written"
        )

    async def close(self) -> None:
        await self._link.close()


def _live(raw: bytes | None, now: float) -> TaskRecord | None:
    """The record in ``raw``, unless there is none or it expired (Redis's clock and ours
    may disagree by a little: ours decides, as it does for every store)."""
    if raw is None:
        return None
    record = TaskRecord.from_dict(orjson.loads(raw))
    return record if record.expires_at > now else None
