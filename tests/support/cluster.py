"""A cluster on 127.0.0.1 for the cluster tests: redis-server, three mcpserve instances and a
load balancer (haproxy or nginx) in round robin with no stickiness.

The instances (``tests/support/servers/cluster_app.py``) share Redis through ``MCPSERVE_REDIS_URL``
and one ``MCPSERVE_STATE_KEYS`` key, and append every HTTP request they see to one request
log (:meth:`Cluster.records`), so a test can tell where a request it did not route itself
landed. The balancers run the committed configurations verbatim: ``deploy/haproxy.cfg``
with its addresses in environment variables, ``deploy/nginx.conf`` with its
``${MCPSERVE_...}`` placeholders filled in (as ``envsubst`` would) and included from a
minimal main configuration written here.

Everything is bounded: each process must be ready (a port probe, then an HTTP answer)
before a deadline, a ready balancer must have spread three requests over the three
instances, and :func:`cluster` stops every process on the way out, failures included.
Logs stay in the cluster's directory; :meth:`Cluster.logs` gives their tails for failure
messages. haproxy, nginx and redis-server are required, never optional: when one is missing
the tests fail, naming the Debian package.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcpserve.protocol.request_state import generate_key
from redis_server import RedisServer
from wire_helpers import ROOT, SERVERS, call, child_env, encode, free_port, mcp_headers

CLUSTER_APP = SERVERS / "cluster_app.py"
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
INSTANCES = 3
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
BALANCERS = ("haproxy", "nginx")


def _binary(name: str, package: str) -> str:
    """The path of ``name`` (also looked for in /usr/sbin); fails the test when missing."""
    found = shutil.which(name) or (
        f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None
    )
    if found is None:
        pytest.fail(
            f"{name} is not installed, and the cluster tests need it: install the Debian "
            f"package with `apt-get install {package}` (.ci/run does this in CI)",
            pytrace=False,
        )
    return found


def _tail(path: Path, size: int = 3000) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return text[-size:]


def _stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Signal, wait (bounded), then kill; always reaps. A no-op for an exited process."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _answers_405(port: int) -> bool:
    """Whether the MCP endpoint on ``port`` answers a plain GET (with 405, as mcpserve does)."""
    try:
        response = httpx2.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
    except httpx2.HTTPError:
        return False
    return response.status_code == 405


def _wait(
    ready: Callable[[], bool],
    processes: list[subprocess.Popen[bytes]],
    what: str,
    logs: Callable[[], str],
) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        for process in processes:
            if process.poll() is not None:
                raise AssertionError(f"{what}: {process.args[0]} exited early\n{logs()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not ready within {START_TIMEOUT} s\n{logs()}")
        time.sleep(0.05)


@dataclass
class Instance:
    """One mcpserve process (its pid is the ``os.getpid()`` its tools answer with)."""

    number: int
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


@dataclass
class Balancer:
    kind: str  # "haproxy" or "nginx"
    port: int
    process: subprocess.Popen[bytes]
    logs: list[Path]
    config: Path


@dataclass
class Cluster:
    directory: Path
    redis: RedisServer
    instances: list[Instance]
    balancer: Balancer
    request_log: Path
    state_keys: str
    #: The environment every instance was started with (a restarted one gets it too).
    instance_env: dict[str, str]

    @property
    def url(self) -> str:
        """The MCP endpoint behind the balancer."""
        return f"http://127.0.0.1:{self.balancer.port}/mcp"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.balancer.port}"

    @property
    def pids(self) -> set[int]:
        return {instance.pid for instance in self.instances}

    def instance(self, pid: int) -> Instance:
        return next(instance for instance in self.instances if instance.pid == pid)

    def others(self, *pids: int) -> list[Instance]:
        """The live instances whose pid is none of ``pids``."""
        return [i for i in self.instances if i.pid not in pids and i.alive]

    def records(self) -> list[dict[str, Any]]:
        """Every HTTP request the instances saw so far, in order of their answers' start."""
        try:
            text = self.request_log.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    async def wait_record(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        what: str,
        *,
        after: int = 0,
        within: float = 15.0,
    ) -> dict[str, Any]:
        """The first request record from index ``after`` on that matches ``predicate``."""
        deadline = time.monotonic() + within
        while True:
            found = [record for record in self.records()[after:] if predicate(record)]
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no request record for {what} within {within} s")
            await asyncio.sleep(0.02)

    def balancer_log(self) -> str:
        """What the balancer wrote so far (haproxy: requests, and its health checks' verdicts)."""
        return _tail(self.balancer.logs[0], 10**9)

    async def wait_balancer_log(self, text: str, *, after: int = 0, within: float = 15.0) -> int:
        """Wait until ``text`` is in the balancer's log past offset ``after``; the offset just
        past it. haproxy writes a line when a health check takes a server out or back in:
        ``Server mcpserve/mcp1 is DOWN``, ``... is UP``, ``backend mcpserve has no server
        available!``."""
        deadline = time.monotonic() + within
        while True:
            found = self.balancer_log().find(text, after)
            if found >= 0:
                return found + len(text)
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not in the balancer's log within {within} s")
            await asyncio.sleep(0.05)

    def restart(self, instance: Instance, *, within: float = START_TIMEOUT) -> Instance:
        """Start ``instance`` again on its port, once it has exited (a rolling restart stops
        it first); returns it, now with the new process, once it answers HTTP."""
        assert not instance.alive, "stop the instance first"
        instance.process = _start_instance(
            self.directory, instance.number, instance.port, self.instance_env
        )
        _wait(
            lambda: _listening(instance.port) and _answers_405(instance.port),
            [instance.process],
            f"mcpserve instance {instance.number} restarted",
            self.logs,
        )
        return instance

    def kill(self, instance: Instance) -> None:
        """SIGKILL: the instance dies without a goodbye, as in a crash."""
        _stop(instance.process, signal.SIGKILL)

    def logs(self) -> str:
        """The tail of every log, for failure messages."""
        parts = [f"--- {i.log.name} (pid {i.pid})\n{_tail(i.log)}" for i in self.instances]
        parts += [f"--- {log.name}\n{_tail(log)}" for log in self.balancer.logs]
        parts.append(f"--- {self.redis.log.name}\n{_tail(self.redis.log, 1000)}")
        return "\n".join(parts)


def _instance_env(
    redis_url: str, state_keys: str, request_log: Path, extra: dict[str, str] | None
) -> dict[str, str]:
    env = child_env(
        MCPSERVE_REDIS_URL=redis_url,
        MCPSERVE_STATE_KEYS=state_keys,
        MCPSERVE_TEST_CLUSTER_LOG=str(request_log),
        **(extra or {}),
    )
    env.pop("MCPSERVE_BUS", None)  # MCPSERVE_REDIS_URL alone must bring the shared bus
    return env


def _start_instance(
    directory: Path, number: int, port: int, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    # Appended to: a restarted instance's log follows its predecessor's.
    with (directory / f"mcpserve-{number}-{port}.log").open("ab") as log_file:
        return subprocess.Popen(
            [sys.executable, str(CLUSTER_APP), "--port", str(port)],
            cwd=str(ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )


def _start_instances(directory: Path, env: dict[str, str]) -> list[Instance]:
    instances = []
    for number in range(1, INSTANCES + 1):
        port = free_port()
        process = _start_instance(directory, number, port, env)
        instances.append(
            Instance(number, port, process, directory / f"mcpserve-{number}-{port}.log")
        )
    return instances


def _start_haproxy(directory: Path, instances: list[Instance]) -> Balancer:
    binary = _binary("haproxy", "haproxy")
    port = free_port()
    log = directory / "haproxy.log"
    env = child_env(MCPSERVE_LB_BIND=f"127.0.0.1:{port}")
    env.update({f"MCPSERVE_BACKEND_{i.number}": i.address for i in instances})
    with log.open("wb") as log_file:
        # -db: stay in the foreground; -W is not used, so one process to stop.
        process = subprocess.Popen(
            [binary, "-db", "-f", str(HAPROXY_CFG)],
            cwd=str(directory),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    return Balancer("haproxy", port, process, [log], HAPROXY_CFG)


def render_nginx(port: int, instances: list[Instance]) -> str:
    """``deploy/nginx.conf`` with its placeholders filled in, as ``envsubst`` would."""
    values = {"MCPSERVE_LB_BIND": f"127.0.0.1:{port}"}
    values.update({f"MCPSERVE_BACKEND_{i.number}": i.address for i in instances})
    text = NGINX_CONF.read_text()
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    assert "${MCPSERVE_" not in code, f"an unfilled placeholder in {NGINX_CONF}:\n{text}"
    return text


def _start_nginx(directory: Path, instances: list[Instance]) -> Balancer:
    binary = _binary("nginx", "nginx")
    port = free_port()
    prefix = directory / "nginx"
    prefix.mkdir()
    snippet = prefix / "mcpserve.conf"
    snippet.write_text(render_nginx(port, instances))
    error_log = prefix / "error.log"
    access_log = prefix / "access.log"
    # The main configuration a Debian nginx.conf would be, cut to what an unprivileged
    # nginx in a temporary prefix needs; the snippet is included as it is.
    main = prefix / "nginx.conf"
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main.write_text(
        "worker_processes 1;\n"
        "events { worker_connections 1024; }\n"
        "http {\n"
        f"    access_log {access_log};\n"
        f"{temp}\n"
        f"    include {snippet};\n"
        "}\n"
    )
    user = "user root root; " if os.geteuid() == 0 else ""  # workers may read the prefix
    command = [
        binary,
        "-p", str(prefix),
        "-e", str(error_log),
        "-c", str(main),
        "-g", f"daemon off; master_process on; {user}pid {prefix / 'nginx.pid'};",
    ]  # fmt: skip
    with (prefix / "stdout.log").open("wb") as log_file:
        process = subprocess.Popen(
            command,
            cwd=str(prefix),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    return Balancer("nginx", port, process, [error_log, access_log], snippet)


def _spread(balancer_url: str, pids: set[int]) -> bool:
    """Whether three ``whoami`` calls through the balancer reached all three instances."""
    seen = set()
    try:
        with httpx2.Client(base_url=balancer_url, timeout=5) as http:
            for number in range(INSTANCES):
                message = call(number, "whoami", {})
                response = http.post(
                    "/mcp", content=encode(message), headers=mcp_headers("tools/call", "whoami")
                )
                if response.status_code != 200:
                    return False
                seen.add(int(response.json()["result"]["content"][0]["text"]))
    except httpx2.HTTPError:
        return False
    return seen == pids


@contextlib.contextmanager
def cluster(
    directory: Path, balancer: str = "haproxy", env: dict[str, str] | None = None
) -> Iterator[Cluster]:
    """Start redis-server, three instances (with ``env`` added to theirs) and ``balancer``;
    stop them all on the way out."""
    assert balancer in BALANCERS, balancer
    instances: list[Instance] = []
    lb: Balancer | None = None
    redis = RedisServer(directory)
    try:
        redis.start()
        state_keys = generate_key()
        request_log = directory / "requests.jsonl"
        instance_env = _instance_env(redis.url, state_keys, request_log, env)
        instances = _start_instances(directory, instance_env)

        def instance_logs() -> str:
            return "\n".join(f"--- {i.log.name}\n{_tail(i.log)}" for i in instances)

        _wait(
            lambda: all(_listening(i.port) and _answers_405(i.port) for i in instances),
            [instance.process for instance in instances],
            "mcpserve instances",
            instance_logs,
        )
        start = _start_haproxy if balancer == "haproxy" else _start_nginx
        lb = start(directory, instances)
        made = Cluster(directory, redis, instances, lb, request_log, state_keys, instance_env)
        pids = {instance.pid for instance in instances}
        _wait(
            lambda: _listening(lb.port) and _spread(made.base_url, pids),
            [lb.process],
            f"{balancer} spreading requests over {INSTANCES} instances",
            made.logs,
        )
        yield made
    finally:
        if lb is not None:
            _stop(lb.process)
        for instance in instances:  # the processes of now: a restarted one's too
            _stop(instance.process)
        redis.stop()
