"""The graceful drain on SIGTERM (``transports/drain.py``), on the wire.

The server is ``tests/support/servers/drain_app.py`` under ``server.run("http")``, with the
drain window set through ``MCPSERVE_DRAIN_SECONDS`` (the tests' default is 0). A SIGTERM
makes ``/readyz`` fail at once while requests are still answered for the window; then a
call in flight completes, a listen stream ends with a ``retry`` hint before its final
result, and the process is gone within the drain, the grace and a bound. SIGINT does not
wait. ``mcpserve run --workers 2`` drains each worker the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from listens import listen
from mcpserve import Server
from redis_server import RedisServer
from wire_helpers import (
    SERVERS,
    TIMEOUT,
    HTTPServerProcess,
    call,
    encode,
    http_server_process,
    mcp_headers,
    parse_sse,
    post,
    request,
)

pytestmark = pytest.mark.subprocess

DRAIN_APP = SERVERS / "drain_app.py"
SUBS_BASIC = SERVERS / "subs_basic.py"
#: What the exit may take beyond the drain window and the grace: uvicorn's own steps and
#: the lifespan's end, on a machine shared with other work.
EXIT_BOUND = 5.0


def drain_app(
    marker_dir: Path, drain: float, *args: str, env: dict[str, str] | None = None
) -> contextlib.AbstractContextManager[HTTPServerProcess]:
    command = [sys.executable, str(DRAIN_APP), "--port", "{port}", *args]
    environment = {"MCPSERVE_DRAIN_SECONDS": str(drain), **(env or {})}
    return http_server_process(marker_dir, args=command, env=environment)


@contextlib.asynccontextmanager
async def client_of(srv: HTTPServerProcess) -> AsyncIterator[httpx2.AsyncClient]:
    # A new connection per request: uvicorn closes kept-alive ones when it stops, and a test
    # of "answered during the drain" must not depend on which connection a request took.
    limits = httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{srv.port}", timeout=TIMEOUT, limits=limits
    ) as client:
        yield client


async def exited_within(process: subprocess.Popen[bytes], seconds: float) -> int:
    """The exit status, once the process has exited; fails after ``seconds``."""
    try:
        return await asyncio.to_thread(process.wait, seconds)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the process did not exit within {seconds} s") from None


async def test_sigterm_fails_readyz_at_once_and_requests_are_answered_while_draining(
    tmp_path: Path,
) -> None:
    drain = 3.0
    with drain_app(tmp_path, drain) as srv:
        async with client_of(srv) as http:
            assert (await http.get("/readyz")).status_code == 200
            signalled = time.monotonic()
            srv.process.send_signal(signal.SIGTERM)
            not_ready = await http.get("/readyz")
            assert not_ready.status_code == 503
            assert not_ready.json() == {"ready": False, "failed": "draining"}
            assert (await http.get("/healthz")).status_code == 200  # alive all the same
            await asyncio.sleep(1.0)
            answered = await post(http, call(1, "whoami", {}))  # a request sent meanwhile
            assert answered.status == 200
            assert answered.result["content"][0]["text"] == str(srv.process.pid)
            assert time.monotonic() - signalled < drain  # (it was inside the window)
            assert srv.process.poll() is None
            await exited_within(srv.process, drain + 20 + EXIT_BOUND)
        assert time.monotonic() - signalled >= drain  # it waited the window out
        log = srv.log.read_text()
    assert "Traceback" not in log, log


async def test_a_long_call_in_flight_at_sigterm_completes(tmp_path: Path) -> None:
    with drain_app(tmp_path, 0.5) as srv:
        async with client_of(srv) as http:
            running = asyncio.create_task(post(http, call(1, "slow", {"seconds": 3})))
            await asyncio.sleep(0.5)  # it has started
            srv.process.send_signal(signal.SIGTERM)
            answered = await running
            assert answered.status == 200, answered.body
            assert answered.result["content"][0]["text"].startswith("slept 3")
        await exited_within(srv.process, 0.5 + 20 + EXIT_BOUND)


async def test_shutdown_grace_bounds_a_call_that_would_not_finish(tmp_path: Path) -> None:
    """drain 0.5 s + grace 1 s: a 60 s call is cut, and the process is gone in time."""
    with drain_app(tmp_path, 0.5, "--shutdown-grace", "1") as srv:
        async with client_of(srv) as http:
            running = asyncio.create_task(post(http, call(1, "slow", {"seconds": 60})))
            await asyncio.sleep(0.5)
            signalled = time.monotonic()
            srv.process.send_signal(signal.SIGTERM)
            await exited_within(srv.process, 0.5 + 1 + EXIT_BOUND)
            cut = await running  # cancelled by uvicorn once the grace is over, and told so
            assert cut.status == 503, cut
            assert cut.message == {
                "jsonrpc": "2.0",
                "id": 1,
                "error": {
                    "code": -32603,
                    "message": "The server stopped before the request finished",
                },
            }
        assert time.monotonic() - signalled >= 1.5
        log = srv.log.read_text()
    assert "timeout graceful shutdown exceeded" in log, log


async def test_the_shutdown_grace_comes_from_the_environment_when_not_given(
    tmp_path: Path,
) -> None:
    """server.run("http") with no shutdown_grace reads MCPSERVE_SHUTDOWN_GRACE (1 s here,
    not the 20 s default), as ``mcpserve run`` does."""
    with drain_app(tmp_path, 0.5, env={"MCPSERVE_SHUTDOWN_GRACE": "1"}) as srv:
        async with client_of(srv) as http:
            running = asyncio.create_task(post(http, call(1, "slow", {"seconds": 60})))
            await asyncio.sleep(0.5)
            srv.process.send_signal(signal.SIGTERM)
            await exited_within(srv.process, 0.5 + 1 + EXIT_BOUND)
            assert (await running).status == 503
    assert "timeout graceful shutdown exceeded" in srv.log.read_text()


TASKS = {
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }
}


async def task_after_the_stop(store: str, task_id: str) -> dict[str, Any]:
    """The task as another instance on the same store reads it, once the process is gone."""
    reader = Server("drain", task_store=store)

    @reader.tool(task="optional")
    async def long_job(seconds: float) -> str:
        raise AssertionError("never called here")

    async with reader.running():
        answer = await reader.handle(request(2, "tasks/get", {"taskId": task_id}, **TASKS))
    assert answer is not None
    task: dict[str, Any] = answer["result"]
    return task


@pytest.mark.parametrize(
    ("seconds", "grace", "status"),
    [(2.0, 20.0, "completed"), (60.0, 1.0, "failed")],
    ids=["finishes-within-the-grace", "outlasts-the-grace"],
)
async def test_a_task_running_at_sigterm_gets_the_shutdown_grace(
    tmp_path: Path, seconds: float, grace: float, status: str
) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    env = {"MCPSERVE_TASK_STORE": store}
    with drain_app(tmp_path, 0.0, "--shutdown-grace", str(grace), env=env) as srv:
        async with client_of(srv) as http:
            created = (await post(http, call(1, "long_job", {"seconds": seconds}, **TASKS))).result
            assert created["resultType"] == "task"
            await asyncio.sleep(0.3)  # it runs
            signalled = time.monotonic()
            srv.process.send_signal(signal.SIGTERM)
            await exited_within(srv.process, min(seconds, grace) + EXIT_BOUND)
        took = time.monotonic() - signalled
    assert took >= min(seconds, grace) - 0.5  # the lifespan's end waited for the task
    task = await task_after_the_stop(store, created["taskId"])
    assert task["status"] == status, task
    if status == "completed":
        assert task["result"]["content"] == [{"type": "text", "text": f"done after {seconds}"}]
    else:
        assert task["error"] == {
            "code": -32603,
            "message": "The server stopped before the task finished",
        }


async def test_a_post_stream_still_open_when_the_grace_ends_gets_a_retry_hint(
    tmp_path: Path,
) -> None:
    with drain_app(tmp_path, 0.3, "--shutdown-grace", "1") as srv:
        async with (
            client_of(srv) as http,
            http.stream(
                "POST",
                "/mcp",
                content=encode(call(3, "announce_then_sleep", {"seconds": 60})),
                headers=mcp_headers("tools/call", "announce_then_sleep"),
            ) as stream,
        ):
            chunks = stream.aiter_bytes()
            assert b"test/sleeping" in await anext(chunks)
            srv.process.send_signal(signal.SIGTERM)
            rest = b"".join([chunk async for chunk in chunks])
        await exited_within(srv.process, 0.3 + 1 + EXIT_BOUND)
    assert rest.endswith(b"retry: 1000\n\n"), rest
    assert b"result" not in rest  # it never finished


async def test_a_handshake_era_post_stream_cut_at_the_end_gets_a_retry_hint(
    tmp_path: Path,
) -> None:
    """The client may resume it with Last-Event-ID (elsewhere, where sessions are shared)."""
    from legacy_schema import initialize_message

    with drain_app(tmp_path, 0.3, "--shutdown-grace", "1") as srv:
        async with client_of(srv) as http:
            started = await http.post("/mcp", json=initialize_message(),
                                      headers={"accept": "application/json"})  # fmt: skip
            session = {"mcp-session-id": started.headers["mcp-session-id"],
                       "mcp-protocol-version": "2025-11-25",
                       "accept": "application/json, text/event-stream"}  # fmt: skip
            sleep = {"name": "announce_then_sleep", "arguments": {"seconds": 60}}
            message = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": sleep}
            async with http.stream("POST", "/mcp", json=message, headers=session) as stream:
                assert stream.headers["content-type"] == "text/event-stream"
                received = b""
                chunks = stream.aiter_bytes()
                while b"test/sleeping" not in received:
                    received += await anext(chunks)
                srv.process.send_signal(signal.SIGTERM)
                rest = b"".join([chunk async for chunk in chunks])
        await exited_within(srv.process, 0.3 + 1 + EXIT_BOUND)
    assert rest.endswith(b"retry: 1000\n\n"), rest
    assert b"result" not in rest


async def test_sigint_stops_without_waiting_for_the_drain(tmp_path: Path) -> None:
    """Ctrl-C at a terminal: no balancer to wait for (docs/decisions.md)."""
    with drain_app(tmp_path, 30) as srv:
        async with client_of(srv) as http:
            assert (await http.get("/readyz")).status_code == 200
        signalled = time.monotonic()
        srv.process.send_signal(signal.SIGINT)
        assert await exited_within(srv.process, EXIT_BOUND) == 0
        assert time.monotonic() - signalled < EXIT_BOUND


async def test_a_listen_stream_ends_with_a_retry_hint_then_its_final_result(
    tmp_path: Path,
) -> None:
    command = [sys.executable, str(SUBS_BASIC), "--port", "{port}"]
    env = {"MCPSERVE_DRAIN_SECONDS": "0.5"}
    with http_server_process(tmp_path, args=command, env=env) as srv:
        async with (
            httpx2.AsyncClient(base_url=f"http://127.0.0.1:{srv.port}", timeout=TIMEOUT) as http,
            http.stream(
                "POST",
                "/mcp",
                content=encode(listen(7, {"toolsListChanged": True})),
                headers=mcp_headers("subscriptions/listen"),
            ) as stream,
        ):
            chunks = stream.aiter_bytes()
            first = await anext(chunks)
            assert b"notifications/subscriptions/acknowledged" in first
            srv.process.send_signal(signal.SIGTERM)
            rest = b"".join([chunk async for chunk in chunks]).decode()
        await exited_within(srv.process, 0.5 + EXIT_BOUND)
    assert rest.startswith("retry: 1000\n\n"), rest
    (final,) = parse_sse(rest.removeprefix("retry: 1000\n\n"))
    assert final["id"] == 7
    assert "result" in final, final


async def test_mcpserve_run_drain_seconds_flag_sets_the_window(tmp_path: Path) -> None:
    """``mcpserve run --http --drain-seconds 2`` (the flag wins over the tests' 0)."""
    command = [sys.executable, "-m", "mcpserve.cli", "run", str(DRAIN_APP), "--http",
               "--port", "{port}", "--drain-seconds", "2"]  # fmt: skip
    with http_server_process(tmp_path, args=command) as srv:
        async with client_of(srv) as http:
            assert (await http.get("/readyz")).status_code == 200
            srv.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            assert (await http.get("/readyz")).status_code == 503
            await asyncio.sleep(1.0)
            assert (await post(http, call(1, "whoami", {}))).status == 200
            await exited_within(srv.process, 2 + EXIT_BOUND)
            assert time.monotonic() - signalled >= 2


async def test_each_worker_drains_under_mcpserve_run_workers(
    tmp_path: Path, redis: RedisServer
) -> None:
    """``--workers 2 --drain-seconds 2``: uvicorn's supervisor sends each worker SIGTERM,
    and every worker then answers /readyz 503 while it still answers requests. (The flag
    wins over the tests' MCPSERVE_DRAIN_SECONDS=0.)"""
    from mcpserve.protocol.request_state import generate_key

    command = [sys.executable, "-m", "mcpserve.cli", "run", str(DRAIN_APP), "--http",
               "--port", "{port}", "--workers", "2", "--drain-seconds", "2",
               "--shutdown-grace", "3"]  # fmt: skip
    env = {"MCPSERVE_REDIS_URL": redis.url, "MCPSERVE_STATE_KEYS": generate_key()}
    with http_server_process(tmp_path, args=command, env=env) as srv:
        async with client_of(srv) as http:
            pids = await workers_answering(http, 2)
            srv.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            answered_by: set[int] = set()
            readiness: list[int] = []
            while time.monotonic() - signalled < 1.5:
                # Four calls at once, each holding its worker's loop a moment: the others go
                # to the other worker, and so do the probes sent beside them.
                calls = [post(http, call(n, "hold", {"seconds": 0.05})) for n in range(4)]
                probes = [http.get("/readyz") for _ in range(2)]
                *answers, first, second = await asyncio.gather(*calls, *probes)
                for answered in answers:
                    assert answered.status == 200  # still answered while draining
                    answered_by.add(int(answered.result["content"][0]["text"]))
                readiness += [first.status_code, second.status_code]
            # Calls are still answered while the workers drain (the kernel picks the worker
            # of each connection: on a busy machine one may take them all).
            assert answered_by, readiness
            assert answered_by <= pids, (answered_by, pids)
            # Once one probe fails none is ready again: a worker that did not drain would
            # answer some of them 200.
            settled = readiness[readiness.index(503) :]
            assert settled == [503] * len(settled), readiness
            assert len(settled) >= 10, readiness
            await exited_within(srv.process, 2 + 3 + EXIT_BOUND)
        log = srv.log.read_text()
    assert "Traceback" not in log, log
    for pid in pids:  # each worker went through its drain to a graceful end
        assert f"Finished server process [{pid}]" in log, log


async def workers_answering(http: httpx2.AsyncClient, count: int) -> set[int]:
    """The pids of the ``count`` workers, once each has answered a call (bounded)."""
    deadline = time.monotonic() + 30
    pids: set[int] = set()
    while len(pids) < count:
        assert time.monotonic() < deadline, f"only {pids} answered within 30 s"
        answered = await post(http, call(1, "whoami", {}))
        pids.add(int(answered.result["content"][0]["text"]))
    return pids
