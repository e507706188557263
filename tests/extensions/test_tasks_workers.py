"""Task tools run by workers: a front-end queues them, ``mcpserve worker`` runs them.

Real processes throughout: the run's redis-server, a front-end serving
``tests/support/servers/worker_tasks.py`` over HTTP (callers named by ``x-user``), and
``python -m mcpserve worker`` on the same file, with ``MCPSERVE_TASK_QUEUE`` and
``MCPSERVE_REDIS_URL`` naming that Redis. Every wait is bounded, every process is stopped
by its pid. Each tool answers its pid, so "the worker ran it" is read, not assumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from redis_server import RedisServer
from task_workers import TaskCaller, Worker, queue_environment, started_worker
from wire_helpers import (
    META,
    ROOT,
    SERVERS,
    TIMEOUT,
    child_env,
    default_headers,
    http_server_process,
)

pytestmark = [pytest.mark.subprocess, pytest.mark.redis]

APP = SERVERS / "worker_tasks.py"
TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES = {
    "elicitation": {"form": {}},
    "sampling": {},
    "roots": {},
    "extensions": {TASKS: {}},
}
TERMINAL = ("completed", "failed", "cancelled")
#: A task whose worker is lost leaves `working` within this (docs/tasks.md, "On workers").
LOST_WITHIN = 60.0


class Caller(TaskCaller):
    """One caller (``x-user``) of the front-end, speaking 2026-07-28 with the extension."""

    def __init__(self, http: httpx2.AsyncClient, user: str) -> None:
        super().__init__(http, CAPABILITIES)
        self.user = user

    async def until(self, task_id: str, *statuses: str, within: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while (task := await self.get(task_id))["status"] not in statuses:
            assert task["status"] not in TERMINAL, task  # ended otherwise: never will be
            assert time.monotonic() < deadline, task
            await asyncio.sleep(0.02)
        return task

    async def until_message(self, task_id: str, prefix: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while not (task := await self.get(task_id)).get("statusMessage", "").startswith(prefix):
            assert task["status"] == "working", task
            assert time.monotonic() < deadline, task
            await asyncio.sleep(0.02)
        return task


def environment(redis: RedisServer) -> dict[str, str]:
    return queue_environment(redis)


@contextlib.contextmanager
def worker(
    tmp_path: Path,
    redis: RedisServer,
    *args: str,
    project: Path | None = None,
    env: dict[str, str] | None = None,
    target: str = str(APP),
) -> Iterator[Worker]:
    """``mcpserve worker`` on ``target`` (the test server), once it said ``worker ready``;
    with ``project``, run in that folder with no TARGET and no Redis in its environment."""
    log = tmp_path / f"worker-{time.monotonic_ns()}.log"
    environ = child_env(MCPSERVE_TEST_MARKER_DIR=str(tmp_path), **(env or {}))
    if project is None:
        args = (target, *args)
        environ.update(environment(redis))
    else:
        for name in environment(redis):
            environ.pop(name, None)
    with started_worker(log, args, env=environ, cwd=ROOT if project is None else project) as w:
        yield w


@contextlib.asynccontextmanager
async def front_end(
    tmp_path: Path, redis: RedisServer, **env: str
) -> AsyncIterator[tuple[subprocess.Popen[bytes], Caller]]:
    """The front-end's process, and alice calling it."""
    args = [sys.executable, str(APP)]
    with http_server_process(tmp_path, args=args, env={**environment(redis), **env}) as served:
        base = f"http://127.0.0.1:{served.port}"
        async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
            http.headers["x-user"] = "alice"
            yield served.process, Caller(http, "alice")


@pytest.fixture
def fresh(redis: RedisServer) -> RedisServer:
    redis.flush()
    return redis


async def test_a_task_reads_queued_until_a_worker_takes_it_and_runs_it(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (front, alice):
        task_id = await alice.create("where")
        await asyncio.sleep(0.5)  # no worker yet: nobody runs it
        queued = await alice.get(task_id)
        assert (queued["status"], queued["statusMessage"]) == ("working", "queued")
        with worker(tmp_path, fresh, target=f"{APP}:server") as running:  # file:attribute
            done = await alice.until(task_id, "completed")
        ran = done["result"]["structuredContent"]
        assert ran["pid"] == running.pid != front.pid
        assert ran["principal"] == "alice"  # the caller's principal, bound on the worker
        assert ran["capabilities"] == ["elicitation", "extensions", "roots", "sampling"]
        assert "statusMessage" not in done


async def test_a_task_no_worker_takes_fails_after_the_queue_timeout(
    tmp_path: Path, fresh: RedisServer
) -> None:
    # No worker at all: the front-end that reads the task fails it once the timeout passed.
    async with front_end(tmp_path, fresh, MCPSERVE_TEST_QUEUE_TIMEOUT="1.5") as (_, alice):
        created = time.monotonic()
        task_id = await alice.create("where")
        queued = await alice.get(task_id)
        assert (queued["status"], queued["statusMessage"]) == ("working", "queued")
        failed = await alice.until(task_id, "failed", within=1.5 + TIMEOUT)
        assert time.monotonic() - created >= 1.5
    message = (
        "No worker took the task within 1.5 s: "
        "start one with `mcpserve worker <this server's file>`"
    )
    assert failed["error"] == {"code": -32603, "message": message}
    assert failed["statusMessage"] == message
    assert "result" not in failed
    # Another front-end reads it the same way: the failure is in the shared store.
    async with front_end(tmp_path, fresh) as (_, again):
        assert (await again.get(task_id))["error"] == failed["error"]


async def test_progress_results_and_errors_from_a_worker_read_on_the_front_end(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh, "--concurrency", "2") as running:
            stepping = await alice.create("steps", {"count": 3, "pause": 0.4})
            crashing = await alice.create("crash")
            middle = await alice.until_message(stepping, "step 2")
            assert middle["statusMessage"] == "step 2 of 3"
            done = await alice.until(stepping, "completed")
            text = f"3 steps in {running.pid}"
            assert done["result"]["content"] == [{"type": "text", "text": text}]
            failed = await alice.until(crashing, "failed")
            error = {"code": -32603, "message": "The job crashed", "data": {"pid": running.pid}}
            assert failed["error"] == error
            # Another caller does not see alice's task, wherever it ran.
            alice.http.headers["x-user"] = "mallory"
            reply = await alice.send("tasks/get", {"taskId": stepping})
            assert reply.error["code"] == -32602


async def test_cancel_on_the_front_end_cancels_the_handler_on_the_worker(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh) as running:
            task_id = await alice.create("until_cancelled")
            await alice.until_message(task_id, f"running in {running.pid}")
            await alice.send("tasks/cancel", {"taskId": task_id})
            cancelled = await alice.until(task_id, "cancelled", within=5.0)
            assert "result" not in cancelled
            assert "error" not in cancelled
            marker = tmp_path / f"cancelled-{running.pid}"
            deadline = time.monotonic() + 5.0
            while not marker.exists():
                assert time.monotonic() < deadline, running.output()
                await asyncio.sleep(0.02)
            assert marker.read_text() == "CancelledError ctx.cancelled=True"


async def test_a_question_on_the_worker_is_answered_through_the_front_end(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh) as running:
            task_id = await alice.create("confirm")
            parked = await alice.until(task_id, "input_required")
            (key,) = parked["inputRequests"]
            assert parked["inputRequests"][key]["method"] == "elicitation/create"
            yes = {key: {"action": "accept", "content": {"confirm": True}}}
            await alice.send("tasks/update", {"taskId": task_id, "inputResponses": yes})
            done = await alice.until(task_id, "completed")
            text = f"confirmed in {running.pid}"
            assert done["result"]["content"] == [{"type": "text", "text": text}]


async def test_sampling_and_roots_asked_on_the_worker_are_answered_through_the_front_end(
    tmp_path: Path, fresh: RedisServer
) -> None:
    sampled = {"role": "assistant", "content": {"type": "text", "text": "Paris."},
               "model": "test-model", "stopReason": "endTurn"}  # fmt: skip
    roots = {"roots": [{"uri": "file:///work", "name": "work"}]}
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh) as running:
            task_id = await alice.create("consult")
            answers = {"sampling/createMessage": sampled, "roots/list": roots}
            asked: dict[str, str] = {}  # key -> method, in the order asked
            while (task := await alice.until(task_id, "input_required", "completed"))[
                "status"
            ] == "input_required":
                (key,) = task["inputRequests"]
                if key in asked:  # answered; the worker has not taken the answer in yet
                    await asyncio.sleep(0.02)
                    continue
                asked[key] = task["inputRequests"][key]["method"]
                answer = {key: answers[asked[key]]}
                await alice.send("tasks/update", {"taskId": task_id, "inputResponses": answer})
            done = task
    assert list(asked.values()) == ["sampling/createMessage", "roots/list"]
    text = f"Paris. ['file:///work'] in {running.pid}"
    assert done["result"]["content"] == [{"type": "text", "text": text}]


async def test_a_tasks_life_and_result_limit_hold_on_a_worker(
    tmp_path: Path, fresh: RedisServer
) -> None:
    limits = {"MCPSERVE_TEST_TASK_TTL": "3", "MCPSERVE_TEST_MAX_RESULT_BYTES": "1000"}
    async with front_end(tmp_path, fresh, **limits) as (_, alice):
        with worker(tmp_path, fresh, env=limits):
            small = await alice.create("sized", {"size": 10})
            large = await alice.create("sized", {"size": 2000})
            done = await alice.until(small, "completed")
            failed = await alice.until(large, "failed")
            assert done["result"]["content"] == [{"type": "text", "text": "x" * 10}]
            message = "The task's result is larger than 1000 bytes"
            assert failed["error"] == {"code": -32603, "message": message}
            assert done["ttlMs"] == 3000
            deadline = time.monotonic() + 3.0 + TIMEOUT
            while (
                "error" not in (reply := await alice.send("tasks/get", {"taskId": small})).message
            ):
                assert time.monotonic() < deadline, reply
                await asyncio.sleep(0.1)
    assert reply.error["code"] == -32602


async def next_event(lines: Any) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async for line in lines:
            if line.startswith("data: "):
                parsed: dict[str, Any] = json.loads(line[6:])
                return parsed
        raise AssertionError("the stream ended")

    return await asyncio.wait_for(read(), TIMEOUT)


async def test_a_listen_on_the_front_end_hears_every_status_the_worker_sets(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        task_id = await alice.create("confirm")
        meta = {**META, "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}
        listen = {"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                  "params": {"notifications": {"taskIds": [task_id]}, "_meta": meta}}  # fmt: skip
        headers = default_headers(listen)
        async with alice.http.stream("POST", "/mcp", json=listen, headers=headers) as stream:
            lines = stream.aiter_lines()
            ack = await next_event(lines)
            assert ack["params"]["notifications"] == {"taskIds": [task_id]}
            with worker(tmp_path, fresh) as running:
                taken = await next_event(lines)
                assert (taken["params"]["status"], "statusMessage" in taken["params"]) == (
                    "working",
                    False,
                )
                parked = await next_event(lines)
                assert parked["params"]["status"] == "input_required"
                (key,) = parked["params"]["inputRequests"]
                yes = {key: {"action": "accept", "content": {"confirm": True}}}
                await alice.send("tasks/update", {"taskId": task_id, "inputResponses": yes})
                seen = [(await next_event(lines))["params"] for _ in range(2)]
        assert [note["status"] for note in seen] == ["working", "completed"]
        text = f"confirmed in {running.pid}"
        assert seen[1]["result"]["content"] == [{"type": "text", "text": text}]


async def test_a_task_cancelled_while_queued_never_runs(tmp_path: Path, fresh: RedisServer) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        task_id = await alice.create("until_cancelled")
        await alice.send("tasks/cancel", {"taskId": task_id})
        assert (await alice.get(task_id))["status"] == "cancelled"
        with worker(tmp_path, fresh) as running:
            later = await alice.create("where")
            await alice.until(later, "completed")  # the worker has read the queue past it
            assert (await alice.get(task_id))["status"] == "cancelled"
            assert not (tmp_path / f"cancelled-{running.pid}").exists()


async def test_sigterm_lets_running_tasks_finish_then_stops_the_worker(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh, "--grace", "10") as running:
            finishing = await alice.create("steps", {"count": 2, "pause": 0.5})
            await alice.until_message(finishing, "step 1")
            os.kill(running.pid, signal.SIGTERM)
            assert running.process.wait(TIMEOUT) == 0, running.output()
            done = await alice.get(finishing)
            assert done["status"] == "completed", done
        with worker(tmp_path, fresh, "--grace", "0.3") as running:
            stuck = await alice.create("until_cancelled")
            await alice.until_message(stuck, f"running in {running.pid}")
            os.kill(running.pid, signal.SIGTERM)
            assert running.process.wait(TIMEOUT) == 0, running.output()
            stopped = await alice.get(stuck)
        assert stopped["status"] == "failed"
        message = "The worker stopped before the task finished"
        assert stopped["error"] == {"code": -32603, "message": message}


async def test_sigterm_past_the_grace_hands_the_retry_safe_to_another_worker(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh, "--grace", "0.5") as first:
            safe = await alice.create("repeatable")
            unsafe = await alice.create("until_cancelled")
            await alice.until_message(safe, f"running in {first.pid}")
            await alice.until_message(unsafe, f"running in {first.pid}")
            with worker(tmp_path, fresh) as second:
                os.kill(first.pid, signal.SIGTERM)
                assert first.process.wait(TIMEOUT) == 0, first.output()
                stopped = time.monotonic()
                failed = await alice.get(unsafe)
                message = "The worker stopped before the task finished"
                assert failed["error"] == {"code": -32603, "message": message}
                await alice.until_message(safe, f"running in {second.pid}")
                # Handed back at once, not found by Docket's redelivery (about 20 s later).
                assert time.monotonic() - stopped < 10.0
                (tmp_path / "release").touch()
                done = await alice.until(safe, "completed")
                text = f"done in {second.pid}"
                assert done["result"]["content"] == [{"type": "text", "text": text}]


async def test_a_retry_safe_task_stopped_on_its_last_run_fails(
    tmp_path: Path, fresh: RedisServer
) -> None:
    # retries=1: two runs at most. The first worker's SIGTERM hands it back; the second
    # worker's, on its last run, fails it as it fails a task without retries.
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh, "--grace", "0.3") as first:
            task_id = await alice.create("repeatable_once")
            await alice.until_message(task_id, f"running in {first.pid}")
            with worker(tmp_path, fresh, "--grace", "0.3") as second:
                os.kill(first.pid, signal.SIGTERM)
                assert first.process.wait(TIMEOUT) == 0, first.output()
                await alice.until_message(task_id, f"running in {second.pid}")
                os.kill(second.pid, signal.SIGTERM)
                assert second.process.wait(TIMEOUT) == 0, second.output()
        stopped = await alice.get(task_id)
        message = "The worker stopped before the task finished"
        assert stopped["error"] == {"code": -32603, "message": message}
        assert (stopped["status"], stopped["statusMessage"]) == ("failed", message)


async def test_a_task_handed_back_with_no_worker_left_fails_after_the_queue_timeout(
    tmp_path: Path, fresh: RedisServer
) -> None:
    timeout = {"MCPSERVE_TEST_QUEUE_TIMEOUT": "1.5"}
    async with front_end(tmp_path, fresh, **timeout) as (_, alice):
        with worker(tmp_path, fresh, "--grace", "0.3", env=timeout) as only:
            task_id = await alice.create("repeatable")
            await alice.until_message(task_id, f"running in {only.pid}")
            os.kill(only.pid, signal.SIGTERM)
            assert only.process.wait(TIMEOUT) == 0, only.output()
            handed_back = time.monotonic()
        queued = await alice.get(task_id)
        assert (queued["status"], queued["statusMessage"]) == ("working", "queued")
        failed = await alice.until(task_id, "failed", within=1.5 + TIMEOUT)
        assert time.monotonic() - handed_back >= 1.0  # waited, counted from the hand-back
    message = (
        "No worker took the task within 1.5 s: "
        "start one with `mcpserve worker <this server's file>`"
    )
    assert failed["error"] == {"code": -32603, "message": message}


async def stopped_with(process: subprocess.Popen[bytes], stop: signal.Signals) -> None:
    process.send_signal(stop)
    deadline = time.monotonic() + TIMEOUT
    while process.poll() is None:
        assert time.monotonic() < deadline, f"still running {stop.name} ago"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
async def test_a_front_end_stopped_never_affects_tasks_on_workers(
    tmp_path: Path, fresh: RedisServer, stop: signal.Signals
) -> None:
    # Tasks created through a front-end run on the worker while that front-end stops and
    # no front-end is up; another one, started later (a restart), reads and answers them.
    drain = {"MCPSERVE_DRAIN_SECONDS": "0.2"}
    with worker(tmp_path, fresh) as running:
        async with front_end(tmp_path, fresh, **drain) as (first, alice):
            stepping = await alice.create("steps", {"count": 6, "pause": 0.5})
            asking = await alice.create("confirm")
            await alice.until_message(stepping, "step 1 of 6")
            await alice.until(asking, "input_required")
            await stopped_with(first, stop)
        async with front_end(tmp_path, fresh) as (second, again):
            assert second.pid != first.pid
            parked = await again.until(asking, "input_required")
            (key,) = parked["inputRequests"]
            yes = {key: {"action": "accept", "content": {"confirm": True}}}
            await again.send("tasks/update", {"taskId": asking, "inputResponses": yes})
            answered = await again.until(asking, "completed")
            done = await again.until(stepping, "completed")
    assert first.returncode == -stop  # uvicorn raises SIGTERM again once it has stopped
    text = f"confirmed in {running.pid}"
    assert answered["result"]["content"] == [{"type": "text", "text": text}]
    assert done["result"]["content"] == [{"type": "text", "text": f"6 steps in {running.pid}"}]


async def test_a_tool_asking_before_its_task_starts_runs_the_task_on_a_worker(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (front, alice):
        with worker(tmp_path, fresh) as running:
            call = {"name": "deploy", "arguments": {"env": "prod"}}
            asked = (await alice.send("tools/call", call)).result
            assert asked["resultType"] == "input_required", asked
            (key,) = asked["inputRequests"]
            yes = {key: {"action": "accept", "content": {"confirm": True}}}
            retry = {**call, "inputResponses": yes, "requestState": asked["requestState"]}
            created = (await alice.send("tools/call", retry)).result
            assert (created["resultType"], created["status"]) == ("task", "working")
            assert created["statusMessage"] == "queued"
            done = await alice.until(created["taskId"], "completed")
            no = {key: {"action": "accept", "content": {"confirm": False}}}
            retry = {**call, "inputResponses": no, "requestState": asked["requestState"]}
            declined = (await alice.send("tools/call", retry)).result
    # The worker ran it from the top, its question answered from the call's rounds, and the
    # state they sealed read there; the front-end did not go on past ctx.start_task().
    text = f"deployed to prod in {running.pid}, asked in {front.pid}"
    assert done["result"]["content"] == [{"type": "text", "text": text}]
    assert (tmp_path / f"deployed-{running.pid}").exists()
    assert not (tmp_path / f"deployed-{front.pid}").exists()
    # Declined: the call ended before it became a task, answered by the front-end.
    said = f"not deployed, said in {front.pid}"
    assert (declined["resultType"], declined["content"]) == (
        "complete",
        [{"type": "text", "text": said}],
    )


async def test_a_worker_run_asking_what_the_call_did_not_fails_naming_the_fix(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh):
            asked = (await alice.send("tools/call", {"name": "fickle", "arguments": {}})).result
            (key,) = asked["inputRequests"]
            yes = {key: {"action": "accept", "content": {"confirm": True}}}
            retry = {"name": "fickle", "arguments": {}, "inputResponses": yes,
                     "requestState": asked["requestState"]}  # fmt: skip
            created = (await alice.send("tools/call", retry)).result
            failed = await alice.until(created["taskId"], "failed")
    message = (
        "The function asked the worker a question it had not asked the client before "
        "ctx.start_task(): ask the same questions on every run"
    )
    assert failed["error"] == {"code": -32603, "message": message}


async def test_a_worker_killed_mid_task_reruns_the_retry_safe_and_fails_the_other(
    tmp_path: Path, fresh: RedisServer
) -> None:
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh) as first:
            safe = await alice.create("repeatable")
            unsafe = await alice.create("until_cancelled")
            await alice.until_message(safe, f"running in {first.pid}")
            await alice.until_message(unsafe, f"running in {first.pid}")
            with worker(tmp_path, fresh) as second:
                first.process.kill()
                first.process.wait(TIMEOUT)
                killed = time.monotonic()
                (tmp_path / "release").touch()  # too late for the first worker
                lost = await alice.until(unsafe, "failed", within=LOST_WITHIN)
                message = "The worker running the task was lost"
                assert lost["error"] == {"code": -32603, "message": message}
                done = await alice.until(safe, "completed", within=LOST_WITHIN)
                assert time.monotonic() - killed < LOST_WITHIN
                text = f"done in {second.pid}"
                assert done["result"]["content"] == [{"type": "text", "text": text}]


async def test_a_worker_without_a_target_takes_the_project_files_settings(
    tmp_path: Path, fresh: RedisServer
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "queue.env").write_text(f"MCPSERVE_TASK_QUEUE={fresh.url}\n")
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "tasks"\n\n[tool.mcpserve]\nserver = "{APP}"\n'
        f'env_file = "queue.env"\nredis_url = "{fresh.url}"\nworker_concurrency = 2\n'
    )
    async with front_end(tmp_path, fresh) as (_, alice):
        with worker(tmp_path, fresh, project=project) as running:
            tasks = [await alice.create("until_cancelled") for _ in range(3)]
            deadline = time.monotonic() + TIMEOUT
            while True:
                messages = [(await alice.get(t)).get("statusMessage") for t in tasks]
                taken = [t for t, said in zip(tasks, messages, strict=True) if said != "queued"]
                if len(taken) >= 2:
                    break
                assert time.monotonic() < deadline, running.output()
                await asyncio.sleep(0.02)
            for task_id in taken:
                await alice.until_message(task_id, f"running in {running.pid}")
            await asyncio.sleep(1.0)  # room for a third, which worker_concurrency = 2 forbids
            (waiting,) = set(tasks) - set(taken)
            assert (await alice.get(waiting))["statusMessage"] == "queued"
            # The cancel reaches the worker over the project's redis_url; the slot it frees
            # lets the third task in.
            await alice.send("tasks/cancel", {"taskId": taken[0]})
            await alice.until(taken[0], "cancelled", within=5.0)
            await alice.until_message(waiting, f"running in {running.pid}")


def test_retries_are_for_task_tools_and_counted_from_zero() -> None:
    from mcpserve import Server

    def job() -> str:
        return "done"

    server = Server("retries")
    with pytest.raises(TypeError, match=r'^retries= is for task tools: add task="optional"'):
        server.tool(retries=1)(job)
    with pytest.raises(ValueError, match=r"^retries must be a whole number, 0 or more, not -1$"):
        server.tool(task="optional", retries=-1)(job)
    assert server.tool(task="optional", retries=3)(job).retries == 3


def test_a_server_without_a_task_queue_is_one_line(tmp_path: Path) -> None:
    env = child_env()
    env.pop("MCPSERVE_TASK_QUEUE", None)
    done = subprocess.run(
        [sys.executable, "-m", "mcpserve", "worker", str(APP)],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "Error: Server 'worker-tasks' has no task queue: set MCPSERVE_TASK_QUEUE "
        "(or Server(task_queue=...)) to the Redis its front-ends use"
    ]
