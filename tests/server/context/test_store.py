"""``ctx.store``: state that outlives a request, on the wire.

Over stdio and HTTP, in both eras (``four_wires.py``): a value set in one request is read in
a later one, on a new connection; any JSON value; a default for what is absent; a life that
passes; delete. Scopes: each principal its own (a caller without one is ``anonymous``),
``"server"`` shared by all, ``"session"`` one handshake-era session's and refused in the
2026-07-28 era. Bad keys and values get one clear line; a store away is a tool error to
try again. Then the durable stores: two server processes on one SQLite file or one Redis
read each other's records over HTTP, a stdio process reads what an earlier one kept (and
times out a slow tool) in both eras, the store a URL or the shared Redis picks, and the
server closes what it opened.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from four_wires import WIRES, wire
from legacy_schema import initialize_message
from mcpserve import Auth, Context, Server
from mcpserve.backends.keyvalue import MemoryKeyValue
from mcpserve.backends.redis.keyvalue import RedisKeyValue
from mcpserve.backends.sqlite.keyvalue import SQLiteKeyValue
from mcpserve.server.context.store import MAX_VALUE_BYTES
from redis_server import REDIS_PARAM, RedisServer
from servers.state import state_server
from wire_helpers import (
    SERVERS,
    StdioProcess,
    call,
    free_port,
    http_server_process,
    post,
    stdio_server,
)

VALUES: list[Any] = [{"theme": "dark", "sizes": [1, 2.5]}, [1, "two", None], "é✓", 0, True, None]


def by_header(headers: Any) -> Auth | None:
    """The caller named by ``X-User`` (a stand-in for a verified token)."""
    user = headers.get("x-user")
    return Auth(principal=user) if user else None


def structured(result: dict[str, Any]) -> Any:
    assert not result.get("isError"), result
    return result["structuredContent"]["value"]


@pytest.mark.parametrize("kind", WIRES)
async def test_a_value_set_in_one_request_is_read_in_a_later_one(kind: str) -> None:
    server = state_server()
    async with wire(kind, server) as first:
        for number, value in enumerate(VALUES):
            assert (await first.call("remember", {"key": f"k{number}", "value": value}))[
                "content"
            ] == [{"type": "text", "text": "kept"}]
    async with wire(kind, server) as second:  # a new connection: nothing kept there
        for number, value in enumerate(VALUES):
            assert structured(await second.call("recall", {"key": f"k{number}"})) == value
        assert structured(await second.call("recall", {"key": "never"})) == "nothing"
        await second.call("forget", {"key": "k0"})
        assert structured(await second.call("recall", {"key": "k0"})) == "nothing"


@pytest.mark.parametrize("kind", WIRES)
async def test_a_value_set_with_a_ttl_is_gone_once_it_passes(kind: str) -> None:
    server = state_server()
    async with wire(kind, server) as connection:
        await connection.call("remember", {"key": "brief", "value": 1, "ttl": 0.3})
        await connection.call("remember", {"key": "kept", "value": 2})
        assert structured(await connection.call("recall", {"key": "brief"})) == 1
        await asyncio.sleep(0.6)
        assert structured(await connection.call("recall", {"key": "brief"})) == "nothing"
        assert structured(await connection.call("recall", {"key": "kept"})) == 2


@pytest.mark.parametrize("kind", ["http-modern", "http-handshake"])
async def test_each_principal_has_its_own_records_and_the_server_scope_is_shared(
    kind: str,
) -> None:
    server = state_server()

    def as_user(user: str) -> Any:
        return wire(kind, server, authenticate=by_header, headers={"x-user": user})

    async with as_user("ana") as ana, as_user("bo") as bo, as_user("ana:theme") as other:
        await ana.call("remember", {"key": "theme", "value": "dark"})
        await bo.call("remember", {"key": "theme", "value": "light"})
        await ana.call("remember", {"key": "motd", "value": "hi", "scope": "server"})
        await ana.call("remember", {"key": "theme:x", "value": "ana's"})
        assert structured(await ana.call("recall", {"key": "theme"})) == "dark"
        assert structured(await bo.call("recall", {"key": "theme"})) == "light"
        # A principal that spells another's principal and key does not reach its record.
        assert structured(await other.call("recall", {"key": "x"})) == "nothing"
        for user in (ana, bo):
            motd = await user.call("recall", {"key": "motd", "scope": "server"})
            assert structured(motd) == "hi"
        assert structured(await bo.call("recall", {"key": "motd"})) == "nothing"
    async with as_user("ana") as again:  # a new connection (and session): the same records
        assert structured(await again.call("recall", {"key": "theme"})) == "dark"


@pytest.mark.parametrize("kind", WIRES)
async def test_callers_without_a_principal_share_the_anonymous_records(kind: str) -> None:
    server = state_server()
    async with wire(kind, server) as one, wire(kind, server) as two:
        await one.call("remember", {"key": "theme", "value": "dark"})
        assert structured(await two.call("recall", {"key": "theme"})) == "dark"
    records = server.runtime.state_stores
    assert records is not None
    assert isinstance(records.records, MemoryKeyValue)
    assert await records.records.get("state:principal:anonymous:theme") == b'"dark"'


@pytest.mark.parametrize("kind", ["stdio-handshake", "http-handshake"])
async def test_a_session_scope_is_one_handshake_era_sessions(kind: str) -> None:
    server = state_server()
    async with wire(kind, server) as one, wire(kind, server) as two:
        await one.call("remember", {"key": "step", "value": 1, "scope": "session"})
        await two.call("remember", {"key": "step", "value": 2, "scope": "session"})
        assert structured(await one.call("recall", {"key": "step", "scope": "session"})) == 1
        assert structured(await two.call("recall", {"key": "step", "scope": "session"})) == 2


@pytest.mark.parametrize("kind", ["stdio-modern", "http-modern"])
async def test_a_session_scope_is_refused_in_the_2026_era_saying_what_to_use(kind: str) -> None:
    server = state_server()
    async with wire(kind, server) as connection:
        answer = await connection.answer("recall", {"key": "step", "scope": "session"})
    assert answer["error"] == {
        "code": -32603,
        "message": 'ctx.store_for("session") needs a handshake-era session, and a 2026-07-28 '
        "request belongs to no session: keep state per user (ctx.store), per server "
        '(ctx.store_for("server")), or under a handle your tool returns and takes as an '
        "argument",
    }


async def test_bad_keys_and_values_are_refused_with_one_line_and_nothing_is_written() -> None:
    server = Server("state")
    outcomes: list[str] = []

    @server.tool
    async def misuse(ctx: Context) -> list[str]:
        attempts = [
            ctx.store.set("big", "x" * MAX_VALUE_BYTES),
            ctx.store.set("object", object()),
            ctx.store.set("", 1),
            ctx.store.get("k" * 513),
            ctx.store.set("keys", {1: "a non-string key"}),
        ]
        for attempt in attempts:
            try:
                await attempt
            except (TypeError, ValueError) as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
        with pytest.raises(ValueError, match=r"^Unknown store scope 'galaxy'"):
            ctx.store_for("galaxy")  # type: ignore[arg-type]
        return [await ctx.store.get(key, default="absent") for key in ("big", "object", "keys")]

    async with wire("stdio-modern", server) as connection:
        result = await connection.call("misuse")
    assert result["structuredContent"] == ["absent"] * 3
    assert outcomes[0] == (
        f"ValueError: The value for 'big' is {MAX_VALUE_BYTES + 2} bytes of JSON; ctx.store "
        f"keeps at most {MAX_VALUE_BYTES}: keep large data elsewhere and store a reference"
    )
    assert (
        outcomes[1]
        == "TypeError: ctx.store keeps JSON values; 'object': Type is not JSON serializable: object"
    )
    assert outcomes[2].startswith(
        "ValueError: A ctx.store key is a non-empty string of at most 512"
    )
    assert outcomes[3].startswith("ValueError: A ctx.store key is a non-empty string")
    assert outcomes[4].startswith("TypeError: ctx.store keeps JSON values; 'keys': ")
    assert all("\n" not in outcome for outcome in outcomes)


@pytest.mark.parametrize("kind", WIRES)
async def test_a_store_that_cannot_be_reached_is_a_tool_error_to_try_again(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = state_server(store=f"redis://127.0.0.1:{free_port()}/0")
    async with server.running(), wire(kind, server) as connection:
        with caplog.at_level(logging.WARNING):
            calls = [("remember", {"key": "k", "value": 1}), ("recall", {"key": "k"}),
                     ("forget", {"key": "k"})]  # fmt: skip
            for tool, arguments in calls:
                result = await connection.call(tool, arguments)
                assert result["isError"] is True
                assert result["content"] == [{"type": "text", "text":
                    "The server's state store cannot be reached; try again shortly"}]  # fmt: skip
    noted = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in noted] == ["mcpserve.keyvalue"]  # once per outage, no traceback
    assert noted[0].exc_info is None


# -- which store, and on any instance ---------------------------------------------------------


def test_the_store_is_memory_by_default_a_url_or_object_when_given_and_redis_when_shared(
    tmp_path: Path,
) -> None:
    def records(**options: Any) -> Any:
        stores = Server("state", **options).runtime.state_stores
        assert stores is not None
        return stores.records

    assert isinstance(records(), MemoryKeyValue)
    given = MemoryKeyValue()
    assert records(store=given) is given
    sqlite = records(store=f"sqlite:///{tmp_path / 'state.db'}")
    assert isinstance(sqlite, SQLiteKeyValue)
    assert sqlite.namespace == "state"
    shared = records(redis_url="redis://127.0.0.1:6379/3")
    assert isinstance(shared, RedisKeyValue)
    assert (shared.url, shared.namespace) == ("redis://127.0.0.1:6379/3", "state")
    chosen = records(redis_url="redis://127.0.0.1:6379/3", store="memory://")
    assert isinstance(chosen, MemoryKeyValue)


def test_a_store_url_that_names_no_store_is_refused_when_the_server_is_made() -> None:
    with pytest.raises(ValueError, match=r"^Unknown store 'postgres://db/state': use memory://"):
        Server("state", store="postgres://db/state")
    with pytest.raises(ValueError, match=r"^sqlite:// needs a path"):
        Server("state", store="sqlite://")


async def test_a_server_closes_the_store_it_opened_when_it_stops(tmp_path: Path) -> None:
    server = state_server(store=f"sqlite:///{tmp_path / 'state.db'}")
    async with server.running():
        async with wire("stdio-modern", server) as connection:
            await connection.call("remember", {"key": "k", "value": 1})
        stores = server.runtime.state_stores
        assert stores is not None
        opened = stores.records
        assert isinstance(opened, SQLiteKeyValue)
        assert opened._executor is not None
    assert opened._executor is None  # its thread and connection are gone


async def _call(client: httpx2.AsyncClient, tool: str, arguments: dict[str, Any]) -> Any:
    return (await post(client, call(1, tool, arguments))).result


@pytest.mark.subprocess
@pytest.mark.parametrize("backend", ["sqlite", REDIS_PARAM])
async def test_two_server_processes_on_one_store_read_each_others_records(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "redis":
        redis: RedisServer = request.getfixturevalue("redis")
        # The shared Redis alone (MCPSERVE_REDIS_URL) picks the store.
        env = {"MCPSERVE_REDIS_URL": redis.url, "MCPSERVE_TEST_STATE_NAME": f"s-{uuid.uuid4().hex}"}
    else:
        env = {"MCPSERVE_TEST_STORE": f"sqlite:///{tmp_path / 'state.db'}"}
    args = [sys.executable, str(SERVERS / "state.py")]
    with (
        http_server_process(tmp_path, args=args, env=env) as one,
        http_server_process(tmp_path, args=args, env=env) as two,
    ):
        async with (
            httpx2.AsyncClient(base_url=one.url.removesuffix("/mcp"), timeout=15) as a,
            httpx2.AsyncClient(base_url=two.url.removesuffix("/mcp"), timeout=15) as b,
        ):
            pids = {(await _call(a, "pid", {}))["structuredContent"],
                    (await _call(b, "pid", {}))["structuredContent"]}  # fmt: skip
            assert len(pids) == 2
            await _call(a, "remember", {"key": "theme", "value": {"dark": True}})
            await _call(b, "remember", {"key": "motd", "value": "hi", "scope": "server"})
            assert structured(await _call(b, "recall", {"key": "theme"})) == {"dark": True}
            motd = await _call(a, "recall", {"key": "motd", "scope": "server"})
            assert structured(motd) == "hi"
            await _call(b, "forget", {"key": "theme"})
            assert structured(await _call(a, "recall", {"key": "theme"})) == "nothing"


async def _stdio_call(process: StdioProcess, request_id: int, message: dict[str, Any]) -> Any:
    """Write one line; the answer with ``request_id``, read as raw JSON lines."""
    await process.write(json.dumps(message).encode() + b"\n")
    while True:
        line = await process.read_line()
        assert line, process.stderr.decode(errors="replace")
        answer = json.loads(line)
        if answer.get("id") == request_id:
            return answer


@pytest.mark.subprocess
@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_stdio_processes_read_what_an_earlier_one_kept_and_time_out_a_slow_tool(
    era: str, tmp_path: Path
) -> None:
    env = {"MCPSERVE_TEST_STORE": f"sqlite:///{tmp_path / 'state.db'}"}
    args = [sys.executable, str(SERVERS / "state.py")]

    def message(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if era == "2026-07-28":
            return call(request_id, tool, arguments)
        params = {"name": tool, "arguments": arguments}
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    async def started(process: StdioProcess) -> StdioProcess:
        if era != "2026-07-28":
            assert "result" in await _stdio_call(process, 0, initialize_message(version=era))
            await process.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        return process

    async with stdio_server(args, env=env) as first:
        await started(first)
        kept = await _stdio_call(first, 1, message(1, "remember", {"key": "k", "value": [1]}))
        assert kept["result"]["content"] == [{"type": "text", "text": "kept"}]
    async with stdio_server(args, env=env) as second:  # a new process: the record is still there
        await started(second)
        recalled = await _stdio_call(second, 2, message(2, "recall", {"key": "k"}))
        assert recalled["result"]["structuredContent"] == {"value": [1]}
        slow = await _stdio_call(second, 3, message(3, "slow", {}))
    assert slow["result"]["isError"] is True
    assert slow["result"]["content"][0]["text"] == (
        "Tool slow did not finish within its timeout of 0.3 seconds and was cancelled"
    )


@pytest.mark.parametrize("kind", WIRES)
async def test_a_mounted_servers_tools_keep_state_in_the_answering_servers_store(
    kind: str,
) -> None:
    child = state_server("notes")
    parent = Server("desk")
    parent.mount(child, namespace="notes")
    async with wire(kind, parent) as connection:
        assert (
            structured(await connection.call("notes_recall", {"key": "theme", "scope": "server"}))
            == "nothing"
        )
        await connection.call(
            "notes_remember", {"key": "theme", "value": "dark", "scope": "server"}
        )
        assert (
            structured(await connection.call("notes_recall", {"key": "theme", "scope": "server"}))
            == "dark"
        )
    records = parent.runtime.state_stores
    assert records is not None
    assert isinstance(records.records, MemoryKeyValue)
    assert await records.records.get("state:server:theme") == b'"dark"'
