"""Elicitation forms (``mcpserve.server.context.forms``): every ``requestedSchema`` mcpserve
sends is inside the spec's form subset, in both eras, and what no form can hold is refused,
naming the field and the rule, before any client sees it.

The spec's definitions are copied in ``tests/server/context/elicitation_form_schema.json``.
Each schema is checked twice: against them as written (which let unknown keywords through,
as JSON Schema does) and against a strict copy in which every object takes only the keywords
it names.
"""

from __future__ import annotations

import copy
import json
import logging
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, SecretStr

from mcpserve import Client, Context, Elicit, Server
from mcpserve.server.context.forms import FormSchemaError, form_schema
from servers.elicitation_forms import FORMS, Contact, Loan
from servers.elicitation_forms import server as forms_server
from wire_helpers import ROOT, SERVERS, TIMEOUT, child_env

SPEC = json.loads((Path(__file__).parent / "elicitation_form_schema.json").read_text())
FORMS_SERVER = [sys.executable, str(SERVERS / "elicitation_forms.py")]


def _strict(node: Any) -> Any:
    """The same definitions, each object closed to keywords it does not name."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    closed = {key: _strict(value) for key, value in node.items()}
    if node.get("type") == "object" and "properties" in node:
        closed["additionalProperties"] = False
    return closed


AS_WRITTEN = Draft202012Validator(SPEC)
STRICT = Draft202012Validator(_strict(copy.deepcopy(SPEC)))


def spec_problems(schema: Any) -> list[str]:
    """Why ``schema`` is not a form the spec allows (empty when it is one)."""
    return [error.message for error in AS_WRITTEN.iter_errors(schema)] + [
        f"(strict) {error.message}" for error in STRICT.iter_errors(schema)
    ]


def stdio(**options: Any) -> Client:
    return Client.stdio(FORMS_SERVER, cwd=str(ROOT), env=child_env(), timeout=TIMEOUT, **options)


# --------------------------------------------------------------------------- the spec's subset


def test_the_copied_definitions_refuse_what_a_model_used_to_produce() -> None:
    # What mcpserve sent before forms were translated: each one must fail the check, or the
    # check below would prove nothing.
    nullable = {"type": "object", "properties": {"note": {"type": ["string", "null"]}}}
    nested = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}
    pattern = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^a"}}}
    null_default = {"type": "object", "properties": {"n": {"type": "string", "default": None}}}
    assert spec_problems(nullable) != []
    assert spec_problems(nested) != []
    assert [p for p in spec_problems(pattern) if p.startswith("(strict)")] != []
    assert spec_problems(null_default) != []
    assert spec_problems({"type": "object", "properties": {"ok": {"type": "boolean"}}}) == []


@pytest.mark.subprocess
@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_every_form_a_model_asks_for_is_inside_the_spec_subset_on_the_wire(
    era: str,
) -> None:
    asked: list[dict[str, Any]] = []

    def decline(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "decline"}

    async with stdio(protocol_version=era, on_elicit=decline) as client:
        assert client.legacy is (era != "2026-07-28")
        for name in FORMS:
            result = await client.call_tool(f"ask_{name}")
            assert result["structuredContent"] == {"action": "decline", "data": None}
    assert [params["message"] for params in asked] == [f"Fill in the {n} form" for n in FORMS]
    for params in asked:
        assert spec_problems(params["requestedSchema"]) == [], params["message"]


def test_optional_fields_are_one_type_and_left_out_of_required() -> None:
    assert form_schema(Loan).wire == {
        "type": "object",
        "properties": {
            "reader": {"type": "string"},
            "weeks": {"type": "integer"},
            "renewable": {"type": "boolean"},
            "branch": {"enum": ["north", "south"], "type": "string"},
            "note": {"type": "string", "description": "Anything else"},
        },
        "required": ["reader", "weeks", "renewable", "branch"],
    }
    contact = form_schema(Contact).wire
    assert contact["properties"]["nickname"] == {"type": "string"}
    assert contact["properties"]["homepage"] == {"format": "uri", "minLength": 1, "type": "string"}
    assert contact["properties"]["age"] == {"type": "integer", "minimum": 18, "maximum": 130}
    assert contact["required"] == ["name", "email", "born", "age"]


async def test_an_optional_field_left_out_of_the_answer_reads_as_none(connect: Any) -> None:
    def fill(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ann", "email": "ann@example.org",
                                                "born": "1990-02-03", "age": 34}}  # fmt: skip

    async with connect(forms_server, on_elicit=fill) as client:
        result = await client.call_tool("ask_contact")
    assert result["structuredContent"]["data"] == {
        "name": "Ann", "email": "ann@example.org", "homepage": None, "born": "1990-02-03",
        "call_at": None, "age": 34, "height": None, "nickname": None,
    }  # fmt: skip


# --------------------------------------------------------------------------- refusals


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    address: Address


def test_a_nested_model_is_refused_naming_the_field_and_the_rule() -> None:
    with pytest.raises(FormSchemaError) as refused:
        Elicit("Who are you?", Person)
    assert str(refused.value) == (
        "Person cannot be an elicitation form: field 'address' is an object: elicitation "
        "forms take only strings, numbers, booleans and enums; ask for its parts as separate "
        "fields"
    )
    assert isinstance(refused.value, TypeError)


@pytest.mark.parametrize(
    ("annotation", "field", "rule"),
    [
        (list[Address], None, "field 'value' is a list of objects"),
        (dict[str, str], None, "field 'value' is an object"),
        (int | str, None, "field 'value' may take several types"),
        (Any, None, "field 'value' has no type"),
        (list[str], None, "field 'value' is a list of free values"),
        (Literal[1, 2], None, "field 'value' is a choice of values that are not all strings"),
        (str, Field(pattern="^[a-z]+$"), "field 'value' has 'pattern', which elicitation forms"),
        (float, Field(gt=0), "field 'value' has 'exclusiveMinimum' (gt=/lt=)"),
        (int, Field(multiple_of=5), "field 'value' has 'multipleOf'"),
        (SecretStr, None, "field 'value' is a secret: elicitation forms must never ask for one"),
        (bytes, None, "field 'value' has the format 'binary'"),
    ],
)
def test_a_field_no_form_can_hold_is_refused_with_its_rule(
    annotation: Any, field: Any, rule: str
) -> None:
    namespace: dict[str, Any] = {"__annotations__": {"value": annotation}}
    if field is not None:
        namespace["value"] = field
    model = type("Answer", (BaseModel,), namespace)
    with pytest.raises(FormSchemaError, match=r"^Answer cannot be an elicitation form") as refused:
        form_schema(model)
    assert rule in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("properties", "rule"),
    [
        ({"note": {"type": ["string", "null"]}}, "field 'note' allows null"),
        ({"where": {"type": "object", "properties": {}}}, "field 'where' is an object"),
        ({"one": {"type": "string", "const": "x"}}, "field 'one' has 'const'"),
        ({"size": {"type": "integer", "exclusiveMinimum": 0}}, "has 'exclusiveMinimum'"),
        ({"tags": {"type": "array", "items": {"type": "string"}}}, "is a list of free values"),
    ],
)
def test_a_hand_written_schema_outside_the_subset_is_refused(
    properties: dict[str, Any], rule: str
) -> None:
    with pytest.raises(FormSchemaError, match=r"^This requested schema cannot be an elicitation"):
        Elicit("?", {"type": "object", "properties": properties})
    with pytest.raises(FormSchemaError) as refused:
        form_schema({"type": "object", "properties": properties})
    assert rule in str(refused.value)


def test_a_hand_written_form_inside_the_subset_is_sent_as_written() -> None:
    schema = {
        "type": "object",
        "properties": {
            "color": {"type": "string", "title": "Colour", "oneOf": [
                {"const": "#f00", "title": "Red"}, {"const": "#00f", "title": "Blue"}]},
            "sizes": {"type": "array", "minItems": 1, "items": {"anyOf": [
                {"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]}},
            "age": {"type": "integer", "minimum": 0, "default": 30},
        },
        "required": ["color"],
    }  # fmt: skip
    sent = Elicit("Pick", schema).to_wire()["params"]["requestedSchema"]
    assert json.dumps(sent) == json.dumps(schema)  # the same keys in the same order
    assert spec_problems(sent) == []


async def test_a_refused_form_fails_the_first_call_that_asks_and_is_examined_once(
    connect: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import mcpserve.server.context.forms as forms

    built: list[Any] = []
    real = forms.type_schema
    monkeypatch.setattr(forms, "type_schema", lambda tp, **kw: built.append(tp) or real(tp, **kw))

    class Delivery(BaseModel):  # a model no other test asks with
        to: Address

    server = Server("refusing")
    asked: list[Any] = []

    @server.tool
    async def deliver(ctx: Context) -> str:
        answer = await ctx.elicit("Where to?", Delivery)
        return str(answer.data)

    async with connect(server, on_elicit=asked.append) as client:
        with caplog.at_level(logging.ERROR, logger="mcpserve"):
            results = [await client.call_tool("deliver") for _ in range(2)]
    assert asked == []  # the client was never asked
    for result in results:
        assert result["isError"] is True
        assert "deliver failed unexpectedly (ref " in result["content"][0]["text"]
    assert built == [Delivery]
    failures = [record.exc_info[1] for record in caplog.records if record.exc_info]
    assert [str(error) for error in failures] == [
        "Delivery cannot be an elicitation form: field 'to' is an object: elicitation forms "
        "take only strings, numbers, booleans and enums; ask for its parts as separate fields"
    ] * 2
