"""Serving as the README does, in a real uvicorn process: what it picks by itself.

``server.run("http")`` with no options runs on uvloop with httptools (what
``mcpserve[http]`` installs) and writes no access log; ``access_log=True`` (and
``mcpserve run --http --access-log``) turns it on. A server whose ``requestState`` key is
made up per process says so at start-up, once per process, where another process may share
its work: under a host that runs the app in several (uvicorn's ``--workers``), not when
``server.run`` or ``mcpserve run`` serves it alone.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx2
import pytest

from wire_helpers import SERVERS, TIMEOUT, call, http_server_process, post

pytestmark = pytest.mark.subprocess

SERVING = SERVERS / "serving.py"
ACCESS_LINE = '"POST /mcp HTTP/1.1" 200'
PER_PROCESS_KEY = "requestState is sealed with a key this process made up"


@pytest.fixture(autouse=True)
def _no_shared_state_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSERVE_STATE_KEYS", raising=False)


async def stack_of(url: str) -> dict[str, str]:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
        reply = await post(client, call(1, "stack", {}), path=url)
    structured: dict[str, str] = reply.result["structuredContent"]
    return structured


def log_after_startup(log: Path) -> str:
    """The server's log once uvicorn has said it is running (bounded wait)."""
    deadline = time.monotonic() + TIMEOUT
    while "Uvicorn running on" not in (text := log.read_text()):
        assert time.monotonic() < deadline, text
        time.sleep(0.05)
    return text


async def test_run_http_defaults_to_uvloop_httptools_and_no_access_log(tmp_path: Path) -> None:
    with http_server_process(tmp_path, args=[sys.executable, str(SERVING)]) as srv:
        assert await stack_of(srv.url) == {"loop": "uvloop.Loop", "http": "httptools"}
        log = log_after_startup(srv.log)
    assert ACCESS_LINE not in log, log
    assert PER_PROCESS_KEY not in log, log  # server.run serves from this one process


async def test_mcpserve_run_http_alone_does_not_warn_about_its_own_key(tmp_path: Path) -> None:
    """What ``./scripts/demo`` runs: one process, so a key of its own is no concern."""
    args = [sys.executable, "-m", "mcpserve.cli", "run", str(SERVING), "--http", "--port", "{port}"]
    with http_server_process(tmp_path, args=args) as srv:
        await stack_of(srv.url)
        log = log_after_startup(srv.log)
    assert PER_PROCESS_KEY not in log, log


HOSTED = """
from mcpserve import Server

app = Server("hosted").http_app()
"""


def test_an_app_run_by_a_host_in_several_processes_warns_in_each(tmp_path: Path) -> None:
    (tmp_path / "hosted.py").write_text(HOSTED)
    args = [sys.executable, "-m", "uvicorn", "hosted:app", "--app-dir", str(tmp_path),
            "--port", "{port}", "--workers", "2"]  # fmt: skip
    with http_server_process(tmp_path, args=args) as srv:
        deadline = time.monotonic() + TIMEOUT
        while (log := srv.log.read_text()).count("Application startup complete") < 2:
            assert time.monotonic() < deadline, log
            time.sleep(0.05)
    assert log.count(PER_PROCESS_KEY) == 2, log
    assert "MCPSERVE_STATE_KEYS=$(mcpserve keygen)" in log


async def test_access_log_when_asked(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_ACCESS_LOG": "1"}
    with http_server_process(tmp_path, args=[sys.executable, str(SERVING)], env=env) as srv:
        await stack_of(srv.url)
        await stack_of(srv.url)
        log = log_after_startup(srv.log)
    assert log.count(ACCESS_LINE) == 2, log


async def test_cli_run_http_access_log_flag_and_fast_stack(tmp_path: Path) -> None:
    from mcpserve.protocol.request_state import generate_key

    args = [sys.executable, "-m", "mcpserve.cli", "run", str(SERVING), "--http",
            "--port", "{port}", "--access-log"]  # fmt: skip
    env = {"MCPSERVE_STATE_KEYS": generate_key()}
    with http_server_process(tmp_path, args=args, env=env) as srv:
        assert await stack_of(srv.url) == {"loop": "uvloop.Loop", "http": "httptools"}
        log = log_after_startup(srv.log)
    assert log.count(ACCESS_LINE) == 1, log
    assert PER_PROCESS_KEY not in log, log  # the key is shared: nothing to warn about


def test_the_http_extra_brings_the_fast_stack() -> None:
    """What ``pip install "mcpserve[http]"`` installs, read from the installed metadata: the
    fast serving stack, and httpx2 for ``Client("http://...")``."""
    from importlib.metadata import requires

    in_extra = {
        requirement.split(";")[0].split(">=")[0].strip()
        for requirement in requires("mcpserve") or []
        if requirement.endswith("extra == 'http'")
    }
    assert in_extra == {"uvicorn", "httptools", "uvloop", "httpx2"}


async def test_sigterm_ends_a_handshake_era_get_stream_and_exits(tmp_path: Path) -> None:
    """A legacy client's GET stream never ends by itself: the exit signal ends it, with an SSE
    ``retry`` hint, so the server stops instead of waiting for the client to leave."""
    import signal

    from legacy_schema import LEGACY_DUAL, initialize_message

    with http_server_process(tmp_path, args=[sys.executable, str(LEGACY_DUAL)]) as srv:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
            started = await client.post(srv.url, json=initialize_message(),
                                        headers={"accept": "application/json"})  # fmt: skip
            session = {"mcp-session-id": started.headers["mcp-session-id"],
                       "mcp-protocol-version": "2025-11-25",
                       "accept": "text/event-stream"}  # fmt: skip
            async with client.stream("GET", srv.url, headers=session) as stream:
                assert stream.status_code == 200
                chunks = stream.aiter_bytes()
                assert (await anext(chunks)).startswith(b"id: ")  # the priming event
                srv.process.send_signal(signal.SIGTERM)
                rest = b"".join([chunk async for chunk in chunks])  # the stream ends
        # ... telling the client to come back in a second (to another instance, or this one
        # restarted): the session lives on where sessions are shared.
        assert rest == b"retry: 1000\n\n"
        code = await asyncio.to_thread(srv.process.wait, TIMEOUT)  # no hang: it stops
        log = srv.log.read_text()
    # uvicorn shuts down gracefully, then re-raises the signal it caught, as a process that
    # honours SIGTERM does (one uvicorn process; a --workers supervisor exits 0).
    assert code == -signal.SIGTERM, log
    assert "Traceback" not in log, log


async def test_forwarded_headers_are_left_alone_unless_asked(tmp_path: Path) -> None:
    """uvicorn wraps the app in its X-Forwarded-* middleware only with proxy_headers."""
    with http_server_process(tmp_path, args=[sys.executable, str(SERVING)]) as srv:
        assert await proxy_middleware(srv.url) is False
    env = {"MCPSERVE_TEST_PROXY_HEADERS": "1"}
    with http_server_process(tmp_path, args=[sys.executable, str(SERVING)], env=env) as srv:
        assert await proxy_middleware(srv.url) is True


async def proxy_middleware(url: str) -> bool:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
        reply = await post(client, call(1, "proxy_middleware", {}), path=url)
    wrapped: bool = reply.result["structuredContent"]
    return wrapped
