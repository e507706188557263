"""Tasks on workers: what users run, measured next to the same front-end running tasks itself.

Two deployments of ``servers/mcpserve_tasks_app.py`` on one throwaway redis-server (the
task store and the bus in both):

* **in process**: one front-end over HTTP (``server.run("http")``, the README's path), no
  task queue: it runs each task itself;
* **workers**: the same front-end with ``MCPSERVE_TASK_QUEUE`` on that Redis, and two
  ``mcpserve worker`` processes that run the tasks (``--concurrency`` from the benchmark's
  ``--worker-concurrency``: 10, the command's own default, unless told otherwise).

Each deployment gets the same load from this process, over real HTTP, as 2026-07-28
clients declaring the tasks extension (``concurrency`` callers, one connection and one
request in flight each):

1. a warm-up batch, then the RSS of every process ("before");
2. a batch of ``tasks`` ``tools/call echo_task`` (a task tool that answers at once), sent
   as fast as the callers can: *created/s* is the batch over the time from the first
   ``tools/call`` sent to the last answered. Then the callers follow the tasks in the order
   they were created, as a client does: ``tasks/get`` until ``completed`` (a pause of
   ``PAUSE`` between two reads of a task that is not done yet), checking each result.
   *completed/s* is the batch over the time from the first ``tools/call`` sent to the last
   task's ``lastUpdatedAt`` (the server's clock on the same machine, to the millisecond), so
   how often the callers poll does not round it; the latency of every ``tasks/get`` is kept,
   by the status it answered, and the CPU each process spent (``/proc``) while the
   callers created the tasks and while they followed them, per task. RSS again;
3. a second batch, the same; RSS again. *Flat* means that the second batch grew no process
   by more than ``FLAT_MIB``;
4. ``tasks/get`` alone: one caller, one request at a time, ``SAMPLES`` reads spread over
   ``HOLDERS`` running ``hold`` tasks, then as many over completed tasks; the running ones
   are cancelled afterwards.

Nothing is pinned: the front-end, the workers, redis-server and this process share the
machine's cores, as they would on one host.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
from proc import Server, free_port

HERE = Path(__file__).resolve().parent
APP = HERE / "servers" / "mcpserve_tasks_app.py"
TASKS = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
}
WORKERS = 2
#: The second batch may grow a process's RSS by this much and still read as flat: far
#: below what keeping anything per task would cost over 1,000 tasks (a record is ~0.5 KiB
#: of JSON, a finished asyncio task several KiB), above the allocator's own drift.
FLAT_MIB = 2.0
#: Seconds between two reads of a task that was not done yet.
PAUSE = 0.05
HOLDERS = 4
SAMPLES = 500
READY_TIMEOUT = 60.0
#: No batch, however slow the machine, may take longer than this.
BATCH_TIMEOUT = 300.0


class Caller:
    """One 2026-07-28 client with the tasks extension, over one connection."""

    def __init__(self, port: int) -> None:
        self.http = httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60.0)
        self.ids = iter(range(1, 10**9))

    async def call(self, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method,
                "params": {**params, "_meta": META}}  # fmt: skip
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": method,
            "mcp-name": name,
        }
        response = await self.http.post("/mcp", json=body, headers=headers)
        answer = response.json()
        if response.status_code != 200 or "result" not in answer:
            raise RuntimeError(f"{method} answered {response.status_code}: {answer}")
        result: dict[str, Any] = answer["result"]
        return result

    async def create(self, tool: str, arguments: dict[str, Any]) -> str:
        result = await self.call("tools/call", {"name": tool, "arguments": arguments}, tool)
        if result.get("resultType") != "task":
            raise RuntimeError(f"tools/call {tool} did not make a task: {result}")
        task_id: str = result["taskId"]
        return task_id

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.call("tasks/get", {"taskId": task_id}, task_id)

    async def close(self) -> None:
        await self.http.aclose()


def server_time(stamp: str) -> float:
    """A task's ``lastUpdatedAt`` (``2026-12-01T10:30:00.123Z``) as a Unix time."""
    return datetime.fromisoformat(stamp).timestamp()


def percentiles(latencies: list[float]) -> dict[str, float | int | None]:
    """p50 and p99 in milliseconds, and how many reads they are over."""
    if not latencies:
        return {"p50_ms": None, "p99_ms": None, "count": 0}
    ordered = sorted(latencies)
    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "count": len(ordered),
    }


async def batch(
    callers: list[Caller], count: int, label: str, cpu: Callable[[], dict[str, float]]
) -> dict[str, Any]:
    """Create ``count`` tasks with every caller at once, then follow them to ``completed``;
    ``cpu`` reads each process's CPU seconds, before, between and after."""
    texts = [f"{label}-{number}" for number in range(count)]
    task_ids: list[str] = [""] * count
    next_index = iter(range(count))
    cpu_began = cpu()
    began = time.time()

    async def create(caller: Caller) -> None:
        for index in next_index:
            task_ids[index] = await caller.create("echo_task", {"text": texts[index]})

    await asyncio.gather(*(create(caller) for caller in callers))
    created = time.time()
    cpu_created = cpu()
    latencies: dict[str, list[float]] = {}
    finished: list[float] = []
    to_follow = iter(range(count))

    async def follow(caller: Caller) -> None:
        for index in to_follow:
            while True:
                sent = time.perf_counter()
                task = await caller.get(task_ids[index])
                latencies.setdefault(task["status"], []).append(time.perf_counter() - sent)
                if task["status"] == "completed":
                    break
                if task["status"] != "working":
                    raise RuntimeError(f"task {task_ids[index]} ended {task['status']}: {task}")
                await asyncio.sleep(PAUSE)
            if task["result"]["content"][0]["text"] != texts[index]:
                raise RuntimeError(f"task {task_ids[index]} answered {task['result']}")
            finished.append(server_time(task["lastUpdatedAt"]))

    await asyncio.wait_for(asyncio.gather(*(follow(caller) for caller in callers)), BATCH_TIMEOUT)
    cpu_followed = cpu()
    return {
        "tasks": count,
        "created_per_s": count / (created - began),
        "completed_per_s": count / (max(finished) - began),
        "completed_after_s": max(finished) - began,
        "get_while_following": {
            status: percentiles(values) for status, values in latencies.items()
        },
        "cpu_ms_per_task": {
            name: {
                "creating": (cpu_created[name] - cpu_began[name]) * 1000 / count,
                "following": (cpu_followed[name] - cpu_created[name]) * 1000 / count,
            }
            for name in cpu_began
        },
    }


async def reads(caller: Caller, task_ids: list[str], status: str) -> dict[str, Any]:
    """``SAMPLES`` sequential ``tasks/get``, round robin over ``task_ids``, all ``status``."""
    latencies = []
    for number in range(SAMPLES):
        sent = time.perf_counter()
        task = await caller.get(task_ids[number % len(task_ids)])
        latencies.append(time.perf_counter() - sent)
        if task["status"] != status:
            raise RuntimeError(f"expected a {status} task, read {task}")
    return percentiles(latencies)


async def read_alone(caller: Caller, completed: list[str]) -> dict[str, Any]:
    """``tasks/get`` latency on running ``hold`` tasks, then on completed tasks."""
    holders = [await caller.create("hold", {"seconds": 600}) for _ in range(HOLDERS)]
    deadline = time.monotonic() + READY_TIMEOUT
    for task_id in holders:  # on workers, wait until one has taken it (no longer `queued`)
        while (await caller.get(task_id)).get("statusMessage") == "queued":
            if time.monotonic() > deadline:
                raise RuntimeError(f"no worker took the hold task {task_id}")
            await asyncio.sleep(PAUSE)
    try:
        running = await reads(caller, holders, "working")
    finally:
        for task_id in holders:
            await caller.call("tasks/cancel", {"taskId": task_id}, task_id)
    return {"running": running, "completed": await reads(caller, completed, "completed")}


@dataclass
class Deployment:
    """The processes of one mode and the front-end's port."""

    port: int
    front_end: Server
    workers: list[Server]

    def processes(self) -> dict[str, Server]:
        named = {"front-end": self.front_end}
        for number, worker in enumerate(self.workers, 1):
            named[f"worker {number}"] = worker
        return named

    def rss(self) -> dict[str, float]:
        return {name: process.rss() for name, process in self.processes().items()}

    def cpu(self) -> dict[str, float]:
        return {name: process.cpu() for name, process in self.processes().items()}


def wait_ready(worker: Server, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while b"worker ready" not in log.read_bytes():
        if not worker.alive() or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"a worker did not say 'worker ready':\n{tail}")
        time.sleep(0.1)


@contextlib.contextmanager
def deploy(
    mode: str, redis_url: str, logs: Path, worker_concurrency: int, src: Path | None = None
) -> Iterator[Deployment]:
    """The front-end (and in a ``workers`` mode two workers) started, their mcpserve loaded
    from ``src`` when given (an A/B run); all stopped on exit."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MCPSERVE_")}
    env["MCPSERVE_REDIS_URL"] = redis_url
    if src is not None:
        env["PYTHONPATH"] = str(src)
    if mode.startswith("workers"):
        env["MCPSERVE_TASK_QUEUE"] = redis_url
    port = free_port()
    started: list[Server] = []
    try:
        log = logs / f"tasks-{mode}-front-end.log"
        front = Server([sys.executable, str(APP), str(port)], None, log=log, env=env,
                       cwd=APP.parent)  # fmt: skip
        started.append(front)
        front.wait_http(port, READY_TIMEOUT)
        workers = []
        for number in range(1, WORKERS + 1 if mode.startswith("workers") else 1):
            log = logs / f"tasks-{mode}-worker-{number}.log"
            log.write_bytes(b"")
            worker = Server([sys.executable, "-m", "mcpserve", "worker", str(APP),
                             "--concurrency", str(worker_concurrency)], None,
                            log=log, env=env, cwd=APP.parent)  # fmt: skip
            started.append(worker)
            wait_ready(worker, log)
            workers.append(worker)
        yield Deployment(port, front, workers)
    finally:
        for process in started:
            process.stop()


async def measure(deployment: Deployment, tasks: int, concurrency: int) -> dict[str, Any]:
    callers = [Caller(deployment.port) for _ in range(concurrency)]
    try:
        await batch(callers, min(tasks, 200), "warm-up", deployment.cpu)
        rss = {"before": deployment.rss()}
        first = await batch(callers, tasks, "first", deployment.cpu)
        rss["after first batch"] = deployment.rss()
        second = await batch(callers, tasks, "second", deployment.cpu)
        rss["after second batch"] = deployment.rss()
        completed = [await callers[0].create("echo_task", {"text": "read"}) for _ in range(4)]
        for task_id in completed:
            deadline = time.monotonic() + READY_TIMEOUT
            while (await callers[0].get(task_id))["status"] != "completed":
                if time.monotonic() > deadline:
                    raise RuntimeError(f"task {task_id} did not complete")
                await asyncio.sleep(PAUSE)
        alone = await read_alone(callers[0], completed)
    finally:
        for caller in callers:
            await caller.close()
    growth = {
        name: rss["after second batch"][name] - rss["after first batch"][name]
        for name in rss["before"]
    }
    return {
        "batches": [first, second],
        "created_per_s": statistics.mean(part["created_per_s"] for part in (first, second)),
        "completed_per_s": statistics.mean(part["completed_per_s"] for part in (first, second)),
        "get_alone": alone,
        "rss_mib": rss,
        "second_batch_growth_mib": growth,
        "flat": all(grown <= FLAT_MIB for grown in growth.values()),
    }


def run(
    redis_url: str,
    flush: Any,
    *,
    tasks: int,
    concurrency: int,
    worker_concurrency: int,
    logs: Path,
    compare: Path | None = None,
) -> dict[str, Any]:
    """Both modes, in process first; ``flush`` empties the Redis between them. With
    ``compare`` (another checkout of mcpserve), workers running that checkout's code come
    last, for an A/B of a change to the worker path in the same run."""
    logs.mkdir(parents=True, exist_ok=True)
    modes: dict[str, Any] = {}
    runs: list[tuple[str, Path | None]] = [("in process", None), ("workers", None)]
    if compare is not None:
        runs.append((f"workers ({compare.name})", compare / "src"))
    for mode, src in runs:
        flush()
        name = mode.split(" (")[0].replace(" ", "-") + ("-compared" if src else "")
        with deploy(name, redis_url, logs, worker_concurrency, src) as deployment:
            modes[mode] = asyncio.run(measure(deployment, tasks, concurrency))
    inside, workers = modes["in process"], modes["workers"]
    ratios = {
        "created_per_s": workers["created_per_s"] / inside["created_per_s"],
        "completed_per_s": workers["completed_per_s"] / inside["completed_per_s"],
        "get_running_p50": workers["get_alone"]["running"]["p50_ms"]
        / inside["get_alone"]["running"]["p50_ms"],
        "get_completed_p50": workers["get_alone"]["completed"]["p50_ms"]
        / inside["get_alone"]["completed"]["p50_ms"],
    }
    return {"tasks": tasks, "concurrency": concurrency, "workers": WORKERS,
            "worker_concurrency": worker_concurrency, "flat_mib": FLAT_MIB,
            "modes": modes, "ratios": ratios}  # fmt: skip


def _ms(figures: dict[str, Any]) -> str:
    if figures["p50_ms"] is None:
        return "none"
    return f"{figures['p50_ms']:.2f} / {figures['p99_ms']:.2f}"


def table(result: dict[str, Any]) -> str:
    """The Markdown table of :func:`run`'s result, with its ratio line."""
    lines = [
        "| mode | created/s | completed/s | tasks/get p50 / p99 ms alone: running "
        "| alone: completed | 2nd batch, following: working | following: completed "
        "| 2nd batch, CPU ms per task: creating / following | RSS MiB before → 1st → 2nd batch "
        "| flat (2nd batch's growth) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, figures in result["modes"].items():
        second = figures["batches"][-1]  # warm, and the batch memory is judged on
        following = second["get_while_following"]
        cpu = "; ".join(
            f"{name} {ms['creating']:.2f} / {ms['following']:.2f}"
            for name, ms in second["cpu_ms_per_task"].items()
        )
        empty = {"p50_ms": None}
        rss = figures["rss_mib"]
        sizes = "; ".join(
            f"{name} {rss['before'][name]:.0f} → {rss['after first batch'][name]:.0f} → "
            f"{rss['after second batch'][name]:.0f}"
            for name in rss["before"]
        )
        lines.append(
            f"| {mode} | {figures['created_per_s']:,.0f} | {figures['completed_per_s']:,.0f} "
            f"| {_ms(figures['get_alone']['running'])} "
            f"| {_ms(figures['get_alone']['completed'])} "
            f"| {_ms(following.get('working', empty))} "
            f"| {_ms(following.get('completed', empty))} | {cpu} | {sizes} "
            f"| {'yes' if figures['flat'] else 'no'} "
            f"(+{max(figures['second_batch_growth_mib'].values()):.1f} MiB) |"
        )
    ratios = result["ratios"]
    lines.append("")
    lines.append(
        f"workers / in process: created/s {ratios['created_per_s']:.2f}x, completed/s "
        f"{ratios['completed_per_s']:.2f}x, tasks/get p50 running "
        f"{ratios['get_running_p50']:.2f}x, completed {ratios['get_completed_p50']:.2f}x "
        f"({result['tasks']:,} tasks per batch, {result['concurrency']} callers, "
        f"{result['workers']} workers of concurrency {result['worker_concurrency']}; "
        "flat: the second batch grew no process by more than "
        f"{result['flat_mib']:.0f} MiB)"
    )
    return "\n".join(lines)
