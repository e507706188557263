"""Handshake-era clients on the real wire: a stdio subprocess and uvicorn on 127.0.0.1.

The server is ``tests/support/servers/legacy_dual.py`` (both eras on one endpoint). Every message
the server sends is validated for its era: legacy ones against the 2025-11-25 schema,
modern ones against the 2026-07-28 schema (``legacy_schema.EraChecker``). Subprocesses are
always stopped; every wait is bounded.

The rules are those of ``docs/decisions.md`` ("Eras").
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from legacy_schema import (
    LEGACY_DUAL,
    LegacyHTTPClient,
    LegacyStdio,
    answer,
    initialize_message,
    legacy_call,
    legacy_request,
    legacy_stdio,
    notification,
)
from servers.legacy_dual import INSTRUCTIONS, NAME, VERSION
from wire_helpers import TIMEOUT, HTTPServerProcess, http_server_process, request, wait_for_file

pytestmark = pytest.mark.subprocess

HANDSHAKE_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]
ALL_CAPABILITIES = {"elicitation": {"form": {}}, "sampling": {}, "roots": {"listChanged": True}}
NAME_ANSWER = {"action": "accept", "content": {"name": "Ann"}}
SAMPLE_ANSWER = {
    "role": "assistant",
    "content": {"type": "text", "text": "sampled"},
    "model": "wire-model",
}
ROOTS_ANSWER = {"roots": [{"uri": "file:///work", "name": "work"}]}
NEGOTIATION = [
    ("2025-11-25", "2025-11-25"),
    ("2025-06-18", "2025-06-18"),
    ("2025-03-26", "2025-03-26"),
    ("2026-07-28", "2025-11-25"),
    ("2024-11-05", "2025-11-25"),
    ("0000-00-00", "2025-11-25"),
]


def text_of(result: dict[str, Any]) -> str:
    assert [block["type"] for block in result["content"]] == ["text"], result
    return result["content"][0]["text"]  # type: ignore[no-any-return]


async def ask(proc: LegacyStdio, message: dict[str, Any]) -> dict[str, Any]:
    """Send a request; its response must be the very next line."""
    await proc.send(message)
    response, others = await proc.read_until(message["id"])
    assert others == [], others
    return response


async def stdio_initialize(
    proc: LegacyStdio, capabilities: dict[str, Any] | None = None, version: str = "2025-11-25"
) -> dict[str, Any]:
    response = await ask(proc, initialize_message("init", version, capabilities))
    await proc.send(notification("notifications/initialized"))
    return response["result"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- stdio


@pytest.mark.parametrize(("requested", "negotiated"), NEGOTIATION)
async def test_stdio_version_negotiation(requested: str, negotiated: str) -> None:
    async with legacy_stdio() as proc:
        result = await stdio_initialize(proc, version=requested)
        assert result["protocolVersion"] == negotiated
        # notifications/initialized got no answer: the ping's answer is the next line.
        assert (await ask(proc, legacy_request(1, "ping")))["result"] == {}


async def test_stdio_era_selection() -> None:
    async with legacy_stdio() as proc:
        # Before initialize: discover (the dual-era probe) works, ping is {}, and anything
        # else without _meta is a modern -32602.
        discovered = await ask(proc, request("d", "server/discover"))
        assert discovered["result"]["resultType"] == "complete"
        assert discovered["result"]["supportedVersions"] == ["2026-07-28", *HANDSHAKE_VERSIONS]
        assert (await ask(proc, legacy_request("p", "ping")))["result"] == {}
        proc.checker.expect_modern("x")
        assert (await ask(proc, legacy_request("x", "tools/list")))["error"]["code"] == -32602

        result = await stdio_initialize(proc, {"roots": {}})
        assert result == {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
                "prompts": {"listChanged": True},
                "completions": {},
                "logging": {},
            },
            "serverInfo": {"name": NAME, "version": VERSION},
            "instructions": INSTRUCTIONS,
        }

        # Inside the session: _meta means modern, its absence legacy.
        modern = await ask(proc, request("m", "tools/list"))
        assert modern["result"]["resultType"] == "complete"
        assert modern["result"]["cacheScope"] in ("public", "private")
        old = await ask(proc, legacy_request("l", "tools/list"))
        assert "resultType" not in old["result"]
        discovered = await ask(proc, request("d2", "server/discover"))
        assert discovered["result"]["resultType"] == "complete"
        for method in ("server/discover", "subscriptions/listen"):
            response = await ask(proc, legacy_request(method, method, {}))
            assert response["error"]["code"] == -32601


async def test_stdio_legacy_off_refuses_initialize() -> None:
    async with legacy_stdio(env={"MCPSERVE_TEST_LEGACY": "0"}) as proc:
        proc.checker.expect_modern("init")
        response = await ask(proc, initialize_message("init"))
        assert response["error"]["code"] == -32022
        assert response["error"]["data"]["supported"] == ["2026-07-28"]
        assert "2026-07-28" in response["error"]["message"]
        discovered = await ask(proc, request("d", "server/discover"))
        assert discovered["result"]["supportedVersions"] == ["2026-07-28"]


async def test_stdio_legacy_wire() -> None:
    async with legacy_stdio() as proc:
        await stdio_initialize(proc)
        assert (await ask(proc, legacy_request(1, "ping")))["result"] == {}

        # Results in legacy shapes.
        listed = await ask(proc, legacy_request(2, "tools/list"))
        tools = {tool["name"]: tool for tool in listed["result"]["tools"]}
        assert tools["count"]["outputSchema"] == {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        }
        assert tools["add"]["outputSchema"]["type"] == "object"
        counted = await ask(proc, legacy_call(3, "count", {"n": 5}))
        assert counted["result"] == {
            "content": [{"type": "text", "text": "5"}],
            "structuredContent": {"result": 5},
        }
        added = await ask(proc, legacy_call(4, "add", {"a": 20, "b": 22}))
        assert added["result"]["structuredContent"] == {"total": 42}
        missing = await ask(proc, legacy_request(5, "resources/read", {"uri": "file:///no"}))
        assert missing["error"]["code"] == -32002
        assert missing["error"]["data"] == {"uri": "file:///no"}
        read = await ask(proc, legacy_request(6, "resources/read", {"uri": "notes://n1"}))
        assert read["result"]["contents"][0]["text"] == "note n1"
        got = await ask(
            proc, legacy_request(7, "prompts/get", {"name": "greet", "arguments": {"who": "Al"}})
        )
        assert got["result"]["messages"][0]["content"]["text"] == "Hello, Al!"

        # Logging: the session level decides what ctx.log sends.
        assert (await ask(proc, legacy_request(8, "logging/setLevel", {"level": "warning"})))[
            "result"
        ] == {}
        bad = await ask(proc, legacy_request(9, "logging/setLevel", {"level": "chatty"}))
        assert bad["error"]["code"] == -32602
        await proc.send(legacy_call(10, "chatty", {}))
        response, notes = await proc.read_until(10)
        assert text_of(response["result"]) == "warning,error"
        assert [note["params"]["level"] for note in notes] == ["warning", "error"]

        # Progress, with the client's token.
        await proc.send(legacy_call(11, "progressive", {"steps": 2}, progressToken="pt"))
        response, notes = await proc.read_until(11)
        assert [(n["method"], n["params"]["progressToken"]) for n in notes] == [
            ("notifications/progress", "pt"),
            ("notifications/progress", "pt"),
        ]


async def test_stdio_subscriptions_and_list_changed() -> None:
    async with legacy_stdio() as proc:
        await stdio_initialize(proc)
        subscribed = await ask(
            proc, legacy_request(1, "resources/subscribe", {"uri": "watched://doc"})
        )
        assert subscribed["result"] == {}
        await proc.send(legacy_call(2, "touch", {"uri": "watched://doc"}))
        response, notes = await proc.read_until(2)
        assert text_of(response["result"]) == "touched watched://doc"
        assert notes == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "watched://doc"},
            }
        ]
        unsubscribed = await ask(
            proc, legacy_request(3, "resources/unsubscribe", {"uri": "watched://doc"})
        )
        assert unsubscribed["result"] == {}
        assert (
            text_of((await ask(proc, legacy_call(4, "touch", {"uri": "watched://doc"})))["result"])
            == "touched watched://doc"
        )

        await proc.send(legacy_call(5, "add_tool", {"name": "newcomer"}))
        seen = [await proc.read(), await proc.read()]  # the change is published async
        assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in seen
        listed = await ask(proc, legacy_request(6, "tools/list"))
        assert "newcomer" in [tool["name"] for tool in listed["result"]["tools"]]


async def test_stdio_questions_to_the_client(tmp_path: Path) -> None:
    async with legacy_stdio() as proc:
        await stdio_initialize(proc, ALL_CAPABILITIES)
        answers = {
            "elicitation/create": NAME_ANSWER,
            "sampling/createMessage": SAMPLE_ANSWER,
            "roots/list": ROOTS_ANSWER,
        }
        await proc.send(legacy_call("all", "ask_all", {}))
        asked = []
        while True:
            message = await proc.read()
            if "method" in message:  # a real request to us, with the server's own id
                asked.append(message["method"])
                await proc.send(answer(message, answers[message["method"]]))
                continue
            assert message["id"] == "all"
            break
        assert sorted(asked) == sorted(answers)
        assert text_of(message["result"]) == "Ann|sampled|1 roots"

    async with legacy_stdio() as proc:
        await stdio_initialize(proc, {"roots": {}})
        response = await ask(proc, legacy_call(1, "ask_name", {}))
        assert response["error"]["code"] == -32021
        response = await ask(proc, legacy_call(2, "ask_llm", {"question": "q"}))
        assert response["error"]["code"] == -32021


async def test_stdio_client_that_never_answers() -> None:
    async with legacy_stdio(env={"MCPSERVE_TEST_LEGACY_TIMEOUT": "0.3"}) as proc:
        await stdio_initialize(proc, ALL_CAPABILITIES)
        await proc.send(legacy_call(1, "ask_roots", {}))
        response, others = await proc.read_until(1)
        assert [message["method"] for message in others] == ["roots/list"]
        assert response["result"]["isError"] is True


async def test_stdio_cancellation(tmp_path: Path) -> None:
    env = {"MCPSERVE_TEST_MARKER_DIR": str(tmp_path)}
    async with legacy_stdio(env=env) as proc:
        await stdio_initialize(proc)
        await proc.send(legacy_call(1, "wait_forever", {"tag": "sc"}, progressToken=1))
        assert (await proc.read())["method"] == "notifications/progress"
        await proc.send(notification("notifications/cancelled", {"requestId": 1}))
        assert await wait_for_file(tmp_path / "sc.finally") == "cancelled=True"
        assert (await ask(proc, legacy_request(2, "ping")))["result"] == {}
        proc.close_stdin()
        assert await proc.read_rest() == []
        assert await proc.wait() == 0


# --------------------------------------------------------------------------- HTTP (uvicorn)


def start(tmp: Path, **env: str) -> contextlib.AbstractContextManager[HTTPServerProcess]:
    return http_server_process(tmp, args=[sys.executable, str(LEGACY_DUAL)], env=env)


@pytest.fixture(scope="module")
def dual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with start(tmp_path_factory.mktemp("legacy-http")) as server:
        yield server


@contextlib.asynccontextmanager
async def clients(server: HTTPServerProcess) -> AsyncIterator[Any]:
    """``make()`` returns a fresh raw legacy client for ``server``; all closed at the end."""
    made: list[LegacyHTTPClient] = []
    base = f"http://127.0.0.1:{server.port}"
    async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http:

        def make() -> LegacyHTTPClient:
            client = LegacyHTTPClient.over_httpx(http)
            made.append(client)
            return client

        try:
            yield make
        finally:
            for client in made:
                await client.close()


async def wait_marker(directory: Path, name: str) -> str:
    return await wait_for_file(directory / name)


@pytest.mark.parametrize(("requested", "negotiated"), NEGOTIATION)
async def test_http_version_negotiation(
    dual: HTTPServerProcess, requested: str, negotiated: str
) -> None:
    async with clients(dual) as make:
        client = make()
        reply = await client.initialize(version=requested)
        assert reply.status == 200
        assert reply.result["protocolVersion"] == negotiated
        assert reply.result["serverInfo"] == {"name": NAME, "version": VERSION}
        ping = await client.post(legacy_request(1, "ping"))
        assert ping.result == {}
        assert (await client.delete()).status == 200


async def test_http_era_selection(dual: HTTPServerProcess) -> None:
    async with clients(dual) as make:
        client = make()
        await client.initialize()
        assert client.session_id is not None
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/list",
            "mcp-session-id": client.session_id,
        }
        modern = await client.post(request(1, "tools/list"), headers=headers)
        assert modern.status == 200
        assert modern.result["resultType"] == "complete"
        old = await client.post(legacy_request(2, "tools/list"))
        assert "resultType" not in old.result
        for method in ("server/discover", "subscriptions/listen"):
            reply = await client.post(legacy_request(3, method, {}))
            assert reply.error["code"] == -32601
        headers["mcp-method"] = "server/discover"
        discovered = await client.post(request(4, "server/discover"), headers=headers)
        assert discovered.result["supportedVersions"] == ["2026-07-28", *HANDSHAKE_VERSIONS]
        missing = await client.post(legacy_request(5, "resources/read", {"uri": "file:///x"}))
        assert missing.error == {
            "code": -32002,
            "message": missing.error["message"],
            "data": {"uri": "file:///x"},
        }


async def test_http_legacy_off_refuses_initialize(tmp_path: Path) -> None:
    with start(tmp_path, MCPSERVE_TEST_LEGACY="0") as server:
        async with clients(server) as make:
            client = make()
            client.checker.expect_modern(0)
            reply = await client.initialize()
            assert reply.status == 400
            assert reply.error["code"] == -32022
            assert reply.error["data"]["supported"] == ["2026-07-28"]
            assert "mcp-session-id" not in reply.headers


async def test_http_session_lifecycle(dual: HTTPServerProcess) -> None:
    async with clients(dual) as make:
        sessions = []
        for _ in range(5):
            client = make()
            reply = await client.initialize(initialized=False)
            assert reply.status == 200
            session_id = reply.headers["mcp-session-id"]
            assert all(0x21 <= ord(char) <= 0x7E for char in session_id)
            note = await client.post(notification("notifications/initialized"))
            assert note.status == 202
            assert note.messages == []
            sessions.append(client)
        assert len({client.session_id for client in sessions}) == 5

        client = sessions[0]
        without = await client.post(
            legacy_request(1, "ping"), headers=client.headers(mcp_session_id=None)
        )
        assert without.status == 400
        unknown = await client.post(
            legacy_request(2, "ping"), headers=client.headers(mcp_session_id="unknown")
        )
        assert unknown.status == 404
        assert (await client.post(legacy_request(3, "ping"))).status == 200

        assert (await client.delete()).status == 200
        assert (await client.post(legacy_request(4, "ping"))).status == 404
        gone = await client.get()
        assert gone.status == 404
        await gone.body()
        assert (await client.delete()).status == 404
        # The other sessions live on.
        assert (await sessions[1].post(legacy_request(5, "ping"))).result == {}
        for other in sessions[1:]:
            assert (await other.delete()).status == 200


async def test_http_unsupported_version_header_is_400(dual: HTTPServerProcess) -> None:
    async with clients(dual) as make:
        client = make()
        await client.initialize()
        for version in ("2026-07-28", "2024-11-05", "x"):
            reply = await client.post(
                legacy_request(1, "tools/list"),
                headers=client.headers(mcp_protocol_version=version),
            )
            assert reply.status == 400, version
        # Without the header the session's version applies.
        reply = await client.post(
            legacy_request(2, "ping"), headers=client.headers(mcp_protocol_version=None)
        )
        assert reply.status == 200


async def test_http_standalone_stream(dual: HTTPServerProcess) -> None:
    async with clients(dual) as make:
        client = make()
        await client.initialize()
        stream = await client.get()
        assert stream.status == 200
        assert stream.is_sse
        priming = await stream.next_event()
        assert priming is not None
        assert priming.id
        assert priming.data == ""

        await client.post(legacy_request(1, "resources/subscribe", {"uri": "watched://doc"}))
        touched = await client.post(legacy_call(2, "touch", {"uri": "watched://doc"}))
        assert touched.messages == [touched.message]
        updated = await stream.next_event()
        assert updated is not None
        assert updated.id
        assert updated.message == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "watched://doc"},
        }

        await client.post(legacy_request(3, "resources/unsubscribe", {"uri": "watched://doc"}))
        await client.post(legacy_call(4, "touch", {"uri": "watched://doc"}))
        await client.post(legacy_call(5, "add_tool", {"name": "wire_dynamic"}))
        changed = await stream.next_message()
        assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        await client.delete()
        assert await stream.read_all() == []  # the session's end closes its stream


async def test_http_elicitation_round_trip(dual: HTTPServerProcess) -> None:
    async with clients(dual) as make:
        client = make()
        await client.initialize(ALL_CAPABILITIES)
        stream = await client.open(legacy_call(1, "ask_name", {}))
        assert stream.status == 200
        assert stream.is_sse
        first = await stream.next_event()
        assert first is not None
        assert first.id
        assert first.data == ""
        asked = await stream.next_message()
        assert asked["method"] == "elicitation/create"
        assert stream.events[-1].id
        accepted = await client.post(answer(asked, NAME_ANSWER))
        assert accepted.status == 202
        response, others = await stream.until_response(1)
        assert others == []
        assert text_of(response["result"]) == "Hello, Ann!"
        assert await stream.next_event() is None

        # Sampling and roots the same way, on their requests' streams.
        stream = await client.open(legacy_call(2, "ask_llm", {"question": "why?"}))
        asked = await stream.next_message()
        assert asked["method"] == "sampling/createMessage"
        assert asked["params"]["messages"][0]["content"]["text"] == "why?"
        await client.post(answer(asked, SAMPLE_ANSWER))
        response, _ = await stream.until_response(2)
        assert text_of(response["result"]) == "LLM said: sampled (wire-model)"

        # A client that did not declare a capability is not asked (-32021).
        bare = make()
        await bare.initialize({})
        reply = await bare.post(legacy_call(3, "ask_roots", {}))
        assert reply.error["code"] == -32021


async def test_http_answers_are_routed_within_their_session(dual: HTTPServerProcess) -> None:
    async with clients(dual) as make:
        asker, other = make(), make()
        await asker.initialize(ALL_CAPABILITIES)
        await other.initialize(ALL_CAPABILITIES)
        stream = await asker.open(legacy_call(1, "ask_roots", {}))
        asked = await stream.next_message()
        assert asked["method"] == "roots/list"
        # The same id answered in another session reaches nobody.
        assert (await other.post(answer(asked, {"roots": []}))).status == 202
        assert (await asker.post(answer(asked, ROOTS_ANSWER))).status == 202
        response, _ = await stream.until_response(1)
        assert text_of(response["result"]) == "Roots: file:///work"


async def test_http_close_stream_and_resume(dual: HTTPServerProcess) -> None:
    markers = dual.marker_dir
    async with clients(dual) as make:
        client = make()
        await client.initialize()
        stream = await client.open(legacy_call(1, "reconnect", {"tag": "wire-r"}))
        events = await stream.read_all()  # the server closes the connection itself
        assert events[0].id
        assert events[0].data == ""
        assert events[-1].retry == 100
        notes = [event.message for event in events if event.message is not None]
        assert [note["params"]["data"] for note in notes] == ["before the break"]
        assert await wait_marker(markers, "wire-r.started") == "closed=True"

        last_id = [event.id for event in events if event.id][-1]
        resumed = await client.get(last_event_id=last_id)
        assert resumed.status == 200
        (markers / "wire-r.release").write_text("go")
        response, others = await resumed.until_response(1)
        assert [note["params"]["data"] for note in others] == ["after the break"]
        assert text_of(response["result"]) == "reconnected wire-r"
        ids = [event.id for event in [*events, *resumed.events] if event.id]
        assert len(ids) == len(set(ids))


async def test_http_disconnect_is_not_cancellation(dual: HTTPServerProcess) -> None:
    markers = dual.marker_dir
    async with clients(dual) as make:
        client = make()
        await client.initialize()
        stream = await client.open(legacy_call(1, "gated", {"tag": "wire-dc"}, progressToken="g"))
        progress = await stream.next_message()
        assert progress["method"] == "notifications/progress"
        last_id = stream.events[-1].id
        assert last_id
        await stream.close()  # the connection drops
        await wait_marker(markers, "wire-dc.started")
        (markers / "wire-dc.release").write_text("go")
        assert await wait_marker(markers, "wire-dc.finally") == "cancelled=False"
        resumed = await client.get(last_event_id=last_id)
        response, others = await resumed.until_response(1)
        assert others == []
        assert text_of(response["result"]) == "released wire-dc"


async def test_http_cancelled_notification_cancels(dual: HTTPServerProcess) -> None:
    markers = dual.marker_dir
    async with clients(dual) as make:
        client = make()
        await client.initialize()
        stream = await client.open(
            legacy_call(9, "wait_forever", {"tag": "wire-cx"}, progressToken=9)
        )
        assert (await stream.next_message())["method"] == "notifications/progress"
        reply = await client.post(notification("notifications/cancelled", {"requestId": 9}))
        assert reply.status == 202
        assert await wait_marker(markers, "wire-cx.finally") == "cancelled=True"
        rest = await stream.read_all()
        assert [event.message for event in rest if event.message] == []


async def test_http_max_sessions(tmp_path: Path) -> None:
    with start(tmp_path, MCPSERVE_TEST_MAX_SESSIONS="3") as server:
        async with clients(server) as make:
            live = [make() for _ in range(3)]
            for client in live:
                assert (await client.initialize()).status == 200
            refused = make()
            reply = await refused.initialize()
            assert reply.status == 503
            assert "mcp-session-id" not in reply.headers
            assert (await live[0].delete()).status == 200
            assert (await refused.initialize()).status == 200
            assert (await live[1].post(legacy_request(1, "ping"))).result == {}


async def test_http_idle_sessions_expire(tmp_path: Path) -> None:
    idle = 1.0
    with start(tmp_path, MCPSERVE_TEST_SESSION_IDLE=str(idle)) as server:
        async with clients(server) as make:
            client = make()
            await client.initialize()
            assert (await client.post(legacy_request(1, "ping"))).status == 200
            await asyncio.sleep(idle * 1.5)  # wait out the idle period, then some
            reply = await client.post(legacy_request(2, "ping"))
            assert reply.status == 404
            assert (await client.delete()).status == 404


async def test_http_client_that_never_answers(tmp_path: Path) -> None:
    with start(tmp_path, MCPSERVE_TEST_LEGACY_TIMEOUT="0.3") as server:
        async with clients(server) as make:
            client = make()
            await client.initialize(ALL_CAPABILITIES)
            reply = await client.post(legacy_call(1, "ask_name", {}))
            assert [m.get("method") for m in reply.messages[:-1]] == ["elicitation/create"]
            assert reply.result["isError"] is True
            assert "elicitation/create" in text_of(reply.result)
