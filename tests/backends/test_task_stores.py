"""The three task stores held to the same tests: :class:`MemoryTaskStore`,
:class:`SQLiteTaskStore` (a file in ``tmp_path``) and :class:`RedisTaskStore` (a real
``redis-server``: the run's ``redis`` fixture, flushed before each test; the outage test
stops one of its own).

Every store: a task reads back as it was created and saved, in every status; it is gone
once its TTL passes (and a late save does not bring it back); a principal's live tasks are
bounded; a task whose lease passes reads ``failed`` for everyone, and stays so; terminal
states never change; ``renew`` extends only the owner's live leases; created-and-expired
tasks leave nothing behind; hostile ids are just not found. Then what only the durable
stores do: a restart (SQLite), two instances on one Redis, a race between a lease expiry
and a terminal save, and an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from redis import Redis as SyncRedis

from mcpserve.backends.redis import tasks as redis_tasks
from mcpserve.backends.redis.tasks import RedisTaskStore
from mcpserve.backends.sqlite import tasks as sqlite_tasks
from mcpserve.backends.sqlite.tasks import SQLiteTaskStore
from mcpserve.extensions.tasks.records import (
    HOLDER_LOST_AFTER,
    LEASE_EXPIRED,
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
    TaskStoreUnavailable,
    TooManyTasks,
)
from redis_server import REDIS_PARAM, RedisServer

STORES = ["memory", "sqlite", REDIS_PARAM]
#: A lease or TTL meant to pass during a test (seconds): far longer than the steps before it
#: take, even on a loaded machine, so that what it keeps alive is never seen gone too soon.
SHORT = 0.5
PAST = SHORT + 0.1
DURABLE = ["sqlite", REDIS_PARAM]
RESULT = {"content": [{"type": "text", "text": "done ✓"}], "resultType": "complete"}
QUESTION = {"method": "elicitation/create",
            "params": {"mode": "form", "message": "Sure?", "requestedSchema": {
                "type": "object", "properties": {"ok": {"type": "boolean"}}}}}  # fmt: skip
HOSTILE_IDS = ["", "'", "' OR '1'='1", '"; DROP TABLE tasks; --', "*", "?", "%", "\\",
               "mcpserve:{mcpserve}:task:*", "line\nbreak\r\n", "nul\x00byte", "é✓",
               "x" * 10_000]  # fmt: skip
HOSTILE_PRINCIPALS = [None, "", "anonymous", "of:anonymous", "a'b\"c",
                      "x'; DROP TABLE tasks; --", "*", "line\nbreak", "{braces}",
                      "p" * 10_000]  # fmt: skip


def new(
    principal: str | None = "alice",
    *,
    ttl_ms: int = 60_000,
    owner: str | None = None,
    lease: float | None = None,
    status_message: str | None = None,
) -> TaskRecord:
    """A fresh record; ``lease`` is seconds from now."""
    return TaskRecord(principal, ttl_ms=ttl_ms, poll_interval_ms=500, owner=owner,
                      lease_until=None if lease is None else time.time() + lease,
                      status_message=status_message)  # fmt: skip


class Backend:
    """Where one test's tasks live, and ways to look behind a store's back."""

    def __init__(self, kind: str, tmp_path: Path, redis: RedisServer | None) -> None:
        self.kind = kind
        self.path = tmp_path / "tasks.sqlite3"
        self.redis = redis
        self.opened: list[TaskStore] = []
        self._memory: MemoryTaskStore | None = None

    def open(self, **options: Any) -> TaskStore:
        """A store over this test's tasks: for SQLite and Redis a new instance each time, as
        another process would have; memory has just the one."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = MemoryTaskStore(**options)
            return self._memory
        store: TaskStore
        if self.kind == "sqlite":
            store = SQLiteTaskStore(self.path, **options)
        else:
            assert self.redis is not None
            store = RedisTaskStore(self.redis.url, **options)
        self.opened.append(store)
        return store

    async def fresh(self, **options: Any) -> TaskStore:
        """:meth:`open`, connected already: a first use (creating the file, say) costs no
        test its lease."""
        store = self.open(**options)
        assert await store.get("warm-up") is None
        return store

    def count(self) -> int:
        """How many records (rows, keys) the backend holds now."""
        if self.kind == "memory":
            return 0 if self._memory is None else len(self._memory)
        if self.kind == "sqlite":
            with contextlib.closing(sqlite3.connect(self.path)) as db:
                (rows,) = db.execute("SELECT COUNT(*) FROM tasks").fetchone()
                return int(rows)
        with self._sync_redis() as client:
            # The stores here keep the default namespace; a server of another test, still
            # draining, may write its own keys in the shared redis-server meanwhile.
            keys = client.keys("mcpserve:{mcpserve}:*")  # KEYS skips (and drops) expired ones
            # Nothing lives forever: every key carries the expiry of its task(s). PTTL is -1
            # for a key without one; 0 is a key in its last millisecond, and -2 one gone
            # since KEYS listed it.
            ttls = [client.pttl(key) for key in keys]
            assert -1 not in ttls, dict(zip(keys, ttls, strict=True))
            return len(keys)

    def overwrite(self, record: TaskRecord) -> None:
        """Write ``record`` as another process would, behind the store's back."""
        state = orjson.dumps(record.to_dict())
        if self.kind == "sqlite":
            with contextlib.closing(sqlite3.connect(self.path, timeout=5.0)) as db:
                db.execute("UPDATE tasks SET record = ? WHERE task_id = ?",
                           (state.decode(), record.task_id))  # fmt: skip
                db.commit()
        else:
            with self._sync_redis() as client:
                assert client.set(f"mcpserve:{{mcpserve}}:task:{record.task_id}", state,
                                  keepttl=True, xx=True)  # fmt: skip

    @contextlib.contextmanager
    def _sync_redis(self) -> Iterator[SyncRedis]:
        assert self.redis is not None
        client = SyncRedis.from_url(self.redis.url, socket_timeout=5.0)
        try:
            yield client
        finally:
            client.close()

    async def aclose(self) -> None:
        for store in self.opened:
            await store.close()


async def _backend(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    server: RedisServer | None = None
    if kind == "redis":
        server = request.getfixturevalue("redis")
        server.flush()
    return Backend(kind, tmp_path, server)


@pytest.fixture(params=STORES)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    made = await _backend(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture(params=DURABLE)
async def durable(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    made = await _backend(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await made.aclose()


async def read(store: TaskStore, task_id: str) -> TaskRecord:
    found = await store.get(task_id)
    assert found is not None, task_id
    return found


# -- every store -----------------------------------------------------------------------------


def test_to_dict_is_json_and_from_dict_gives_the_record_back() -> None:
    record = new("alice", owner="proc-a", lease=30, status_message="starting")
    record.status = "input_required"
    record.input_requests = {"input-1": QUESTION}
    state = orjson.loads(orjson.dumps(record.to_dict()))
    assert set(state) == set(TaskRecord.__slots__)
    again = TaskRecord.from_dict(state)
    assert again.to_dict() == record.to_dict()
    assert again.detailed() == record.detailed()
    with pytest.raises(ValueError, match="not a task status"):
        TaskRecord.from_dict({**state, "status": "sleeping"})


async def test_a_created_task_reads_back_as_it_was(backend: Backend) -> None:
    store = await backend.fresh()
    record = new("alice", owner="proc-a", lease=60, status_message="starting")
    await store.create(record)
    for reader in (store, backend.open()):
        found = await read(reader, record.task_id)
        assert found.to_dict() == record.to_dict()
        assert found.detailed() == record.detailed()
    assert await store.get(new().task_id) is None  # never created


@pytest.mark.parametrize("principal", HOSTILE_PRINCIPALS,
                         ids=[f"p{n}" for n in range(len(HOSTILE_PRINCIPALS))])  # fmt: skip
async def test_any_principal_is_kept_apart(backend: Backend, principal: str | None) -> None:
    store = await backend.fresh(max_tasks_per_principal=1)
    record = new(principal)
    await store.create(record)
    assert (await read(store, record.task_id)).to_dict() == record.to_dict()
    with pytest.raises(TooManyTasks):
        await store.create(new(principal))
    # No other principal shares the count: not anonymous with "anonymous", nor any prefix.
    others = [p for p in HOSTILE_PRINCIPALS if p != principal] + [(principal or "") + "x"]
    for other in others:
        await store.create(new(other))


STATES: dict[str, dict[str, Any]] = {
    "working": {"status_message": "half way"},
    "input_required": {"input_requests": {"input-1": QUESTION, "input-2": QUESTION}},
    "completed": {"result": RESULT},
    "failed": {
        "error": {"code": -32602, "message": "bad", "data": {"x": [1, 2.5, None]}},
        "status_message": "bad",
    },
    "cancelled": {},
}


@pytest.mark.parametrize("status", list(STATES))
async def test_every_status_saves_and_reads_back(backend: Backend, status: str) -> None:
    store = await backend.fresh()
    record = new("alice", owner="proc-a", lease=60)
    await store.create(record)
    record.status = status  # type: ignore[assignment]
    for field, value in STATES[status].items():
        setattr(record, field, value)
    record.touch()
    await store.save(record)
    for reader in (store, backend.open()):
        found = await read(reader, record.task_id)
        assert found.to_dict() == record.to_dict()
        assert found.detailed() == record.detailed()


async def test_an_expired_task_is_gone_and_stays_gone(backend: Backend) -> None:
    store = await backend.fresh()
    record = new("alice", ttl_ms=round(SHORT * 1000), owner="proc-a", lease=60)
    await store.create(record)
    assert await store.get(record.task_id) is not None
    await asyncio.sleep(PAST)
    assert await store.get(record.task_id) is None
    record.status = "completed"
    record.result = RESULT
    await store.save(record)  # too late: nothing comes back
    await store.renew([record.task_id], "proc-a", time.time() + 60)
    assert await store.get(record.task_id) is None
    assert await backend.open().get(record.task_id) is None


async def test_a_principal_has_a_bounded_number_of_live_tasks(backend: Backend) -> None:
    store = await backend.fresh(max_tasks_per_principal=2)
    other = await backend.fresh(max_tasks_per_principal=2)
    for _ in range(2):
        await store.create(new("alice", ttl_ms=round(SHORT * 1000)))
    refused = new("alice")
    with pytest.raises(TooManyTasks):
        await store.create(refused)
    assert await store.get(refused.task_id) is None
    with pytest.raises(TooManyTasks):  # every instance counts the same tasks
        await other.create(new("alice"))
    for other in ("bob", None, "anonymous"):  # others unaffected
        await store.create(new(other))
    await asyncio.sleep(PAST)  # alice's tasks expire: they no longer count
    for _ in range(2):
        await store.create(new("alice"))
    with pytest.raises(TooManyTasks):
        await store.create(new("alice"))


async def test_a_passed_lease_fails_the_task_for_everyone(backend: Backend) -> None:
    store = await backend.fresh()
    record = new("alice", owner="proc-a", lease=SHORT, status_message="asking")
    record.status = "input_required"
    record.input_requests = {"input-1": QUESTION}
    unleased = new("alice")  # no lease: a task that never fails for want of one
    for created in (record, unleased):
        await store.create(created)
    lease_until = record.lease_until
    assert lease_until is not None
    assert (await read(store, record.task_id)).status == "input_required"
    await asyncio.sleep(PAST)
    failed = await read(store, record.task_id)
    assert failed.status == "failed"
    assert failed.error == {"code": -32603, "message": "The process running the task stopped"}
    assert failed.error == LEASE_EXPIRED
    assert failed.status_message == "The process running the task stopped"
    assert failed.input_requests == {}
    assert lease_until <= failed.updated_at <= time.time()
    assert failed.detailed()["error"] == LEASE_EXPIRED
    assert "inputRequests" not in failed.detailed()
    # Kept, not recomputed: a second read and another instance see the same failure.
    expected = failed.to_dict()
    await asyncio.sleep(0.01)
    for reader in (store, backend.open()):
        assert (await read(reader, record.task_id)).to_dict() == expected
    assert (await read(store, unleased.task_id)).status == "working"


async def test_terminal_states_never_change(backend: Backend) -> None:
    store = await backend.fresh()
    record = new("alice", owner="proc-a", lease=SHORT)
    await store.create(record)
    stale = TaskRecord.from_dict(record.to_dict())  # a copy taken while it worked
    record.status = "completed"
    record.result = RESULT
    record.touch()
    await store.save(record)
    done = record.to_dict()
    stale.status_message = "still going"
    stale.touch()
    await store.save(stale)  # non-terminal over terminal: refused
    stale.status = "failed"
    stale.error = {"code": -32603, "message": "late"}
    await store.save(stale)  # another terminal state: refused too
    await asyncio.sleep(PAST)  # and the passing lease fails nothing that ended
    for reader in (store, backend.open()):
        assert (await read(reader, record.task_id)).to_dict() == done


async def test_renew_extends_the_owners_live_leases(backend: Backend) -> None:
    store = await backend.fresh()
    mine = new("alice", owner="proc-a", lease=SHORT)
    theirs = new("alice", owner="proc-b", lease=SHORT)
    late = new("alice", owner="proc-a", lease=SHORT)
    for record in (mine, theirs, late):
        await store.create(record)
    until = time.time() + 60
    await store.renew([mine.task_id, theirs.task_id, "no-such-task", *HOSTILE_IDS], "proc-a",
                      until)  # fmt: skip
    await store.renew([], "proc-a", until)
    await asyncio.sleep(PAST)
    kept = await read(store, mine.task_id)
    assert (kept.status, kept.owner, kept.lease_until) == ("working", "proc-a", until)
    assert (await read(store, theirs.task_id)).error == LEASE_EXPIRED  # not proc-a's to renew
    # A lease that passed is not renewed, even unread: the task is over.
    await store.renew([late.task_id], "proc-a", until)
    assert (await read(backend.open(), late.task_id)).error == LEASE_EXPIRED
    # The owner's save, from its copy with the first lease, keeps the renewed one.
    mine.status_message = "later"
    mine.touch()
    await store.save(mine)
    kept = await read(backend.open(), mine.task_id)
    assert (kept.status, kept.status_message, kept.lease_until) == ("working", "later", until)


async def test_a_queued_task_is_claimed_by_one_worker_only(backend: Backend) -> None:
    store = await backend.fresh()
    queued = new("alice", status_message="queued")
    ended = new("alice", status_message="queued")
    for record in (queued, ended):
        await store.create(record)
    ended.status = "cancelled"
    await store.save(ended)
    until = time.time() + 60
    taken = await store.claim(queued.task_id, "worker-a", until)
    assert taken is not None
    assert (taken.owner, taken.lease_until, taken.status_message) == ("worker-a", until, None)
    kept = await read(backend.open(), queued.task_id)
    assert (kept.status, kept.owner, kept.lease_until) == ("working", "worker-a", until)
    # A second worker (a redelivery) finds it held, and learns by whom; nothing changes.
    again = await store.claim(queued.task_id, "worker-b", until + 5)
    assert again is not None
    assert (again.owner, again.lease_until) == ("worker-a", until)
    assert (await read(backend.open(), queued.task_id)).owner == "worker-a"
    # A task cancelled while queued is not taken; an unknown one is None.
    refused = await store.claim(ended.task_id, "worker-a", until)
    assert refused is not None
    assert (refused.status, refused.owner) == ("cancelled", None)
    assert await store.claim("no-such-task", "worker-a", until) is None
    # The holder renews the claimed lease as any owner does.
    await store.renew([queued.task_id], "worker-a", until + 30)
    assert (await read(backend.open(), queued.task_id)).lease_until == until + 30


async def test_a_task_whose_worker_was_lost_is_taken_over_only_while_it_has_retries(
    backend: Backend,
) -> None:
    store = await backend.fresh()
    task = new("alice", status_message="queued")
    await store.create(task)
    until = time.time() + 60
    first = await store.claim(task.task_id, "worker-a", until, 1)
    assert first is not None
    assert (first.owner, first.attempts) == ("worker-a", 1)
    # Its job comes to worker-b while worker-a renewed its lease under HOLDER_LOST_AFTER
    # ago: worker-a is alive, and keeps it, retries or not.
    alive = await store.claim(task.task_id, "worker-b", until + HOLDER_LOST_AFTER - 1, 1)
    assert alive is not None
    assert (alive.owner, alive.attempts) == ("worker-a", 1)
    # worker-a died (silent for HOLDER_LOST_AFTER): one retry left, so it runs again there.
    until += HOLDER_LOST_AFTER
    second = await store.claim(task.task_id, "worker-b", until, 1)
    assert second is not None
    assert (second.owner, second.attempts) == ("worker-b", 2)
    # worker-b died too: no retry left, it stays worker-b's, for the claimer to fail.
    until += HOLDER_LOST_AFTER
    third = await store.claim(task.task_id, "worker-c", until, 1)
    assert third is not None
    assert (third.owner, third.attempts) == ("worker-b", 2)
    kept = await read(backend.open(), task.task_id)
    assert (kept.owner, kept.attempts, kept.status) == ("worker-b", 2, "working")
    # A save from an older copy never resets the count.
    task.status_message = "from an old copy"
    await store.save(task)
    assert (await read(backend.open(), task.task_id)).attempts == 2


async def test_a_worker_hands_back_only_a_task_it_holds_and_that_runs(backend: Backend) -> None:
    store = await backend.fresh()
    task = new("alice", status_message="queued")
    ended = new("alice", status_message="queued")
    for record in (task, ended):
        await store.create(record)
        await store.claim(record.task_id, "worker-a", time.time() + 60, 1)
    ended.status = "completed"
    await store.save(ended)
    # Not its holder: nothing changes.
    held = await store.release(task.task_id, "worker-b", time.time() + 300)
    assert held is not None
    assert held.owner == "worker-a"
    until = time.time() + 300
    back = await store.release(task.task_id, "worker-a", until)
    assert back is not None
    assert (back.owner, back.lease_until, back.status, back.status_message, back.attempts) == (
        None,
        until,
        "working",
        "queued",
        1,
    )
    kept = await read(backend.open(), task.task_id)
    assert (kept.owner, kept.status_message, kept.attempts) == (None, "queued", 1)
    # Queued again, the next worker takes it as any queued task, and counts its run.
    again = await store.claim(task.task_id, "worker-b", time.time() + 60, 1)
    assert again is not None
    assert (again.owner, again.attempts) == ("worker-b", 2)
    # An ended task stays ended.
    done = await store.release(ended.task_id, "worker-a", until)
    assert done is not None
    assert (done.status, done.owner) == ("completed", "worker-a")
    assert await store.release("no-such-task", "worker-a", until) is None


async def test_a_claimed_task_whose_lease_passes_reads_worker_lost(backend: Backend) -> None:
    store = await backend.fresh()
    task = new("alice", status_message="queued")
    await store.create(task)
    await store.claim(task.task_id, "worker-a", time.time() + SHORT)
    await asyncio.sleep(PAST)
    lost = await read(backend.open(), task.task_id)
    assert lost.status == "failed"
    assert lost.error == {"code": -32603, "message": "The worker running the task was lost"}


async def test_a_queued_task_no_worker_took_fails_saying_so(backend: Backend) -> None:
    store = await backend.fresh()
    task = new("alice", lease=SHORT, status_message="queued")
    task.queue_timeout = 300.0  # what the message names, whatever the lease left
    waiting = new("alice", lease=SHORT, status_message="queued")
    for record in (task, waiting):
        await store.create(record)
    taken = await store.claim(waiting.task_id, "worker-a", time.time() + 60)
    assert taken is not None
    assert taken.owner == "worker-a"
    await asyncio.sleep(PAST)
    failed = await read(backend.open(), task.task_id)
    message = (
        "No worker took the task within 300 s: "
        "start one with `mcpserve worker <this server's file>`"
    )
    assert (failed.status, failed.status_message) == ("failed", message)
    assert failed.error == {"code": -32603, "message": message}
    # Claimed in time, it holds the worker's lease instead.
    assert (await read(backend.open(), waiting.task_id)).status == "working"
    assert await store.claim(task.task_id, "worker-b", time.time() + 60) is not None
    assert (await read(backend.open(), task.task_id)).owner is None


@pytest.mark.slow
async def test_created_and_expired_tasks_leave_nothing_behind(backend: Backend) -> None:
    """Over 100,000 created-and-expired tasks, memory stays flat, and SQLite's rows and
    Redis's keys stay few (each create there is a round trip, or a synced commit)."""
    store = await backend.fresh()

    async def churn(count: int) -> None:
        for n in range(count):
            record = TaskRecord(f"p{n % 7}", ttl_ms=1, poll_interval_ms=1)
            record.created_at -= 1  # expired at once
            await store.create(record)

    if backend.kind != "memory":
        await churn(100_000)
        # The keys of the tasks made in the last millisecond live out their one millisecond.
        await asyncio.sleep(0.05)
        assert backend.count() <= 8  # at most the last task, and a set per principal
        return
    await churn(1000)  # warm-up
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        await churn(100_000)
        growth = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert backend.count() <= 1
    assert growth < 200_000, growth


async def test_hostile_task_ids_are_just_not_found(backend: Backend) -> None:
    store = await backend.fresh()
    real = new("alice", owner="proc-a", lease=60)
    await store.create(real)
    before = backend.count()
    lookalikes = [real.task_id.upper(), real.task_id[:-1] + "_", real.task_id[:8] + "*",
                  real.task_id + "%", real.task_id + "\n", " " + real.task_id]  # fmt: skip
    for task_id in HOSTILE_IDS + lookalikes:
        assert await store.get(task_id) is None
        impostor = TaskRecord.from_dict({**real.to_dict(), "task_id": task_id,
                                         "status": "completed", "result": RESULT})  # fmt: skip
        await store.save(impostor)
        await store.renew([task_id], "proc-a", time.time() + 600)
        assert await store.get(task_id) is None
    assert backend.count() == before
    assert (await read(store, real.task_id)).to_dict() == real.to_dict()


# -- the durable stores ----------------------------------------------------------------------


def hook_once(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, first: Callable[[], None]
) -> None:
    """Run ``first`` just before the first call of ``module.name``."""
    real = getattr(module, name)
    calls: list[None] = []

    def hooked(*args: Any) -> Any:
        if not calls:
            calls.append(None)
            first()
        return real(*args)

    monkeypatch.setattr(module, name, hooked)


async def test_a_lease_expiry_never_overwrites_a_terminal_save(
    durable: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process saves ``completed`` between this one's read of the task (lease
    passed) and its write of ``failed``: the write does not happen."""
    store = await durable.fresh()
    record = new("alice", owner="proc-a", lease=0.05)
    await store.create(record)
    await asyncio.sleep(0.1)
    completed = TaskRecord.from_dict(record.to_dict())
    completed.status = "completed"
    completed.result = RESULT
    completed.touch()
    module = sqlite_tasks if durable.kind == "sqlite" else redis_tasks
    hook_once(monkeypatch, module, "expire_lease", lambda: durable.overwrite(completed))
    assert (await read(store, record.task_id)).to_dict() == completed.to_dict()
    assert (await read(durable.open(), record.task_id)).to_dict() == completed.to_dict()


async def test_a_save_never_overwrites_a_terminal_state_written_meanwhile(
    redis: RedisServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """SQLite reads and writes a save in one transaction; Redis compares and sets, so a
    ``cancelled`` written between its read and its write stays."""
    redis.flush()
    backend = Backend("redis", tmp_path, redis)
    store = await backend.fresh()
    try:
        record = new("alice", owner="proc-a", lease=60)
        await store.create(record)
        cancelled = TaskRecord.from_dict(record.to_dict())
        cancelled.status = "cancelled"
        hook_once(monkeypatch, redis_tasks, "saved_state", lambda: backend.overwrite(cancelled))
        record.status_message = "still going"
        await store.save(record)
        assert (await read(store, record.task_id)).to_dict() == cancelled.to_dict()
    finally:
        await backend.aclose()


async def test_a_renew_that_loses_a_race_is_done_again(
    redis: RedisServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Redis renews every lease in one pipeline of compare-and-sets; a task that changed
    since the read is renewed again on its own, over its new state."""
    redis.flush()
    backend = Backend("redis", tmp_path, redis)
    store = await backend.fresh()
    try:
        record = new("alice", owner="proc-a", lease=60)
        await store.create(record)
        progressed = TaskRecord.from_dict(record.to_dict())
        progressed.status_message = "progressed meanwhile"
        hook_once(monkeypatch, redis_tasks, "renew_lease", lambda: backend.overwrite(progressed))
        until = time.time() + 600
        await store.renew([record.task_id], "proc-a", until)
        kept = await read(store, record.task_id)
        assert (kept.status_message, kept.lease_until) == ("progressed meanwhile", until)
    finally:
        await backend.aclose()


async def test_sqlite_tasks_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = SQLiteTaskStore(path)
    assert await store.get("warm-up") is None  # the file exists before the leases start
    done = new("alice", owner="proc-a", lease=SHORT)
    running = new("alice", owner="proc-a", lease=SHORT, status_message="half way")
    unleased = new(None)
    for record in (done, running, unleased):
        await store.create(record)
    done.status = "completed"
    done.result = RESULT
    done.touch()
    await store.save(done)
    await store.close()  # the process stops
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    await asyncio.sleep(PAST)  # and its leases pass
    reopened = SQLiteTaskStore(path)
    try:
        assert (await read(reopened, done.task_id)).to_dict() == done.to_dict()
        failed = await read(reopened, running.task_id)
        assert (failed.status, failed.error) == ("failed", LEASE_EXPIRED)
        assert (await read(reopened, unleased.task_id)).to_dict() == unleased.to_dict()
        assert (await read(store, running.task_id)).to_dict() == failed.to_dict()  # reopens
    finally:
        await reopened.close()
        await store.close()


async def test_two_redis_stores_share_their_tasks(redis: RedisServer) -> None:
    redis.flush()
    one = RedisTaskStore(redis.url, max_tasks_per_principal=2)
    two = RedisTaskStore(redis.url, max_tasks_per_principal=2)
    elsewhere = RedisTaskStore(redis.url, namespace="other", max_tasks_per_principal=2)
    try:
        record = new("alice", owner="proc-a", lease=60)
        await one.create(record)
        assert (await read(two, record.task_id)).to_dict() == record.to_dict()
        record.status = "completed"
        record.result = RESULT
        await two.save(record)
        assert (await read(one, record.task_id)).to_dict() == record.to_dict()
        await two.create(new("alice"))
        with pytest.raises(TooManyTasks):  # the limit counts both stores' tasks
            await one.create(new("alice"))
        assert await elsewhere.get(record.task_id) is None  # another namespace: other tasks
        await elsewhere.create(new("alice"))
        with SyncRedis.from_url(redis.url) as client:
            key = f"mcpserve:{{mcpserve}}:task:{record.task_id}"
            assert 59_000 < client.pttl(key) <= 60_000  # Redis expires it with the task
            assert 59_000 < client.pttl("mcpserve:{mcpserve}:tasks:of:alice") <= 60_000
    finally:
        for store in (one, two, elsewhere):
            await store.close()


async def test_redis_outage_raises_task_store_unavailable(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    redis = own_redis  # stopped and started again here: not the run's shared one
    store = RedisTaskStore(redis.url)
    record = new("alice", owner="proc-a", lease=60)
    await store.create(record)
    redis.stop()
    try:
        with caplog.at_level(logging.WARNING, logger="mcpserve.tasks"):
            until = time.time() + 60
            attempts = [lambda: store.create(new()), lambda: store.get(record.task_id),
                        lambda: store.save(record),
                        lambda: store.renew([record.task_id], "proc-a", until)]  # fmt: skip
            for attempt in attempts:
                with pytest.raises(TaskStoreUnavailable, match=r"^The task store could not "):
                    await asyncio.wait_for(attempt(), 10.0)
        unavailable = [r for r in caplog.records if "is unavailable" in r.getMessage()]
        assert len(unavailable) == 1  # logged once per outage, not once per request
    finally:
        redis.start()
    try:
        assert await store.get(record.task_id) is None  # back (and empty: no persistence)
        assert store.available
    finally:
        await store.close()


async def test_an_unusable_sqlite_file_raises_task_store_unavailable(tmp_path: Path) -> None:
    for path in (tmp_path / "missing" / "tasks.sqlite3", tmp_path):
        store = SQLiteTaskStore(path)
        try:
            with pytest.raises(TaskStoreUnavailable, match=r"^The task store could not create"):
                await store.create(new())
            assert not store.available
        finally:
            await store.close()
