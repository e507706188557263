"""Cluster: mcpserve as two processes behind haproxy, and handshake-era sessions in Redis.

Two questions a production deployment asks, each answered with ``tools/call echo`` at 16
connections under wrk, in interleaved rounds like every other phase:

* **scaling**: what a second process behind a load balancer gives. One mcpserve process
  (the tuned ``mcpserve_app.py``, as in the HTTP phase) is measured directly and behind
  haproxy, then two processes behind haproxy (``balance roundrobin``, no stickiness,
  ``http-reuse always``). The processes share a ``requestState`` key
  (``MCPSERVE_STATE_KEYS``), checked first: an ``input_required`` round trip through
  haproxy must succeed with its two requests answered by different processes.
* **sessions**: what keeping handshake-era (2025-11-25) sessions in Redis costs. A client
  sends ``initialize`` and ``notifications/initialized`` and gets an ``Mcp-Session-Id``,
  then wrk sends ``tools/call echo`` in that session (no ``_meta``; the session id and
  ``MCP-Protocol-Version: 2025-11-25`` headers; a new JSON-RPC id per request, as a session
  refuses an id still in flight). Measured on one process with in-process sessions (the
  default), one process with the Redis session store (``MCPSERVE_REDIS_URL``), and two
  processes behind haproxy sharing that store. After the handshakes the suite reads
  Redis's key count: no key means the sessions never reached Redis, and the report says so.

Pinning: the machine has two cores. The processes are pinned one per core (a single process
to the server core); haproxy, wrk and redis-server may run on either, so with two
processes they compete with the servers for the same two cores. The two-process figure is
what two cores give with the balancer and the load generator on board, not a per-process
scaling factor; on 2 cores expect well under 2x.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.client
import json
import socket
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import envs
import httpload
from common import (
    CLIENT_INFO,
    ECHO_TEXT,
    SCENARIOS,
    CheckFailed,
    JSONDict,
    check_exchange,
    parse_sse,
)
from proc import Group, Measured, Server, free_port, servers
from recorder import Recorder, log, summarize

CONNECTIONS = 16
LEGACY_VERSION = "2025-11-25"
STATE_KEYS_ENV = "MCPSERVE_STATE_KEYS"
REDIS_URL_ENV = "MCPSERVE_REDIS_URL"
REDIS_START_TIMEOUT = 10.0

#: The measured cases, in order, and what each one is.
CASES = {
    "scaling:one": "1 process, direct",
    "scaling:one-haproxy": "1 process behind haproxy",
    "scaling:two-haproxy": "2 processes behind haproxy",
    "sessions:memory": "1 process, in-process sessions (default)",
    "sessions:redis": "1 process, sessions in Redis",
    "sessions:redis-two-haproxy": "2 processes behind haproxy, sessions in Redis",
}
#: The ratios reported: (case, reference case), as req/s of the case / the reference's.
RATIOS = [
    ("scaling:one-haproxy", "scaling:one"),
    ("scaling:two-haproxy", "scaling:one"),
    ("scaling:two-haproxy", "scaling:one-haproxy"),
    ("sessions:redis", "sessions:memory"),
    ("sessions:redis-two-haproxy", "sessions:memory"),
]

HAPROXY_CONFIG = """\
global
    nbthread 1
    maxconn 4096

defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 60s
    timeout server 60s

frontend mcp
    bind 127.0.0.1:{port}
    default_backend mcpserve

backend mcpserve
    balance roundrobin
{servers}
"""


def state_key() -> str:
    """A fresh ``requestState`` key, made by mcpserve itself (as ``mcpserve keygen`` does)."""
    code = "from mcpserve.protocol.request_state import generate_key; print(generate_key())"
    python = envs.python_of("mcpserve")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


# -- redis-server and haproxy ---------------------------------------------------------------


def _redis(port: int, command: bytes, timeout: float = 2.0) -> bytes:
    """One inline Redis command; the raw reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(command + b"\r\n")
        return sock.recv(1 << 16)


def start_redis(binary: str, directory: Path, log_file: Path) -> tuple[Server, int]:
    """A throwaway redis-server on a free port, persistence off; waits (bounded) for PING."""
    port = free_port()
    command = [
        binary,
        "--save", "",
        "--appendonly", "no",
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(directory),
        "--daemonize", "no",
    ]  # fmt: skip
    server = Server(command, None, log=log_file)
    deadline = time.monotonic() + REDIS_START_TIMEOUT
    while True:
        with contextlib.suppress(OSError):
            if _redis(port, b"PING", 0.5).startswith(b"+PONG"):
                return server, port
        if not server.alive() or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"redis-server did not answer PING within {REDIS_START_TIMEOUT} s")
        time.sleep(0.02)


def redis_keys(port: int) -> int:
    """``DBSIZE``: how many keys Redis holds."""
    reply = _redis(port, b"DBSIZE")
    if not reply.startswith(b":"):
        raise RuntimeError(f"unexpected DBSIZE reply {reply[:80]!r}")
    return int(reply[1:].strip())


def start_haproxy(binary: str, backends: list[int], logs: Path, name: str) -> tuple[Server, int]:
    """haproxy in the foreground on a free port, round robin over ``backends``."""
    port = free_port()
    lines = [f"    server s{i} 127.0.0.1:{p}" for i, p in enumerate(backends, 1)]
    config = logs / f"haproxy-{name}.cfg"
    config.write_text(HAPROXY_CONFIG.format(port=port, servers="\n".join(lines)))
    check = subprocess.run([binary, "-c", "-q", "-f", str(config)], capture_output=True, text=True)
    if check.returncode != 0:
        raise RuntimeError(f"haproxy refused {config}: {check.stderr.strip()[:500]}")
    server = Server([binary, "-db", "-f", str(config)], None, log=logs / f"haproxy-{name}.log")
    server.wait_http(port)
    return server, port


# -- handshake-era sessions -----------------------------------------------------------------


def _exchange(port: int, headers: dict[str, str], message: JSONDict) -> tuple[int, Any, bytes]:
    """One POST on a new connection: (status, the response, its body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", httpload.PATH, json.dumps(message).encode(), headers)
        response = connection.getresponse()
        return response.status, response, response.read()
    finally:
        connection.close()


def _messages(response: Any, body: bytes) -> list[JSONDict]:
    if response.getheader("content-type", "").startswith("text/event-stream"):
        return parse_sse(body)
    return [json.loads(body)]


BASE_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def open_session(port: int) -> str:
    """The 2025-11-25 handshake; the ``Mcp-Session-Id`` the server gave."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        },
    }
    status, response, body = _exchange(port, BASE_HEADERS, initialize)
    session = response.getheader("mcp-session-id")
    if status != 200 or not session:
        raise CheckFailed(f"initialize: HTTP {status}, session {session!r}: {body[:300]!r}")
    result = _messages(response, body)[-1].get("result") or {}
    if result.get("protocolVersion") != LEGACY_VERSION:
        raise CheckFailed(f"initialize negotiated {result.get('protocolVersion')!r}")
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _, body = _exchange(port, session_headers(session), initialized)
    if status != 202:
        raise CheckFailed(f"notifications/initialized: HTTP {status}: {body[:300]!r}")
    return session


def session_headers(session: str) -> dict[str, str]:
    return {**BASE_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY_VERSION}


def legacy_echo(request_id: int) -> JSONDict:
    arguments = {"text": ECHO_TEXT}
    params = {"name": "echo", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def check_session(port: int, session: str, calls: int = 2) -> None:
    """``calls`` checked echo calls in the session, each on a new connection (so behind
    haproxy they reach different processes)."""
    for request_id in range(2, 2 + calls):
        status, response, body = _exchange(port, session_headers(session), legacy_echo(request_id))
        if status != 200:
            raise CheckFailed(f"tools/call in the session: HTTP {status}: {body[:300]!r}")
        check_exchange(SCENARIOS["echo"], _messages(response, body))


def session_request_file(session: str, path: Path) -> Path:
    """The legacy echo request in ``wrk/mcp.lua``'s format (its id is renumbered per request)."""
    head = "\n".join(f"{name}: {value}" for name, value in session_headers(session).items())
    body = json.dumps(legacy_echo(2), separators=(",", ":")).encode()
    path.write_bytes(head.encode() + b"\n\n" + body)
    return path


# -- the phase ----------------------------------------------------------------------------------


class Case:
    """One measured configuration: where wrk sends what, and whose CPU is whose."""

    def __init__(
        self,
        port: int,
        servers: Measured,
        request: Path,
        *,
        balancer: Server | None = None,
        session: str | None = None,
    ) -> None:
        self.port = port
        self.servers = servers
        self.request = request
        self.balancer = balancer
        self.session = session

    def check(self) -> None:
        if self.session is None:
            httpload.validate(self.port, SCENARIOS["echo"])
        else:
            check_session(self.port, self.session)

    def run(self, wrk: str, duration: float) -> dict[str, Any]:
        """A wrk window (wrk on any CPU), with haproxy's CPU share and each process's."""
        members = self.servers.members if isinstance(self.servers, Group) else []
        before = self.balancer.cpu() if self.balancer else 0.0
        each = [member.cpu() for member in members]
        started = time.monotonic()
        sample = httpload.run_wrk(
            wrk,
            self.servers,
            self.port,
            SCENARIOS["echo"],
            self.request,
            connections=CONNECTIONS,
            duration=duration,
            core=None,
            mode="plain" if self.session is None else "unique_ids",
        )
        wall = time.monotonic() - started
        if self.balancer is not None:
            sample["balancer_util"] = (self.balancer.cpu() - before) / wall
        if members:  # round robin: both processes should be about as busy
            sample["process_utils"] = [
                (m.cpu() - c) / wall for m, c in zip(members, each, strict=True)
            ]
        return sample


def cluster(
    args: argparse.Namespace, wrk: str, cores: tuple[int, int], logs: Path
) -> dict[str, Any]:
    tools = envs.cluster_tools()
    haproxy, redis_server = tools["haproxy"], tools["redis-server"]
    if haproxy is None or redis_server is None:
        raise SystemExit("the cluster phase needs haproxy and redis-server")
    keys = {STATE_KEYS_ENV: state_key()}
    rec = Recorder()
    notes: dict[str, Any] = {}
    cases: dict[str, Case] = {}
    with servers() as started:

        def mcpserve(name: str, core: int, env: dict[str, str]) -> tuple[Server, int]:
            port = free_port()
            command = envs.server_command("mcpserve", "http", str(port))
            server = Server(command, core, log=logs / f"cluster-{name}.log", env=env)
            started.append(server)
            server.wait_http(port)
            return server, port

        def balancer(name: str, backends: list[int]) -> tuple[Server, int]:
            server, port = start_haproxy(haproxy, backends, logs, name)
            started.append(server)
            return server, port

        redis, redis_port = start_redis(redis_server, logs, logs / "cluster-redis.log")
        started.append(redis)
        with_redis = {**keys, REDIS_URL_ENV: f"redis://127.0.0.1:{redis_port}/0"}
        a, a_port = mcpserve("a", cores[0], keys)
        b, b_port = mcpserve("b", cores[1], keys)
        c, c_port = mcpserve("c-redis", cores[0], with_redis)
        d, d_port = mcpserve("d-redis", cores[1], with_redis)
        one, one_port = balancer("one", [a_port])
        two, two_port = balancer("two", [a_port, b_port])
        two_redis, two_redis_port = balancer("two-redis", [c_port, d_port])

        echo = httpload.request_file(SCENARIOS["echo"], logs)
        cases["scaling:one"] = Case(a_port, a, echo)
        cases["scaling:one-haproxy"] = Case(one_port, a, echo, balancer=one)
        cases["scaling:two-haproxy"] = Case(two_port, Group([a, b]), echo, balancer=two)
        try:  # round 1 and its retry reach different processes: the key must be shared
            httpload.validate(two_port, SCENARIOS["input_required"])
            notes["shared_state_key"] = "an input_required round trip across the 2 processes"
        except CheckFailed as exc:
            notes["shared_state_key"] = f"FAILED: {exc}"[:300]
            rec.skip("scaling:two-haproxy", "mcpserve", f"requestState not shared: {exc}"[:300])

        keys_before = redis_keys(redis_port)
        for name, port, measured, front in (
            ("memory", a_port, a, None),
            ("redis", c_port, c, None),
            ("redis-two-haproxy", two_redis_port, Group([c, d]), two_redis),
        ):
            try:
                session = open_session(port)
            except (CheckFailed, OSError, ValueError) as exc:
                rec.skip(f"sessions:{name}", "mcpserve", f"handshake: {exc}"[:300])
                continue
            request = session_request_file(session, logs / f"request-session-{name}.txt")
            cases[f"sessions:{name}"] = Case(
                port, measured, request, balancer=front, session=session
            )
        notes["redis_keys_after_handshakes"] = redis_keys(redis_port) - keys_before
        if notes["redis_keys_after_handshakes"] == 0:
            notes["redis_unused"] = (
                "Redis held no key after the handshakes: this mcpserve kept its sessions in "
                f"process despite {REDIS_URL_ENV}, so the Redis rows measure in-process sessions"
            )
            log(f"  {notes['redis_unused']}")

        for name, case in cases.items():
            try:
                case.check()
            except (CheckFailed, OSError, ValueError) as exc:
                rec.skip(name, "mcpserve", f"wrong answer: {exc}"[:300])
        order = [name for name in CASES if name in cases]
        for rnd in range(args.rounds):
            log(f"cluster round {rnd + 1}/{args.rounds}")
            shift = rnd % len(order)
            for name in order[shift:] + order[:shift]:
                run = functools.partial(cases[name].run, wrk)
                rec.measure(name, "mcpserve", rnd, run, args.warmup, args.duration)
        for name, case in cases.items():  # still right after all that load?
            if name in rec.unsupported:
                continue
            try:
                case.check()
            except (CheckFailed, OSError, ValueError) as exc:
                rec.skip(name, "mcpserve", f"wrong answer after the load: {exc}"[:300])
                rec.samples = [s for s in rec.samples if s["case"] != name]
    summary = {name: table["mcpserve"] for name, table in summarize(rec.samples).items()}
    for name, row in summary.items():
        mine = [s for s in rec.samples if s["case"] == name]
        shares = [s["balancer_util"] for s in mine if s.get("balancer_util") is not None]
        row["balancer_util"] = statistics.median(shares) if shares else None
        split = [s["process_utils"] for s in mine if s.get("process_utils")]
        medians = [statistics.median(u) for u in zip(*split, strict=True)]
        row["process_utils"] = medians or None
    return {
        "titles": CASES,
        "summary": summary,
        "ratios": _ratios(summary),
        "unsupported": {name: fws["mcpserve"] for name, fws in rec.unsupported.items()},
        "samples": rec.samples,
        "notes": notes,
        "pinning": f"1 process: CPU {cores[0]}; 2 processes: CPU {cores[0]} and CPU {cores[1]}; "
        "haproxy (1 thread), wrk and redis-server: any CPU",
    }


def _ratios(summary: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """req/s of each case over its reference's (two behind haproxy / one, Redis / in-process)."""
    ratios = []
    for case, versus in RATIOS:
        ours = (summary.get(case) or {}).get("rps")
        base = (summary.get(versus) or {}).get("rps")
        ratio = ours / base if ours and base else None
        ratios.append({"case": case, "versus": versus, "ratio": ratio})
    return ratios
