"""``subscriptions/listen`` in memory: the server driven sans-IO (``docs/decisions.md``,
"Ending a listen on stdio", "Unknown URIs in resourceSubscriptions").

Each listen runs as a task of ``server.handle(listen, send=collector)`` inside
``server.running()``. The collector round-trips every message through the JSON encoder and
validates it against the official schema; the final response is validated as a
``SubscriptionsListenResult``. "Exactly these messages" is checked without timing: leaving
``server.running()`` ends every listener, which first drains what it has queued, so after
the final result a listener's message list is complete.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from listens import META, Listen, listen_message, open_listen
from mcpserve import Client, MCPError, Server, blocking
from mcpserve.protocol.jsonrpc import dumps, loads
from mcpserve.transports.stdio import serve_stream
from wire_schema import check, check_notification, check_response

TIMEOUT = 10.0
SUB = "io.modelcontextprotocol/subscriptionId"
INFO = "io.modelcontextprotocol/serverInfo"
ACK = "notifications/subscriptions/acknowledged"
TOOLS = "notifications/tools/list_changed"
PROMPTS = "notifications/prompts/list_changed"
RESOURCES = "notifications/resources/list_changed"
UPDATED = "notifications/resources/updated"
ALL_LISTS = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": dict(META)},
    }


def same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _extra() -> str:
    return "extra"


def _day_log(day: str) -> str:
    return f"log {day}"


def make_server(**options: Any) -> Server:
    """Tools, prompts, resources (one a parent 'directory') and a template."""
    server = Server("subs-test", version="4.5.6", **options)

    @server.tool
    def alpha() -> str:
        """A tool."""
        return "alpha"

    @server.tool
    @blocking
    def grow(name: str) -> str:
        """Register a tool from a worker thread."""
        assert threading.current_thread() is not threading.main_thread()
        server.add_tool(_extra, name=name)
        return f"grew {name}"

    @server.prompt
    def greet(who: str) -> str:
        """A prompt."""
        return f"Hello, {who}!"

    @server.resource("file:///project")
    def project() -> str:
        """The project directory listing."""
        return "config.json other.txt"

    @server.resource("file:///project/config.json")
    def config() -> str:
        return "{}"

    @server.resource("file:///project/other.txt")
    def other() -> str:
        return "other"

    @server.resource("file:///projectx")
    def projectx() -> str:
        return "not inside file:///project"

    @server.resource("notes://{note_id}")
    def note(note_id: str) -> str:
        return f"note {note_id}"

    return server


def tools_only_server() -> Server:
    """Tools and resources, no prompts."""
    server = Server("tools-only", version="1.0.0")

    @server.tool
    def alpha() -> str:
        return "alpha"

    @server.resource("file:///project/config.json")
    def config() -> str:
        return "{}"

    @server.resource("notes://{note_id}")
    def note(note_id: str) -> str:
        return f"note {note_id}"

    return server


# =========================================================================== acknowledgement


@pytest.mark.parametrize("request_id", [7, 0, -3, "listen-1", "7", ""])
async def test_ack_first_and_every_message_carries_the_id_with_its_json_type(
    request_id: Any,
) -> None:
    server = make_server()
    async with server.running():
        listen = Listen(server, request_id, {"toolsListChanged": True})
        await listen.ack()
        server.add_tool(_extra, name="extra")
        changed = await listen.expect(TOOLS)
        assert same_id(changed["params"]["_meta"][SUB], request_id)
        check("ToolListChangedNotification", changed)
    result = await listen.result()
    assert same_id(result["_meta"][SUB], request_id)
    assert listen.methods == [ACK, TOOLS]


async def test_ack_echoes_the_honoured_subset() -> None:
    """No prompts: promptsListChanged is dropped; unknown URIs are dropped (Q8); a URI a
    template serves is kept; ``false`` means not requested."""
    server = tools_only_server()
    async with server.running():
        listen = Listen(
            server,
            "listen-1",
            {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourcesListChanged": False,
                "resourceSubscriptions": [
                    "file:///project/config.json",
                    "file:///nowhere.txt",
                    "notes://42",
                    "unknown://x",
                ],
            },
        )
        honoured = await listen.ack()
    assert honoured == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["file:///project/config.json", "notes://42"],
    }
    await listen.result()


async def test_ack_keeps_every_supported_type() -> None:
    server = make_server()
    async with server.running():
        listen = Listen(
            server, 1, {**ALL_LISTS, "resourceSubscriptions": ["file:///project", "notes://n1"]}
        )
        honoured = await listen.ack()
    assert honoured == {**ALL_LISTS, "resourceSubscriptions": ["file:///project", "notes://n1"]}
    await listen.result()


@pytest.mark.parametrize("filters", [{}, {**ALL_LISTS, "resourceSubscriptions": ["file:///a"]}])
async def test_a_server_with_nothing_acknowledges_an_empty_filter(filters: dict[str, Any]) -> None:
    """Q7: listen is always implemented; the honoured subset may be empty."""
    server = Server("empty")
    async with server.running():
        listen = Listen(server, 5, filters)
        assert await listen.ack() == {}
    await listen.result()
    assert listen.methods == [ACK]


async def test_unknown_filter_fields_are_not_echoed() -> None:
    server = make_server()
    async with server.running():
        listen = Listen(server, 1, {"toolsListChanged": True, "somethingElse": True})
        assert await listen.ack() == {"toolsListChanged": True}
    await listen.result()


async def test_a_disabled_resource_is_not_honoured() -> None:
    """BUG: the ack honours a URI whose resource is disabled, though it is "unknown to calls
    and reads" (registry.py) — an unknown URI for the client."""
    server = make_server()
    server.disable("resources", "file:///project/config.json")
    async with server.running():
        listen = Listen(server, 1, {"resourceSubscriptions": ["file:///project/config.json"]})
        honoured = await listen.ack()
    await listen.result()
    assert honoured == {}, "subscriptions.py _served() ignores registry.disabled"


# =========================================================================== filtering


async def test_only_requested_types_are_delivered() -> None:
    server = make_server()
    async with server.running():
        tools_only = await open_listen(server, "tools", {"toolsListChanged": True})
        server.add_prompt(_extra, name="p2")
        server.add_resource("file:///new.txt", _extra)
        await server.notify_resource_updated("file:///project/config.json")
        server.add_tool(_extra, name="t2")
        await tools_only.expect(TOOLS)
    await tools_only.result()
    assert tools_only.methods == [ACK, TOOLS]


async def test_concurrent_listeners_each_get_exactly_their_own() -> None:
    server = make_server()
    async with server.running():
        listens = {
            "tools": await open_listen(server, 1, {"toolsListChanged": True}),
            "prompts": await open_listen(server, "2", {"promptsListChanged": True}),
            "resources": await open_listen(server, 3, {"resourcesListChanged": True}),
            "config": await open_listen(
                server, "4", {"resourceSubscriptions": ["file:///project/config.json"]}
            ),
            "all": await open_listen(
                server, 5, {**ALL_LISTS, "resourceSubscriptions": ["notes://a"]}
            ),
        }
        server.add_tool(_extra, name="t2")
        server.add_prompt(_extra, name="p2")
        server.add_resource("file:///new.txt", _extra)
        await server.notify_resource_updated("file:///project/config.json")
        await server.notify_resource_updated("notes://a")
        server.remove_tool("t2")
        # Registry changes are published by tasks; let them all be delivered before the
        # shutdown drains the listeners.
        for name, count in {
            "tools": 3,
            "prompts": 2,
            "resources": 2,
            "config": 2,
            "all": 6,
        }.items():
            await listens[name].received(count)
    for listen in listens.values():
        await listen.result()
    assert listens["tools"].methods == [ACK, TOOLS, TOOLS]
    assert listens["prompts"].methods == [ACK, PROMPTS]
    assert listens["resources"].methods == [ACK, RESOURCES]
    assert listens["config"].methods == [ACK, UPDATED]
    assert listens["config"].messages[1]["params"]["uri"] == "file:///project/config.json"
    assert sorted(listens["all"].methods) == sorted(
        [ACK, TOOLS, PROMPTS, RESOURCES, UPDATED, TOOLS]
    )
    assert [m["params"]["uri"] for m in listens["all"].messages if m["method"] == UPDATED] == [
        "notes://a"
    ]


def _ops() -> list[tuple[str, Callable[[Server], Any], str]]:
    return [
        ("add_tool", lambda s: s.add_tool(_extra, name="t2"), TOOLS),
        ("remove_tool", lambda s: s.remove_tool("alpha"), TOOLS),
        ("add_prompt", lambda s: s.add_prompt(_extra, name="p2"), PROMPTS),
        ("remove_prompt", lambda s: s.remove_prompt("greet"), PROMPTS),
        ("add_resource", lambda s: s.add_resource("file:///new.txt", _extra), RESOURCES),
        ("add_template", lambda s: s.add_resource("logs://{day}", _day_log), RESOURCES),
        ("remove_resource", lambda s: s.remove_resource("file:///projectx"), RESOURCES),
        ("remove_template", lambda s: s.remove_resource("notes://{note_id}"), RESOURCES),
        ("disable_tool", lambda s: s.disable("tools", "alpha"), TOOLS),
        ("disable_prompt", lambda s: s.disable("prompts", "greet"), PROMPTS),
        ("disable_resource", lambda s: s.disable("resources", "file:///projectx"), RESOURCES),
        ("disable_template", lambda s: s.disable("resources", "notes://{note_id}"), RESOURCES),
    ]


@pytest.mark.parametrize(
    ("op", "expected"), [(op, m) for _, op, m in _ops()], ids=[n for n, _, _ in _ops()]
)
async def test_each_registry_change_publishes_its_list_changed(
    op: Callable[[Server], Any], expected: str
) -> None:
    server = make_server()
    async with server.running():
        listen = await open_listen(server, 1, ALL_LISTS)
        op(server)
        await listen.expect(expected)
    await listen.result()
    assert listen.methods == [ACK, expected]


@pytest.mark.parametrize(
    ("kind", "key", "method"),
    [
        ("tools", "alpha", TOOLS),
        ("prompts", "greet", PROMPTS),
        ("resources", "file:///projectx", RESOURCES),
        ("resources", "notes://{note_id}", RESOURCES),
    ],
)
async def test_enable_and_disable_publish_only_real_changes(
    kind: Any, key: str, method: str
) -> None:
    server = make_server()
    async with server.running():
        listen = await open_listen(server, 1, ALL_LISTS)
        server.enable(kind, key)  # already enabled: no change, nothing published
        server.disable(kind, key)
        server.disable(kind, key)  # already disabled: nothing
        server.enable(kind, key)
        await listen.expect(method)
        await listen.expect(method)
    await listen.result()
    assert listen.methods == [ACK, method, method]


async def test_disabled_items_vanish_from_lists_and_calls_and_come_back(
    connect: Callable[..., Client],
) -> None:
    server = make_server()
    async with connect(server) as client:
        assert "alpha" in [tool["name"] for tool in await client.list_tools()]
        server.disable("tools", "alpha")
        assert "alpha" not in [tool["name"] for tool in await client.list_tools()]
        with pytest.raises(MCPError) as raised:
            await client.call_tool("alpha", {})
        assert raised.value.code == -32602
        assert "Unknown tool" in str(raised.value)

        server.disable("prompts", "greet")
        assert await client.list_prompts() == []
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("greet", {"who": "x"})
        assert raised.value.code == -32602

        server.disable("resources", "file:///projectx")
        server.disable("resources", "notes://{note_id}")
        assert "file:///projectx" not in [r["uri"] for r in await client.list_resources()]
        assert await client.list_resource_templates() == []
        for uri in ("file:///projectx", "notes://n1"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            assert raised.value.code == -32602

        server.enable("tools", "alpha")
        server.enable("prompts", "greet")
        server.enable("resources", "file:///projectx")
        server.enable("resources", "notes://{note_id}")
        assert "alpha" in [tool["name"] for tool in await client.list_tools()]
        result = await client.call_tool("alpha", {})
        assert result["content"][0]["text"] == "alpha"
        assert [p["name"] for p in await client.list_prompts()] == ["greet"]
        assert (await client.read_resource("notes://n1"))["contents"][0]["text"] == "note n1"


# =========================================================================== resource updates


async def test_resource_update_reaches_exact_and_parent_subscribers_only() -> None:
    server = make_server()
    async with server.running():
        exact = await open_listen(
            server, "exact", {"resourceSubscriptions": ["file:///project/config.json"]}
        )
        parent = await open_listen(server, "parent", {"resourceSubscriptions": ["file:///project"]})
        sibling = await open_listen(
            server, "sibling", {"resourceSubscriptions": ["file:///project/other.txt"]}
        )
        templated = await open_listen(
            server, "templated", {"resourceSubscriptions": ["notes://n1"]}
        )
        lists = await open_listen(server, "lists", ALL_LISTS)

        await server.notify_resource_updated("file:///project/config.json")
        await server.notify_resource_updated("file:///projectx")  # a prefix, not a child
        await server.notify_resource_updated("notes://n1")
        await server.notify_resource_updated("notes://n10")
        message = await exact.expect(UPDATED)
        check("ResourceUpdatedNotification", message)
        assert message["params"]["uri"] == "file:///project/config.json"
        assert (await parent.expect(UPDATED))["params"]["uri"] == "file:///project/config.json"
        assert (await templated.expect(UPDATED))["params"]["uri"] == "notes://n1"
    for listen in (exact, parent, sibling, templated, lists):
        await listen.result()
    assert exact.methods == [ACK, UPDATED]
    assert parent.methods == [ACK, UPDATED]
    assert sibling.methods == [ACK]
    assert templated.methods == [ACK, UPDATED]
    assert lists.methods == [ACK]  # list subscriptions do not get resource updates


async def test_a_change_and_an_update_made_back_to_back_arrive_in_that_order() -> None:
    server = make_server()
    async with server.running():
        listen = await open_listen(
            server, 1, {"toolsListChanged": True, "resourceSubscriptions": ["file:///project"]}
        )
        server.add_tool(_extra, name="first")  # published without waiting
        await server.notify_resource_updated("file:///project/config.json")
        server.remove_tool("first")
        await server.notify_resource_updated("file:///project/other.txt")
        await listen.received(5)
    await listen.result()
    assert listen.methods == [ACK, TOOLS, UPDATED, TOOLS, UPDATED]


async def test_a_change_made_just_before_shutdown_still_reaches_listeners() -> None:
    server = make_server()
    async with server.running():
        listen = await open_listen(server, 1, {"toolsListChanged": True})
        server.add_tool(_extra, name="last_minute")
    await listen.result()
    assert listen.methods == [ACK, TOOLS]


# =========================================================================== ending


async def test_cancelling_the_listen_task_ends_it_with_nothing_more_sent() -> None:
    server = make_server()
    async with server.running():
        cancelled = await open_listen(server, 1, {"toolsListChanged": True})
        witness = await open_listen(server, 2, {"toolsListChanged": True})
        assert len(server.subscriptions.listeners) == 2
        cancelled.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(cancelled.task, TIMEOUT)
        assert len(server.subscriptions.listeners) == 1
        server.add_tool(_extra, name="after")
        await witness.expect(TOOLS)
    await witness.result()
    assert cancelled.methods == [ACK]
    assert witness.methods == [ACK, TOOLS]
    assert not server.subscriptions.listeners


async def test_shutdown_gives_each_open_listener_its_final_result() -> None:
    server = make_server()
    async with server.running():
        first = await open_listen(server, 11, {"toolsListChanged": True})
        second = await open_listen(server, "eleven", {"resourceSubscriptions": ["notes://x"]})
    for listen in (first, second):
        result = await listen.result()
        assert result["resultType"] == "complete"
        assert same_id(result["_meta"][SUB], listen.id)
        assert result["_meta"][INFO] == {"name": "subs-test", "version": "4.5.6"}
        assert set(result) == {"resultType", "_meta"}
        assert listen.methods == [ACK]
    assert not server.subscriptions.listeners


async def test_slow_listener_is_ended_without_blocking_the_publisher() -> None:
    server = make_server(subscription_queue_size=3)
    release = asyncio.Event()
    async with server.running():
        hot = {"toolsListChanged": True, "resourceSubscriptions": ["notes://hot"]}
        slow = Listen(server, "slow", hot, hold=release)
        await slow.ack()
        fast = await open_listen(server, "fast", hot)
        for n in range(20):  # every publish returns although the slow client reads nothing
            await asyncio.wait_for(server.notify_resource_updated("notes://hot"), TIMEOUT)
            server.add_tool(_extra, name=f"t{n}")
        for _ in range(40):
            await fast.next()
        assert server.subscriptions.overflows == 1
        assert not slow.task.done()  # ended, but still blocked in its send
        release.set()
        slow_result = await slow.result()  # a graceful end: the final result
        assert same_id(slow_result["_meta"][SUB], "slow")
        assert [listener.id for listener in server.subscriptions.listeners] == ["fast"]
        server.add_tool(_extra, name="later")  # the fast one keeps receiving
        await fast.expect(TOOLS)
    await fast.result()
    slow_notes = [(m["method"], m["params"].get("uri")) for m in slow.messages[1:]]
    fast_notes = [(m["method"], m["params"].get("uri")) for m in fast.messages[1:]]
    assert len(fast_notes) == 41
    assert 1 <= len(slow_notes) <= 1 + 3  # the one in flight, then at most the queue
    assert slow_notes == fast_notes[: len(slow_notes)]
    assert server.subscriptions.overflows == 1


async def test_changes_from_worker_threads_are_delivered() -> None:
    server = make_server()
    async with server.running():
        listen = await open_listen(server, 1, {"toolsListChanged": True})
        response = await asyncio.wait_for(
            server.handle(request(2, "tools/call", {"name": "grow", "arguments": {"name": "g"}})),
            TIMEOUT,
        )
        assert response is not None
        check_response("tools/call", response)
        assert response["result"]["content"][0]["text"] == "grew g"
        await listen.expect(TOOLS)

        thread = threading.Thread(target=server.add_tool, args=(_extra,), kwargs={"name": "h"})
        thread.start()
        await asyncio.to_thread(thread.join, TIMEOUT)
        await listen.expect(TOOLS)
    await listen.result()
    assert listen.methods == [ACK, TOOLS, TOOLS]


# =========================================================================== errors


@pytest.mark.parametrize("notifications", ["missing", None, [], "toolsListChanged", 1, True])
async def test_notifications_must_be_an_object(notifications: Any) -> None:
    server = make_server()
    message = listen_message(1, {"toolsListChanged": True})
    if notifications == "missing":
        del message["params"]["notifications"]
    else:
        message["params"]["notifications"] = notifications
    sent: list[dict[str, Any]] = []

    async def send(notification: dict[str, Any]) -> None:
        sent.append(notification)

    async with server.running():
        response = await asyncio.wait_for(server.handle(message, send=send), TIMEOUT)
    assert response is not None
    check_response("subscriptions/listen", response)
    assert response["error"]["code"] == -32602
    assert response["id"] == 1
    assert sent == []
    assert not server.subscriptions.listeners


async def test_listen_on_a_transport_that_cannot_stream_is_invalid_request() -> None:
    server = make_server()
    async with server.running():
        response = await asyncio.wait_for(
            server.handle(listen_message("x", {"toolsListChanged": True}), send=None), TIMEOUT
        )
    assert response is not None
    check_response("subscriptions/listen", response)
    assert response["error"]["code"] == -32600
    assert response["id"] == "x"
    assert not server.subscriptions.listeners


# =========================================================================== capabilities


async def test_capabilities_advertise_list_changed_and_subscribe(
    connect: Callable[..., Client],
) -> None:
    server = make_server()
    capabilities = server.capabilities()
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["prompts"] == {"listChanged": True}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}
    async with connect(server) as client:
        discovered = await client.discover()
    check("ServerCapabilities", discovered["capabilities"])
    assert discovered["capabilities"]["tools"]["listChanged"] is True
    assert discovered["capabilities"]["prompts"]["listChanged"] is True
    assert discovered["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}


# =========================================================================== the in-memory client


async def test_listen_through_the_schema_checked_client(connect: Callable[..., Client]) -> None:
    server = make_server()
    client = connect(server)
    notifications: list[dict[str, Any]] = client.notifications  # type: ignore[attr-defined]

    record = client.connection.on_notification  # type: ignore[attr-defined]
    changed = asyncio.Event()

    def recorded(message: dict[str, Any]) -> None:
        record(message)  # schema-checked, appended to client.notifications
        changed.set()

    client.connection.on_notification = recorded  # type: ignore[attr-defined]

    async def arrived(count: int) -> None:
        while len(notifications) < count:
            changed.clear()
            await changed.wait()

    async with client:
        listening = asyncio.create_task(
            client.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        )
        await asyncio.wait_for(arrived(1), TIMEOUT)
        assert notifications[0]["method"] == ACK
        listen_id = notifications[0]["params"]["_meta"][SUB]
        server.add_tool(_extra, name="late")
        await asyncio.wait_for(arrived(2), TIMEOUT)
    result = await asyncio.wait_for(listening, TIMEOUT)  # closing the client ends it
    assert result["resultType"] == "complete"
    assert same_id(result["_meta"][SUB], listen_id)
    assert [n["method"] for n in notifications] == [ACK, TOOLS]
    assert all(same_id(n["params"]["_meta"][SUB], listen_id) for n in notifications)


# =========================================================================== stdio, sans-IO


async def test_stdio_listen_then_eof_at_once_still_ends_the_subscription() -> None:
    """BUG: a listen line followed at once by EOF hangs the stdio server forever.

    ``serve_stream`` calls ``end_all()`` at EOF before the listen task has run, so the
    listener registers afterwards, is never ended, and ``session.finish()`` waits on it.
    """
    server = make_server()
    reader = asyncio.StreamReader()
    reader.feed_data(dumps(listen_message(9, {"toolsListChanged": True})) + b"\n")
    reader.feed_eof()
    written: list[bytes] = []
    serving = asyncio.create_task(serve_stream(server, reader, written.append))
    done, _ = await asyncio.wait({serving}, timeout=2)
    if not done:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
    messages = [loads(line) for line in written]
    assert done, f"serve_stream did not return after EOF; wrote {messages}"
    assert [m.get("method") for m in messages] == [ACK, None, "notifications/cancelled"]
    check_response("subscriptions/listen", messages[1])
    check_notification(messages[2])
    assert messages[2]["params"]["requestId"] == 9


async def test_stdio_eof_ends_only_that_clients_subscriptions() -> None:
    """One server, two transports: the stdio client leaving must not end a listen that
    another transport (here ``Server.handle``, as HTTP uses it) still serves."""
    server = make_server()
    other_sent: list[dict[str, Any]] = []
    acknowledged = asyncio.Event()

    async def other_sink(message: dict[str, Any]) -> None:
        other_sent.append(message)
        acknowledged.set()

    async with server.running():
        other = asyncio.create_task(
            server.handle(listen_message(1, {"toolsListChanged": True}), send=other_sink)
        )
        await asyncio.wait_for(acknowledged.wait(), 2)
        reader = asyncio.StreamReader()
        reader.feed_data(dumps(listen_message(1, {"toolsListChanged": True})) + b"\n")
        reader.feed_eof()
        written: list[bytes] = []
        await asyncio.wait_for(serve_stream(server, reader, written.append), 2)
        stdio_messages = [loads(line) for line in written]
        assert [m.get("method") for m in stdio_messages] == [ACK, None, "notifications/cancelled"]
        assert not other.done()  # the other client's subscription is still open
        server.add_tool(_extra, name="late")
        await asyncio.sleep(0.05)
        assert [m["method"] for m in other_sent] == [ACK, "notifications/tools/list_changed"]
    result = await asyncio.wait_for(other, 2)  # the server stopping ends it gracefully
    assert result is not None
    check_response("subscriptions/listen", result)


async def test_stdio_eof_cancels_what_outlives_the_grace_period() -> None:
    server = make_server()
    release = asyncio.Event()
    started = asyncio.Event()

    @server.tool
    async def forever() -> str:
        started.set()
        await release.wait()
        return "never sent"

    @server.tool
    async def quick() -> str:
        await started.wait()
        return "sent"

    reader = asyncio.StreamReader()
    for request_id, name in ((1, "forever"), (2, "quick")):
        message = request(request_id, "tools/call", {"name": name, "arguments": {}})
        reader.feed_data(dumps(message) + b"\n")
    reader.feed_eof()
    written: list[bytes] = []
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(serve_stream(server, reader, written.append, shutdown_grace=0.2), 5)
    assert loop.time() - began < 2
    answers = [loads(line) for line in written]
    assert [(m["id"], m["result"]["content"][0]["text"]) for m in answers] == [(2, "sent")]


# =========================================================================== event loops


async def test_a_listen_outside_running_does_not_pin_the_server_to_its_loop() -> None:
    """BUG: a listen served outside ``server.running()`` (an ASGI host without lifespan,
    e.g. a Starlette ``Mount`` or httpx2.ASGITransport) starts the bus lazily and binds
    ``Subscriptions._loop`` to that event loop for good. On any later event loop,
    ``server.add_tool()`` raises ``RuntimeError: Event loop is closed`` even inside
    ``running()``, and listeners there hear nothing."""
    server = make_server()

    async def earlier_loop() -> None:
        acknowledged = asyncio.Event()

        async def send(message: dict[str, Any]) -> None:
            acknowledged.set()

        task = asyncio.create_task(
            server.handle(listen_message(1, {"toolsListChanged": True}), send=send)
        )
        await asyncio.wait_for(acknowledged.wait(), TIMEOUT)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    await asyncio.wait_for(asyncio.to_thread(asyncio.run, earlier_loop()), TIMEOUT)

    error: str | None = None
    async with server.running():
        listen = await open_listen(server, 2, {"toolsListChanged": True})
        with warnings.catch_warnings():  # the orphaned LocalBus.publish coroutine, if any
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                server.add_tool(_extra, name="later")
            except RuntimeError as exc:
                error = repr(exc)
            gc.collect()
        if error is None:
            await listen.expect(TOOLS)
    await listen.result()
    assert error is None, f"server.add_tool() raised {error}"
    assert listen.methods == [ACK, TOOLS]
