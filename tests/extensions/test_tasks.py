"""The tasks extension on the wire: every state a task goes through, over HTTP and stdio.

The server is ``tests/support/servers/tasks.py``. Over HTTP (the ASGI app in process, so a test can
hold a tool at its gate while it looks at the task) every message is validated: 2026-07-28
messages with the official models, the extension's shapes with ``tests/support/task_schema.py``.
stdio runs the same server as a subprocess.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time
import tracemalloc
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from legacy_schema import initialize_message
from mcpserve import Auth
from mcpserve.extensions.tasks.records import MemoryTaskStore, TaskRecord, TooManyTasks
from redis_server import REDIS_PARAM, RedisServer
from servers import tasks as app
from wire_helpers import (
    META,
    SERVERS,
    TIMEOUT,
    Reply,
    StdioProcess,
    asgi_client,
    default_headers,
    http_server_process,
    post,
)
from wire_schema import check_notification

TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES = {"elicitation": {"form": {}}, "extensions": {TASKS: {}}}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def message(
    request_id: Any,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A 2026-07-28 request whose client declares the tasks extension (unless told)."""
    meta = dict(META)
    meta["io.modelcontextprotocol/clientCapabilities"] = (
        CAPABILITIES if capabilities is None else capabilities
    )
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**(params or {}), "_meta": meta}}  # fmt: skip


def call(request_id: Any, tool: str, arguments: dict[str, Any] | None = None, **kw: Any) -> Any:
    return message(request_id, "tools/call", {"name": tool, "arguments": arguments or {}}, **kw)


class Tasks:
    """An HTTP client of one server, with the steps every test takes."""

    def __init__(self, http: httpx2.AsyncClient) -> None:
        self.http = http
        self.ids = iter(range(1, 1_000_000))

    async def send(self, method: str, params: dict[str, Any], **kw: Any) -> Reply:
        return await post(self.http, message(next(self.ids), method, params, **kw))

    async def create(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = await post(self.http, call(next(self.ids), tool, arguments))
        assert reply.status == 200, reply
        created = reply.result
        assert created["resultType"] == "task", created
        return created

    async def get(self, task_id: str) -> dict[str, Any]:
        reply = await self.send("tasks/get", {"taskId": task_id})
        assert reply.status == 200, reply
        return reply.result

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """Poll (bounded) until the task is in one of ``statuses``."""
        deadline = time.monotonic() + TIMEOUT
        while (task := await self.get(task_id))["status"] not in statuses:
            assert time.monotonic() < deadline, task
            await asyncio.sleep(0.005)
        return task


@pytest.fixture(params=["memory", "sqlite", REDIS_PARAM])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Every wire test runs against each store, named as a user names it."""
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tasks.db'}"
    server: RedisServer = request.getfixturevalue("redis")
    server.flush()
    return server.url


@pytest.fixture
async def tasks(store: str) -> AsyncIterator[Tasks]:
    app.GATES.clear()
    server = app.build(server_info_in_results=False, task_store=store)  # exact results
    async with server.running(), asgi_client(server.http_app()) as http:
        yield Tasks(http)


# -- advertising and gating ----------------------------------------------------------------


async def test_discover_advertises_the_extension(tasks: Tasks) -> None:
    reply = await tasks.send("server/discover", {})
    assert reply.result["capabilities"]["extensions"] == {TASKS: {}}
    assert "tasks" not in reply.result["capabilities"]  # never the 2025-11-25 slot


async def test_a_server_without_task_tools_has_no_extension_and_no_methods() -> None:
    server = app.Server("no-tasks")
    server.add_tool(lambda: "x", name="x")
    async with asgi_client(server.http_app()) as http:
        discovered = await post(http, message(1, "server/discover"))
        assert "extensions" not in discovered.result["capabilities"]
        missing = await post(http, message(2, "tasks/get", {"taskId": "abc"}))
        assert missing.status == 404
        assert missing.error["code"] == -32601


async def test_without_the_extension_an_optional_tool_runs_as_a_call(tasks: Tasks) -> None:
    reply = await post(tasks.http, call(1, "sleepy", {"seconds": 0}, capabilities={}))
    assert reply.result == {"content": [{"type": "text", "text": "slept 0"}],
                            "resultType": "complete"}  # fmt: skip
    became = await post(tasks.http, call(2, "maybe_task", capabilities={}))
    assert became.result["content"][0]["text"] == "task=False"


async def test_without_the_extension_a_required_tool_is_32021(tasks: Tasks) -> None:
    reply = await post(tasks.http, call(1, "only_task", {"n": 2}, capabilities={}))
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_tasks_methods_without_the_extension_are_32021(tasks: Tasks, method: str) -> None:
    created = await tasks.create("sleepy", {"seconds": 0})
    params: dict[str, Any] = {"taskId": created["taskId"], "inputResponses": {}}
    reply = await tasks.send(method, params, capabilities={})
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_removed_methods_are_32601(tasks: Tasks, method: str) -> None:
    reply = await tasks.send(method, {"taskId": "x"})
    assert reply.status == 404
    assert reply.error["code"] == -32601


async def test_the_legacy_task_param_is_ignored(tasks: Tasks) -> None:
    params = {"name": "plain", "arguments": {"text": "a"}, "task": {"ttl": 1000}}
    reply = await tasks.send("tools/call", params)
    assert reply.result["resultType"] == "complete"
    assert reply.result["content"] == [{"type": "text", "text": "plain a"}]


async def test_a_handshake_era_client_never_sees_the_extension(tasks: Tasks) -> None:
    init = initialize_message(0, "2025-11-25", {"extensions": {TASKS: {}}})
    started = await tasks.http.post("/mcp", json=init, headers={"accept": "application/json"})
    assert "extensions" not in started.json()["result"]["capabilities"]
    session = {"mcp-session-id": started.headers["mcp-session-id"],
               "mcp-protocol-version": "2025-11-25", "accept": "application/json"}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "sleepy", "arguments": {"seconds": 0}}}  # fmt: skip
    answered = await tasks.http.post("/mcp", json=body, headers=session)
    assert answered.json()["result"] == {"content": [{"type": "text", "text": "slept 0"}]}


# -- the lifecycle -----------------------------------------------------------------------


async def test_created_task_shape_and_completion(tasks: Tasks) -> None:
    created = await tasks.create("sleepy", {"seconds": 0.01})
    assert re.fullmatch(r"[0-9a-f]{48}", created["taskId"])
    assert created["status"] == "working"
    assert ISO.match(created["createdAt"])
    assert ISO.match(created["lastUpdatedAt"])
    assert created["ttlMs"] == 3_600_000
    assert created["pollIntervalMs"] == 500
    assert "requestState" not in created
    # Durable before it was announced: the very next get finds it.
    first = await tasks.get(created["taskId"])
    assert first["taskId"] == created["taskId"]
    done = await tasks.until(created["taskId"], "completed")
    assert done["result"] == {"content": [{"type": "text", "text": "slept 0.01"}],
                              "resultType": "complete"}  # fmt: skip
    assert done["createdAt"] == created["createdAt"]
    assert done["lastUpdatedAt"] >= created["lastUpdatedAt"]


async def test_working_then_completed_with_progress_as_status_message(tasks: Tasks) -> None:
    created = await tasks.create("gated", {"tag": "g1"})
    task = await tasks.until(created["taskId"], "working")
    deadline = time.monotonic() + TIMEOUT
    while task.get("statusMessage") != "waiting for g1":
        assert time.monotonic() < deadline, task
        task = await tasks.get(created["taskId"])
    assert set(task) == {"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt",
                         "ttlMs", "pollIntervalMs", "resultType"}  # fmt: skip
    app.GATES["g1"].set()
    done = await tasks.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "released g1"}]


async def test_a_required_task_tool_with_the_extension(tasks: Tasks) -> None:
    created = await tasks.create("only_task", {"n": 21})
    done = await tasks.until(created["taskId"], "completed")
    assert done["result"]["structuredContent"] == 42


async def test_tool_error_completes_with_is_error(tasks: Tasks) -> None:
    created = await tasks.create("tool_error")
    done = await tasks.until(created["taskId"], "completed", "failed")
    assert done["status"] == "completed"
    assert done["result"]["isError"] is True
    assert done["result"]["content"] == [{"type": "text", "text": "could not do it"}]


async def test_protocol_error_fails_with_the_error(tasks: Tasks) -> None:
    created = await tasks.create("protocol_error")
    done = await tasks.until(created["taskId"], "completed", "failed")
    assert done["status"] == "failed"
    assert done["error"] == {"code": -32603, "message": "The job crashed",
                             "data": {"why": "testing"}}  # fmt: skip
    assert done["statusMessage"] == "The job crashed"
    assert "result" not in done


async def test_a_result_over_the_limit_fails_the_task(tasks: Tasks) -> None:
    created = await tasks.create("huge")
    done = await tasks.until(created["taskId"], "completed", "failed")
    assert done["status"] == "failed"
    assert done["error"]["message"] == "The task's result is larger than 4096 bytes"


async def test_cancel_while_running_ends_cancelled_and_terminal_states_stay(tasks: Tasks) -> None:
    created = await tasks.create("gated", {"tag": "never"})
    await tasks.until(created["taskId"], "working")
    ack = await tasks.send("tasks/cancel", {"taskId": created["taskId"]})
    assert ack.result == {"resultType": "complete"} | _meta_of(ack.result)
    cancelled = await tasks.until(created["taskId"], "cancelled")
    assert set(cancelled) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"}
    # Terminal: another cancel is acked and changes nothing, nor does the gate opening.
    again = await tasks.send("tasks/cancel", {"taskId": created["taskId"]})
    assert again.result["resultType"] == "complete"
    app.GATES["never"].set()
    await asyncio.sleep(0.02)
    assert (await tasks.get(created["taskId"]))["status"] == "cancelled"


async def test_a_task_cancelled_before_its_function_starts_ends_cancelled() -> None:
    """tasks/cancel handled right after the call, before the event loop ran the function."""
    app.GATES.clear()
    server = app.build(server_info_in_results=False)
    async with server.running():
        created = (await server.handle(call(1, "gated", {"tag": "never"})))["result"]
        task_id = created["taskId"]
        acked = await server.handle(message(2, "tasks/cancel", {"taskId": task_id}))
        assert acked["result"] == {"resultType": "complete"}
        async with asyncio.timeout(TIMEOUT):
            while True:
                task = await server.handle(message(3, "tasks/get", {"taskId": task_id}))
                if task["result"]["status"] != "working":
                    break
                await asyncio.sleep(0.01)
        assert task["result"]["status"] == "cancelled"
        assert not server.tasks.running


async def test_cancel_after_completion_is_acked_and_changes_nothing(tasks: Tasks) -> None:
    created = await tasks.create("sleepy")
    await tasks.until(created["taskId"], "completed")
    ack = await tasks.send("tasks/cancel", {"taskId": created["taskId"]})
    assert ack.result["resultType"] == "complete"
    assert (await tasks.get(created["taskId"]))["status"] == "completed"


def _meta_of(result: dict[str, Any]) -> dict[str, Any]:
    return {"_meta": result["_meta"]} if "_meta" in result else {}


# -- questions inside a task ---------------------------------------------------------------


async def test_a_question_parks_the_task_and_update_resumes_it(tasks: Tasks) -> None:
    created = await tasks.create("confirm")
    parked = await tasks.until(created["taskId"], "input_required")
    [(key, request)] = parked["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Go ahead?"
    answer = {"action": "accept", "content": {"confirm": True}}
    ack = await tasks.send("tasks/update", {"taskId": created["taskId"],
                                            "inputResponses": {key: answer}})  # fmt: skip
    assert ack.result["resultType"] == "complete"
    done = await tasks.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "confirmed"}]


async def test_a_question_the_function_stops_waiting_for_is_withdrawn(tasks: Tasks) -> None:
    created = await tasks.create("impatient", {"tag": "impatient"})
    parked = await tasks.until(created["taskId"], "input_required")
    [key] = parked["inputRequests"]
    going_on = await tasks.until(created["taskId"], "working")
    assert "inputRequests" not in going_on
    # The question is withdrawn first, then the function's progress message is saved: a
    # poll in between sees the task working without it.
    deadline = time.monotonic() + TIMEOUT
    while "statusMessage" not in going_on:
        assert time.monotonic() < deadline, going_on
        await asyncio.sleep(0.005)
        going_on = await tasks.get(created["taskId"])
    assert going_on["status"] == "working"
    assert going_on["statusMessage"] == "gave up asking"
    late = {key: {"action": "accept", "content": {"confirm": True}}}
    await tasks.send("tasks/update", {"taskId": created["taskId"], "inputResponses": late})
    assert (await tasks.get(created["taskId"]))["status"] == "working"  # ignored: withdrawn
    app.GATES["impatient"].set()
    done = await tasks.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "went on"}]


async def test_partial_answers_and_keys_never_reused(tasks: Tasks) -> None:
    created = await tasks.create("two_questions")
    parked = await tasks.until(created["taskId"], "input_required")
    keys = sorted(parked["inputRequests"])
    assert len(keys) == 2
    by_message = {r["params"]["message"]: k for k, r in parked["inputRequests"].items()}
    task_id = created["taskId"]
    # An answer that does not fit is asked again, under a new key; unknown keys are ignored.
    bad = {by_message["Who?"]: {"action": "accept", "content": {"name": 7}}, "nope": {}}
    await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": bad})
    again = await tasks.get(task_id)
    assert again["status"] == "input_required"
    who_again = next(k for k, r in again["inputRequests"].items()
                     if r["params"]["message"] == "Who?")  # fmt: skip
    assert who_again not in keys
    # A partial answer: the other key stays, and so does input_required.
    sure = {by_message["Sure?"]: {"action": "accept", "content": {"confirm": True}}}
    await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": sure})
    partial = await tasks.get(task_id)
    assert partial["status"] == "input_required"
    assert list(partial["inputRequests"]) == [who_again]
    # Answering an already answered key again changes nothing.
    await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": sure})
    who = {who_again: {"action": "accept", "content": {"name": "Ada"}}}
    await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": who})
    done = await tasks.until(task_id, "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "Ada sure=True"}]


async def test_questions_need_the_capability(tasks: Tasks) -> None:
    reply = await post(tasks.http, call(1, "confirm", capabilities={"extensions": {TASKS: {}}}))
    task_id = reply.result["taskId"]
    failed = await tasks.until(task_id, "failed", "completed")
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == -32021


async def test_update_answers_are_validated(tasks: Tasks) -> None:
    created = await tasks.create("confirm")
    for bad in ({"taskId": created["taskId"]}, {"taskId": created["taskId"],
                                                "inputResponses": [1]}):  # fmt: skip
        reply = await tasks.send("tasks/update", bad)
        assert reply.error["code"] == -32602


# -- multi round-trip first, then a task -------------------------------------------------------


async def test_questions_up_front_then_a_task(tasks: Tasks) -> None:
    first = await post(tasks.http, call(1, "ask_then_work"))
    round_one = first.result
    assert round_one["resultType"] == "input_required"
    assert "taskId" not in round_one
    assert list(round_one["inputRequests"]) == ["name"]
    params = {"name": "ask_then_work", "arguments": {},
              "inputResponses": {"name": {"action": "accept", "content": {"name": "Grace"}}},
              "requestState": round_one["requestState"]}  # fmt: skip
    second = await tasks.send("tools/call", params)
    created = second.result
    assert created["resultType"] == "task"
    assert "requestState" not in created
    assert created["statusMessage"] == "working for Grace"
    done = await tasks.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "done for Grace"}]


async def test_a_handler_started_task_for_a_client_that_takes_one(tasks: Tasks) -> None:
    created = await tasks.create("maybe_task")
    done = await tasks.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "task=True"}]


# -- ids, principals, headers --------------------------------------------------------------


@pytest.mark.parametrize("task_id", ["0" * 48, "", "../etc", "x" * 10_000])
async def test_unknown_ids_are_32602(tasks: Tasks, task_id: str) -> None:
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        reply = await tasks.send(method, {"taskId": task_id, "inputResponses": {}})
        assert reply.error["code"] == -32602, (method, reply)


@pytest.mark.parametrize("task_id", [None, 7, ["a"], {"a": 1}])
async def test_ids_of_the_wrong_type_are_32602(tasks: Tasks, task_id: Any) -> None:
    body = message(1, "tasks/get", {"taskId": task_id})
    headers = default_headers(body)
    headers.pop("mcp-name", None)
    reply = await post(tasks.http, body, headers=headers)
    # No Mcp-Name can name a non-string id, so none is required: the params are refused.
    assert reply.status == 200
    assert reply.error == {"code": -32602, "message": 'Invalid params: "taskId" must be a string'}


async def test_mcp_name_must_equal_the_task_id(tasks: Tasks) -> None:
    created = await tasks.create("sleepy")
    body = message(1, "tasks/get", {"taskId": created["taskId"]})
    headers = {**default_headers(body), "mcp-name": "someone-else"}
    reply = await post(tasks.http, body, headers=headers)
    assert reply.status == 400
    assert reply.error["code"] == -32020


async def test_another_principals_task_is_not_found() -> None:
    server = app.build()

    def who(headers: Any) -> Auth:
        return Auth(principal=headers.get("x-user"))

    async with server.running(), asgi_client(server.http_app(authenticate=who)) as http:
        body = call(1, "sleepy")
        alice = {**default_headers(body), "x-user": "alice"}
        created = await post(http, body, headers=alice)
        task_id = created.result["taskId"]
        get = message(2, "tasks/get", {"taskId": task_id})
        own = await post(http, get, headers={**default_headers(get), "x-user": "alice"})
        assert own.result["taskId"] == task_id
        other = await post(http, get, headers={**default_headers(get), "x-user": "mallory"})
        not_found = "Task not found (unknown, expired, or not yours)"
        assert other.error == {"code": -32602, "message": not_found}


# -- notifications on subscriptions/listen ---------------------------------------------------


@pytest.mark.subprocess
async def test_listen_for_task_ids_gets_every_status(tmp_path: Path) -> None:
    """Over a real HTTP server (the listen is a stream that stays open)."""
    with http_server_process(tmp_path, args=[sys.executable, str(SERVERS / "tasks.py")]) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
            tasks = Tasks(http)
            created = await tasks.create("confirm")
            task_id = created["taskId"]
            listen = message(9, "subscriptions/listen",
                             {"notifications": {"taskIds": [task_id, "0" * 48]}})  # fmt: skip
            headers = default_headers(listen)
            async with http.stream("POST", "/mcp", json=listen, headers=headers) as stream:
                assert stream.status_code == 200
                lines = stream.aiter_lines()
                ack = await _next_event(lines)
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                # Only the caller's own, known ids are honoured.
                assert ack["params"]["notifications"] == {"taskIds": [task_id]}
                parked = await tasks.until(task_id, "input_required")
                (key,) = parked["inputRequests"]
                answer = {key: {"action": "accept", "content": {"confirm": False}}}
                await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": answer})
                seen: list[str] = []
                while "completed" not in seen:
                    note = await _next_event(lines)
                    check_notification(note)
                    assert note["method"] == "notifications/tasks"
                    assert note["params"]["taskId"] == task_id
                    seen.append(note["params"]["status"])
                assert seen[-2:] == ["working", "completed"]
                assert note["params"]["result"]["content"] == [{"type": "text", "text": "declined"}]


async def test_listen_for_task_ids_without_the_extension_is_32021(tasks: Tasks) -> None:
    listen = message(9, "subscriptions/listen", {"notifications": {"taskIds": ["x"]}},
                     capabilities={})  # fmt: skip
    reply = await post(tasks.http, listen)
    assert reply.error["code"] == -32021


async def _next_event(lines: Any) -> dict[str, Any]:
    import json

    async def read() -> dict[str, Any]:
        async for line in lines:
            if line.startswith("data: "):
                parsed: dict[str, Any] = json.loads(line[6:])
                return parsed
        raise AssertionError("the stream ended")

    return await asyncio.wait_for(read(), TIMEOUT)


# -- the store -------------------------------------------------------------------------------


async def test_store_stays_flat_over_100000_expired_tasks() -> None:
    store = MemoryTaskStore()
    tracemalloc.start()
    try:
        for _ in range(1000):  # warm-up
            await store.create(TaskRecord(None, ttl_ms=1, poll_interval_ms=1))
        await asyncio.sleep(0.002)
        baseline = tracemalloc.get_traced_memory()[0]
        for n in range(100_000):
            record = TaskRecord(f"p{n % 7}", ttl_ms=1, poll_interval_ms=1)
            record.created_at -= 1  # expired at once
            await store.create(record)
        growth = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert len(store) <= 1
    assert growth < 200_000, growth


async def test_too_many_tasks_per_principal() -> None:
    store = MemoryTaskStore(max_tasks_per_principal=2)
    for _ in range(2):
        await store.create(TaskRecord("p", ttl_ms=60_000, poll_interval_ms=1))
    with pytest.raises(TooManyTasks):
        await store.create(TaskRecord("p", ttl_ms=60_000, poll_interval_ms=1))
    await store.create(TaskRecord("q", ttl_ms=60_000, poll_interval_ms=1))  # others unaffected


async def test_too_many_tasks_is_a_clear_error() -> None:
    server = app.build(task_store=MemoryTaskStore(max_tasks_per_principal=1))
    async with server.running(), asgi_client(server.http_app()) as http:
        first = await post(http, call(1, "gated", {"tag": "hold"}))
        assert first.result["resultType"] == "task"
        second = await post(http, call(2, "sleepy"))
        too_many = "Too many tasks: wait for some to finish or expire"
        assert second.error == {"code": -32600, "message": too_many}


async def test_an_expired_task_is_gone() -> None:
    server = app.build()
    server.tasks.ttl_ms = 50
    async with server.running(), asgi_client(server.http_app()) as http:
        created = await post(http, call(1, "sleepy"))
        task_id = created.result["taskId"]
        assert created.result["ttlMs"] == 50
        await asyncio.sleep(0.1)
        reply = await post(http, message(2, "tasks/get", {"taskId": task_id}))
        assert reply.error["code"] == -32602


async def test_stopping_the_server_fails_running_tasks() -> None:
    server = app.build()
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(server.running())
        http = await stack.enter_async_context(asgi_client(server.http_app()))
        created = await post(http, call(1, "gated", {"tag": "forever"}))
        task_id = created.result["taskId"]
    record = await server.tasks.store.get(task_id)
    assert record is not None
    assert record.status == "failed"
    assert record.error == {"code": -32603,
                            "message": "The server stopped before the task finished"}  # fmt: skip


# -- stdio -----------------------------------------------------------------------------------


class StdioTasks:
    """The same steps as :class:`Tasks`, over a stdio subprocess."""

    def __init__(self, process: StdioProcess) -> None:
        self.process = process
        self.ids = iter(range(1, 1_000_000))

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        await self.process.send(message(request_id, method, params))
        answer = await self.process.read()
        assert answer["id"] == request_id, answer
        return answer

    async def create(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        created = await self.send("tools/call", {"name": tool, "arguments": arguments or {}})
        assert created["result"]["resultType"] == "task", created
        task_id: str = created["result"]["taskId"]
        return task_id

    async def until(self, task_id: str, status: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while (task := (await self.send("tasks/get", {"taskId": task_id}))["result"])[
            "status"
        ] != status:
            assert time.monotonic() < deadline, task
            await asyncio.sleep(0.01)
        return task


@pytest.mark.subprocess
async def test_every_state_over_stdio() -> None:
    process = await StdioProcess.start([sys.executable, str(SERVERS / "tasks.py")])
    try:
        stdio = StdioTasks(process)
        done = await stdio.until(await stdio.create("sleepy", {"seconds": 0.01}), "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "slept 0.01"}]

        asking = await stdio.create("confirm")
        parked = await stdio.until(asking, "input_required")
        (key,) = parked["inputRequests"]
        yes = {key: {"action": "accept", "content": {"confirm": True}}}
        ack = await stdio.send("tasks/update", {"taskId": asking, "inputResponses": yes})
        assert ack["result"]["resultType"] == "complete"
        confirmed = await stdio.until(asking, "completed")
        assert confirmed["result"]["content"] == [{"type": "text", "text": "confirmed"}]

        failing = await stdio.until(await stdio.create("protocol_error"), "failed")
        assert failing["error"]["message"] == "The job crashed"

        held = await stdio.create("gated", {"tag": "stdio"})
        await stdio.until(held, "working")
        await stdio.send("tasks/cancel", {"taskId": held})
        cancelled = await stdio.until(held, "cancelled")
        assert cancelled["taskId"] == held

        unknown = await stdio.send("tasks/get", {"taskId": "0" * 48})
        assert unknown["error"]["code"] == -32602
    finally:
        await process.stop()


async def test_the_same_handler_as_a_multi_round_trip_call(tasks: Tasks) -> None:
    """Without the extension, the task tool that asks is an ordinary multi round-trip call."""
    caps = {"elicitation": {"form": {}}}
    first = await post(tasks.http, call(1, "confirm", capabilities=caps))
    assert first.result["resultType"] == "input_required"
    (key,) = first.result["inputRequests"]
    params = {"name": "confirm", "arguments": {},
              "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
              "requestState": first.result["requestState"]}  # fmt: skip
    second = await post(tasks.http, message(2, "tools/call", params, capabilities=caps))
    assert second.result["content"] == [{"type": "text", "text": "confirmed"}]


# -- the guide -------------------------------------------------------------------------------


async def test_the_tasks_guide_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/tasks.md's Python blocks form a server whose tools work as the guide says (with
    the guide's long sleeps made instant). The guide's clients run it with asyncio.run, as a
    reader's script does: in a thread of its own here, since this test's loop is running."""
    from markdown_blocks import ROOT, python_source

    async def instant(seconds: float) -> None:
        await real_sleep(0)

    real_sleep = asyncio.sleep
    guide = types.ModuleType("tasks_guide")  # pydantic resolves the guide's models through it
    monkeypatch.setitem(sys.modules, "tasks_guide", guide)
    code = compile(python_source(ROOT / "docs" / "tasks.md"), "tasks.md", "exec")
    await asyncio.to_thread(exec, code, vars(guide))
    namespace = vars(guide)
    monkeypatch.setattr(namespace["asyncio"], "sleep", instant)
    server = namespace["server"]
    async with server.running(), asgi_client(server.http_app()) as http:
        guide = Tasks(http)
        created = await guide.create("rebuild_index", {"shards": 2})
        parked = await guide.until(created["taskId"], "input_required")
        (key,) = parked["inputRequests"]
        yes = {key: {"action": "accept", "content": {"confirm": True}}}
        await guide.send("tasks/update", {"taskId": created["taskId"], "inputResponses": yes})
        done = await guide.until(created["taskId"], "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "Rebuilt and swapped"}]

        first = await post(http, call(1, "deploy", {"env": "staging"}))
        (ask,) = first.result["inputRequests"]
        params = {"name": "deploy", "arguments": {"env": "staging"},
                  "inputResponses": {ask: {"action": "accept", "content": {"confirm": True}}},
                  "requestState": first.result["requestState"]}  # fmt: skip
        started = await guide.send("tools/call", params)
        assert started.result["statusMessage"] == "deploying to staging"
        deployed = await guide.until(started.result["taskId"], "completed")
        assert deployed["result"]["content"] == [{"type": "text", "text": "Deployed to staging"}]


# -- across processes and restarts -----------------------------------------------------------


def _served_tasks(tmp_path: Path, env: dict[str, str]) -> Any:
    return http_server_process(tmp_path, args=[sys.executable, str(SERVERS / "tasks.py")],
                               env=env)  # fmt: skip


@pytest.mark.subprocess
async def test_two_processes_on_redis_share_tasks(tmp_path: Path, redis: RedisServer) -> None:
    """Created on one process, read, answered and cancelled through the other."""
    redis.flush()
    env = {"MCPSERVE_REDIS_URL": redis.url}
    with _served_tasks(tmp_path, env) as one, _served_tasks(tmp_path, env) as two:
        async with (
            httpx2.AsyncClient(base_url=f"http://127.0.0.1:{one.port}", timeout=TIMEOUT) as a,
            httpx2.AsyncClient(base_url=f"http://127.0.0.1:{two.port}", timeout=TIMEOUT) as b,
        ):
            on_one, on_two = Tasks(a), Tasks(b)
            created = await on_one.create("confirm")
            parked = await on_two.until(created["taskId"], "input_required")
            (key,) = parked["inputRequests"]
            yes = {key: {"action": "accept", "content": {"confirm": True}}}
            await on_two.send("tasks/update", {"taskId": created["taskId"], "inputResponses": yes})
            done = await on_two.until(created["taskId"], "completed")
            assert done["result"]["content"] == [{"type": "text", "text": "confirmed"}]

            held = await on_one.create("gated", {"tag": "held"})
            await on_two.until(held["taskId"], "working")
            await on_two.send("tasks/cancel", {"taskId": held["taskId"]})
            cancelled = await on_one.until(held["taskId"], "cancelled")
            assert cancelled["taskId"] == held["taskId"]


@pytest.mark.subprocess
async def test_sqlite_tasks_survive_a_restart(tmp_path: Path) -> None:
    """A finished task is still there after a restart; one that was running when its
    process died reads failed once its lease has passed."""
    env = {"MCPSERVE_TASK_STORE": f"sqlite:///{tmp_path / 'tasks.db'}",
           "MCPSERVE_TEST_TASK_LEASE": "0.6"}  # fmt: skip
    with _served_tasks(tmp_path, env) as first:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{first.port}",
                                     timeout=TIMEOUT) as http:  # fmt: skip
            before = Tasks(http)
            finished = await before.create("sleepy", {"seconds": 0})
            await before.until(finished["taskId"], "completed")
            running = await before.create("gated", {"tag": "dies"})
            await before.until(running["taskId"], "working")
        first.process.kill()  # no shutdown: the running task is left as it was
        first.process.wait(TIMEOUT)
    await asyncio.sleep(0.8)  # past the dead process's lease
    with _served_tasks(tmp_path, env) as second:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{second.port}",
                                     timeout=TIMEOUT) as http:  # fmt: skip
            after = Tasks(http)
            kept = await after.get(finished["taskId"])
            assert kept["status"] == "completed"
            assert kept["result"]["content"] == [{"type": "text", "text": "slept 0"}]
            orphan = await after.get(running["taskId"])
            assert orphan["status"] == "failed"
            stopped = "The process running the task stopped"
            assert orphan["error"] == {"code": -32603, "message": stopped}


def test_a_store_is_named_by_url() -> None:
    from mcpserve import RedisTaskStore, SQLiteTaskStore
    from mcpserve.backends.task_stores import task_store_from_url

    assert isinstance(task_store_from_url("memory://", namespace="n"), MemoryTaskStore)
    relative = task_store_from_url("sqlite:///tasks.db", namespace="n")
    assert isinstance(relative, SQLiteTaskStore)
    assert relative.path == "tasks.db"
    absolute = task_store_from_url("sqlite:////var/lib/app/tasks.db", namespace="n")
    assert isinstance(absolute, SQLiteTaskStore)
    assert absolute.path == "/var/lib/app/tasks.db"
    shared = task_store_from_url("redis://127.0.0.1:6379/0", namespace="n")
    assert isinstance(shared, RedisTaskStore)
    for bad in ("sqlite://", "sqlite:///"):
        with pytest.raises(ValueError, match="sqlite:// needs a path"):
            task_store_from_url(bad, namespace="n")
    for bad in ("postgres://x", "tasks.db"):
        with pytest.raises(ValueError, match="Unknown task store"):
            task_store_from_url(bad, namespace="n")


def test_the_shared_redis_keeps_the_tasks_unless_a_store_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpserve import RedisTaskStore

    monkeypatch.delenv("MCPSERVE_TASK_STORE", raising=False)
    monkeypatch.delenv("MCPSERVE_REDIS_URL", raising=False)
    assert isinstance(app.build().tasks.store, MemoryTaskStore)
    shared = app.build(redis_url="redis://127.0.0.1:1/0")
    assert isinstance(shared.tasks.store, RedisTaskStore)
    monkeypatch.setenv("MCPSERVE_TASK_STORE", "memory://")
    assert isinstance(app.build(redis_url="redis://127.0.0.1:1/0").tasks.store, MemoryTaskStore)


# -- hostile updates ---------------------------------------------------------------------------


async def test_updates_to_an_ended_task_change_nothing(tasks: Tasks) -> None:
    created = await tasks.create("confirm")
    task_id = created["taskId"]
    parked = await tasks.until(task_id, "input_required")
    (key,) = parked["inputRequests"]
    yes = {key: {"action": "accept", "content": {"confirm": True}}}
    await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": yes})
    done = await tasks.until(task_id, "completed")
    no = {key: {"action": "accept", "content": {"confirm": False}}, "input-9": {}}
    again = await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": no})
    assert again.result["resultType"] == "complete"
    assert await tasks.get(task_id) == done


async def test_oversized_answers(tasks: Tasks) -> None:
    """An answer too big for the body limit is 413 and changes nothing; a big one that does
    not fit the question is asked again; the task still completes with a good answer."""
    created = await tasks.create("confirm")
    task_id = created["taskId"]
    parked = await tasks.until(task_id, "input_required")
    (key,) = parked["inputRequests"]
    huge = {key: {"action": "accept", "content": {"confirm": "x" * (5 * 1024 * 1024)}}}
    body = message(1, "tasks/update", {"taskId": task_id, "inputResponses": huge})
    too_big = await post(tasks.http, body)
    assert too_big.status == 413
    assert (await tasks.get(task_id))["inputRequests"] == parked["inputRequests"]
    big = {key: {"action": "accept", "content": {"confirm": "x" * (1024 * 1024)}}}
    await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": big})
    asked_again = await tasks.get(task_id)
    (new_key,) = asked_again["inputRequests"]
    assert new_key != key
    yes = {new_key: {"action": "accept", "content": {"confirm": True}}}
    await tasks.send("tasks/update", {"taskId": task_id, "inputResponses": yes})
    done = await tasks.until(task_id, "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "confirmed"}]
