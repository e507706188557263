"""Registration refuses, in one line, what cannot become a schema
(``mcpserve.server.schema.errors``): the function, the parameter (or the return
annotation), the type, and what to write instead; no pydantic internals, no chained
traceback. What does become a schema (TypedDicts, dataclasses, ``Annotated`` with ``Field``)
keeps registering and working."""

from __future__ import annotations
import __future__

import dataclasses
import traceback
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from mcpserve import Context, RegistrationError, Server


class Shelf:
    """A plain class: pydantic knows no JSON form for it."""


class Crate(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str
    shelf: Shelf


class Dimensions(TypedDict):
    width: int
    height: int


@dataclasses.dataclass
class Book:
    title: str
    pages: int = 100


def refusal(register: Callable[[], Any]) -> RegistrationError:
    """The error ``register()`` raises, checked to be one plain line with nothing chained."""
    with pytest.raises(RegistrationError) as raised:
        register()
    error = raised.value
    message = str(error)
    assert isinstance(error, TypeError)
    assert "\n" not in message
    shown = "".join(traceback.format_exception(error))
    assert "The above exception" not in shown
    assert "During handling" not in shown
    for internal in ("arbitrary_types_allowed", "pydantic.dev", "core_schema", "pydantic-core"):
        assert internal not in message
    return error


# --------------------------------------------------------------------------- no JSON form


def test_a_parameter_of_a_plain_class_is_refused_naming_function_parameter_and_type() -> None:
    server = Server("shelves")

    def lookup(shelf: Shelf, count: int = 1) -> str:
        return ""

    error = refusal(lambda: server.tool(lookup))
    assert str(error) == (
        "lookup(): parameter 'shelf' is annotated Shelf, and it cannot become a JSON schema: "
        "there is no JSON form for its values. Use a type that can: str, int, float, bool, a "
        "list or dict of those, a Literal or an Enum, a pydantic model, a dataclass or a "
        "TypedDict; or annotate it Any and convert the JSON value yourself (a tool can "
        "describe it with input_schema=)"
    )
    assert server.registry.tools == {}


def test_the_part_of_a_type_that_has_no_schema_is_named() -> None:
    server = Server("shelves")

    def stack(shelves: list[Shelf]) -> str:
        return ""

    def pack(crate: Crate | None = None) -> str:
        return ""

    assert "parameter 'shelves' is annotated list[Shelf], and Shelf cannot become a JSON " \
        "schema" in str(refusal(lambda: server.tool(stack)))  # fmt: skip
    assert "parameter 'crate' is annotated Crate | None, and Shelf (field 'shelf' of Crate) " \
        "cannot become a JSON schema" in str(refusal(lambda: server.tool(pack)))  # fmt: skip


def test_a_return_type_with_no_json_form_is_refused_and_output_schema_is_the_way_out() -> None:
    server = Server("shelves")

    def fetch() -> Shelf:
        return Shelf()

    def walk() -> Iterator[int]:
        return iter([1])

    error = refusal(lambda: server.tool(fetch))
    assert str(error).startswith(
        "fetch(): the return annotation is Shelf, and it cannot become a JSON schema: there is "
        "no JSON form for its values. Return a type that can: "
    )
    assert str(error).endswith("or annotate the return Any (a tool can publish output_schema= "
                               "instead)")  # fmt: skip
    assert "the return annotation is Iterator[int]" in str(refusal(lambda: server.tool(walk)))


async def test_a_tool_publishing_output_schema_does_not_need_its_return_annotation(
    connect: Any,
) -> None:
    server = Server("shelves")

    @server.tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    def fetch() -> Shelf:
        return {"n": 3}  # type: ignore[return-value]

    async with connect(server) as client:
        result = await client.call_tool("fetch")
    assert result["structuredContent"] == {"n": 3}


def test_prompts_and_resource_templates_are_refused_the_same_way() -> None:
    server = Server("shelves")

    def describe_shelf(shelf: Shelf) -> str:
        return ""

    def shelf_contents(name: str, shelf: Shelf | None = None) -> str:
        return ""

    assert str(refusal(lambda: server.prompt(describe_shelf))).startswith(
        "describe_shelf(): parameter 'shelf' is annotated Shelf, and it cannot become"
    )
    assert str(refusal(lambda: server.resource("shelf://{name}")(shelf_contents))).startswith(
        "shelf_contents(): parameter 'shelf' is annotated Shelf | None, and Shelf cannot become"
    )


# --------------------------------------------------------------------------- unresolved names


def test_a_name_the_module_does_not_define_is_refused_naming_it() -> None:
    server = Server("shelves")

    def lookup(shelf: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    def fetch() -> list[Missing]:  # type: ignore[name-defined]  # noqa: F821
        return []

    assert str(refusal(lambda: server.tool(lookup))) == (
        "lookup(): parameter 'shelf' is annotated Missing, but 'Missing' is not defined in the "
        "module of lookup(): define or import Missing there, at module level (a class defined "
        "inside a function is not found once annotations are strings, as under from "
        "__future__ import annotations)"
    )
    assert str(refusal(lambda: server.tool(fetch))).startswith(
        "fetch(): the return annotation is list[Missing], but 'Missing' is not defined"
    )


def test_a_class_defined_inside_a_function_is_not_found_under_future_annotations() -> None:
    source = (
        "from mcpserve import Server\n"
        "server = Server('local')\n"
        "def build():\n"
        "    class Note:\n"
        "        pass\n"
        "    def read(note: Note) -> str:\n"
        "        return ''\n"
        "    server.tool(read)\n"
    )
    namespace: dict[str, Any] = {}
    code = compile(source, "local_app.py", "exec", flags=__future__.annotations.compiler_flag)
    exec(code, namespace)
    error = refusal(namespace["build"])
    assert str(error).startswith(
        "read(): parameter 'note' is annotated Note, but 'Note' is not defined in the module "
        "of read(): define or import Note there"
    )


# --------------------------------------------------------------------------- the context


@pytest.mark.parametrize("name", ["ctx", "context"])
def test_an_unannotated_context_parameter_is_refused_with_the_annotation_to_write(
    name: str,
) -> None:
    server = Server("shelves")
    namespace: dict[str, Any] = {}
    exec(f"def shelve(title: str, {name}):\n    return title\n", namespace)
    error = refusal(lambda: server.tool(namespace["shelve"]))
    assert str(error) == (
        f"shelve(): parameter {name!r} has no annotation, so it would be published as an "
        f"argument every client must send; to receive the request context, annotate it as "
        f"Context ({name}: Context, with from mcpserve import Context)"
    )
    refusal(lambda: server.prompt(namespace["shelve"]))
    assert server.registry.tools == {}


async def test_a_context_parameter_with_an_annotation_is_what_it_says(connect: Any) -> None:
    server = Server("shelves")

    @server.tool
    def shelve(title: str, ctx: Context) -> str:
        return f"{title} for {ctx.method}"

    @server.tool
    def label(context: str) -> str:  # annotated as an argument: an argument it is
        return context.upper()

    async with connect(server) as client:
        listed = {tool["name"]: tool["inputSchema"] for tool in await client.list_tools()}
        assert listed["shelve"]["required"] == ["title"]
        assert listed["label"]["required"] == ["context"]
        shelved = await client.call_tool("shelve", {"title": "Dune"})
        labelled = await client.call_tool("label", {"context": "sci-fi"})
    assert shelved["content"][0]["text"] == "Dune for tools/call"
    assert labelled["content"][0]["text"] == "SCI-FI"


# --------------------------------------------------------------------------- what keeps working


async def test_typed_dicts_dataclasses_and_annotated_fields_register_and_validate(
    connect: Any,
) -> None:
    server = Server("shelves")

    @server.tool
    def place(
        size: Dimensions,
        book: Book,
        copies: Annotated[int, Field(ge=1, description="How many")] = 1,
    ) -> Book:
        return Book(f"{book.title} x{copies} ({size['width']}x{size['height']})", book.pages)

    async with connect(server) as client:
        (tool,) = await client.list_tools()
        assert tool["inputSchema"]["properties"]["copies"] == {
            "default": 1, "description": "How many", "minimum": 1, "type": "integer",
        }  # fmt: skip
        assert tool["outputSchema"]["properties"]["title"] == {"type": "string"}
        placed = await client.call_tool("place", {
            "size": {"width": 2, "height": 3}, "book": {"title": "Dune"}, "copies": 2})  # fmt: skip
        refused = await client.call_tool("place", {
            "size": {"width": 2, "height": 3}, "book": {"title": "Dune"}, "copies": 0})  # fmt: skip
    assert placed["structuredContent"] == {"title": "Dune x2 (2x3)", "pages": 100}
    assert refused["isError"] is True
    assert "copies" in refused["content"][0]["text"]


# --------------------------------------------------------------------------- on the command line

APP_WITH_A_PLAIN_CLASS = """
from mcpserve import Server

server = Server("shelf")


class Shelf:
    pass


@server.tool
def store(shelf: Shelf) -> str:
    return "stored"
"""

APP_WITH_A_NESTED_FORM = """
from pydantic import BaseModel

from mcpserve import Elicit, Server

server = Server("shelf")


class Address(BaseModel):
    street: str


class Delivery(BaseModel):
    address: Address


ASK = Elicit("Where to?", Delivery)
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("app", "said"),
    [
        (APP_WITH_A_PLAIN_CLASS, "Error: store(): parameter 'shelf' is annotated Shelf"),
        (APP_WITH_A_NESTED_FORM, "Error: Delivery cannot be an elicitation form: field 'address'"),
    ],
    ids=["registration", "elicitation-form"],
)
def test_the_command_says_a_registration_error_in_one_line(
    tmp_path: Any, app: str, said: str
) -> None:
    import subprocess
    import sys

    from wire_helpers import child_env

    (tmp_path / "app.py").write_text(app)
    done = subprocess.run([sys.executable, "-m", "mcpserve.cli", "inspect", "app.py"],
                          cwd=tmp_path, env=child_env(), capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("Loading ")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(said), lines[0]
