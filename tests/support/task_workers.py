"""``mcpserve worker`` processes, and callers of their front-ends, for the tests of task
tools on workers.

A worker is started on a server file with the queue and the shared Redis in its environment
(:func:`queue_environment`), its output in a log file, and handed to the test once it said
``worker ready`` (bounded); it is killed by its pid on the way out if the test left it
running.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from redis_server import RedisServer
from wire_helpers import META, TIMEOUT, Reply, post

READY_TIMEOUT = 30.0


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def queue_environment(redis: RedisServer) -> dict[str, str]:
    """The task queue and the shared Redis, both on ``redis``."""
    return {"MCPSERVE_TASK_QUEUE": redis.url, "MCPSERVE_REDIS_URL": redis.url}


@contextlib.contextmanager
def started_worker(
    log: Path, args: Sequence[str], *, env: Mapping[str, str], cwd: Path
) -> Iterator[Worker]:
    """``python -m mcpserve worker *args``, once it said ``worker ready``."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpserve", "worker", *args],
            cwd=str(cwd),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    running = Worker(process, log)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while "worker ready" not in running.output():
            assert process.poll() is None, f"the worker exited early:\n{running.output()}"
            assert time.monotonic() < deadline, f"no 'worker ready':\n{running.output()}"
            time.sleep(0.05)
        yield running
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(TIMEOUT)


class TaskCaller:
    """A 2026-07-28 caller of a front-end, declaring ``capabilities`` (the tasks extension
    among them) on every request."""

    def __init__(self, http: httpx2.AsyncClient, capabilities: dict[str, Any]) -> None:
        self.http = http
        self.capabilities = capabilities
        self.ids = iter(range(1, 1_000_000))

    async def send(self, method: str, params: dict[str, Any]) -> Reply:
        meta = {**META, "io.modelcontextprotocol/clientCapabilities": self.capabilities}
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method,
                "params": {**params, "_meta": meta}}  # fmt: skip
        reply = await post(self.http, body, headers=None)
        assert reply.status == 200, reply
        return reply

    async def create(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        """A task of ``tool``: its id, once the front-end answered it is ``working``."""
        reply = await self.send("tools/call", {"name": tool, "arguments": arguments or {}})
        assert reply.result["resultType"] == "task", reply.result
        assert reply.result["status"] == "working", reply.result
        task_id: str = reply.result["taskId"]
        return task_id

    async def get(self, task_id: str) -> dict[str, Any]:
        task: dict[str, Any] = (await self.send("tasks/get", {"taskId": task_id})).result
        return task
