"""Redis restarted while task tools run on a worker: what each task reads afterwards.

Real processes throughout: a redis-server of each test's own (it is killed and started
again on the same port and folder), a front-end serving ``tests/support/servers/
gated_tasks.py`` over HTTP, and one ``python -m mcpserve worker`` on the same file with
``--concurrency 2``, so a third task waits on the queue. ``gated(name)`` runs until the test
makes the file ``open-<name>``, and writes ``returned-<name>`` as it returns, so a test
knows a function ended while Redis was away without asking Redis.

Redis is stopped with SIGKILL: a crash, the hard case of "restarted". A ``SHUTDOWN`` warns
no client either (each sees its connection close) and writes everything out first, so with
``appendfsync always`` it keeps exactly what a SIGKILL keeps: every write Redis answered.

Within 60 s of the restart (docs/tasks.md, "Faults"), with no process restarted:

* with an append-only file, every task reads what it would have without the outage: the one
  that ended before, the one whose function returned while Redis was down, the one running
  across the restart, the one still queued, each ``completed`` with its result; a new task
  runs on the same worker while one from before the outage still runs;
* from an RDB snapshot, what was written after the snapshot is gone: a task created after it
  is unknown (-32602) and never runs; the others as with the append-only file, since the
  worker writes their ends once Redis is back;
* with no persistence every earlier task is unknown (-32602), and new tasks still run on the
  same worker (Docket makes its consumer group again).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from redis_server import RedisServer
from task_workers import TaskCaller, queue_environment, started_worker
from wire_helpers import ROOT, SERVERS, TIMEOUT, child_env, http_server_process

pytestmark = [pytest.mark.subprocess, pytest.mark.redis]

APP = SERVERS / "gated_tasks.py"
TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES = {"extensions": {TASKS: {}}}
#: Every in-flight task has its end within this of Redis's restart (docs/tasks.md, Faults).
SETTLED_WITHIN = 60.0
#: Seconds Redis stays down ("restarted a few seconds later").
OUTAGE = 3.0
TERMINAL = ("completed", "failed", "cancelled")
AOF = ("--appendonly", "yes", "--appendfsync", "always")
UNKNOWN_TASK = -32602


class Caller(TaskCaller):
    """alice, calling the front-end in 2026-07-28 with the tasks extension."""

    def __init__(self, http: httpx2.AsyncClient) -> None:
        super().__init__(http, CAPABILITIES)

    async def gated(self, name: str) -> str:
        """A task of the ``gated`` tool named ``name``."""
        return await self.create("gated", {"name": name})

    async def until(self, task_id: str, status: str, deadline: float) -> dict[str, Any]:
        """The task once it reads ``status``, by ``deadline`` (monotonic)."""
        while (task := await self.get(task_id))["status"] != status:
            assert task["status"] not in TERMINAL, task  # ended otherwise: never will be
            assert time.monotonic() < deadline, task
            await asyncio.sleep(0.05)
        return task

    async def until_running(self, task_id: str, name: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while f"{name} running" not in (await self.get(task_id)).get("statusMessage", ""):
            assert time.monotonic() < deadline, await self.get(task_id)
            await asyncio.sleep(0.05)


class Gates:
    """The marker folder the tools watch: ``open`` lets one return, ``returned`` waits for it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def open(self, name: str) -> None:
        (self.folder / f"open-{name}").write_text("")

    def runs(self, name: str) -> int:
        """How many times the function of ``name`` started."""
        runs = self.folder / f"runs-{name}"
        return len(runs.read_text().splitlines()) if runs.exists() else 0

    def returned(self, name: str) -> bool:
        return (self.folder / f"returned-{name}").exists()

    async def until_returned(self, name: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not self.returned(name):
            assert time.monotonic() < deadline, f"{name} did not return"
            await asyncio.sleep(0.05)


def environment(redis: RedisServer) -> dict[str, str]:
    return queue_environment(redis)


@contextlib.contextmanager
def own_redis(tmp_path: Path, *options: str) -> Iterator[RedisServer]:
    """A redis-server of this test's own, in its own folder (where its data is kept)."""
    folder = tmp_path / "redis"
    folder.mkdir()
    redis = RedisServer(folder, options=options)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


@contextlib.contextmanager
def worker(
    tmp_path: Path, redis: RedisServer, log: str = "worker.log"
) -> Iterator[subprocess.Popen[bytes]]:
    """``mcpserve worker`` on the test server, two tasks at once, once it said ready."""
    env = child_env(MCPSERVE_TEST_MARKER_DIR=str(tmp_path), **environment(redis))
    args = (str(APP), "--concurrency", "2")
    with started_worker(tmp_path / log, args, env=env, cwd=ROOT) as running:
        yield running.process


@contextlib.asynccontextmanager
async def deployment(
    tmp_path: Path, redis: RedisServer
) -> AsyncIterator[tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], Caller, Gates]]:
    """The front-end, the worker, alice and the gates."""
    env = environment(redis)
    with (
        http_server_process(tmp_path, args=[sys.executable, str(APP)], env=env) as served,
        worker(tmp_path, redis) as running,
    ):
        base = f"http://127.0.0.1:{served.port}"
        async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
            http.headers["x-user"] = "alice"
            yield served.process, running, Caller(http), Gates(tmp_path)


def result_of(task: dict[str, Any]) -> dict[str, Any]:
    assert task["status"] == "completed", task
    structured: dict[str, Any] = task["result"]["structuredContent"]
    return structured


async def tasks_in_flight(alice: Caller, gates: Gates) -> dict[str, str]:
    """One task ended, two running on the worker (its two slots), one queued behind them."""
    gates.open("earlier")
    ids = {"earlier": await alice.gated("earlier")}
    await alice.until(ids["earlier"], "completed", time.monotonic() + TIMEOUT)
    for name in ("during", "across"):
        ids[name] = await alice.gated(name)
        await alice.until_running(ids[name], name)
    gates.open("queued")  # it returns at once, once the worker takes it
    ids["queued"] = await alice.gated("queued")
    await asyncio.sleep(1.0)  # the worker's slots are taken: it stays queued
    queued = await alice.get(ids["queued"])
    assert (queued["status"], queued.get("statusMessage")) == ("working", "queued"), queued
    return ids


async def outage(redis: RedisServer, gates: Gates) -> float:
    """Redis killed; the function of ``during`` returns while it is down; Redis started
    again on the same port and folder. When it answers again (monotonic)."""
    redis.kill()
    gates.open("during")
    await gates.until_returned("during")
    await asyncio.sleep(OUTAGE)
    redis.start()
    return time.monotonic()


async def check_every_task_ends_with_its_result(
    alice: Caller,
    gates: Gates,
    ids: dict[str, str],
    restarted: float,
    front: subprocess.Popen[bytes],
    running: subprocess.Popen[bytes],
) -> None:
    deadline = restarted + SETTLED_WITHIN
    earlier = result_of(await alice.get(ids["earlier"]))
    assert earlier == {"name": "earlier", "pid": running.pid}
    # A new task runs on the same worker while one from before the outage still runs.
    gates.open("new")
    new = await alice.until(await alice.gated("new"), "completed", deadline)
    assert result_of(new) == {"name": "new", "pid": running.pid}
    assert (await alice.get(ids["across"]))["status"] == "working"
    gates.open("across")
    for name in ("during", "across", "queued"):
        ended = await alice.until(ids[name], "completed", deadline)
        assert result_of(ended) == {"name": name, "pid": running.pid}, name
    # Each function ran once: none was run again for want of its end in Redis.
    assert {name: gates.runs(name) for name in [*ids, "new"]} == dict.fromkeys([*ids, "new"], 1)
    assert front.poll() is None  # nothing was restarted
    assert running.poll() is None


async def test_redis_restarted_from_its_append_only_file_loses_no_task(tmp_path: Path) -> None:
    with own_redis(tmp_path, *AOF) as redis:
        async with deployment(tmp_path, redis) as (front, running, alice, gates):
            ids = await tasks_in_flight(alice, gates)
            restarted = await outage(redis, gates)
            await check_every_task_ends_with_its_result(
                alice, gates, ids, restarted, front, running
            )


async def test_redis_restarted_from_a_snapshot_forgets_what_came_after_it(
    tmp_path: Path,
) -> None:
    with own_redis(tmp_path) as redis:  # no AOF, no automatic snapshots: only the SAVE below
        async with deployment(tmp_path, redis) as (front, running, alice, gates):
            ids = await tasks_in_flight(alice, gates)
            assert redis.command("SAVE") == b"+OK"
            gates.open("after")
            after = await alice.gated("after")  # written after the snapshot: lost with it
            restarted = await outage(redis, gates)
            reply = await alice.send("tasks/get", {"taskId": after})
            assert reply.error["code"] == UNKNOWN_TASK, reply.message
            await check_every_task_ends_with_its_result(
                alice, gates, ids, restarted, front, running
            )
            assert gates.runs("after") == 0  # its job was lost with its record


async def test_redis_restarted_without_its_data_forgets_every_task_and_runs_new_ones(
    tmp_path: Path,
) -> None:
    with own_redis(tmp_path) as redis:
        async with deployment(tmp_path, redis) as (front, running, alice, gates):
            ids = await tasks_in_flight(alice, gates)
            restarted = await outage(redis, gates)
            for name, task_id in ids.items():
                reply = await alice.send("tasks/get", {"taskId": task_id})
                assert reply.error["code"] == UNKNOWN_TASK, (name, reply.message)
            gates.open("new")
            new = await alice.until(await alice.gated("new"), "completed", restarted + 60)
            assert result_of(new) == {"name": "new", "pid": running.pid}
            gates.open("across")
            await gates.until_returned("across")  # the function of a forgotten task ends
            gates.open("second")
            second = await alice.until(await alice.gated("second"), "completed", restarted + 60)
            assert result_of(second) == {"name": "second", "pid": running.pid}
            # Once each, but for the queued one, whose job went with the data.
            names = [*ids, "new", "second"]
            runs = {name: gates.runs(name) for name in names}
            assert runs == {**dict.fromkeys(names, 1), "queued": 0}
            assert front.poll() is None
            assert running.poll() is None


async def test_a_worker_with_free_slots_takes_new_tasks_while_one_from_before_runs(
    tmp_path: Path,
) -> None:
    # A slot free while Redis is down: Docket's poll for jobs fails, and Docket, left alone,
    # would take nothing new until every job it ran before had ended.
    with own_redis(tmp_path, *AOF) as redis:
        async with deployment(tmp_path, redis) as (front, running, alice, gates):
            long = await alice.gated("long")
            await alice.until_running(long, "long")
            redis.kill()
            await asyncio.sleep(OUTAGE)
            redis.start()
            restarted = time.monotonic()
            gates.open("new")
            new = await alice.until(await alice.gated("new"), "completed", restarted + 60)
            assert result_of(new) == {"name": "new", "pid": running.pid}
            # Past Docket's redelivery of the job it let go of (15 s unrenewed, then its
            # sweep): given again, it is not run a second time beside the first.
            await asyncio.sleep(max(0.0, restarted + 25 - time.monotonic()))
            assert (await alice.get(long))["status"] == "working"
            assert gates.runs("long") == 1
            gates.open("long")
            ended = await alice.until(long, "completed", restarted + 60)
            assert result_of(ended) == {"name": "long", "pid": running.pid}
            assert {"long": gates.runs("long"), "new": gates.runs("new")} == {"long": 1, "new": 1}
            assert front.poll() is None
            assert running.poll() is None


@pytest.mark.parametrize("tool", ["gated", "gated_again"])
async def test_a_task_that_ended_after_the_snapshot_runs_again_only_if_safe_to(
    tmp_path: Path, tool: str
) -> None:
    # The snapshot holds the task running on the worker and its job taken; the task then
    # ends, and Redis comes back from the snapshot: the record reads `working`, held by the
    # worker, which no longer runs it, and Docket gives the job again.
    with own_redis(tmp_path) as redis:
        async with deployment(tmp_path, redis) as (front, running, alice, gates):
            ended = await alice.create(tool, {"name": "ended"})
            await alice.until_running(ended, "ended")
            assert redis.command("SAVE") == b"+OK"
            gates.open("ended")
            await alice.until(ended, "completed", time.monotonic() + TIMEOUT)
            redis.kill()
            await asyncio.sleep(OUTAGE)
            redis.start()
            restarted = time.monotonic()
            assert (await alice.get(ended))["status"] == "working"  # as the snapshot has it
            if tool == "gated_again":  # declared safe to run again: it does, and completes
                again = await alice.until(ended, "completed", restarted + SETTLED_WITHIN)
                assert result_of(again) == {"name": "ended", "pid": running.pid}
                assert gates.runs("ended") == 2
            else:  # not run again
                failed = await alice.until(ended, "failed", restarted + SETTLED_WITHIN)
                message = (
                    "The task's end was lost: the task store came back from a copy made "
                    "before it ended (Redis restarted from a snapshot)"
                )
                assert failed["error"] == {"code": -32603, "message": message}
                assert gates.runs("ended") == 1
            assert front.poll() is None
            assert running.poll() is None


async def test_a_task_running_across_the_restart_stays_with_its_worker_beside_another(
    tmp_path: Path,
) -> None:
    # Two workers: the job Docket gives again after the outage may reach the other one,
    # which must not take the task from its worker, alive and running it.
    with own_redis(tmp_path, *AOF) as redis:
        async with deployment(tmp_path, redis) as (front, first, alice, gates):
            long = await alice.gated("long")
            await alice.until_running(long, "long")
            with worker(tmp_path, redis, log="second-worker.log") as second:
                redis.kill()
                await asyncio.sleep(OUTAGE)
                redis.start()
                restarted = time.monotonic()
                # Past Docket's redelivery of the job the first worker let go of.
                await asyncio.sleep(max(0.0, restarted + 25 - time.monotonic()))
                assert (await alice.get(long))["status"] == "working"
                gates.open("long")
                ended = await alice.until(long, "completed", restarted + 60)
                assert result_of(ended) == {"name": "long", "pid": first.pid}
                assert gates.runs("long") == 1
                assert second.poll() is None
            assert front.poll() is None
