"""The tasks extension through a proxy and a gateway, on the wire.

The upstream is ``tests/support/servers/tasks.py`` served over real HTTP by uvicorn in the test's
own event loop (so a test can hold a tool at its gate), reached by the proxy over its lean
link; the proxy is driven through its ASGI app with raw 2026-07-28 messages, and every
message is checked by the wire helpers. Each proxy task is compared with what the upstream
itself shows of its own task.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest

from http_serving import serve_asgi_here
from mcpserve import Auth, Client, Server
from mcpserve.proxy.wire import UpstreamError, clean_result
from servers import tasks as app
from wire_helpers import META, TIMEOUT, Reply, asgi_client, default_headers, post

TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES = {"elicitation": {"form": {}}, "extensions": {TASKS: {}}}
_ids = iter(range(1, 1_000_000))


def message(method: str, params: dict[str, Any], *, tasks: bool = True) -> dict[str, Any]:
    meta = dict(META)
    meta["io.modelcontextprotocol/clientCapabilities"] = CAPABILITIES if tasks else {}
    return {"jsonrpc": "2.0", "id": next(_ids), "method": method,
            "params": {**params, "_meta": meta}}  # fmt: skip


def call(tool: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return message("tools/call", {"name": tool, "arguments": arguments or {}}, **kw)


@asynccontextmanager
async def served(server: Server) -> AsyncIterator[str]:
    """``server`` over HTTP on a free port, in this event loop; its URL."""
    async with serve_asgi_here(server.http_app()) as base:
        yield f"{base}/mcp"


class Wire:
    """Raw requests to one server's ASGI app."""

    def __init__(self, http: httpx2.AsyncClient, headers: dict[str, str] | None = None) -> None:
        self.http = http
        self.headers = headers or {}

    async def send(self, body: dict[str, Any]) -> Reply:
        return await post(self.http, body, headers={**default_headers(body), **self.headers})

    async def result(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = await self.send(body)
        assert reply.status == 200, reply
        return reply.result

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.result(message("tasks/get", {"taskId": task_id}))

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """Poll (bounded) until the task is in one of ``statuses``."""
        deadline = time.monotonic() + TIMEOUT
        while (task := await self.get(task_id))["status"] not in statuses:
            assert time.monotonic() < deadline, task
            await asyncio.sleep(0.01)
        return task


class Setup:
    def __init__(self, upstream: Server, proxy: Wire, url: str) -> None:
        self.upstream = upstream
        self.proxy = proxy
        self.url = url

    def upstream_tasks(self) -> list[Any]:
        """The upstream's own task records (its memory store)."""
        return list(self.upstream.tasks.store._records.values())  # type: ignore[attr-defined]


def _upstream() -> Server:
    upstream = app.build(server_info_in_results=False, task_store="memory://")
    upstream.tasks.poll_interval_ms = 20  # the proxy polls at 50 ms, its least
    return upstream


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    app.GATES.clear()
    upstream = _upstream()
    async with served(upstream) as url:
        proxy = Server.proxy(url, server_info_in_results=False)
        async with proxy.running(), asgi_client(proxy.http_app()) as http:
            yield Setup(upstream, Wire(http), url)


async def test_the_proxy_offers_tasks_when_its_upstream_does(setup: Setup) -> None:
    discovered = await setup.proxy.result(message("server/discover", {}))
    assert TASKS in discovered["capabilities"]["extensions"]


async def test_a_proxy_of_an_upstream_without_tasks_offers_none() -> None:
    plain = Server("plain")

    @plain.tool
    def echo(text: str) -> str:
        return text

    async with served(plain) as url:
        proxy = Server.proxy(url)
        async with proxy.running(), asgi_client(proxy.http_app()) as http:
            wire = Wire(http)
            discovered = await wire.result(message("server/discover", {}))
            assert "extensions" not in discovered["capabilities"]
            answered = await wire.result(call("echo", {"text": "hi"}))
            assert answered["content"] == [{"type": "text", "text": "hi"}]
            reply = await wire.send(message("tasks/get", {"taskId": "x"}))
            assert reply.error["code"] == -32601


async def test_a_task_of_the_upstream_is_a_task_of_the_proxy(setup: Setup) -> None:
    created = await setup.proxy.result(call("sleepy", {"seconds": 0.2}))
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    [theirs] = setup.upstream_tasks()
    assert created["taskId"] != theirs.task_id  # the proxy's own, not the upstream's
    done = await setup.proxy.until(created["taskId"], "completed")
    assert done["result"] == {"content": [{"type": "text", "text": "slept 0.2"}],
                              "resultType": "complete"}  # fmt: skip
    assert done["result"] == theirs.result  # exactly what the upstream's task answered


async def test_without_the_extension_the_call_is_an_ordinary_one(setup: Setup) -> None:
    answered = await setup.proxy.result(call("sleepy", {"seconds": 0.01}, tasks=False))
    assert answered["content"] == [{"type": "text", "text": "slept 0.01"}]
    assert setup.upstream_tasks() == []  # the upstream was not told of tasks


async def test_a_handshake_era_client_gets_ordinary_calls() -> None:
    app.GATES.clear()
    upstream = _upstream()
    async with (
        served(upstream) as url,
        served(Server.proxy(url)) as proxy_url,
        Client.http(proxy_url, protocol_version="2025-11-25") as client,
    ):
        assert "extensions" not in client.server_capabilities
        result = await client.call_tool("sleepy", {"seconds": 0.01})
        assert result["content"] == [{"type": "text", "text": "slept 0.01"}]
        assert list(upstream.tasks.store._records) == []  # type: ignore[attr-defined]


async def test_a_tool_the_upstream_answers_at_once_is_no_task(setup: Setup) -> None:
    answered = await setup.proxy.result(call("plain", {"text": "now"}))
    assert answered["content"] == [{"type": "text", "text": "plain now"}]
    assert answered["resultType"] == "complete"


async def test_the_status_message_follows_the_upstream(setup: Setup) -> None:
    created = await setup.proxy.result(call("gated", {"tag": "status"}))
    deadline = time.monotonic() + TIMEOUT
    while (task := await setup.proxy.get(created["taskId"])).get("statusMessage") is None:
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.01)
    assert task["status"] == "working"
    assert task["statusMessage"] == "waiting for status"
    app.GATES["status"].set()
    done = await setup.proxy.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "released status"}]


async def test_the_upstreams_question_is_asked_and_answered_through_the_proxy(
    setup: Setup,
) -> None:
    created = await setup.proxy.result(call("confirm"))
    parked = await setup.proxy.until(created["taskId"], "input_required")
    [(key, question)] = parked["inputRequests"].items()
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "Go ahead?"
    answer = {"action": "accept", "content": {"confirm": True}}
    update = message("tasks/update", {"taskId": created["taskId"],
                                      "inputResponses": {key: answer}})  # fmt: skip
    assert (await setup.proxy.result(update))["resultType"] == "complete"
    done = await setup.proxy.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "confirmed"}]
    [theirs] = setup.upstream_tasks()
    assert theirs.status == "completed"  # answered once: nothing left asked upstream


async def test_two_questions_at_once(setup: Setup) -> None:
    created = await setup.proxy.result(call("two_questions"))
    parked = await setup.proxy.until(created["taskId"], "input_required")
    by_message = {q["params"]["message"]: key for key, q in parked["inputRequests"].items()}
    assert set(by_message) == {"Who?", "Sure?"}
    answers = {by_message["Who?"]: {"action": "accept", "content": {"name": "Ada"}},
               by_message["Sure?"]: {"action": "accept", "content": {"confirm": True}}}  # fmt: skip
    update = message("tasks/update", {"taskId": created["taskId"], "inputResponses": answers})
    await setup.proxy.result(update)
    done = await setup.proxy.until(created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "Ada sure=True"}]


async def test_a_failed_upstream_task_fails_with_its_error(setup: Setup) -> None:
    created = await setup.proxy.result(call("protocol_error"))
    failed = await setup.proxy.until(created["taskId"], "failed")
    assert failed["error"] == {"code": -32603, "message": "The job crashed",
                               "data": {"why": "testing"}}  # fmt: skip
    assert failed["statusMessage"] == "The job crashed"


async def test_cancelling_the_proxys_task_cancels_the_upstreams(setup: Setup) -> None:
    created = await setup.proxy.result(call("gated", {"tag": "never"}))
    await setup.proxy.until(created["taskId"], "working")
    ack = await setup.proxy.result(message("tasks/cancel", {"taskId": created["taskId"]}))
    assert ack["resultType"] == "complete"
    await setup.proxy.until(created["taskId"], "cancelled")
    deadline = time.monotonic() + TIMEOUT
    while not (theirs := setup.upstream_tasks()) or theirs[0].status != "cancelled":
        assert time.monotonic() < deadline, theirs
        await asyncio.sleep(0.01)


async def test_an_upstream_task_cancelled_there_ends_cancelled_here(setup: Setup) -> None:
    created = await setup.proxy.result(call("gated", {"tag": "theirs"}))
    deadline = time.monotonic() + TIMEOUT
    while not setup.upstream_tasks():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    [theirs] = setup.upstream_tasks()
    async with httpx2.AsyncClient(timeout=TIMEOUT) as direct:
        body = message("tasks/cancel", {"taskId": theirs.task_id})
        response = await direct.post(setup.url, json=body, headers=default_headers(body))
        assert response.status_code == 200, response.text
    await setup.proxy.until(created["taskId"], "cancelled")


async def test_a_listen_hears_the_proxys_task_change() -> None:
    """Over real HTTP on both sides: the listen is a stream that stays open."""
    app.GATES.clear()
    async with (
        served(_upstream()) as url,
        served(Server.proxy(url)) as proxy_url,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        body = call("confirm")
        created = (await post(http, body, path=proxy_url)).result
        task_id = created["taskId"]
        listen = message("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
        headers = default_headers(listen)
        async with http.stream("POST", proxy_url, json=listen, headers=headers) as stream:
            assert stream.status_code == 200
            events = _events(stream.aiter_lines())
            ack = await asyncio.wait_for(anext(events), TIMEOUT)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"] == {"taskIds": [task_id]}
            seen: list[dict[str, Any]] = []
            while not seen or seen[-1]["status"] != "input_required":
                seen.append((await asyncio.wait_for(anext(events), TIMEOUT))["params"])
            [key] = seen[-1]["inputRequests"]
            answer = {key: {"action": "accept", "content": {"confirm": True}}}
            update = message("tasks/update", {"taskId": task_id, "inputResponses": answer})
            assert (await post(http, update, path=proxy_url)).status == 200
            while seen[-1]["status"] != "completed":
                note = await asyncio.wait_for(anext(events), TIMEOUT)
                assert note["method"] == "notifications/tasks"
                assert note["params"]["taskId"] == task_id
                seen.append(note["params"])
            assert seen[-1]["result"]["content"] == [{"type": "text", "text": "confirmed"}]


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    async for line in lines:
        if line.startswith("data: "):
            yield json.loads(line[6:])


async def test_another_caller_cannot_see_the_proxys_task() -> None:
    app.GATES.clear()

    def who(headers: Any) -> Auth:
        return Auth(principal=headers.get("x-user"))

    async with served(_upstream()) as url:
        proxy = Server.proxy(url)
        async with proxy.running(), asgi_client(proxy.http_app(authenticate=who)) as http:
            alice, mallory = Wire(http, {"x-user": "alice"}), Wire(http, {"x-user": "mallory"})
            created = await alice.result(call("sleepy", {"seconds": 0.05}))
            await alice.until(created["taskId"], "completed")
            reply = await mallory.send(message("tasks/get", {"taskId": created["taskId"]}))
            not_found = "Task not found (unknown, expired, or not yours)"
            assert reply.error == {"code": -32602, "message": not_found}


async def test_a_gateway_runs_an_upstreams_task_as_its_own() -> None:
    app.GATES.clear()
    async with served(_upstream()) as url:
        gateway = Server.gateway({"jobs": url}, server_info_in_results=False)
        async with gateway.running(), asgi_client(gateway.http_app()) as http:
            wire = Wire(http)
            discovered = await wire.result(message("server/discover", {}))
            assert TASKS in discovered["capabilities"]["extensions"]
            created = await wire.result(call("jobs_confirm"))
            parked = await wire.until(created["taskId"], "input_required")
            [key] = parked["inputRequests"]
            answer = {"action": "accept", "content": {"confirm": False}}
            update = {"taskId": created["taskId"], "inputResponses": {key: answer}}
            await wire.result(message("tasks/update", update))
            done = await wire.until(created["taskId"], "completed")
            assert done["result"]["content"] == [{"type": "text", "text": "declined"}]


# -- what the proxy refuses to pass on -------------------------------------------------------

_TASK = {"resultType": "task", "taskId": "t1", "status": "working"}
_TOLD = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}


def test_a_task_answer_passes_only_where_the_upstream_was_told_of_tasks() -> None:
    assert clean_result("tools/call", dict(_TASK), "up", _TOLD) == _TASK
    with pytest.raises(UpstreamError, match="answered tools/call with a task"):
        clean_result("tools/call", dict(_TASK), "up", {})
    with pytest.raises(UpstreamError, match="answered prompts/get with a task"):
        clean_result("prompts/get", dict(_TASK), "up", _TOLD)
