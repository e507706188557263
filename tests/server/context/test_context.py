"""The per-request Context: facts from ``_meta``, progress and logging."""

import logging
from typing import Any

import pytest

from mcpserve import LATEST_VERSION, Context, MCPError, Server

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def context_probe(**options: Any) -> Server:
    """A server whose ``probe`` tool reports what its Context says."""
    server = Server("t", **options)

    @server.tool
    def probe(ctx: Context) -> dict[str, Any]:
        return {
            "request_id": ctx.request_id,
            "method": ctx.method,
            "protocol_version": ctx.protocol_version,
            "client_info": ctx.client_info,
            "client_capabilities": ctx.client_capabilities,
            "log_level": ctx.log_level,
            "progress_token": ctx.progress_token,
            "trace_context": ctx.trace_context,
            "principal": ctx.principal,
            "scopes": sorted(ctx.scopes),
            "cancelled": ctx.cancelled,
        }

    return server


async def probe(client: Any, **options: Any) -> dict[str, Any]:
    result = await client.call_tool("probe", {}, **options)
    return result["structuredContent"]  # type: ignore[no-any-return]


def notifications(client: Any, method: str) -> list[dict[str, Any]]:
    return [n["params"] for n in client.notifications if n["method"] == method]


# --------------------------------------------------------------------------- facts


async def test_context_reports_the_request_id_unchanged(connect: Any) -> None:
    server = context_probe()
    async with connect(server) as client:
        message = {
            "jsonrpc": "2.0",
            "id": "req-7",
            "method": "tools/call",
            "params": {"name": "probe", "_meta": client.meta()},
        }
        response = await client.connection.request(message)
    assert response["id"] == "req-7"
    assert response["result"]["structuredContent"]["request_id"] == "req-7"


async def test_context_reports_the_method(connect: Any) -> None:
    async with connect(context_probe()) as client:
        assert (await probe(client))["method"] == "tools/call"


async def test_context_reports_the_protocol_version(connect: Any) -> None:
    async with connect(context_probe()) as client:
        assert (await probe(client))["protocol_version"] == LATEST_VERSION


async def test_context_reports_the_client_info(connect: Any) -> None:
    info = {"name": "ExampleClient", "version": "1.0.0"}
    async with connect(context_probe(), client_info=info) as client:
        assert (await probe(client))["client_info"] == info


async def test_context_reports_this_requests_client_capabilities(connect: Any) -> None:
    async with connect(context_probe(), capabilities={"roots": {}}) as client:
        default = await probe(client)
        override = await probe(client, capabilities={"sampling": {"tools": {}}})
    assert default["client_capabilities"] == {"roots": {}}
    assert override["client_capabilities"] == {"sampling": {"tools": {}}}


async def test_context_reports_the_log_level_only_when_requested(connect: Any) -> None:
    async with connect(context_probe()) as client:
        without = await probe(client)
        with_level = await probe(client, log_level="warning")
    assert without["log_level"] is None
    assert with_level["log_level"] == "warning"


async def test_context_reports_the_progress_token_only_when_given(connect: Any) -> None:
    async with connect(context_probe()) as client:
        without = await probe(client)
        string_token = await probe(client, progress_token="abc")
        int_token = await probe(client, progress_token=0)
    assert without["progress_token"] is None
    assert string_token["progress_token"] == "abc"
    assert int_token["progress_token"] == 0


async def test_context_reports_w3c_trace_context_from_meta(connect: Any) -> None:
    async with connect(context_probe()) as client:
        meta = {**client.meta(), "traceparent": TRACEPARENT, "tracestate": "vendor=1"}
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "probe", "_meta": meta},
        }
        response = await client.connection.request(message)
        plain = await probe(client)
    assert response["result"]["structuredContent"]["trace_context"] == {
        "traceparent": TRACEPARENT,
        "tracestate": "vendor=1",
    }
    assert plain["trace_context"] == {}


async def test_anonymous_request_has_no_principal_and_no_scopes(connect: Any) -> None:
    async with connect(context_probe()) as client:
        facts = await probe(client)
    assert facts["principal"] is None
    assert facts["scopes"] == []
    assert facts["cancelled"] is False


async def test_scopes_restrict_nothing_without_authentication(connect: Any) -> None:
    server = Server("t")

    @server.tool(scopes=["notes:write"])
    def check(ctx: Context) -> list[bool]:
        ctx.require_scopes("admin")  # no authentication: nothing to require
        return [ctx.has_scope("notes:read"), ctx.has_scope("a", "b"), ctx.has_scope()]

    async with connect(server) as client:
        listed = await client.list_tools()
        result = await client.call_tool("check", {})
    assert [tool["name"] for tool in listed] == ["check"]
    assert result["structuredContent"] == [True, True, True]


async def test_client_supports_checks_this_requests_capabilities(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def supports(ctx: Context) -> list[bool]:
        return [
            ctx.client_supports({"sampling": {}}),
            ctx.client_supports({"sampling": {"tools": {}}}),
            ctx.client_supports({"elicitation": {"form": {}}}),
            ctx.client_supports({}),
        ]

    async with connect(server) as client:
        declared = await client.call_tool(
            "supports", {}, capabilities={"sampling": {}, "elicitation": {}}
        )
        bare = await client.call_tool("supports", {})
    assert declared["structuredContent"] == [True, False, True, True]
    assert bare["structuredContent"] == [False, False, False, True]


# --------------------------------------------------------------------------- progress


def progress_server() -> Server:
    server = Server("t")

    @server.tool
    async def build(ctx: Context) -> list[bool]:
        return [
            await ctx.progress(50, total=100, message="Reticulating splines..."),
            await ctx.progress(100, total=100, message="Done"),
        ]

    return server


async def test_progress_without_a_token_sends_nothing_and_returns_false(connect: Any) -> None:
    async with connect(progress_server()) as client:
        result = await client.call_tool("build", {})
    assert result["structuredContent"] == [False, False]
    assert client.notifications == []


async def test_progress_with_a_token_sends_progress_notifications(connect: Any) -> None:
    async with connect(progress_server()) as client:
        result = await client.call_tool("build", {}, progress_token="oivaizmir")
    assert result["structuredContent"] == [True, True]
    assert client.notifications == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": "oivaizmir",
                "progress": 50,
                "total": 100,
                "message": "Reticulating splines...",
            },
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": "oivaizmir",
                "progress": 100,
                "total": 100,
                "message": "Done",
            },
        },
    ]


async def test_progress_omits_total_and_message_when_not_given(connect: Any) -> None:
    server = Server("t")

    @server.tool
    async def tick(ctx: Context) -> None:
        await ctx.progress(0.5)

    async with connect(server) as client:
        await client.call_tool("tick", {}, progress_token=9)
    assert notifications(client, "notifications/progress") == [
        {"progressToken": 9, "progress": 0.5}
    ]


async def test_progress_that_does_not_increase_is_dropped(connect: Any) -> None:
    server = Server("t")

    @server.tool
    async def jumpy(ctx: Context) -> list[bool]:
        return [
            await ctx.progress(1),
            await ctx.progress(1),
            await ctx.progress(0.5),
            await ctx.progress(1.5),
        ]

    async with connect(server) as client:
        result = await client.call_tool("jumpy", {}, progress_token="t")
    assert result["structuredContent"] == [True, False, False, True]
    assert [p["progress"] for p in notifications(client, "notifications/progress")] == [1, 1.5]


async def test_progress_is_tracked_per_request(connect: Any) -> None:
    server = Server("t")

    @server.tool
    async def once(ctx: Context) -> bool:
        return await ctx.progress(1)

    async with connect(server) as client:
        first = await client.call_tool("once", {}, progress_token="a")
        second = await client.call_tool("once", {}, progress_token="b")
    assert first["structuredContent"] is second["structuredContent"] is True
    assert [p["progressToken"] for p in notifications(client, "notifications/progress")] == [
        "a",
        "b",
    ]


@pytest.mark.parametrize("token", ["abc123", 7], ids=["string", "integer"])
async def test_progress_notifications_echo_the_token_with_its_json_type(
    connect: Any, token: Any
) -> None:
    async with connect(progress_server()) as client:
        await client.call_tool("build", {}, progress_token=token)
    tokens = [p["progressToken"] for p in notifications(client, "notifications/progress")]
    assert tokens == [token, token]
    assert all(type(sent) is type(token) for sent in tokens)


async def test_progress_without_a_stream_to_send_on_is_a_no_op() -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "build",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": LATEST_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "progressToken": "t",
            },
        },
    }
    response = await progress_server().handle(message)  # no send callable
    assert response is not None
    assert response["result"]["structuredContent"] == [False, False]


# --------------------------------------------------------------------------- logging


def logging_server(*, client_logging: bool = True) -> Server:
    server = Server("t", client_logging=client_logging)

    @server.tool
    async def work(ctx: Context) -> list[bool]:
        return [
            await ctx.log("debug", "cache lookup"),
            await ctx.log("info", "starting"),
            await ctx.log("warning", "slow disk"),
            await ctx.log(
                "error",
                {"error": "Connection failed", "details": {"host": "localhost", "port": 5432}},
                logger="database",
            ),
        ]

    return server


async def test_log_sends_messages_at_or_above_the_requested_level(connect: Any) -> None:
    async with connect(logging_server()) as client:
        result = await client.call_tool("work", {}, log_level="warning")
    assert result["structuredContent"] == [False, False, True, True]
    assert notifications(client, "notifications/message") == [
        {"level": "warning", "data": "slow disk"},
        {
            "level": "error",
            "logger": "database",
            "data": {"error": "Connection failed", "details": {"host": "localhost", "port": 5432}},
        },
    ]


LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


@pytest.mark.parametrize("requested", LEVELS)
async def test_log_filters_below_each_requested_level(connect: Any, requested: str) -> None:
    server = Server("t", client_logging=True)

    @server.tool
    async def every_level(ctx: Context) -> list[bool]:
        return [await ctx.log(level, level) for level in LEVELS]

    async with connect(server) as client:
        result = await client.call_tool("every_level", {}, log_level=requested)
    expected = LEVELS[LEVELS.index(requested) :]
    assert [p["level"] for p in notifications(client, "notifications/message")] == expected
    assert result["structuredContent"] == [level in expected for level in LEVELS]


async def test_log_at_debug_level_sends_everything(connect: Any) -> None:
    async with connect(logging_server()) as client:
        await client.call_tool("work", {}, log_level="debug")
    levels = [p["level"] for p in notifications(client, "notifications/message")]
    assert levels == ["debug", "info", "warning", "error"]


async def test_log_sends_nothing_without_a_requested_level(connect: Any) -> None:
    async with connect(logging_server()) as client:
        result = await client.call_tool("work", {})
    assert result["structuredContent"] == [False, False, False, False]
    assert client.notifications == []


async def test_log_sends_nothing_when_client_logging_is_off(connect: Any) -> None:
    async with connect(logging_server(client_logging=False)) as client:
        result = await client.call_tool("work", {}, log_level="debug")
    assert result["structuredContent"] == [False, False, False, False]
    assert client.notifications == []


async def test_logging_capability_is_declared_only_with_client_logging(connect: Any) -> None:
    async with connect(logging_server()) as client:
        assert (await client.discover())["capabilities"]["logging"] == {}
    async with connect(logging_server(client_logging=False)) as client:
        assert "logging" not in (await client.discover())["capabilities"]


async def test_log_also_reaches_python_logging(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="mcpserve.client"):
        async with connect(logging_server(client_logging=False)) as client:
            await client.call_tool("work", {})
    records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert ("mcpserve.client", logging.DEBUG, "cache lookup") in records
    assert ("mcpserve.client", logging.WARNING, "slow disk") in records
    assert any(
        name == "mcpserve.client.database" and level == logging.ERROR for name, level, _ in records
    )


async def test_unknown_log_level_in_the_request_is_invalid_params(connect: Any) -> None:
    async with connect(logging_server()) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("work", {}, log_level="verbose")
    assert info.value.code == -32602


async def test_log_with_an_unknown_level_is_a_programming_error(connect: Any) -> None:
    server = Server("t", client_logging=True)
    errors: list[str] = []

    @server.tool
    async def bad(ctx: Context) -> None:
        try:
            await ctx.log("loud", "x")
        except ValueError as exc:
            errors.append(str(exc))

    async with connect(server) as client:
        await client.call_tool("bad", {}, log_level="debug")
    assert len(errors) == 1
    assert "loud" in errors[0]
    assert client.notifications == []
