"""``/healthz`` and ``/readyz`` (``transports/health.py``) on the wire, and in process.

Over HTTP the server is ``tests/support/servers/drain_app.py`` under ``server.run("http")``:
both probes answer GET and HEAD and refuse other methods, sit behind the Host check and
outside auth, and ``/readyz`` follows Redis (a real ``redis-server`` stopped and started
again). In process, the ASGI lifespan is driven by hand to see ``/readyz`` fail before the
lifespan has completed, which a real uvicorn never shows (it accepts no connection before).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcpserve import Server
from redis_server import RedisServer
from wire_helpers import (
    SERVERS,
    TIMEOUT,
    HTTPServerProcess,
    call,
    http_server_process,
    post,
)

DRAIN_APP = SERVERS / "drain_app.py"


def drain_app(
    marker_dir: Path, *args: str, env: dict[str, str] | None = None
) -> contextlib.AbstractContextManager[HTTPServerProcess]:
    command = [sys.executable, str(DRAIN_APP), "--port", "{port}", *args]
    return http_server_process(marker_dir, args=command, env=env)


@contextlib.asynccontextmanager
async def client_of(srv: HTTPServerProcess) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{srv.port}", timeout=TIMEOUT
    ) as client:
        yield client


async def answers(client: httpx2.AsyncClient, path: str) -> tuple[int, Any]:
    """The status and JSON body of a GET of ``path``."""
    response = await client.get(path)
    return response.status_code, response.json()


# =========================================================================== over HTTP


@pytest.mark.subprocess
async def test_probes_answer_get_and_head_and_refuse_other_methods(tmp_path: Path) -> None:
    with drain_app(tmp_path) as srv:
        async with client_of(srv) as http:
            assert await answers(http, "/healthz") == (200, {"status": "ok"})
            assert await answers(http, "/readyz") == (200, {"ready": True})
            for path in ("/healthz", "/readyz"):
                head = await http.head(path)
                assert (head.status_code, head.content) == (200, b"")
                assert head.headers["content-type"] == "application/json"
                assert head.headers["cache-control"] == "no-store"
                refused = await http.post(path, content=b"{}")
                assert refused.status_code == 405
                assert refused.headers["allow"] == "GET, HEAD"


@pytest.mark.subprocess
async def test_probes_sit_behind_the_host_check(tmp_path: Path) -> None:
    """A DNS-rebinding page reaches the probes no more than the endpoint: 421."""
    with drain_app(tmp_path) as srv:
        async with client_of(srv) as http:
            for path in ("/healthz", "/readyz"):
                misdirected = await http.get(path, headers={"host": "evil.example:80"})
                assert misdirected.status_code == 421, misdirected.text
                assert "evil.example" in misdirected.text
                assert (await http.get(path, headers={"host": "localhost"})).status_code == 200


@pytest.mark.subprocess
async def test_probes_are_answered_without_a_token_when_the_endpoint_has_auth(
    tmp_path: Path,
) -> None:
    with drain_app(tmp_path, "--auth") as srv:
        async with client_of(srv) as http:
            refused = await post(http, call(1, "whoami", {}))
            assert refused.status == 401  # the endpoint itself wants a token
            assert await answers(http, "/healthz") == (200, {"status": "ok"})
            assert await answers(http, "/readyz") == (200, {"ready": True})


@pytest.mark.subprocess
async def test_probe_paths_move_and_turn_off(tmp_path: Path) -> None:
    with drain_app(tmp_path, "--health-path", "/live", "--ready-path", "-") as srv:
        async with client_of(srv) as http:
            assert await answers(http, "/live") == (200, {"status": "ok"})
            assert (await http.get("/readyz")).status_code == 404
            assert (await http.get("/healthz")).status_code == 404


async def until_status(
    client: httpx2.AsyncClient, path: str, status: int, within: float = TIMEOUT
) -> Any:
    """GET ``path`` until it answers ``status`` (bounded); its JSON body."""
    deadline = time.monotonic() + within
    while True:
        response = await client.get(path)
        if response.status_code == status:
            return response.json()
        assert time.monotonic() < deadline, (path, response.status_code, response.text)
        await asyncio.sleep(0.1)


@pytest.mark.subprocess
async def test_readyz_fails_while_redis_is_down_and_healthz_never_does(
    tmp_path: Path, own_redis: RedisServer
) -> None:
    with drain_app(tmp_path, env={"MCPSERVE_REDIS_URL": own_redis.url}) as srv:
        async with client_of(srv) as http:
            assert await answers(http, "/readyz") == (200, {"ready": True})
            own_redis.stop()
            started = time.monotonic()
            down = await http.get("/readyz")
            assert time.monotonic() - started < 1.5  # the PING waits at most 1 s
            assert (down.status_code, down.json()) == (503, {"ready": False, "failed": "redis"})
            assert await answers(http, "/healthz") == (200, {"status": "ok"})
            own_redis.start()
            assert await until_status(http, "/readyz", 200) == {"ready": True}


@pytest.mark.subprocess
async def test_readyz_never_shows_the_redis_url_or_the_error(tmp_path: Path) -> None:
    """Nothing listens at the URL, which carries a password: the body names the check only."""
    from wire_helpers import free_port

    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"
    with drain_app(tmp_path, "--ready-path", "/ready", env={"MCPSERVE_REDIS_URL": url}) as srv:
        async with client_of(srv) as http:
            down = await http.get("/ready")
            assert down.status_code == 503
            assert down.content == b'{"ready":false,"failed":"redis"}'
            assert await answers(http, "/healthz") == (200, {"status": "ok"})


@pytest.mark.subprocess
async def test_readyz_reuses_one_redis_connection(tmp_path: Path, own_redis: RedisServer) -> None:
    """A probe every second must not cost Redis a connection each time."""
    import redis.asyncio as redis

    with drain_app(tmp_path, env={"MCPSERVE_REDIS_URL": own_redis.url}) as srv:
        async with client_of(srv) as http:
            watcher = redis.Redis.from_url(own_redis.url)
            try:
                await until_status(http, "/readyz", 200)
                before = int((await watcher.info("stats"))["total_connections_received"])
                for _ in range(20):
                    assert (await http.get("/readyz")).status_code == 200
                after = int((await watcher.info("stats"))["total_connections_received"])
            finally:
                await watcher.aclose()
    assert after - before <= 1, f"{after - before} connections for 20 probes"


# =========================================================================== in process


async def asgi_get(app: Any, path: str) -> tuple[int, bytes]:
    """One GET through the ASGI interface: the status and the body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")],
        "query_string": b"",
    }
    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


async def test_readyz_fails_until_the_lifespan_has_completed() -> None:
    gate = asyncio.Event()

    @contextlib.asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        await gate.wait()  # e.g. a database that takes its time
        yield {}

    server = Server("slow-start", lifespan=lifespan)
    app = server.http_app()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    running = asyncio.create_task(app({"type": "lifespan"}, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    await asyncio.sleep(0.05)
    status, body = await asgi_get(app, "/readyz")
    assert (status, json.loads(body)) == (503, {"ready": False, "failed": "lifespan"})
    assert await asgi_get(app, "/healthz") == (200, b'{"status":"ok"}')
    gate.set()
    assert (await asyncio.wait_for(outbox.get(), TIMEOUT))["type"] == "lifespan.startup.complete"
    assert await asgi_get(app, "/readyz") == (200, b'{"ready":true}')
    await inbox.put({"type": "lifespan.shutdown"})
    assert (await asyncio.wait_for(outbox.get(), TIMEOUT))["type"] == "lifespan.shutdown.complete"
    await asyncio.wait_for(running, TIMEOUT)
