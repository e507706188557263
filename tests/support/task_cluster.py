"""Front-ends and workers of one task server behind haproxy, for
``tests/backends/test_tasks_cluster.py``.

:func:`task_cluster` starts, on 127.0.0.1 with free ports: two front-ends serving
``tests/support/servers/worker_tasks.py`` over HTTP (each on a port of its own, kept when it
is restarted), haproxy running ``deploy/haproxy.cfg`` verbatim in front of them, and the
workers (``python -m mcpserve worker`` on the same file). All share the given Redis, as the
task queue (``MCPSERVE_TASK_QUEUE``) and the shared state (``MCPSERVE_REDIS_URL``).

The committed configuration names three instances; the third is given an address where a
socket is bound but does not listen (held for the cluster's life, so no other process takes
the port): haproxy takes it out on its first checks, as it would a dead instance, and the
cluster is ready once haproxy said so and answers through its port.

Every wait is bounded; every process is stopped by its pid on the way out (SIGTERM, then
SIGKILL), failures included. Logs stay in the directory; :meth:`TaskCluster.logs` gives
their tails for failure messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest

from redis_server import RedisServer
from wire_helpers import ROOT, SERVERS, child_env, free_port, stop_process

HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"

APP = SERVERS / "worker_tasks.py"
START_TIMEOUT = 30.0


def _haproxy() -> str:
    """haproxy's path; the test fails (never skips) when it is not installed."""
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
    if found is None:
        pytest.fail("haproxy is not installed: `apt-get install haproxy`", pytrace=False)
    return found


def _tail(path: Path, size: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-size:]
    except FileNotFoundError:
        return "(no log)"


def _until(ready: Callable[[], bool], what: str, logs: Callable[[], str]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        assert time.monotonic() < deadline, f"{what}: not within {START_TIMEOUT} s\n{logs()}"
        time.sleep(0.05)


def _ready(port: int) -> bool:
    """Whether the front-end on ``port`` answers ``/readyz`` with 200."""
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx2.HTTPError:
        return False


@dataclass
class Process:
    """A front-end (with its port) or a worker; ``process`` is replaced by a restart."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    port: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def output(self) -> str:
        return _tail(self.log)


@dataclass
class TaskCluster:
    directory: Path
    env: dict[str, str]
    front_ends: list[Process] = field(default_factory=list)
    workers: list[Process] = field(default_factory=list)
    haproxy: Process | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint behind haproxy."""
        assert self.haproxy is not None
        return self.haproxy.url

    @property
    def worker_pids(self) -> set[int]:
        return {worker.pid for worker in self.workers}

    @property
    def front_end_pids(self) -> set[int]:
        return {front.pid for front in self.front_ends}

    def _spawn(self, name: str, command: list[str], env: dict[str, str]) -> tuple[
        subprocess.Popen[bytes], Path
    ]:  # fmt: skip
        log = self.directory / f"{name}.log"
        with log.open("ab") as out:  # a restarted process's log follows its predecessor's
            process = subprocess.Popen(
                command, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        return process, log

    def start_front_end(self, front: Process | None = None) -> Process:
        """A new front-end, or ``front`` (stopped) started again on its port; once ready."""
        number = len(self.front_ends) + 1 if front is None else int(front.name[-1])
        port = free_port() if front is None else front.port
        name = f"front-end-{number}"
        env = {**self.env, "MCPSERVE_TEST_HTTP_PORT": str(port)}
        process, log = self._spawn(name, [sys.executable, str(APP)], env)
        if front is None:
            front = Process(name, process, log, port)
            self.front_ends.append(front)
        else:
            assert front.process.poll() is not None, "stop the front-end first"
            front.process = process
        _until(lambda: process.poll() is None and _ready(port), f"{name} ready", self.logs)
        return front

    def start_worker(self) -> Process:
        name = f"worker-{len(self.workers) + 1}"
        command = [sys.executable, "-m", "mcpserve", "worker", str(APP)]
        process, log = self._spawn(name, command, self.env)
        worker = Process(name, process, log)
        self.workers.append(worker)
        _until(
            lambda: process.poll() is None and "worker ready" in worker.output(),
            f"{name} saying 'worker ready'",
            self.logs,
        )
        return worker

    def start_haproxy(self, absent: socket.socket) -> None:
        port = free_port()
        env = child_env(MCPSERVE_LB_BIND=f"127.0.0.1:{port}")
        for number, front in enumerate(self.front_ends, start=1):
            env[f"MCPSERVE_BACKEND_{number}"] = f"127.0.0.1:{front.port}"
        env["MCPSERVE_BACKEND_3"] = f"127.0.0.1:{absent.getsockname()[1]}"
        command = [_haproxy(), "-db", "-f", str(HAPROXY_CFG)]
        process, log = self._spawn("haproxy", command, env)
        self.haproxy = Process("haproxy", process, log, port)
        _until(
            lambda: "Server mcpserve/mcp3 is DOWN" in self.haproxy_log() and _ready(port),
            "haproxy taking out the absent instance and answering",
            self.logs,
        )

    def haproxy_log(self) -> str:
        assert self.haproxy is not None
        return self.haproxy.log.read_text(errors="replace")

    async def wait_haproxy_log(self, text: str, *, after: int, within: float = 15.0) -> int:
        """Until ``text`` is in haproxy's log past offset ``after`` (it logs each health
        verdict: ``Server mcpserve/mcp1 is DOWN``, ``... is UP``); the offset past it."""
        deadline = time.monotonic() + within
        while (found := self.haproxy_log().find(text, after)) < 0:
            assert time.monotonic() < deadline, f"{text!r} not logged by haproxy\n{self.logs()}"
            await asyncio.sleep(0.05)
        return found + len(text)

    def logs(self) -> str:
        parts = [*self.front_ends, *self.workers, *([self.haproxy] if self.haproxy else [])]
        return "\n".join(f"--- {p.name} (pid {p.pid})\n{p.output()}" for p in parts)

    def stop_all(self) -> None:
        for each in [*([self.haproxy] if self.haproxy else []), *self.front_ends, *self.workers]:
            stop_process(each.process)


@contextlib.contextmanager
def task_cluster(
    directory: Path, redis: RedisServer, *, workers: int = 2, drain_seconds: float = 0.0
) -> Iterator[TaskCluster]:
    """Two front-ends (draining ``drain_seconds`` on SIGTERM), ``workers`` workers and
    haproxy on ``redis``; all stopped on the way out."""
    env = child_env(
        MCPSERVE_TASK_QUEUE=redis.url,
        MCPSERVE_REDIS_URL=redis.url,
        MCPSERVE_TEST_MARKER_DIR=str(directory),
        MCPSERVE_DRAIN_SECONDS=str(drain_seconds),
    )
    made = TaskCluster(directory, env)
    absent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        absent.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        made.start_front_end()
        made.start_front_end()
        for _ in range(workers):
            made.start_worker()
        made.start_haproxy(absent)
        yield made
    finally:
        made.stop_all()
        absent.close()


def kill(process: Process) -> None:
    """SIGKILL, and reaped."""
    os.kill(process.pid, signal.SIGKILL)
    process.process.wait(START_TIMEOUT)
