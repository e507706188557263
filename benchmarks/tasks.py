"""Tasks: what running a tool as a task costs, on each store and on workers.

mcpserve only: neither the official SDK (it defers the tasks extension) nor FastMCP (its
task package no longer installs with FastMCP 4) can run it. Two parts, both by default
(``--only stores`` or ``--only workers`` for one).

**stores**: in process, through ``server.handle`` (the dispatcher every transport uses,
without a transport), strictly sequential awaited calls after a warm-up:

* **plain**: ``tools/call echo`` answered at once (the in-process figure of the suite);
* **task round trip**: ``tools/call`` of a task tool (a ``CreateTaskResult``), then
  ``tasks/get`` until ``completed``: tasks created and completed per second;
* **tasks/get**: reading a completed task: median and p99 latency.

For each store: ``memory://``, ``sqlite:///`` on a temporary file, ``redis://`` on a
throwaway redis-server (persistence off) on 127.0.0.1.

**workers**: what users deploy, over real HTTP: a front-end whose task tools run on two
``mcpserve worker`` processes, next to the same front-end running them itself, both on the
same throwaway redis-server: ``--tasks`` tasks created by ``--concurrency`` callers and
followed to completion, twice, with ``tasks/get`` latency and every process's RSS
(``tasks_workers.py`` says exactly how).

The stores part runs in the mcpserve venv (``run.py`` builds it)::

    benchmarks/.venvs/mcpserve/bin/python benchmarks/tasks.py --only stores [--duration 3]

the workers part needs the ``workers`` extra too (``pip install -e ".[workers]"``; the
project's dev venv has it)::

    .venv/bin/python benchmarks/tasks.py [--tasks 1000] [--concurrency 16]

It prints Markdown tables and writes ``results/tasks.json`` (server logs of the workers
part in ``results/logs/``). It is not part of ``run.py``'s phases: its figures are absolute
costs of one framework, not ratios to others.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mcpserve import Server

HERE = Path(__file__).resolve().parent
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
PLAIN: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {}}
WITH_TASKS: dict[str, Any] = {
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }
}
WARMUP = 200


#: Far above what a run creates: the limit per principal is not what is measured.
NO_LIMIT = 10**9


def make_store(url: str) -> Any:
    from mcpserve import MemoryTaskStore, RedisTaskStore, SQLiteTaskStore

    if url.startswith("sqlite:///"):
        return SQLiteTaskStore(url.removeprefix("sqlite:///"), max_tasks_per_principal=NO_LIMIT)
    if url.startswith("redis://"):
        return RedisTaskStore(url, namespace="bench", max_tasks_per_principal=NO_LIMIT)
    return MemoryTaskStore(max_tasks_per_principal=NO_LIMIT)


def build(store: str) -> Server:
    server = Server("bench-tasks", task_store=make_store(store), server_info_in_results=False)

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool(task="optional")
    async def echo_task(text: str) -> str:
        return text

    return server


def request(n: int, method: str, params: dict[str, Any], caps: dict[str, Any]) -> Any:
    return {"jsonrpc": "2.0", "id": n, "method": method,
            "params": {**params, "_meta": {**META, **caps}}}  # fmt: skip


async def rate(call: Any, duration: float) -> tuple[float, float]:
    """Calls per second and CPU microseconds per call, over ``duration`` seconds."""
    for _ in range(WARMUP):
        await call()
    count, cpu, start = 0, time.process_time(), time.perf_counter()
    while (elapsed := time.perf_counter() - start) < duration:
        await call()
        count += 1
    return count / elapsed, (time.process_time() - cpu) / count * 1e6


async def measure(store: str, duration: float) -> dict[str, Any]:
    server = build(store)
    ids = iter(range(1, 10**9))
    async with server.running():

        async def ask(method: str, params: dict[str, Any], caps: dict[str, Any]) -> Any:
            answer = await server.handle(request(next(ids), method, params, caps))
            assert answer is not None
            assert "result" in answer, answer
            return answer["result"]

        echo = {"name": "echo", "arguments": {"text": "hi"}}
        echo_task = {"name": "echo_task", "arguments": {"text": "hi"}}

        async def plain() -> None:
            result = await ask("tools/call", echo, PLAIN)
            assert result["content"][0]["text"] == "hi"

        async def round_trip() -> None:
            task_id = (await ask("tools/call", echo_task, WITH_TASKS))["taskId"]
            # Poll, as a client does: the task ends by itself within a few loop turns.
            for _ in range(10_000):
                task = await ask("tasks/get", {"taskId": task_id}, WITH_TASKS)
                if task["status"] == "completed":
                    return
                await asyncio.sleep(0)
            raise AssertionError(f"task {task_id} did not complete")

        plain_rate, plain_cpu = await rate(plain, duration)
        tasks_rate, tasks_cpu = await rate(round_trip, duration)
        task_id = (await ask("tools/call", echo_task, WITH_TASKS))["taskId"]
        await asyncio.sleep(0.05)
        latencies = []
        for _ in range(2000):
            began = time.perf_counter()
            await ask("tasks/get", {"taskId": task_id}, WITH_TASKS)
            latencies.append((time.perf_counter() - began) * 1e6)
    latencies.sort()
    return {
        "store": store.split(":", 1)[0],
        "plain_calls_per_s": plain_rate,
        "plain_cpu_us": plain_cpu,
        "tasks_per_s": tasks_rate,
        "task_cpu_us": tasks_cpu,
        "get_p50_us": statistics.median(latencies),
        "get_p99_us": latencies[int(len(latencies) * 0.99)],
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], int]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", str(directory)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("redis-server did not answer PING within 10 s")


def flush_redis(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"FLUSHALL\r\n")
        if not sock.recv(16).startswith(b"+OK"):
            raise RuntimeError("redis-server refused FLUSHALL")


def stores_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| store | plain tools/call: calls/s (µs CPU) | task created and completed: tasks/s "
        "(µs CPU) | tasks/get p50 / p99 µs |",
        "|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['store']} | {row['plain_calls_per_s']:,.0f} ({row['plain_cpu_us']:.0f}) | "
            f"{row['tasks_per_s']:,.0f} ({row['task_cpu_us']:.0f}) | "
            f"{row['get_p50_us']:.0f} / {row['get_p99_us']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", choices=("stores", "workers"), help="run one part only")
    parser.add_argument(
        "--duration", type=float, default=3.0, help="stores: seconds per figure (default 3)"
    )
    parser.add_argument(
        "--tasks", type=int, default=1000, help="workers: tasks per batch (default 1000)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=16, help="workers: concurrent callers (default 16)"
    )
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        default=10,
        help="workers: each worker's --concurrency (default 10, mcpserve worker's own)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="CHECKOUT",
        help="workers: also run workers on another checkout's src/ (an A/B of the worker path)",
    )
    args = parser.parse_args()
    if args.compare is not None and not (args.compare / "src" / "mcpserve").is_dir():
        parser.error(f"--compare: {args.compare} is not a checkout of mcpserve (no src/mcpserve)")
    if min(args.tasks, args.concurrency, args.worker_concurrency) < 1:
        parser.error("--tasks, --concurrency and --worker-concurrency must be at least 1")
    parts = [args.only] if args.only else ["stores", "workers"]
    if "workers" in parts:
        try:
            import docket  # noqa: F401  (the engine `mcpserve worker` runs on)
        except ImportError:
            raise SystemExit(
                "The workers part needs mcpserve's `workers` extra: run it with the dev venv "
                '(.venv/bin/python) or `pip install -e ".[workers]"`, or pass --only stores.'
            ) from None
    os.environ.pop("MCPSERVE_TASK_STORE", None)
    os.environ.pop("MCPSERVE_REDIS_URL", None)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        redis, port = start_redis(Path(scratch))
        try:
            if "stores" in parts:
                rows = []
                for store in ("memory://", f"sqlite:///{scratch}/tasks.db",
                              f"redis://127.0.0.1:{port}/0"):  # fmt: skip
                    rows.append(asyncio.run(measure(store, args.duration)))
                results["stores"] = rows
                print(stores_table(rows), flush=True)
            if "workers" in parts:
                from tasks_workers import run, table

                url = f"redis://127.0.0.1:{port}/0"
                results["workers"] = run(
                    url,
                    lambda: flush_redis(port),
                    tasks=args.tasks,
                    concurrency=args.concurrency,
                    worker_concurrency=args.worker_concurrency,
                    logs=HERE / "results" / "logs",
                    compare=args.compare,
                )
                print(("\n" if "stores" in parts else "") + table(results["workers"]))
        finally:
            redis.terminate()
            redis.wait(10)
    out = HERE / "results" / "tasks.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
