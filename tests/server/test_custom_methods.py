"""Custom JSON-RPC methods registered with ``@server.method``."""

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel

from mcpserve import Context, MCPError, Server

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


class Status(BaseModel):
    healthy: bool
    version: str


@dataclasses.dataclass
class Counter:
    count: int


async def test_custom_method_receives_validated_params_and_returns_a_dict(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/echo")
    def echo(text: str, times: int = 1) -> dict[str, Any]:
        return {"echo": text * times}

    async with connect(server) as client:
        result = await client.request("acme/echo", {"text": "ab", "times": 2})
    assert result["echo"] == "abab"


async def test_result_carries_result_type_and_server_info(connect: Any) -> None:
    server = Server("t", version="2.0.0")

    @server.method("acme/echo")
    def echo(text: str) -> dict[str, Any]:
        return {"echo": text}

    async with connect(server) as client:
        result = await client.request("acme/echo", {"text": "x"})
    assert result == {
        "echo": "x",
        "resultType": "complete",
        "_meta": {SERVER_INFO: {"name": "t", "version": "2.0.0"}},
    }


async def test_server_info_can_be_left_out_of_results(connect: Any) -> None:
    server = Server("t", server_info_in_results=False)

    @server.method("acme/ping")
    def ping() -> None:
        return None

    async with connect(server) as client:
        result = await client.request("acme/ping")
    assert result == {"resultType": "complete"}


async def test_none_result_is_an_empty_result(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/ping")
    def ping() -> None:
        return None

    async with connect(server) as client:
        result = await client.request("acme/ping")
    assert {key: value for key, value in result.items() if key != "_meta"} == {
        "resultType": "complete"
    }


async def test_pydantic_model_result_is_dumped(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/status")
    async def status() -> Status:
        return Status(healthy=True, version="1.2.3")

    async with connect(server) as client:
        result = await client.request("acme/status")
    assert result["healthy"] is True
    assert result["version"] == "1.2.3"


async def test_dataclass_result_is_dumped(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/count")
    def count() -> Counter:
        return Counter(7)

    async with connect(server) as client:
        result = await client.request("acme/count")
    assert result["count"] == 7


async def test_params_that_do_not_validate_are_invalid_params(connect: Any) -> None:
    calls: list[Any] = []
    server = Server("t")

    @server.method("acme/echo")
    def echo(text: str, times: int = 1) -> dict[str, Any]:
        calls.append(text)
        return {}

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("acme/echo", {"text": "a", "times": "many"})
    assert info.value.code == -32602
    assert "acme/echo" in info.value.message
    assert calls == []


async def test_missing_required_param_is_invalid_params(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/echo")
    def echo(text: str) -> dict[str, Any]:
        return {}

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("acme/echo")
    assert info.value.code == -32602


def test_handler_taking_var_keyword_params_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match="by name"):

        @server.method("acme/anything")
        def anything(**params: Any) -> None:
            return None


async def test_custom_method_may_take_the_context(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/whoami")
    def whoami(ctx: Context) -> dict[str, Any]:
        return {"method": ctx.method, "client": ctx.client_info}

    async with connect(server, client_info={"name": "probe", "version": "1"}) as client:
        result = await client.request("acme/whoami")
    assert result["method"] == "acme/whoami"
    assert result["client"] == {"name": "probe", "version": "1"}


async def test_custom_method_error_is_masked(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/fail")
    def fail() -> None:
        raise ValueError("internal detail")

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("acme/fail")
    assert info.value.code == -32603
    assert "internal detail" not in info.value.message


async def test_a_result_that_is_not_an_object_is_an_internal_error(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/pairs")
    def pairs() -> list[list[object]]:
        return [["a", 1]]  # a list, even one dict() would turn into an object, is no result

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("acme/pairs")
    assert info.value.code == -32603


async def test_custom_method_may_raise_an_mcp_error(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/missing")
    def missing(key: str) -> None:
        raise MCPError(f"No such key: {key}", code=-32602, data={"key": key})

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("acme/missing", {"key": "k"})
    assert (info.value.code, info.value.data) == (-32602, {"key": "k"})


async def test_unregistered_method_is_method_not_found(connect: Any) -> None:
    server = Server("t")

    @server.method("acme/echo")
    def echo() -> None:
        return None

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("acme/other")
    assert info.value.code == -32601


async def test_method_registered_after_serving_started_is_answered(connect: Any) -> None:
    server = Server("t")

    async with connect(server) as client:
        await client.discover()

        @server.method("acme/late")
        def late() -> dict[str, Any]:
            return {"late": True}

        assert (await client.request("acme/late"))["late"] is True


def test_method_decorator_returns_the_function_unchanged() -> None:
    server = Server("t")

    def echo() -> None:
        return None

    assert server.method("acme/echo")(echo) is echo


@pytest.mark.parametrize(
    "name",
    [
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "notifications/anything",
        "rpc.discover",
    ],
)
def test_method_names_the_server_already_answers_are_reserved(name: str) -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="reserved"):
        server.method(name)


@pytest.mark.parametrize(
    "name",
    ["subscriptions/listen", "logging/setLevel", "resources/subscribe", "initialize"],
)
def test_other_method_names_defined_by_the_protocol_are_reserved(name: str) -> None:
    # The spec: logging/setLevel and resources/(un)subscribe must answer -32601 to
    # modern requests; subscriptions/listen is a core method (Q7); initialize/ping belong to
    # the legacy handshake. A custom handler must not be able to take any of these names.
    server = Server("t")
    with pytest.raises(ValueError, match="reserved"):
        server.method(name)
