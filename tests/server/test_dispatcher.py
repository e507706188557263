"""The request path: envelope, ``_meta``, version, method, handler, result stamping.

Most tests drive ``await server.handle(raw_dict)`` so they see exactly what goes on the
wire; the ones using ``connect`` also have every response checked against the schema.
"""

import logging
from types import SimpleNamespace

import pytest

from mcpserve import (
    Context,
    InvalidParams,
    MCPError,
    MissingClientCapability,
    Server,
    ToolResult,
)
from mcpserve.protocol import constants as c
from mcpserve.protocol.core import Dispatcher, Handler
from mcpserve.protocol.jsonrpc import dumps, loads
from wire_schema import check, check_response

VERSION = c.META_PROTOCOL_VERSION
CAPS = c.META_CLIENT_CAPABILITIES
SERVER_INFO = c.META_SERVER_INFO
META = {VERSION: "2026-07-28", CAPS: {}}


def request(method, params=None, *, request_id=1, meta=None):
    full = dict(params or {})
    full["_meta"] = dict(META) if meta is None else meta
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": full}


def error_of(response):
    check("JSONRPCErrorResponse", response)
    return response["error"]


# -- -32700 is the transport's; -32600 for bad envelopes ---------------------------------


async def test_unparsed_json_text_is_an_invalid_request_not_a_parse_error():
    server = Server("s")
    response = await server.handle('{"jsonrpc": "2.0", "id": 1, "method": "server/discover"')
    assert error_of(response)["code"] == -32600
    assert "id" not in response


async def test_bytes_are_an_invalid_request_not_a_parse_error():
    server = Server("s")
    response = await server.handle(b"{")
    assert error_of(response)["code"] == -32600


async def test_wrong_jsonrpc_version_is_minus_32600_echoing_the_readable_id():
    server = Server("s")
    response = await server.handle({"jsonrpc": "1.0", "id": 5, "method": "server/discover"})
    assert error_of(response)["code"] == -32600
    assert response["id"] == 5


async def test_missing_jsonrpc_member_is_minus_32600_echoing_the_readable_id():
    server = Server("s")
    response = await server.handle({"id": "r", "method": "server/discover", "params": {}})
    assert error_of(response)["code"] == -32600
    assert response["id"] == "r"


async def test_non_string_method_is_minus_32600_echoing_the_readable_id():
    server = Server("s")
    response = await server.handle({"jsonrpc": "2.0", "id": 3, "method": 7})
    assert error_of(response)["code"] == -32600
    assert response["id"] == 3


async def test_array_params_are_minus_32600_echoing_the_readable_id():
    server = Server("s")
    response = await server.handle(
        {"jsonrpc": "2.0", "id": "a", "method": "server/discover", "params": [META]}
    )
    assert error_of(response)["code"] == -32600
    assert response["id"] == "a"


async def test_batch_array_is_minus_32600_without_id():
    server = Server("s")
    response = await server.handle([request("server/discover")])
    assert error_of(response)["code"] == -32600
    assert "id" not in response


@pytest.mark.parametrize("bad_id", [None, 1.5, 2.0, True, False, {"n": 1}, [1]])
async def test_unreadable_id_is_minus_32600_without_id(bad_id):
    server = Server("s")
    response = await server.handle(request("server/discover", request_id=bad_id))
    assert error_of(response)["code"] == -32600
    assert "id" not in response


async def test_object_with_only_an_id_is_minus_32600_echoing_it():
    server = Server("s")
    response = await server.handle({"jsonrpc": "2.0", "id": 9})
    assert error_of(response)["code"] == -32600
    assert response["id"] == 9


async def test_invalid_request_message_is_one_sentence():
    server = Server("s")
    response = await server.handle([])
    message = error_of(response)["message"]
    assert message
    assert "\n" not in message


# -- notifications and client responses are never answered ------------------------------


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "method": "example.com/unknown-notification", "params": {"x": 1}},
        {"jsonrpc": "2.0", "method": "tools/list", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "method": "server/discover"},
    ],
)
async def test_notifications_are_never_answered(message):
    server = Server("s")
    assert await server.handle(message) is None


async def test_notification_with_an_unsupported_version_is_not_answered():
    server = Server("s")
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": {VERSION: "1900-01-01", CAPS: {}}},
    }
    assert await server.handle(message) is None


async def test_notification_does_not_run_the_handler():
    server = Server("s")
    calls = []

    @server.method("example.com/count")
    def count() -> None:
        calls.append(1)

    assert await server.handle({"jsonrpc": "2.0", "method": "example.com/count"}) is None
    assert calls == []


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "x", "result": {"resultType": "complete"}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "nope"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
    ],
)
async def test_client_responses_are_not_answered(message):
    server = Server("s")
    assert await server.handle(message) is None


async def test_client_error_response_without_id_is_not_answered():
    # JSONRPCErrorResponse's id is optional; answering it would start an error ping-pong.
    server = Server("s")
    message = {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}
    assert await server.handle(message) is None


# -- ids are echoed with their JSON type ---------------------------------------------------


async def test_integer_zero_id_is_echoed_as_integer():
    server = Server("s")
    response = await server.handle(request("server/discover", request_id=0))
    assert response["id"] == 0
    assert type(response["id"]) is int
    assert b'"id":0,' in dumps(response)


async def test_empty_string_id_is_echoed_as_empty_string():
    server = Server("s")
    response = await server.handle(request("server/discover", request_id=""))
    assert response["id"] == ""
    assert b'"id":"",' in dumps(response)


async def test_numeric_string_id_stays_a_string():
    server = Server("s")
    response = await server.handle(request("server/discover", request_id="1"))
    assert response["id"] == "1"
    assert type(response["id"]) is str


@pytest.mark.parametrize("request_id", [2**53 + 1, 2**63 - 1, -(2**63), -1])
async def test_large_and_negative_integer_ids_are_echoed_exactly(request_id):
    server = Server("s")
    wire = dumps(request("server/discover", request_id=request_id))
    response = loads(dumps(await server.handle(loads(wire))))
    assert response["id"] == request_id
    assert type(response["id"]) is int


async def test_error_responses_echo_the_id_with_its_type():
    server = Server("s")
    response = await server.handle(request("example.com/nope", request_id=0))
    assert error_of(response)["code"] == -32601
    assert response["id"] == 0
    assert type(response["id"]) is int


# -- -32601 --------------------------------------------------------------------------------


async def test_unknown_method_is_minus_32601():
    server = Server("s")
    response = await server.handle(request("example.com/nope", request_id=4))
    assert response["id"] == 4
    assert error_of(response)["code"] == -32601
    assert "example.com/nope" in response["error"]["message"]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("initialize", {"protocolVersion": "2026-07-28", "capabilities": {}}),
        ("ping", {}),
        ("logging/setLevel", {"level": "debug"}),
        ("resources/subscribe", {"uri": "notes://a"}),
        ("resources/unsubscribe", {"uri": "notes://a"}),
        ("tasks/result", {"taskId": "t"}),
        ("tasks/list", {}),
    ],
)
async def test_removed_methods_sent_with_modern_meta_are_minus_32601(method, params):
    server = Server("s")

    @server.resource("notes://a")
    def note() -> str:
        return "a"

    response = await server.handle(request(method, params))
    assert error_of(response)["code"] == -32601
    assert response["id"] == 1


async def test_method_not_found_message_truncates_very_long_method_names():
    server = Server("s")
    response = await server.handle(request("x" * 10_000))
    assert error_of(response)["code"] == -32601
    assert len(response["error"]["message"]) < 200


async def test_unknown_method_without_meta_is_minus_32602_because_meta_is_checked_first():
    server = Server("s")
    response = await server.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "example.com/nope", "params": {}}
    )
    assert error_of(response)["code"] == -32602


async def test_unknown_method_with_unsupported_version_is_minus_32022():
    server = Server("s")
    response = await server.handle(
        request("example.com/nope", meta={VERSION: "1900-01-01", CAPS: {}})
    )
    assert error_of(response)["code"] == -32022


# -- versions and the legacy handshake -----------------------------------------------------


async def test_legacy_initialize_without_meta_is_minus_32022_naming_supported_versions():
    server = Server("s", legacy=False)
    response = await server.handle(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "old", "version": "1"},
            },
        }
    )
    check("UnsupportedProtocolVersionError", response)
    assert response["id"] == 0
    error = response["error"]
    assert error["code"] == -32022
    assert error["data"]["supported"] == ["2026-07-28"]
    assert error["data"]["requested"] == "2025-11-25"
    for version in error["data"]["supported"]:
        assert version in error["message"]


async def test_legacy_initialize_without_params_is_minus_32022():
    server = Server("s")
    response = await server.handle({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    check("UnsupportedProtocolVersionError", response)
    assert response["error"]["data"]["requested"] == ""
    assert "2026-07-28" in response["error"]["message"]


async def test_legacy_initialize_with_non_modern_meta_is_minus_32022():
    server = Server("s")
    response = await server.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "_meta": {"progressToken": 1}},
        }
    )
    check("UnsupportedProtocolVersionError", response)
    assert response["error"]["data"]["requested"] == "2025-06-18"


async def test_unsupported_version_is_minus_32022_with_supported_and_requested():
    server = Server("s", legacy=False)
    response = await server.handle(
        request("server/discover", request_id=6, meta={VERSION: "1900-01-01", CAPS: {}})
    )
    check("UnsupportedProtocolVersionError", response)
    assert response["id"] == 6
    assert response["error"]["code"] == -32022
    assert response["error"]["data"] == {"supported": ["2026-07-28"], "requested": "1900-01-01"}


async def test_unsupported_version_is_minus_32022_for_every_method():
    server = Server("s")

    @server.tool
    def noop() -> str:
        return ""

    for method in ("server/discover", "tools/list", "tools/call"):
        response = await server.handle(
            request(method, {"name": "noop"}, meta={VERSION: "2099-01-01", CAPS: {}})
        )
        assert error_of(response)["code"] == -32022


async def test_overlong_requested_version_is_truncated():
    server = Server("s")
    response = await server.handle(
        request("server/discover", meta={VERSION: "9" * 10_000, CAPS: {}})
    )
    assert response["error"]["code"] == -32022
    assert len(response["error"]["data"]["requested"]) <= 64


async def test_legacy_version_in_meta_is_minus_32022_on_a_modern_only_server():
    server = Server("s", legacy=False)
    response = await server.handle(request("tools/list", meta={VERSION: "2025-11-25", CAPS: {}}))
    check("UnsupportedProtocolVersionError", response)
    assert response["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}


async def test_dual_era_server_lists_legacy_versions_in_minus_32022():
    server = Server(
        "s"
    )  # legacy support is on by default (decisions: "Legacy versions in version lists")
    response = await server.handle(request("tools/list", meta={VERSION: "2025-11-25", CAPS: {}}))
    check("UnsupportedProtocolVersionError", response)
    assert response["error"]["data"]["supported"] == ["2026-07-28", *c.HANDSHAKE_VERSIONS]
    assert "initialize" in response["error"]["message"]


async def test_legacy_version_in_meta_says_the_handshake_is_required():
    dispatcher = Dispatcher(
        {"server/discover": Handler(lambda ctx: {}, inline=True)},
        context=lambda request: SimpleNamespace(request=request, mark_cancelled=lambda: None),
        server_info={"name": "d", "version": "1"},
        versions=c.MODERN_VERSIONS,
        handshake_versions=c.HANDSHAKE_VERSIONS,
    )
    response = await dispatcher.handle(
        request("server/discover", meta={VERSION: "2025-11-25", CAPS: {}})
    )
    check("UnsupportedProtocolVersionError", response)
    error = response["error"]
    assert error["code"] == -32022
    assert "initialize" in error["message"]
    assert "2026-07-28" in error["message"]
    assert error["data"]["requested"] == "2025-11-25"
    assert error["data"]["supported"] == ["2026-07-28", *c.HANDSHAKE_VERSIONS]


async def test_supported_version_reaches_the_handler(connect):
    server = Server("s")

    @server.tool
    def version(ctx: Context) -> str:
        return ctx.protocol_version

    async with connect(server) as client:
        result = await client.call_tool("version", {})
    assert result["content"][0]["text"] == "2026-07-28"


async def test_client_with_unsupported_version_gets_minus_32022(connect):
    server = Server("s", legacy=False)
    async with connect(server, protocol_version="1900-01-01") as client:
        with pytest.raises(MCPError) as caught:
            await client.discover()
    assert caught.value.code == -32022
    assert caught.value.data == {"supported": ["2026-07-28"], "requested": "1900-01-01"}


# -- handler failures ----------------------------------------------------------------------


async def test_plain_exception_is_minus_32603_with_a_ref_and_no_details(caplog):
    server = Server("s")

    @server.method("example.com/boom")
    def boom() -> None:
        raise RuntimeError("database password is hunter2")

    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        response = await server.handle(request("example.com/boom", request_id=7))
    error = error_of(response)
    check("InternalError", error)
    assert response["id"] == 7
    assert error["code"] == -32603
    assert "ref " in error["message"]
    assert "hunter2" not in dumps(response).decode()
    assert "RuntimeError" not in dumps(response).decode()
    assert "Traceback" not in dumps(response).decode()
    assert "data" not in error


async def test_plain_exception_is_logged_with_the_same_ref_and_the_traceback(caplog):
    server = Server("s")

    @server.method("example.com/boom")
    def boom() -> None:
        raise RuntimeError("database password is hunter2")

    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        response = await server.handle(request("example.com/boom"))
    ref = response["error"]["message"].split("ref ")[1].rstrip(")")
    assert ref
    records = [record for record in caplog.records if ref in record.getMessage()]
    assert len(records) == 1
    record = records[0]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert record.exc_info[0] is RuntimeError
    assert "Traceback" in caplog.text
    assert "hunter2" in caplog.text


async def test_two_failures_get_different_refs():
    server = Server("s")

    @server.method("example.com/boom")
    def boom() -> None:
        raise ValueError("x")

    first = await server.handle(request("example.com/boom", request_id=1))
    second = await server.handle(request("example.com/boom", request_id=2))
    assert first["error"]["message"] != second["error"]["message"]


async def test_exception_in_a_resource_is_minus_32603():
    server = Server("s")

    @server.resource("notes://broken")
    def broken() -> str:
        raise OSError("disk on fire at /secret/path")

    response = await server.handle(request("resources/read", {"uri": "notes://broken"}))
    assert error_of(response)["code"] == -32603
    assert "/secret/path" not in response["error"]["message"]


async def test_exception_in_a_middleware_is_minus_32603():
    server = Server("s")

    @server.middleware
    async def broken(ctx, call_next):
        raise KeyError("internal-key")

    response = await server.handle(request("server/discover"))
    assert error_of(response)["code"] == -32603
    assert "internal-key" not in response["error"]["message"]


async def test_invalid_params_raised_by_a_custom_method_passes_through():
    server = Server("s")

    @server.method("example.com/check")
    def check_it() -> None:
        raise InvalidParams("Widget 7 does not exist", data={"widget": 7})

    response = await server.handle(request("example.com/check", request_id="c"))
    assert response == {
        "jsonrpc": "2.0",
        "id": "c",
        "error": {"code": -32602, "message": "Widget 7 does not exist", "data": {"widget": 7}},
    }


async def test_mcp_error_subclass_with_its_own_code_passes_through():
    class QuotaExceeded(MCPError):
        code = -31001

    server = Server("s")

    @server.method("example.com/spend")
    async def spend() -> None:
        raise QuotaExceeded("Quota exceeded for today", data={"retryAfterS": 3600})

    response = await server.handle(request("example.com/spend"))
    assert error_of(response) == {
        "code": -31001,
        "message": "Quota exceeded for today",
        "data": {"retryAfterS": 3600},
    }


async def test_mcp_error_with_code_argument_passes_through():
    server = Server("s")

    @server.method("example.com/teapot")
    def teapot() -> None:
        raise MCPError("I am a teapot", code=-31418)

    response = await server.handle(request("example.com/teapot"))
    assert error_of(response) == {"code": -31418, "message": "I am a teapot"}


async def test_missing_client_capability_is_minus_32021_with_required_capabilities():
    server = Server("s")

    @server.method("example.com/ask")
    def ask() -> None:
        raise MissingClientCapability({"elicitation": {"form": {}}})

    response = await server.handle(request("example.com/ask"))
    check("MissingRequiredClientCapabilityError", response)
    assert response["error"]["code"] == -32021
    assert response["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_custom_method_error_reaches_the_client_with_code_message_and_data(connect):
    server = Server("s")

    @server.method("example.com/check")
    def check_it() -> None:
        raise InvalidParams("Widget 7 does not exist", data={"widget": 7})

    async with connect(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.request("example.com/check")
    assert caught.value.code == -32602
    assert caught.value.message == "Widget 7 does not exist"
    assert caught.value.data == {"widget": 7}


async def test_internal_error_reaches_the_client_as_minus_32603(connect):
    server = Server("s")

    @server.method("example.com/boom")
    def boom() -> None:
        raise RuntimeError("secret")

    async with connect(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.request("example.com/boom")
    assert caught.value.code == -32603
    assert "secret" not in caught.value.message


# -- result stamping -----------------------------------------------------------------------


async def test_every_result_has_result_type_complete_and_server_info(connect):
    server = Server("stamp", version="2.1.0")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.resource("notes://a")
    def note() -> str:
        return "a"

    @server.resource("notes://{name}")
    def named(name: str) -> str:
        return name

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return ["ann", "bob"]

    @server.method("example.com/noop")
    def noop() -> None:
        return None

    calls = [
        ("server/discover", None),
        ("tools/list", None),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
        ("resources/list", None),
        ("resources/templates/list", None),
        ("resources/read", {"uri": "notes://a"}),
        ("prompts/list", None),
        ("prompts/get", {"name": "greet", "arguments": {"name": "x"}}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": "a"},
            },
        ),
        ("example.com/noop", None),
    ]
    async with connect(server) as client:
        for method, params in calls:
            result = await client.request(method, params)
            assert result["resultType"] == "complete", method
            assert result["_meta"][SERVER_INFO] == {"name": "stamp", "version": "2.1.0"}, method


async def test_custom_method_returning_none_gets_an_empty_stamped_result():
    server = Server("s", version="1.0.0")

    @server.method("example.com/noop")
    def noop() -> None:
        return None

    response = await server.handle(request("example.com/noop"))
    check_response("example.com/noop", response)
    assert response["result"] == {
        "resultType": "complete",
        "_meta": {SERVER_INFO: {"name": "s", "version": "1.0.0"}},
    }


async def test_user_meta_in_a_result_is_merged_with_server_info():
    server = Server("s", version="1.0.0")

    @server.method("example.com/meta")
    def with_meta() -> dict:
        return {"value": 1, "_meta": {"example.com/trace": "abc"}}

    response = await server.handle(request("example.com/meta"))
    assert response["result"]["_meta"] == {
        SERVER_INFO: {"name": "s", "version": "1.0.0"},
        "example.com/trace": "abc",
    }
    assert response["result"]["value"] == 1


async def test_tool_result_meta_is_merged_with_server_info(connect):
    server = Server("s", version="1.0.0")

    @server.tool
    def tagged() -> ToolResult:
        return ToolResult(content=["ok"], meta={"example.com/tag": "t"})

    async with connect(server) as client:
        result = await client.call_tool("tagged", {})
    assert result["_meta"] == {
        SERVER_INFO: {"name": "s", "version": "1.0.0"},
        "example.com/tag": "t",
    }


async def test_server_info_in_results_false_omits_result_meta():
    server = Server("s", server_info_in_results=False)

    @server.tool
    def noop() -> str:
        return ""

    for method in ("server/discover", "tools/list"):
        response = await server.handle(request(method))
        check_response(method, response)
        assert response["result"]["resultType"] == "complete"
        assert "_meta" not in response["result"]


async def test_server_info_in_results_false_keeps_user_meta():
    server = Server("s", server_info_in_results=False)

    @server.method("example.com/meta")
    def with_meta() -> dict:
        return {"_meta": {"example.com/trace": "abc"}}

    response = await server.handle(request("example.com/meta"))
    assert response["result"]["_meta"] == {"example.com/trace": "abc"}


async def test_server_info_carries_title_description_website_and_icons():
    icons = [{"src": "https://example.com/icon.png", "mimeType": "image/png"}]
    server = Server(
        "s",
        version="3.0.0",
        title="Shiny",
        description="Does things",
        website_url="https://example.com",
        icons=icons,
    )
    response = await server.handle(request("server/discover"))
    info = response["result"]["_meta"][SERVER_INFO]
    check("Implementation", info)
    assert info == {
        "name": "s",
        "version": "3.0.0",
        "title": "Shiny",
        "description": "Does things",
        "websiteUrl": "https://example.com",
        "icons": icons,
    }


async def test_mutating_one_response_does_not_change_the_next():
    server = Server("s", version="1.0.0")
    first = await server.handle(request("server/discover", request_id=1))
    first["result"]["_meta"]["example.com/leak"] = True
    first["result"]["_meta"][SERVER_INFO]["name"] = "changed"
    second = await server.handle(request("server/discover", request_id=2))
    assert second["result"]["_meta"] == {SERVER_INFO: {"name": "s", "version": "1.0.0"}}


async def test_results_are_json_serialisable_on_one_line():
    server = Server("s", instructions="Line one.\nLine two.")
    response = await server.handle(request("server/discover"))
    assert b"\n" not in dumps(response)


# -- methods gated by what the server offers ----------------------------------------------


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/list", {}),
        ("tools/call", {"name": "anything", "arguments": {}}),
    ],
)
async def test_server_without_tools_answers_tool_methods_with_minus_32601(method, params):
    server = Server("s")

    @server.prompt
    def greet() -> str:
        return "hi"

    response = await server.handle(request(method, params))
    assert error_of(response)["code"] == -32601


async def test_server_without_tools_answers_tools_call_without_name_with_minus_32601():
    server = Server("s")
    response = await server.handle(request("tools/call", {}))
    assert error_of(response)["code"] == -32601


@pytest.mark.parametrize(
    ("method", "params"),
    [("prompts/list", {}), ("prompts/get", {"name": "greet"}), ("prompts/get", {})],
)
async def test_server_without_prompts_answers_prompt_methods_with_minus_32601(method, params):
    server = Server("s")

    @server.tool
    def noop() -> str:
        return ""

    response = await server.handle(request(method, params))
    assert error_of(response)["code"] == -32601


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "notes://a"}),
        ("resources/read", {}),
    ],
)
async def test_server_without_resources_answers_resource_methods_with_minus_32601(method, params):
    server = Server("s")

    @server.tool
    def noop() -> str:
        return ""

    response = await server.handle(request(method, params))
    assert error_of(response)["code"] == -32601


async def test_server_without_completers_answers_completion_with_minus_32601():
    server = Server("s")

    @server.prompt
    def greet(name: str) -> str:
        return name

    response = await server.handle(
        request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": ""},
            },
        )
    )
    assert error_of(response)["code"] == -32601


async def test_server_with_only_templates_serves_resources_list():
    server = Server("s")

    @server.resource("notes://{name}")
    def named(name: str) -> str:
        return name

    response = await server.handle(request("resources/list"))
    check_response("resources/list", response)
    assert response["result"]["resources"] == []


async def test_server_with_only_fixed_resources_serves_templates_list():
    server = Server("s")

    @server.resource("notes://a")
    def note() -> str:
        return "a"

    response = await server.handle(request("resources/templates/list"))
    check_response("resources/templates/list", response)
    assert response["result"]["resourceTemplates"] == []


async def test_gated_methods_reach_the_client_as_minus_32601(connect):
    server = Server("s")
    async with connect(server) as client:
        for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
            with pytest.raises(MCPError) as caught:
                await client.request(method)
            assert caught.value.code == -32601, method


async def test_unknown_tool_on_a_server_with_tools_is_minus_32602():
    server = Server("s")

    @server.tool
    def noop() -> str:
        return ""

    response = await server.handle(request("tools/call", {"name": "missing"}))
    assert error_of(response)["code"] == -32602
