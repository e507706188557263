"""Per-request ``_meta``: required fields, nothing remembered, unknown keys ignored."""

import json

import pytest

from mcpserve import Context, Server
from mcpserve.protocol import constants as c
from mcpserve.protocol.errors import InvalidParams
from mcpserve.protocol.meta import InvalidMeta, RequestMeta, read_meta

VERSION = c.META_PROTOCOL_VERSION
CAPS = c.META_CLIENT_CAPABILITIES


def meta(**extra):
    """A minimal valid ``_meta`` plus ``extra`` keys."""
    return {VERSION: "2026-07-28", CAPS: {}, **extra}


def call(tool, params_meta, request_id=1):
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": params_meta},
    }


# -- required fields ----------------------------------------------------------------------


def test_minimal_meta_is_read():
    read = read_meta({"_meta": meta()})
    assert isinstance(read, RequestMeta)
    assert read.protocol_version == "2026-07-28"
    assert read.client_capabilities == {}


def test_missing_params_is_invalid_meta_naming_both_fields():
    with pytest.raises(InvalidMeta) as caught:
        read_meta(None)
    assert caught.value.code == -32602
    assert caught.value.data == {"missing": [VERSION, CAPS]}


def test_missing_meta_is_invalid_meta_naming_both_fields():
    with pytest.raises(InvalidMeta) as caught:
        read_meta({"cursor": "x"})
    assert caught.value.data == {"missing": [VERSION, CAPS]}


@pytest.mark.parametrize("value", [None, [], "meta", 1])
def test_meta_that_is_not_an_object_is_invalid_meta(value):
    with pytest.raises(InvalidMeta) as caught:
        read_meta({"_meta": value})
    assert caught.value.data == {"missing": [VERSION, CAPS]}


def test_missing_protocol_version_is_invalid_meta_naming_it():
    with pytest.raises(InvalidMeta) as caught:
        read_meta({"_meta": {CAPS: {}}})
    assert caught.value.code == -32602
    assert caught.value.data == {"missing": [VERSION]}
    assert VERSION in caught.value.message


def test_missing_client_capabilities_is_invalid_meta_naming_it():
    with pytest.raises(InvalidMeta) as caught:
        read_meta({"_meta": {VERSION: "2026-07-28"}})
    assert caught.value.code == -32602
    assert caught.value.data == {"missing": [CAPS]}
    assert CAPS in caught.value.message


def test_empty_meta_names_both_fields():
    with pytest.raises(InvalidMeta) as caught:
        read_meta({"_meta": {}})
    assert caught.value.data == {"missing": [VERSION, CAPS]}


@pytest.mark.parametrize("version", [20260728, None, ["2026-07-28"], {"v": 1}])
def test_non_string_protocol_version_is_invalid_meta(version):
    with pytest.raises(InvalidMeta) as caught:
        read_meta({"_meta": {VERSION: version, CAPS: {}}})
    assert caught.value.data == {"missing": [VERSION]}


@pytest.mark.parametrize("capabilities", [None, [], "all", True, 1])
def test_non_object_client_capabilities_is_invalid_meta(capabilities):
    with pytest.raises(InvalidMeta) as caught:
        read_meta({"_meta": {VERSION: "2026-07-28", CAPS: capabilities}})
    assert caught.value.data == {"missing": [CAPS]}


def test_invalid_meta_is_an_invalid_params_error():
    assert issubclass(InvalidMeta, InvalidParams)
    assert InvalidMeta("x").code == c.INVALID_PARAMS


# -- optional fields ----------------------------------------------------------------------


def test_client_info_is_optional():
    assert read_meta({"_meta": meta()}).client_info is None


def test_client_info_is_read_when_present():
    info = {"name": "c", "version": "1"}
    assert read_meta({"_meta": meta(**{c.META_CLIENT_INFO: info})}).client_info == info


def test_malformed_client_info_is_ignored_not_rejected():
    assert read_meta({"_meta": meta(**{c.META_CLIENT_INFO: "me"})}).client_info is None


def test_log_level_is_read():
    assert read_meta({"_meta": meta(**{c.META_LOG_LEVEL: "warning"})}).log_level == "warning"


def test_log_level_is_none_when_absent():
    assert read_meta({"_meta": meta()}).log_level is None


@pytest.mark.parametrize("level", ["verbose", "WARNING", "", 3])
def test_unknown_log_level_is_invalid_params(level):
    with pytest.raises(InvalidParams) as caught:
        read_meta({"_meta": meta(**{c.META_LOG_LEVEL: level})})
    assert caught.value.code == -32602
    assert caught.value.data == {"supported": list(c.LOG_LEVELS)}


@pytest.mark.parametrize("level", [["debug"], {"level": "debug"}])
def test_unhashable_log_level_is_invalid_params(level):
    with pytest.raises(InvalidParams) as caught:
        read_meta({"_meta": meta(**{c.META_LOG_LEVEL: level})})
    assert caught.value.code == -32602


def test_overlong_unknown_log_level_is_truncated_in_the_message():
    with pytest.raises(InvalidParams) as caught:
        read_meta({"_meta": meta(**{c.META_LOG_LEVEL: "x" * 1000})})
    assert len(caught.value.message) < 120


@pytest.mark.parametrize("token", ["tok", "", 0, 42, -1])
def test_string_and_integer_progress_tokens_are_read(token):
    read = read_meta({"_meta": meta(progressToken=token)})
    assert read.progress_token == token
    assert type(read.progress_token) is type(token)


def test_progress_token_is_none_when_absent():
    assert read_meta({"_meta": meta()}).progress_token is None


@pytest.mark.parametrize("token", [1.5, True, [1], {"t": 1}])
def test_progress_token_of_another_type_is_invalid_params(token):
    with pytest.raises(InvalidParams) as caught:
        read_meta({"_meta": meta(progressToken=token)})
    assert caught.value.code == -32602


def test_trace_keys_are_read():
    trace = {
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "tracestate": "rojo=00f067aa0ba902b7",
        "baggage": "userId=alice",
    }
    assert read_meta({"_meta": meta(**trace)}).trace == trace


def test_trace_is_empty_without_trace_keys():
    assert read_meta({"_meta": meta()}).trace == {}


def test_non_string_trace_values_are_ignored_not_rejected():
    read = read_meta({"_meta": meta(traceparent=5, baggage="a=b")})
    assert read.trace == {"baggage": "a=b"}


def test_unknown_meta_keys_are_ignored_and_kept_in_raw():
    raw = meta(**{"example.com/custom": {"x": 1}, "io.modelcontextprotocol/future": 3})
    read = read_meta({"_meta": raw})
    assert read.raw == raw


# -- through the server: nothing is remembered --------------------------------------------


async def test_two_requests_with_different_capabilities_are_each_seen_by_the_tool():
    server = Server("caps")

    @server.tool
    def capabilities(ctx: Context) -> str:
        return json.dumps(ctx.client_capabilities, sort_keys=True)

    first = await server.handle(call("capabilities", meta(**{CAPS: {"sampling": {}}}), 1))
    second = await server.handle(call("capabilities", meta(**{CAPS: {"roots": {}}}), 2))
    third = await server.handle(call("capabilities", meta(), 3))
    assert json.loads(first["result"]["content"][0]["text"]) == {"sampling": {}}
    assert json.loads(second["result"]["content"][0]["text"]) == {"roots": {}}
    assert json.loads(third["result"]["content"][0]["text"]) == {}


async def test_capabilities_declared_by_the_client_are_per_request(connect):
    server = Server("caps")

    @server.tool
    def supports_sampling(ctx: Context) -> str:
        return "yes" if ctx.client_supports({"sampling": {}}) else "no"

    async with connect(server, capabilities={"sampling": {}}) as client:
        with_it = await client.call_tool("supports_sampling", {})
        without = await client.call_tool("supports_sampling", {}, capabilities={})
        again = await client.call_tool("supports_sampling", {})
    assert with_it["content"][0]["text"] == "yes"
    assert without["content"][0]["text"] == "no"
    assert again["content"][0]["text"] == "yes"


async def test_client_info_protocol_version_and_log_level_are_per_request():
    server = Server("who", client_logging=True)

    @server.tool
    def who(ctx: Context) -> str:
        return json.dumps([ctx.client_info, ctx.protocol_version, ctx.log_level])

    first = await server.handle(
        call(
            "who",
            meta(**{c.META_CLIENT_INFO: {"name": "a", "version": "1"}, c.META_LOG_LEVEL: "debug"}),
            1,
        )
    )
    second = await server.handle(call("who", meta(), 2))
    assert json.loads(first["result"]["content"][0]["text"]) == [
        {"name": "a", "version": "1"},
        "2026-07-28",
        "debug",
    ]
    assert json.loads(second["result"]["content"][0]["text"]) == [None, "2026-07-28", None]


async def test_trace_context_reaches_the_handler():
    server = Server("trace")

    @server.tool
    def trace(ctx: Context) -> str:
        return json.dumps(ctx.trace_context)

    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    response = await server.handle(call("trace", meta(traceparent=traceparent)))
    assert json.loads(response["result"]["content"][0]["text"]) == {"traceparent": traceparent}


async def test_progress_token_reaches_the_handler():
    server = Server("progress")

    @server.tool
    def token(ctx: Context) -> str:
        return json.dumps(ctx.progress_token)

    response = await server.handle(call("token", meta(progressToken=0)))
    assert json.loads(response["result"]["content"][0]["text"]) == 0


async def test_request_without_meta_is_answered_with_minus_32602_naming_both_fields():
    server = Server("m")

    @server.tool
    def noop() -> str:
        return ""

    response = await server.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    )
    assert response["id"] == 1
    assert response["error"]["code"] == -32602
    assert response["error"]["data"]["missing"] == [VERSION, CAPS]
    assert "2026-07-28" in response["error"]["data"]["supported"]


async def test_request_without_params_is_answered_with_minus_32602():
    server = Server("m")
    response = await server.handle({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
    assert response["error"]["code"] == -32602
    assert response["error"]["data"]["missing"] == [VERSION, CAPS]
    assert "2026-07-28" in response["error"]["data"]["supported"]


async def test_missing_client_capabilities_is_answered_with_minus_32602_naming_it():
    server = Server("m")
    response = await server.handle(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "server/discover",
            "params": {"_meta": {VERSION: "2026-07-28"}},
        }
    )
    assert response["id"] == 5
    assert response["error"]["code"] == -32602
    assert response["error"]["data"]["missing"] == [CAPS]
    assert "2026-07-28" in response["error"]["data"]["supported"]


async def test_bad_log_level_is_answered_with_minus_32602():
    server = Server("m")
    response = await server.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "server/discover",
            "params": {"_meta": meta(**{c.META_LOG_LEVEL: "loud"})},
        }
    )
    assert response["error"]["code"] == -32602


async def test_unhashable_log_level_is_answered_with_minus_32602_not_an_exception():
    server = Server("m")
    response = await server.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "server/discover",
            "params": {"_meta": meta(**{c.META_LOG_LEVEL: ["debug"]})},
        }
    )
    assert response["id"] == 1
    assert response["error"]["code"] == -32602
