"""``subscriptions/listen`` on the wire: a real uvicorn over HTTP, and a stdio subprocess.

The server is ``tests/support/servers/subs_basic.py``. Every SSE event and stdout line received is
validated against the official 2026-07-28 schema: the acknowledgement, list_changed and
resource-updated notifications by type, the final response as a
``SubscriptionsListenResult``. Every wait is bounded; subprocesses are always stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from listens import listen, open_stream, poll, tool, unique
from redis_server import RedisServer
from wire_helpers import (
    ROOT,
    SERVERS,
    TIMEOUT,
    HTTPServerProcess,
    StdioProcess,
    call,
    check_line,
    child_env,
    encode,
    http_server_process,
    mcp_headers,
    post,
    request,
    same_id,
    stdio_server,
)
from wire_schema import check, check_notification, check_response

pytestmark = pytest.mark.subprocess

SUBS_BASIC = SERVERS / "subs_basic.py"
SUB = "io.modelcontextprotocol/subscriptionId"
INFO = "io.modelcontextprotocol/serverInfo"
ACK = "notifications/subscriptions/acknowledged"
TOOLS = "notifications/tools/list_changed"
PROMPTS = "notifications/prompts/list_changed"
UPDATED = "notifications/resources/updated"
CANCELLED = "notifications/cancelled"
CONFIG = "file:///project/config.json"
KEEPALIVE = "0.2"


def subs_http(marker_dir: Path) -> contextlib.AbstractContextManager[HTTPServerProcess]:
    args = [sys.executable, str(SUBS_BASIC), "--port", "{port}", "--keepalive", KEEPALIVE]
    return http_server_process(marker_dir, args=args)


@pytest.fixture(scope="module")
def http_subs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with subs_http(tmp_path_factory.mktemp("subs-http")) as srv:
        yield srv


@pytest.fixture
async def http(http_subs: HTTPServerProcess) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{http_subs.port}", timeout=TIMEOUT
    ) as client:
        yield client


# =========================================================================== HTTP


@pytest.mark.parametrize("listen_id", ["listen-1", 1])
async def test_http_listen_ack_keepalive_and_changes(
    http: httpx2.AsyncClient, listen_id: Any
) -> None:
    async with httpx2.AsyncClient(base_url=http.base_url, timeout=TIMEOUT) as trigger:
        filters = {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourceSubscriptions": [CONFIG, "file:///nowhere.txt"],
        }
        async with open_stream(http, listen_id, filters) as stream:
            honoured = await stream.ack()
            assert honoured == {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourceSubscriptions": [CONFIG],
            }
            assert await stream.next(stop_on_comment=True) == ":"  # keep-alive

            assert await tool(trigger, "change", {"what": "tools", "name": unique("t")})
            event = await stream.expect(TOOLS)
            check("ToolListChangedNotification", event)

            await tool(trigger, "change", {"what": "prompts", "name": unique("p")})
            await stream.expect(PROMPTS)

            # Neither of these was asked for: no resources list, no such URI.
            await tool(trigger, "change", {"what": "resources", "name": unique("r")})
            await tool(trigger, "touch", {"uri": "notes://elsewhere"})
            await tool(trigger, "touch", {"uri": CONFIG})
            event = await stream.expect(UPDATED)
            check("ResourceUpdatedNotification", event)
            assert event["params"]["uri"] == CONFIG
    assert [e["method"] for e in stream.events] == [ACK, TOOLS, PROMPTS, UPDATED]


async def test_http_closing_the_stream_ends_the_subscription(http: httpx2.AsyncClient) -> None:
    await poll(http, "listeners", 0)
    async with open_stream(http, "closing", {"toolsListChanged": True}) as stream:
        await stream.ack()
        assert await tool(http, "listeners", {}) == 1
    # The client closed the connection: the server drops the subscription.
    await poll(http, "listeners", 0)
    assert await tool(http, "change", {"what": "tools", "name": unique("after")})
    assert await tool(http, "touch", {"uri": CONFIG})
    # The server is healthy: a new listen works and hears the next change.
    async with open_stream(http, "again", {"toolsListChanged": True}) as stream:
        await stream.ack()
        await tool(http, "change", {"what": "tools", "name": unique("again")})
        await stream.expect(TOOLS)
    await poll(http, "listeners", 0)


async def test_http_closing_the_stream_stops_its_keepalive(http: httpx2.AsyncClient) -> None:
    """After the client closes a listen stream, its SSE keep-alive task ends too (a leaked one
    would run for the life of the process, one per closed listen)."""
    await poll(http, "listeners", 0)
    before = await tool(http, "keepalive_tasks", {})
    async with open_stream(http, "ka", {"toolsListChanged": True}) as stream:
        await stream.ack()
        assert await stream.next(stop_on_comment=True) == ":"
        assert await tool(http, "keepalive_tasks", {}) == before + 1
    await poll(http, "listeners", 0)
    await poll(http, "keepalive_tasks", before, within=3)


async def test_http_listen_without_sse_is_invalid_request(http: httpx2.AsyncClient) -> None:
    headers = mcp_headers("subscriptions/listen", accept="application/json")
    reply = await post(http, listen(5, {"toolsListChanged": True}), headers)
    assert reply.headers["content-type"] == "application/json"
    assert reply.error["code"] == -32600
    assert same_id(reply.message["id"], 5)


@pytest.mark.parametrize("notifications", [None, [], "tools"])
async def test_http_listen_with_bad_filter_is_invalid_params(
    http: httpx2.AsyncClient, notifications: Any
) -> None:
    message = listen(6, {})
    if notifications is None:
        del message["params"]["notifications"]
    else:
        message["params"]["notifications"] = notifications
    reply = await post(http, message)
    assert reply.headers["content-type"] == "application/json"
    assert reply.error["code"] == -32602
    assert same_id(reply.message["id"], 6)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_http_signal_ends_open_listens_with_their_final_result(
    tmp_path: Path, sig: signal.Signals
) -> None:
    with subs_http(tmp_path) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        async with (
            httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as client,
            open_stream(client, 1, {"toolsListChanged": True}) as first,
            open_stream(client, "two", {"resourceSubscriptions": [CONFIG]}) as second,
        ):
            await first.ack()
            await second.ack()
            srv.process.send_signal(sig)
            for stream in (first, second):
                result = await stream.final()
                assert same_id(result["_meta"][SUB], stream.listen_id)
                assert result["_meta"][INFO] == {"name": "subs-wire", "version": "2.0.0"}
                assert [e.get("method") for e in stream.events] == [ACK, None]
                assert stream.retry == 1000  # reconnect in a second, elsewhere
        code = await asyncio.to_thread(srv.process.wait, TIMEOUT)
        log = srv.log.read_text()
    # uvicorn re-raises the signal it caught once it has shut down gracefully: SIGTERM then
    # ends the process as the signal would; server.run() turns the Ctrl-C into a clean exit.
    assert code == (0 if sig == signal.SIGINT else -sig), (code, log)
    assert "Traceback" not in log, f"an ordinary {sig.name} shutdown printed a traceback:\n{log}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_http_workers_end_open_listens_on_a_signal_and_exit(
    tmp_path: Path, sig: signal.Signals, redis: RedisServer
) -> None:
    """``mcpserve run --http --workers 2``: the supervisor stops its workers, and each ends
    its listens (final result) instead of waiting on their connections forever. The workers
    share keys and Redis, as several processes must (they refuse to start otherwise)."""
    from mcpserve.protocol.request_state import generate_key

    args = [sys.executable, "-m", "mcpserve.cli", "run", str(SUBS_BASIC), "--http",
            "--port", "{port}", "--workers", "2"]  # fmt: skip
    with http_server_process(tmp_path, args=args, env={
        "MCPSERVE_STATE_KEYS": generate_key(), "MCPSERVE_REDIS_URL": redis.url,
    }) as srv:  # fmt: skip
        base = f"http://127.0.0.1:{srv.port}"
        async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as client:
            # Both workers answer, whichever gets a connection: four listens on four.
            streams = [open_stream(client, n, {"toolsListChanged": True}) for n in range(4)]
            async with contextlib.AsyncExitStack() as stack:
                opened = [await stack.enter_async_context(stream) for stream in streams]
                for stream in opened:
                    await stream.ack()
                srv.process.send_signal(sig)
                for stream in opened:
                    result = await stream.final()
                    assert same_id(result["_meta"][SUB], stream.listen_id)
        code = await asyncio.to_thread(srv.process.wait, TIMEOUT)
        log = srv.log.read_text()
    assert code == 0, (code, log)  # the supervisor exits cleanly once its workers have
    assert "Traceback" not in log, log


# =========================================================================== stdio


def subscription_of(message: dict[str, Any]) -> Any:
    params = message.get("params")
    if "method" in message and isinstance(params, dict):
        return params.get("_meta", {}).get(SUB, None)
    return None


def check_ack_first(messages: list[dict[str, Any]]) -> None:
    """Per subscription id, the first message carrying it is its acknowledgement."""
    seen: set[tuple[type, Any]] = set()
    for message in messages:
        sub = subscription_of(message)
        if sub is None:
            continue
        key = (type(sub), sub)
        if key not in seen:
            assert message["method"] == ACK, f"first message of {sub!r} is not the ack: {message}"
            check("SubscriptionsAcknowledgedNotification", message)
            seen.add(key)


async def read_until(
    proc: StdioProcess, done: Any, within: float = TIMEOUT
) -> list[dict[str, Any]]:
    """Read messages until ``done(all read so far)`` is true."""
    read: list[dict[str, Any]] = []
    deadline = time.monotonic() + within
    while not done(read):
        read.append(await proc.read(max(0.01, deadline - time.monotonic())))
    return read


def has_response(request_id: Any) -> Any:
    return lambda messages: any(
        "method" not in m and same_id(m.get("id"), request_id) for m in messages
    )


def count(messages: list[dict[str, Any]], sub: Any, method: str) -> int:
    return sum(
        1 for m in messages if m.get("method") == method and same_id(subscription_of(m), sub)
    )


async def test_stdio_concurrent_listens_cancel_and_eof_teardown() -> None:
    """Concurrent listens on one stdio connection, cancellation of one, and the EOF teardown
    (``docs/decisions.md``, "Ending a listen on stdio")."""
    async with stdio_server([sys.executable, str(SUBS_BASIC)]) as proc:
        both = {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourceSubscriptions": [CONFIG],
        }
        await proc.send(
            listen(1, {"toolsListChanged": True}),
            listen("b", both),
            call(2, "sleepy", {"seconds": 0.05, "tag": "s"}),
            request(3, "tools/list"),
        )
        first = await read_until(
            proc,
            lambda ms: (
                has_response(2)(ms)
                and has_response(3)(ms)
                and count(ms, 1, ACK) == 1
                and count(ms, "b", ACK) == 1
            ),
        )
        acks = {
            json.dumps(m["params"]["_meta"][SUB]): m["params"]["notifications"]
            for m in first
            if m.get("method") == ACK
        }
        assert acks == {"1": {"toolsListChanged": True}, '"b"': both}

        # Other requests are answered while both listens stay open.
        await proc.send(
            call(10, "change", {"what": "tools", "name": "t1"}),
            call(11, "change", {"what": "prompts", "name": "p1"}),
            call(12, "touch", {"uri": CONFIG}),
            call(13, "touch", {"uri": "notes://other"}),
        )
        changes = await read_until(
            proc,
            lambda ms: (
                all(has_response(i)(ms) for i in (10, 11, 12, 13))
                and count(ms, 1, TOOLS) == 1
                and count(ms, "b", TOOLS) == 1
                and count(ms, "b", PROMPTS) == 1
                and count(ms, "b", UPDATED) == 1
            ),
        )
        updated = [m for m in changes if m.get("method") == UPDATED]
        assert [m["params"]["uri"] for m in updated] == [CONFIG]

        # notifications/cancelled for listen 1 ends that one only.
        await proc.send(
            {
                "jsonrpc": "2.0",
                "method": CANCELLED,
                "params": {"requestId": 1, "reason": "done with it"},
            }
        )
        await proc.send(call(20, "change", {"what": "tools", "name": "t2"}))
        after_cancel = await read_until(
            proc, lambda ms: has_response(20)(ms) and count(ms, "b", TOOLS) == 1
        )
        await proc.send(listen(30, {"promptsListChanged": True}))
        late = await read_until(proc, lambda ms: count(ms, 30, ACK) == 1)

        # EOF: every open listen gets its result, then notifications/cancelled (Q1).
        proc.close_stdin()
        rest = await proc.read_rest()
        assert await proc.wait() == 0, proc.stderr.decode(errors="replace")

    everything = first + changes + after_cancel + late + rest
    assert everything == proc.seen
    check_ack_first(everything)
    for message in everything:
        if message.get("method") in (TOOLS, PROMPTS, UPDATED, ACK):
            assert subscription_of(message) is not None, message
    # listen 1 asked for tools only, and nothing at all follows its cancellation.
    assert count(everything, 1, PROMPTS) == count(everything, 1, UPDATED) == 0
    ones = [m for m in after_cancel + late + rest if same_id(subscription_of(m), 1)]
    assert ones == []
    assert not any(
        same_id(m.get("id"), 1) or same_id(m.get("params", {}).get("requestId"), 1)
        for m in everything
    )
    # The EOF teardown, for "b" and 30 alike: the result, then the cancel, adjacent.
    for listen_id in ("b", 30):
        at = next(
            i for i, m in enumerate(rest) if "method" not in m and same_id(m["id"], listen_id)
        )
        result = rest[at]["result"]
        assert result["resultType"] == "complete"
        assert same_id(result["_meta"][SUB], listen_id)
        cancel = rest[at + 1]
        assert cancel["method"] == CANCELLED, rest
        assert same_id(cancel["params"]["requestId"], listen_id)
        check("CancelledNotification", cancel)
    assert len(rest) == 4, rest


async def test_stdio_a_listen_answers_nothing_after_its_cancel() -> None:
    async with stdio_server([sys.executable, str(SUBS_BASIC)]) as proc:
        await proc.send(listen("only", {"toolsListChanged": True}))
        await read_until(proc, lambda ms: count(ms, "only", ACK) == 1)
        await proc.send({"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": "only"}})
        await proc.send(call(2, "change", {"what": "tools", "name": "x"}))
        await read_until(proc, has_response(2))
        proc.close_stdin()
        rest = await proc.read_rest()
        assert await proc.wait() == 0
    assert rest == []
    assert [m.get("method") for m in proc.seen] == [ACK, None]


def test_stdio_listen_from_a_regular_file_ends_at_eof(tmp_path: Path) -> None:
    """BUG: with stdin redirected from a file (``< requests.jsonl``), the listen line and
    EOF arrive together; ``serve_stream`` runs ``end_all()`` before the listen task has
    registered its listener, then waits for it forever: the process never exits. On the
    wire this depends on the stdin thread's timing (it hangs in most runs);
    ``test_subscriptions.py`` reproduces it deterministically with ``serve_stream``."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(encode(listen(1, {"toolsListChanged": True})) + b"\n")
    with requests.open("rb") as file_in:
        try:
            completed = subprocess.run(
                [sys.executable, str(SUBS_BASIC)],
                cwd=ROOT,
                env=child_env(),
                stdin=file_in,
                capture_output=True,
                timeout=5,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode(errors="replace")
            pytest.fail(f"the stdio server did not exit after EOF (killed); stdout:\n{out}")
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    messages = [check_line(line) for line in completed.stdout.splitlines(keepends=True)]
    assert [m.get("method") for m in messages] == [ACK, None, CANCELLED]
    check_notification(messages[0])
    check_response("subscriptions/listen", messages[1])
    check_notification(messages[2])
    assert same_id(messages[2]["params"]["requestId"], 1)
