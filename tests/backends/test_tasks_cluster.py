"""Task tools on a cluster, driven by the official ``mcp`` client: the run's redis-server,
two front-ends behind haproxy (``deploy/haproxy.cfg`` verbatim) and two workers
(``tests/support/task_cluster.py``).

The client speaks 2026-07-28 over its own streamable HTTP transport, with a client
extension for ``io.modelcontextprotocol/tasks`` (``tests/support/task_client_extension.py``):
``client.call_tool`` follows a task to its end, ``client.session.call_tool(...,
allow_claimed=True)`` gives the created task so another client, on another front-end, can
read, answer or cancel it. Each tool answers the pid it ran in, so "a worker ran it, not a
front-end" is read, not assumed. Faults: a worker SIGKILLed mid-task, a rolling restart of
the front-ends (SIGTERM, started again on its port, ``/readyz``) and a front-end SIGKILLed,
while tasks run on the workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

from redis_server import RedisServer
from task_client_extension import (
    CreatedTask,
    TaskCancelled,
    TasksExtension,
    TaskState,
    cancel_task,
    follow_task,
    get_task,
    outcome,
    update_task,
)
from task_cluster import TaskCluster, kill, task_cluster
from wire_helpers import TIMEOUT

pytestmark = [pytest.mark.subprocess, pytest.mark.redis, pytest.mark.balancer]

#: A task whose worker is lost leaves `working` within this (docs/tasks.md, "Faults").
LOST_WITHIN = 60.0
FOLLOW_WITHIN = 30.0
DRAIN_SECONDS = 3.0
#: A front-end's stop: the drain, uvicorn's grace for what is still open, its end.
STOP_WITHIN = DRAIN_SECONDS + 20.0 + 10.0


async def confirm_yes(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"confirm": True})


@contextlib.asynccontextmanager
async def official(url: str) -> AsyncIterator[Client]:
    """The official client on ``url`` as alice, 2026-07-28, with the tasks extension."""
    http = httpx2.AsyncClient(headers={"x-user": "alice"}, timeout=TIMEOUT)
    async with (
        http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="2026-07-28",
            extensions=[TasksExtension(within=FOLLOW_WITHIN)],
            elicitation_callback=confirm_yes,
            read_timeout_seconds=TIMEOUT,
        ) as client,
    ):
        yield client


async def create(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    created = await client.session.call_tool(tool, arguments or {}, allow_claimed=True)
    assert isinstance(created, CreatedTask), created
    assert created.status == "working", created
    return created.task_id


async def until(
    client: Client, task_id: str, status: str, message: str = "", within: float = TIMEOUT
) -> TaskState:
    """Until the task reads ``status`` with a status message starting with ``message``."""
    deadline = time.monotonic() + within
    while True:
        state = await get_task(client.session, task_id)
        if state.status == status and (state.status_message or "").startswith(message):
            return state
        assert state.status not in ("completed", "failed", "cancelled"), state
        assert time.monotonic() < deadline, state
        await asyncio.sleep(0.05)


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent), block
    return block.text


def ran_in(text: str, cluster: TaskCluster) -> int:
    """The pid at the end of ``text``: one of the workers', never a front-end's."""
    pid = int(text.rsplit(" ", 1)[1])
    assert pid in cluster.worker_pids, (text, cluster.worker_pids, cluster.front_end_pids)
    return pid


@pytest.fixture
def fresh(redis: RedisServer) -> RedisServer:
    redis.flush()
    return redis


async def across(cluster: TaskCluster, creator: Client, other: Client) -> None:
    """Tasks created through ``creator``, read, answered and cancelled through ``other``."""
    where = await create(creator, "where")
    done = outcome(await follow_task(other.session, where, within=FOLLOW_WITHIN))
    assert done.structured_content is not None, done
    assert done.structured_content["principal"] == "alice"
    assert done.structured_content["pid"] in cluster.worker_pids

    steps = await create(creator, "steps", {"count": 2, "pause": 0.1})
    stepped = text_of(outcome(await follow_task(other.session, steps, within=FOLLOW_WITHIN)))
    assert stepped == f"2 steps in {ran_in(stepped, cluster)}"

    confirm = await create(creator, "confirm")
    parked = await until(other, confirm, "input_required")
    assert parked.input_requests is not None
    (key,) = parked.input_requests
    assert parked.input_requests[key].method == "elicitation/create"
    yes = ElicitResult(action="accept", content={"confirm": True})
    await update_task(other.session, confirm, {key: yes})
    confirmed = text_of(outcome(await follow_task(other.session, confirm, within=FOLLOW_WITHIN)))
    assert confirmed == f"confirmed in {ran_in(confirmed, cluster)}"
    # The creator reads the same ended task.
    assert (await get_task(creator.session, confirm)).status == "completed"

    endless = await create(creator, "until_cancelled")
    running = await until(other, endless, "working", "running in ")
    ran_in(running.status_message or "", cluster)
    await cancel_task(other.session, endless)
    cancelled = await follow_task(creator.session, endless, within=5.0)
    assert cancelled.status == "cancelled"
    assert (cancelled.result, cancelled.error) == (None, None)
    with pytest.raises(TaskCancelled):
        outcome(cancelled)

    failing = await create(creator, "crash")
    failed = await follow_task(other.session, failing, within=FOLLOW_WITHIN)
    assert failed.error is not None
    assert (failed.error.code, failed.error.message) == (-32603, "The job crashed")
    assert failed.error.data["pid"] in cluster.worker_pids


async def test_tasks_are_created_on_one_front_end_and_read_answered_cancelled_on_another(
    tmp_path: Path, fresh: RedisServer
) -> None:
    with task_cluster(tmp_path, fresh) as cluster:
        first, second = cluster.front_ends
        async with (
            official(first.url) as a,
            official(second.url) as b,
            official(cluster.url) as balanced,
        ):
            await across(cluster, a, b)
            await across(cluster, b, a)
            await across(cluster, balanced, balanced)


async def test_the_official_client_follows_a_task_to_the_tools_result(
    tmp_path: Path, fresh: RedisServer
) -> None:
    with task_cluster(tmp_path, fresh) as cluster:
        async with official(cluster.url) as client:
            # The extension declares the tasks extension; the server answers with a task,
            # and call_tool returns what the tool returned once the task has ended.
            stepped = text_of(await client.call_tool("steps", {"count": 3, "pause": 0.1}))
            assert stepped == f"3 steps in {ran_in(stepped, cluster)}"
            # The question is answered with the client's own elicitation callback.
            confirmed = text_of(await client.call_tool("confirm", {}))
            assert confirmed == f"confirmed in {ran_in(confirmed, cluster)}"
            with pytest.raises(MCPError) as failed:
                await client.call_tool("crash", {})
            assert (failed.value.code, failed.value.message) == (-32603, "The job crashed")


async def test_a_worker_killed_mid_task_reruns_the_retry_safe_elsewhere_and_fails_the_other(
    tmp_path: Path, fresh: RedisServer
) -> None:
    # One worker first, so both tasks run on it; the second joins before the first dies.
    with task_cluster(tmp_path, fresh, workers=1) as cluster:
        (first,) = cluster.workers
        async with official(cluster.url) as client:
            safe = await create(client, "repeatable")
            unsafe = await create(client, "until_cancelled")
            await until(client, safe, "working", f"running in {first.pid}")
            await until(client, unsafe, "working", f"running in {first.pid}")
            second = cluster.start_worker()
            kill(first)
            killed = time.monotonic()
            (tmp_path / "release").touch()  # too late for the killed worker
            lost = await follow_task(client.session, unsafe, within=LOST_WITHIN)
            assert lost.status == "failed"
            assert lost.error is not None
            message = "The worker running the task was lost"
            assert (lost.error.code, lost.error.message) == (-32603, message)
            done = await follow_task(client.session, safe, within=LOST_WITHIN)
            assert time.monotonic() - killed < LOST_WITHIN
            assert text_of(outcome(done)) == f"done in {second.pid}"


class Reads:
    """Every task read through one client until told to stop: each read answers, and a
    task reads ``working`` until it reads ``completed`` (never ``failed``, never back)."""

    def __init__(self, client: Client, tasks: list[str]) -> None:
        self.client = client
        self.tasks = tasks
        self.stop = asyncio.Event()
        self.completed: dict[str, TaskState] = {}
        self.count = 0

    async def run(self) -> None:
        while not self.stop.is_set():
            for task_id in self.tasks:
                state = await asyncio.wait_for(get_task(self.client.session, task_id), TIMEOUT)
                self.count += 1
                if task_id in self.completed:
                    assert state == self.completed[task_id], state
                elif state.status == "completed":
                    self.completed[task_id] = state
                else:
                    assert state.status == "working", state
            await asyncio.sleep(0.05)


async def test_a_rolling_restart_of_the_front_ends_leaves_running_tasks_alone(
    tmp_path: Path, fresh: RedisServer
) -> None:
    with task_cluster(tmp_path, fresh, drain_seconds=DRAIN_SECONDS) as cluster:
        async with official(cluster.url) as client:
            # Four run until released after the restart; one ends during it (4 s).
            waiting = [await create(client, "repeatable") for _ in range(4)]
            short = await create(client, "steps", {"count": 8, "pause": 0.5})
            for task_id in [*waiting, short]:
                await until(client, task_id, "working", "running in " if task_id != short else "")
            reads = Reads(client, [*waiting, short])
            reader = asyncio.create_task(reads.run())
            try:
                for number, front in enumerate(cluster.front_ends, start=1):
                    mark = len(cluster.haproxy_log())
                    old = front.pid
                    front.process.send_signal(signal.SIGTERM)
                    # Taken out while it drains, then gone, then started again on its port.
                    down = await cluster.wait_haproxy_log(
                        f"Server mcpserve/mcp{number} is DOWN", after=mark
                    )
                    assert front.process.poll() is None, "haproxy noticed only once it had gone"
                    await asyncio.to_thread(front.process.wait, STOP_WITHIN)
                    await asyncio.to_thread(cluster.start_front_end, front)
                    assert front.pid != old
                    await cluster.wait_haproxy_log(f"Server mcpserve/mcp{number} is UP", after=down)
                    assert not reader.done()
            finally:
                reads.stop.set()
                await reader
            assert reads.count > 5 * 10, reads.count
            # The short task ended during the restart, and was read so through haproxy.
            assert list(reads.completed) == [short]
            (tmp_path / "release").touch()
            results = [
                await follow_task(client.session, task_id, within=FOLLOW_WITHIN)
                for task_id in [*waiting, short]
            ]
        texts = [text_of(outcome(ended)) for ended in results]
        for text in texts[:-1]:
            assert text == f"done in {ran_in(text, cluster)}"
        assert texts[-1] == f"8 steps in {ran_in(texts[-1], cluster)}"
        assert results[-1] == reads.completed[short]


async def test_a_front_end_killed_while_tasks_run_leaves_them_to_the_other(
    tmp_path: Path, fresh: RedisServer
) -> None:
    with task_cluster(tmp_path, fresh) as cluster:
        first, second = cluster.front_ends
        async with official(first.url) as a:
            tasks = [await create(a, "repeatable") for _ in range(2)]
            stepping = await create(a, "steps", {"count": 4, "pause": 0.5})
            asking = await create(a, "confirm")
            for task_id in tasks:
                await until(a, task_id, "working", "running in ")
            await until(a, asking, "input_required")
            kill(first)
        (tmp_path / "release").touch()
        async with official(second.url) as b:
            # The question the killed front-end handed out is answered through the other.
            parked = await get_task(b.session, asking)
            assert parked.input_requests is not None
            (key,) = parked.input_requests
            yes = ElicitResult(action="accept", content={"confirm": True})
            await update_task(b.session, asking, {key: yes})
            for task_id in tasks:
                done = await follow_task(b.session, task_id, within=FOLLOW_WITHIN)
                text = text_of(outcome(done))
                assert text == f"done in {ran_in(text, cluster)}"
            stepped = await follow_task(b.session, stepping, within=FOLLOW_WITHIN)
            text = text_of(outcome(stepped))
            assert text == f"4 steps in {ran_in(text, cluster)}"
            confirmed = await follow_task(b.session, asking, within=FOLLOW_WITHIN)
            text = text_of(outcome(confirmed))
            assert text == f"confirmed in {ran_in(text, cluster)}"
