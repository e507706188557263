"""Tools: schemas from hints, argument validation, results and errors (``docs/decisions.md``,
"Tool errors")."""

import base64
import dataclasses
import enum
import json
import logging
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from mcpserve import (
    Audio,
    EmbeddedResource,
    Header,
    Image,
    MCPError,
    ResourceLink,
    Server,
    Tool,
    ToolError,
    ToolResult,
)

# --------------------------------------------------------------------------- shared types


class Address(BaseModel):
    street: str
    postcode: str = Field(description="Postal code")


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Weather(BaseModel):
    temperature: float
    conditions: str


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Row(TypedDict):
    id: int
    label: str


class Document(TypedDict):
    title: str
    content: list[str]


class Person(BaseModel):
    full_name: str = Field(alias="fullName")


class CamelPerson(BaseModel):
    model_config = ConfigDict(alias_generator=lambda name: name.replace("_n", "N"))
    first_name: str


class TreeNode(BaseModel):
    value: int
    children: list["TreeNode"] = []


# --------------------------------------------------------------------------- helpers


async def tool_entry(connect: Any, server: Server, name: str) -> dict[str, Any]:
    async with connect(server) as client:
        tools = await client.list_tools()
    return next(tool for tool in tools if tool["name"] == name)


async def input_schema(connect: Any, server: Server, name: str) -> dict[str, Any]:
    return (await tool_entry(connect, server, name))["inputSchema"]


def texts(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"] if block["type"] == "text"]


def without_protocol_fields(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key not in ("resultType", "_meta")}


# --------------------------------------------------------------------------- inputSchema


async def test_docstring_args_section_describes_each_parameter(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def search(query: str, limit: int = 10) -> str:
        """Search the catalogue.

        Args:
            query: What to look for.
            limit: The most results to return.
        """
        return ""

    properties = (await input_schema(connect, server, "search"))["properties"]
    assert properties["query"]["description"] == "What to look for."
    assert properties["limit"]["description"] == "The most results to return."


async def test_field_description_wins_over_the_docstring(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def tag(label: Annotated[str, Field(description="From Field")]) -> str:
        """Tag something.

        Args:
            label: From the docstring.
        """
        return label

    properties = (await input_schema(connect, server, "tag"))["properties"]
    assert properties["label"]["description"] == "From Field"


async def test_parameters_with_defaults_are_optional_and_publish_the_default(
    connect: Any,
) -> None:
    server = Server("t")

    @server.tool
    def page(query: str, limit: int = 10, exact: bool = False) -> str:
        return ""

    schema = await input_schema(connect, server, "page")
    assert schema["required"] == ["query"]
    assert schema["properties"]["limit"] == {"default": 10, "type": "integer"}
    assert schema["properties"]["exact"] == {"default": False, "type": "boolean"}


async def test_literal_parameter_becomes_an_enum(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def mode(speed: Literal["fast", "deep"]) -> str:
        return speed

    properties = (await input_schema(connect, server, "mode"))["properties"]
    assert properties["speed"] == {"enum": ["fast", "deep"], "type": "string"}


async def test_enum_parameter_is_inlined_without_a_title(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def paint(colour: Colour) -> str:
        return colour.value

    schema = await input_schema(connect, server, "paint")
    assert schema["properties"]["colour"] == {"enum": ["red", "blue"], "type": "string"}
    assert "$defs" not in schema


async def test_nested_model_is_inlined_without_titles_or_defs(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def ship(address: Address) -> str:
        return address.street

    schema = await input_schema(connect, server, "ship")
    assert "$defs" not in schema
    assert schema["properties"]["address"] == {
        "properties": {
            "street": {"type": "string"},
            "postcode": {"description": "Postal code", "type": "string"},
        },
        "required": ["street", "postcode"],
        "type": "object",
    }
    assert "title" not in json.dumps(schema)


async def test_recursive_model_keeps_only_its_own_definition_in_defs(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def walk(tree: TreeNode) -> str:
        return ""

    schema = await input_schema(connect, server, "walk")
    assert set(schema["$defs"]) == {"TreeNode"}
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"tree": {"value": 1, "children": [{"value": 2}]}}, schema)


async def test_optional_scalar_renders_as_a_type_list(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def note(text: str | None = None) -> str:
        return text or ""

    properties = (await input_schema(connect, server, "note"))["properties"]
    assert properties["text"] == {"type": ["string", "null"], "default": None}


async def test_optional_model_renders_as_any_of_with_null(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def ship(address: Address | None = None) -> str:
        return ""

    properties = (await input_schema(connect, server, "ship"))["properties"]
    branches = properties["address"]["anyOf"]
    assert {"type": "null"} in branches
    assert any(branch.get("type") == "object" for branch in branches)
    assert properties["address"]["default"] is None


async def test_optional_literal_keeps_any_of_so_null_stays_valid(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def mode(speed: Literal["fast", "deep"] | None = None) -> str:
        return ""

    schema = await input_schema(connect, server, "mode")
    jsonschema.validate({"speed": None}, schema)
    jsonschema.validate({"speed": "fast"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"speed": "slow"}, schema)


async def test_parameterless_tool_publishes_a_closed_object_schema(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def now() -> str:
        return "noon"

    # "properties" too: smolagents' adapter fails on an object schema without it.
    assert await input_schema(connect, server, "now") == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


async def test_parameterless_tool_runs_without_arguments_and_refuses_any(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def now() -> str:
        return "noon"

    async with connect(server) as client:
        plain = await client.call_tool("now", {})
        extra = await client.call_tool("now", {"when": "later"})

    assert texts(plain) == ["noon"]
    assert extra["isError"] is True
    assert texts(extra) == [
        "Invalid arguments for tool now: this tool takes no arguments; got: when"
    ]


async def test_context_parameter_is_left_out_of_the_input_schema(connect: Any) -> None:
    from mcpserve import Context

    server = Server("t")

    @server.tool
    def who(name: str, ctx: Context) -> str:
        return name

    schema = await input_schema(connect, server, "who")
    assert set(schema["properties"]) == {"name"}


async def test_raw_input_schema_is_published_verbatim(connect: Any) -> None:
    raw = {
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": 0, "title": "Kept"}},
        "required": ["a"],
        "$comment": "hand written",
    }
    server = Server("t")

    @server.tool(input_schema=raw)
    def double(a: int) -> str:
        return str(a * 2)

    assert await input_schema(connect, server, "double") == raw


async def test_arguments_breaking_a_raw_input_schema_are_an_error_result(connect: Any) -> None:
    calls: list[int] = []
    server = Server("t")

    @server.tool(
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer", "minimum": 0}},
            "required": ["a"],
        }
    )
    def double(a: int) -> str:
        calls.append(a)
        return str(a * 2)

    async with connect(server) as client:
        result = await client.call_tool("double", {"a": -1})

    assert calls == []
    assert result["isError"] is True
    assert "a" in texts(result)[0]


def test_raw_input_schema_in_another_dialect_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="dialect"):

        @server.tool(
            input_schema={"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
        )
        def old() -> str:
            return ""


def test_raw_input_schema_without_object_root_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="type 'object'"):

        @server.tool(input_schema={"type": "array"})
        def bad() -> str:
            return ""


# --------------------------------------------------------------------------- tool entry


async def test_description_is_the_docstring_summary_without_sections(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Handles negatives too.

        Args:
            a: The first.
            b: The second.

        Returns:
            The sum.
        """
        return a + b

    entry = await tool_entry(connect, server, "add")
    assert entry["description"] == "Add two integers.\n\nHandles negatives too."


async def test_tool_without_docstring_has_no_description(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def bare() -> str:
        return ""

    assert "description" not in await tool_entry(connect, server, "bare")


async def test_name_title_description_annotations_icons_and_meta_options_are_published(
    connect: Any,
) -> None:
    server = Server("t")
    icons = [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}]

    @server.tool(
        name="weather.get",
        title="Get weather",
        description="Current conditions.",
        annotations={"readOnlyHint": True, "openWorldHint": True},
        icons=icons,
        meta={"com.example/tier": "free"},
    )
    def get_weather(city: str) -> str:
        """Ignored because description= is given."""
        return city

    entry = await tool_entry(connect, server, "weather.get")
    assert entry["title"] == "Get weather"
    assert entry["description"] == "Current conditions."
    assert entry["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
    assert entry["icons"] == icons
    assert entry["_meta"] == {"com.example/tier": "free"}


async def test_tools_are_listed_in_registration_order(connect: Any) -> None:
    server = Server("t")
    for name in ("zeta", "alpha", "mid"):
        server.add_tool(lambda: "", name=name)

    async with connect(server) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["zeta", "alpha", "mid"]


async def test_discover_declares_tools_only_when_a_tool_is_registered(connect: Any) -> None:
    empty = Server("t")
    async with connect(empty) as client:
        assert "tools" not in (await client.discover())["capabilities"]

    server = Server("t")
    server.add_tool(lambda: "", name="one")
    async with connect(server) as client:
        assert (await client.discover())["capabilities"]["tools"] == {"listChanged": True}


@pytest.mark.parametrize("name", ["has space", "slash/name", "x" * 129, "ünïcode", "a:b"])
def test_invalid_tool_name_is_rejected_at_registration(name: str) -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="Tool name"):
        server.tool(name=name)(lambda: "")
    assert server.registry.tools == {}


@pytest.mark.parametrize("name", ["a", "get_weather", "Tool-1.v2", "x" * 128])
def test_valid_tool_names_register(name: str) -> None:
    server = Server("t")
    tool = server.tool(name=name)(lambda: "")
    assert isinstance(tool, Tool)
    assert server.registry.tools[name] is tool


def test_duplicate_tool_name_is_rejected_at_registration() -> None:
    server = Server("t")

    @server.tool
    def echo(text: str) -> str:
        return text

    with pytest.raises(ValueError, match="already registered"):

        @server.tool(name="echo")
        def other(text: str) -> str:
            return text


def test_tool_decorator_returns_a_record_still_callable_like_the_function() -> None:
    # server.py's module docstring promises the returned record "stays callable like the
    # original function".
    server = Server("t")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    assert add(2, 3) == 5  # type: ignore[operator]


# --------------------------------------------------------------------------- x-mcp-header


async def test_header_annotation_puts_x_mcp_header_in_the_schema(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def route(region: Annotated[str, Header("Region")], query: str) -> str:
        return region

    properties = (await input_schema(connect, server, "route"))["properties"]
    assert properties["region"] == {"type": "string", "x-mcp-header": "Region"}
    assert "x-mcp-header" not in properties["query"]


def test_header_on_a_float_parameter_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="x-mcp-header"):

        @server.tool
        def scale(factor: Annotated[float, Header("Factor")]) -> str:
            return ""


def test_header_names_equal_ignoring_case_are_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="case-insensitively"):

        @server.tool
        def route(
            region: Annotated[str, Header("Region")], zone: Annotated[str, Header("REGION")]
        ) -> str:
            return ""


def test_header_name_that_is_not_an_http_token_is_rejected_at_registration() -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="token"):

        @server.tool
        def route(region: Annotated[str, Header("Bad Name")]) -> str:
            return ""


# --------------------------------------------------------------------------- arguments


async def test_invalid_argument_is_an_error_result_naming_it_and_the_tool_never_runs(
    connect: Any,
) -> None:
    calls: list[int] = []
    server = Server("t")

    @server.tool
    def repeat(text: str, times: int) -> str:
        calls.append(times)
        return text * times

    async with connect(server) as client:
        result = await client.call_tool("repeat", {"text": "a", "times": "many"})

    assert calls == []
    assert result["isError"] is True
    assert "structuredContent" not in result
    [message] = texts(result)
    assert "times" in message
    assert "repeat" in message


async def test_missing_required_argument_is_an_error_result_not_a_protocol_error(
    connect: Any,
) -> None:
    calls: list[str] = []
    server = Server("t")

    @server.tool
    def greet(name: str) -> str:
        calls.append(name)
        return f"hi {name}"

    async with connect(server) as client:
        result = await client.call_tool("greet", {})

    assert calls == []
    assert result["isError"] is True
    assert "name" in texts(result)[0]


async def test_nested_argument_error_names_the_nested_path(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def ship(address: Address) -> str:
        return address.street

    async with connect(server) as client:
        result = await client.call_tool("ship", {"address": {"street": "Main"}})

    assert result["isError"] is True
    assert "address.postcode" in texts(result)[0]


async def test_valid_arguments_are_coerced_to_the_annotated_types(connect: Any) -> None:
    seen: list[Any] = []
    server = Server("t")

    @server.tool
    def ship(address: Address, colour: Colour, count: int = 1) -> str:
        seen.extend([address, colour, count])
        return "ok"

    async with connect(server) as client:
        await client.call_tool(
            "ship", {"address": {"street": "Main", "postcode": "123"}, "colour": "red"}
        )

    assert seen == [Address(street="Main", postcode="123"), Colour.RED, 1]


@pytest.mark.parametrize("arguments", [[1, 2], "text", 3])
async def test_arguments_that_are_not_an_object_are_invalid_params(
    connect: Any, arguments: Any
) -> None:
    server = Server("t")

    @server.tool
    def echo(text: str = "") -> str:
        return text

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("tools/call", {"name": "echo", "arguments": arguments})
    assert info.value.code == -32602


async def test_unknown_tool_is_invalid_params_naming_it(connect: Any) -> None:
    server = Server("t")
    server.add_tool(lambda: "", name="real")

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("invalid_tool_name", {})
    assert info.value.code == -32602
    assert info.value.message == "Unknown tool: invalid_tool_name"


async def test_tool_name_that_is_not_a_string_is_invalid_params(connect: Any) -> None:
    server = Server("t")
    server.add_tool(lambda: "", name="real")

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.request("tools/call", {"name": 42})
    assert info.value.code == -32602


# --------------------------------------------------------------------------- errors


async def test_tool_error_message_is_returned_verbatim_as_an_error_result(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def weather(location: str) -> str:
        raise ToolError("Invalid location: must be a non-empty city name or zip code.")

    async with connect(server) as client:
        result = await client.call_tool("weather", {"location": ""})

    assert without_protocol_fields(result) == {
        "content": [
            {"type": "text", "text": "Invalid location: must be a non-empty city name or zip code."}
        ],
        "isError": True,
    }


async def test_unexpected_exception_is_masked_with_a_reference_and_logged(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")

    @server.tool
    def leak() -> str:
        raise RuntimeError("password=hunter2")

    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        async with connect(server) as client:
            result = await client.call_tool("leak", {})

    assert result["isError"] is True
    [message] = texts(result)
    assert "hunter2" not in message
    assert "RuntimeError" not in message
    assert "ref " in message
    ref = message.split("ref ")[1].rstrip(")")
    [record] = [r for r in caplog.records if ref in r.getMessage()]
    assert record.exc_info is not None
    assert "hunter2" in caplog.text  # the traceback is in the server log, not the result


async def test_mcp_error_raised_by_a_tool_stays_a_json_rpc_error(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def forbidden() -> str:
        raise MCPError("Not allowed for this caller", code=4003, data={"why": "scope"})

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("forbidden", {})
    assert (info.value.code, info.value.message, info.value.data) == (
        4003,
        "Not allowed for this caller",
        {"why": "scope"},
    )


async def test_tool_error_from_a_structured_tool_is_not_validated_against_output_schema(
    connect: Any,
) -> None:
    server = Server("t")

    @server.tool
    def forecast(city: str) -> Weather:
        raise ToolError("Unknown city")

    async with connect(server) as client:
        result = await client.call_tool("forecast", {"city": "Atlantis"})

    assert result["isError"] is True
    assert texts(result) == ["Unknown city"]
    assert "structuredContent" not in result


async def test_error_tool_result_is_not_validated_against_output_schema(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def forecast(city: str) -> Weather:
        return ToolResult(  # type: ignore[return-value]
            content=["upstream said no"], structured={"code": 503}, is_error=True
        )

    async with connect(server) as client:
        result = await client.call_tool("forecast", {"city": "Oslo"})

    assert without_protocol_fields(result) == {
        "content": [{"type": "text", "text": "upstream said no"}],
        "structuredContent": {"code": 503},
        "isError": True,
    }


async def test_return_value_that_does_not_fit_the_annotation_is_a_masked_internal_error(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("t")

    @server.tool
    def forecast() -> Weather:
        return {"temperature": "warm-ish", "conditions": "sunny"}  # type: ignore[return-value]

    with caplog.at_level(logging.ERROR, logger="mcpserve"):
        async with connect(server) as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("forecast", {})

    assert info.value.code == -32603
    assert "warm-ish" not in info.value.message
    assert "ref " in info.value.message
    assert "warm-ish" in caplog.text


# --------------------------------------------------------------------------- capabilities


async def test_tool_requiring_a_client_capability_fails_with_32021_when_it_is_missing(
    connect: Any,
) -> None:
    calls: list[str] = []
    server = Server("t")

    @server.tool(requires={"sampling": {}})
    def summarize(text: str) -> str:
        calls.append(text)
        return text

    async with connect(server) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("summarize", {"text": "x"})

    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"sampling": {}}}
    assert calls == []


async def test_tool_requiring_a_client_capability_runs_when_the_request_declares_it(
    connect: Any,
) -> None:
    server = Server("t")

    @server.tool(requires={"sampling": {}})
    def summarize(text: str) -> str:
        return text.upper()

    async with connect(server) as client:
        result = await client.call_tool("summarize", {"text": "x"}, capabilities={"sampling": {}})
    assert texts(result) == ["X"]


async def test_required_capability_is_read_from_each_request_not_the_connection(
    connect: Any,
) -> None:
    server = Server("t")

    @server.tool(requires={"sampling": {}})
    def summarize() -> str:
        return "ok"

    async with connect(server) as client:
        await client.call_tool("summarize", {}, capabilities={"sampling": {}})
        with pytest.raises(MCPError) as info:
            await client.call_tool("summarize", {})
    assert info.value.code == -32021


# --------------------------------------------------------------------------- structured results


async def test_model_result_is_structured_with_text_mirror_and_output_schema(
    connect: Any,
) -> None:
    server = Server("t")

    @server.tool
    def forecast(city: str) -> Weather:
        return Weather(temperature=22.5, conditions="Partly cloudy")

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("forecast", {"city": "Seattle"})

    structured = {"temperature": 22.5, "conditions": "Partly cloudy"}
    assert result["structuredContent"] == structured
    assert [json.loads(text) for text in texts(result)] == [structured]
    assert entry["outputSchema"] == {
        "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
        "required": ["temperature", "conditions"],
        "type": "object",
    }
    assert "isError" not in result


def _point() -> Point:
    return Point(1, 2)


def _row() -> Row:
    return {"id": 7, "label": "seven"}


def _count() -> int:
    return 3


def _numbers() -> list[int]:
    return [1, 2, 3]


def _weather_or_none() -> Weather | None:
    return None


def _person() -> Person:
    return Person(fullName="Ada Lovelace")


def _camel() -> CamelPerson:
    return CamelPerson(firstName="Ada")


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (_point, {"x": 1, "y": 2}),
        (_row, {"id": 7, "label": "seven"}),
        (_count, 3),
        (_numbers, [1, 2, 3]),
        (_weather_or_none, None),
    ],
    ids=["dataclass", "typeddict", "int", "list", "optional-none"],
)
async def test_structured_content_conforms_to_the_published_output_schema(
    connect: Any, fn: Any, expected: Any
) -> None:
    server = Server("t")
    server.add_tool(fn, name="tool")

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("tool", {})

    assert result["structuredContent"] == expected
    assert json.loads(texts(result)[0]) == expected
    jsonschema.Draft202012Validator.check_schema(entry["outputSchema"])
    jsonschema.validate(result["structuredContent"], entry["outputSchema"])


@pytest.mark.parametrize("fn", [_person, _camel], ids=["field-alias", "alias-generator"])
async def test_structured_content_of_an_aliased_model_conforms_to_output_schema(
    connect: Any, fn: Any
) -> None:
    # The outputSchema is generated by alias (pydantic's default); the dump must match.
    server = Server("t")
    server.add_tool(fn, name="tool")

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("tool", {})

    jsonschema.validate(result["structuredContent"], entry["outputSchema"])


async def test_free_form_dict_result_is_structured_without_output_schema(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def stats() -> dict[str, Any]:
        return {"rows": 3, "ok": True}

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("stats", {})

    assert "outputSchema" not in entry
    assert result["structuredContent"] == {"rows": 3, "ok": True}
    assert json.loads(texts(result)[0]) == {"rows": 3, "ok": True}


async def test_string_result_is_text_only_without_output_schema(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def hello(name: str) -> str:
        return f"Hello, {name}!"

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("hello", {"name": "Ada"})

    assert "outputSchema" not in entry
    assert without_protocol_fields(result) == {"content": [{"type": "text", "text": "Hello, Ada!"}]}


async def test_none_result_is_empty_content(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def noop() -> None:
        return None

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("noop", {})

    assert "outputSchema" not in entry
    assert without_protocol_fields(result) == {"content": []}


async def test_explicit_output_schema_option_is_published(connect: Any) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    server = Server("t")

    @server.tool(output_schema=schema)
    def count() -> dict[str, Any]:
        return {"n": 1}

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("count", {})
    assert entry["outputSchema"] == schema
    jsonschema.validate(result["structuredContent"], schema)


# --------------------------------------------------------------------------- content blocks


async def test_image_result_becomes_a_base64_image_block(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def logo() -> Image:
        return Image(b"\x89PNG\r\n", "image/png")

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("logo", {})

    assert "outputSchema" not in entry
    assert without_protocol_fields(result) == {
        "content": [
            {
                "type": "image",
                "data": base64.b64encode(b"\x89PNG\r\n").decode(),
                "mimeType": "image/png",
            }
        ]
    }


async def test_image_given_as_base64_text_is_sent_unchanged(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def logo() -> Image:
        return Image("aGVsbG8=", "image/gif", annotations={"audience": ["user"]})

    async with connect(server) as client:
        result = await client.call_tool("logo", {})

    assert result["content"] == [
        {
            "type": "image",
            "data": "aGVsbG8=",
            "mimeType": "image/gif",
            "annotations": {"audience": ["user"]},
        }
    ]


async def test_image_from_file_reads_bytes_and_guesses_the_mime_type(
    connect: Any, tmp_path: Any
) -> None:
    path = tmp_path / "pixel.jpg"
    path.write_bytes(b"\xff\xd8\xff")
    server = Server("t")

    @server.tool
    def pixel() -> Image:
        return Image.from_file(path)

    async with connect(server) as client:
        result = await client.call_tool("pixel", {})

    assert result["content"] == [
        {
            "type": "image",
            "data": base64.b64encode(b"\xff\xd8\xff").decode(),
            "mimeType": "image/jpeg",
        }
    ]


async def test_audio_result_becomes_a_base64_audio_block(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def beep() -> Audio:
        return Audio(b"RIFF0000WAVE")

    async with connect(server) as client:
        result = await client.call_tool("beep", {})

    assert result["content"] == [
        {
            "type": "audio",
            "data": base64.b64encode(b"RIFF0000WAVE").decode(),
            "mimeType": "audio/wav",
        }
    ]


async def test_embedded_text_resource_becomes_a_resource_block(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def readme() -> EmbeddedResource:
        return EmbeddedResource("file:///README.md", text="# Hi", mime_type="text/markdown")

    async with connect(server) as client:
        result = await client.call_tool("readme", {})

    assert result["content"] == [
        {
            "type": "resource",
            "resource": {"uri": "file:///README.md", "mimeType": "text/markdown", "text": "# Hi"},
        }
    ]


async def test_embedded_binary_resource_is_a_base64_blob(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def dump() -> EmbeddedResource:
        return EmbeddedResource("file:///a.bin", blob=b"\x00\x01\xff")

    async with connect(server) as client:
        result = await client.call_tool("dump", {})

    assert result["content"] == [
        {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAH/"}}
    ]


def test_embedded_resource_needs_exactly_one_of_text_and_blob() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        EmbeddedResource("file:///a")
    with pytest.raises(ValueError, match="exactly one"):
        EmbeddedResource("file:///a", text="x", blob=b"x")


async def test_resource_link_becomes_a_resource_link_block(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def find() -> ResourceLink:
        return ResourceLink(
            "notes://42",
            "note-42",
            title="Note 42",
            description="A note",
            mime_type="text/markdown",
            size=120,
        )

    async with connect(server) as client:
        result = await client.call_tool("find", {})

    assert result["content"] == [
        {
            "type": "resource_link",
            "uri": "notes://42",
            "name": "note-42",
            "title": "Note 42",
            "description": "A note",
            "mimeType": "text/markdown",
            "size": 120,
        }
    ]


async def test_list_of_content_helpers_and_strings_becomes_blocks_in_order(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def mixed() -> list[Image | ResourceLink | str]:
        return ["caption", Image(b"x", "image/png"), ResourceLink("notes://1", "one")]

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("mixed", {})

    assert "outputSchema" not in entry
    assert "structuredContent" not in result
    assert result["content"] == [
        {"type": "text", "text": "caption"},
        {"type": "image", "data": "eA==", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "notes://1", "name": "one"},
    ]


async def test_call_tool_result_shaped_dict_passes_through_untouched(connect: Any) -> None:
    body = {
        "content": [
            {"type": "text", "text": "raw"},
            {"type": "image", "data": "eA==", "mimeType": "image/png"},
        ],
        "structuredContent": {"anything": ["goes"]},
        "isError": False,
    }
    server = Server("t")

    @server.tool
    def raw() -> dict[str, Any]:
        return body

    async with connect(server) as client:
        result = await client.call_tool("raw", {})

    assert without_protocol_fields(result) == body


async def test_typed_dict_result_with_a_content_list_is_structured_not_passed_through(
    connect: Any,
) -> None:
    # Only a free-form result may be a ready-made CallToolResult; a value typed by the return
    # annotation is data, even when one of its keys happens to be "content".
    server = Server("t")

    @server.tool
    def document() -> Document:
        return {"title": "Notes", "content": ["para 1", "para 2"]}

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("document", {})

    assert result["structuredContent"] == {"title": "Notes", "content": ["para 1", "para 2"]}
    jsonschema.validate(result["structuredContent"], entry["outputSchema"])


async def test_call_tool_result_shaped_dict_keeps_its_own_meta_beside_server_info(
    connect: Any,
) -> None:
    server = Server("t")

    @server.tool
    def raw() -> dict[str, Any]:
        return {"content": [], "_meta": {"com.example/trace": "abc"}}

    async with connect(server) as client:
        result = await client.call_tool("raw", {})

    assert result["_meta"]["com.example/trace"] == "abc"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "t",
        "version": "0.1.0",
    }


async def test_tool_result_spells_out_content_structured_data_and_meta(connect: Any) -> None:
    server = Server("t")

    @server.tool
    def query() -> ToolResult:
        return ToolResult(
            content=["3 rows", Image(b"x")], structured={"rows": 3}, meta={"com.example/ms": 4}
        )

    async with connect(server) as client:
        [entry] = await client.list_tools()
        result = await client.call_tool("query", {})

    assert "outputSchema" not in entry
    assert result["content"] == [
        {"type": "text", "text": "3 rows"},
        {"type": "image", "data": "eA==", "mimeType": "image/png"},
    ]
    assert result["structuredContent"] == {"rows": 3}
    assert result["_meta"]["com.example/ms"] == 4
    assert "isError" not in result
