"""Tests for mcpserve.server.schema.signature.

This module deliberately uses ``from __future__ import annotations``: every function below is
therefore inspected from string annotations, which is what the module must handle.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
from collections.abc import Mapping, Sequence  # noqa: F401 - named in string annotations
from typing import Annotated, Any, Generic, Literal, Optional, TypeVar

import pydantic
import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from mcpserve.server.schema.json_schema import clean_schema, type_schema
from mcpserve.server.schema.signature import (
    ArgumentSpec,
    Header,
    OutputSpec,
    inspect_arguments,
    inspect_output,
    parse_docstring,
)

# --------------------------------------------------------------------------- fixtures


T = TypeVar("T")


class Ctx:
    """Stands in for the server's request context type."""


class SubCtx(Ctx):
    pass


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    """A point."""

    x: int
    y: int = 0


class Labelled(BaseModel):
    name: str = Field(title="Display Name")


class Titled(BaseModel):
    model_config = ConfigDict(title="Custom")
    a: int


class Node(BaseModel):
    value: int
    children: list[Node] = []


@dataclasses.dataclass
class Size:
    width: int
    height: int


class Options(TypedDict):
    verbose: bool


class Content:
    """Stands in for a content block type passed as ``content_types``."""


class TextContent(Content):
    pass


def build(fn: Any, **kwargs: Any) -> ArgumentSpec:
    spec = inspect_arguments(fn, **kwargs)
    Draft202012Validator.check_schema(spec.input_schema)
    return spec


def output(fn: Any, **kwargs: Any) -> OutputSpec:
    spec = inspect_output(fn, **kwargs)
    if spec.schema is not None:
        Draft202012Validator.check_schema(spec.schema)
    return spec


def keys_anywhere(node: Any, key: str) -> list[Any]:
    found = []
    if isinstance(node, dict):
        if key in node:
            found.append(node[key])
        for value in node.values():
            found.extend(keys_anywhere(value, key))
    elif isinstance(node, list):
        for item in node:
            found.extend(keys_anywhere(item, key))
    return found


# --------------------------------------------------------------------------- docstrings


def test_google_docstring_gives_description_and_param_descriptions() -> None:
    def fn(city: str, days: int = 1) -> None:
        """Get the weather forecast.

        Uses the national service.

        Args:
            city: Name of the city,
                in English.
            days (int): How many days.
        """

    description, params = parse_docstring(fn)
    assert description == "Get the weather forecast.\n\nUses the national service."
    assert params == {"city": "Name of the city, in English.", "days": "How many days."}


@pytest.mark.parametrize("header", ["Args:", "Arguments:", "Parameters:"])
def test_google_docstring_accepts_each_arguments_header(header: str) -> None:
    def fn(x: int) -> None: ...

    fn.__doc__ = f"Summary.\n\n{header}\n    x (int): The x.\n"
    assert parse_docstring(fn) == ("Summary.", {"x": "The x."})


def test_numpy_docstring_parameters_are_parsed() -> None:
    def fn(x: int, y: int, label: str) -> None:
        """Plot a point.

        Parameters
        ----------
        x, y : int
            Coordinates
            of the point.
        label : str
            Text shown next to it.

        Returns
        -------
        None
        """

    description, params = parse_docstring(fn)
    assert description == "Plot a point."
    assert params == {
        "x": "Coordinates of the point.",
        "y": "Coordinates of the point.",
        "label": "Text shown next to it.",
    }


def test_sphinx_docstring_params_are_parsed() -> None:
    def fn(path: str, mode: str) -> None:
        """Open a file.

        :param path: Where the file is,
            relative to the root.
        :param str mode: How to open it.
        :type path: str
        :returns: nothing
        """

    description, params = parse_docstring(fn)
    assert description == "Open a file."
    assert params == {"path": "Where the file is, relative to the root.", "mode": "How to open it."}


def test_returns_and_raises_sections_are_dropped_from_description() -> None:
    def fn() -> int:
        """Count things.

        Returns:
            The count.

        Raises:
            ValueError: never.
        """
        return 0

    def inline() -> int:
        """Count things.

        Returns: the count.
        """
        return 0

    assert parse_docstring(fn) == ("Count things.", {})
    assert parse_docstring(inline) == ("Count things.", {})


def test_function_without_docstring_has_no_description() -> None:
    def fn() -> None:
        pass

    assert parse_docstring(fn) == (None, {})


def test_docstring_param_descriptions_reach_the_schema() -> None:
    def fn(city: str) -> None:
        """Forecast.

        Args:
            city: Name of the city.
        """

    spec = build(fn)
    assert spec.input_schema["properties"]["city"] == {
        "type": "string",
        "description": "Name of the city.",
    }


def test_field_description_wins_over_docstring() -> None:
    def fn(city: Annotated[str, Field(description="From Field.")]) -> None:
        """Forecast.

        Args:
            city: From the docstring.
        """

    spec = build(fn)
    assert spec.input_schema["properties"]["city"]["description"] == "From Field."


# --------------------------------------------------------------------------- input schema


def test_defaults_appear_and_only_parameters_without_default_are_required() -> None:
    def fn(a: int, b: str = "hi", *, c: list[int] | None = None, d: float) -> None: ...

    schema = build(fn).input_schema
    assert schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "string", "default": "hi"},
            "c": {
                "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}],
                "default": None,
            },
            "d": {"type": "number"},
        },
        "required": ["a", "d"],
    }


def test_required_is_omitted_when_every_parameter_has_a_default() -> None:
    def fn(a: int = 1) -> None: ...

    assert build(fn).input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer", "default": 1}},
    }


def test_unannotated_parameter_accepts_anything() -> None:
    def fn(a, b=3):  # type: ignore[no-untyped-def]
        ...

    spec = build(fn)
    assert spec.input_schema["properties"] == {"a": {}, "b": {"default": 3}}
    assert spec.validate({"a": [1, {"x": None}]}) == {"a": [1, {"x": None}], "b": 3}


def test_literal_and_enum_render_as_enum() -> None:
    def fn(unit: Literal["c", "f"], color: Color = Color.RED) -> None: ...

    spec = build(fn)
    props = spec.input_schema["properties"]
    assert props["unit"] == {"enum": ["c", "f"], "type": "string"}
    assert props["color"] == {"enum": ["red", "blue"], "type": "string", "default": "red"}
    assert spec.validate({"unit": "f", "color": "blue"}) == {"unit": "f", "color": Color.BLUE}


def test_nested_model_is_inlined_without_auto_titles() -> None:
    def fn(point: Point, size: Size, options: Options) -> None: ...

    schema = build(fn).input_schema
    assert "$defs" not in schema
    assert keys_anywhere(schema, "$ref") == []
    assert keys_anywhere(schema, "title") == []
    assert schema["properties"]["point"] == {
        "description": "A point.",
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
    }
    assert schema["properties"]["size"]["required"] == ["width", "height"]
    assert schema["properties"]["options"]["properties"] == {"verbose": {"type": "boolean"}}


def test_nested_values_are_validated_into_their_types() -> None:
    def fn(point: Point, size: Size, options: Options) -> None: ...

    kwargs = build(fn).validate(
        {"point": {"x": 1}, "size": {"width": 2, "height": 3}, "options": {"verbose": True}}
    )
    assert kwargs == {"point": Point(x=1), "size": Size(2, 3), "options": {"verbose": True}}


def test_explicit_titles_are_kept() -> None:
    def fn(
        label: Labelled,
        titled: Titled,
        count: Annotated[int, Field(title="How Many")] = 1,
    ) -> None: ...

    props = build(fn).input_schema["properties"]
    assert props["count"]["title"] == "How Many"
    assert props["label"]["properties"]["name"]["title"] == "Display Name"
    assert props["titled"]["title"] == "Custom"
    assert "title" not in props["label"]


def test_field_description_on_a_model_parameter_overrides_its_class_docstring() -> None:
    def fn(point: Annotated[Point, Field(description="Where to go.")]) -> None: ...

    prop = build(fn).input_schema["properties"]["point"]
    assert prop["description"] == "Where to go."
    assert prop["type"] == "object"


def test_recursive_model_keeps_defs_and_ref() -> None:
    def fn(tree: Node, point: Point) -> None: ...

    schema = build(fn).input_schema
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/Node"}
    assert set(schema["$defs"]) == {"Node"}
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "$ref" not in schema["properties"]["point"]
    Draft202012Validator(schema).validate(
        {"tree": {"value": 1, "children": [{"value": 2}]}, "point": {"x": 1}}
    )


def test_optional_string_renders_as_type_list_with_null() -> None:
    def fn(
        name: Optional[str] = None,  # noqa: UP045 - the typing spelling is under test
        limit: Annotated[int | None, Field(ge=1)] = None,
    ) -> None: ...

    props = build(fn).input_schema["properties"]
    assert props["name"] == {"type": ["string", "null"], "default": None}
    assert props["limit"] == {"type": ["integer", "null"], "minimum": 1, "default": None}


def test_optional_of_non_flat_schema_renders_as_any_of_with_null() -> None:
    def fn(point: Point | None = None, unit: Literal["c", "f"] | None = None) -> None: ...

    props = build(fn).input_schema["properties"]
    assert props["point"]["anyOf"][1] == {"type": "null"}
    assert props["point"]["anyOf"][0]["type"] == "object"
    # A type list would be wrong here: "enum" alone would still reject null.
    assert props["unit"] == {
        "anyOf": [{"enum": ["c", "f"], "type": "string"}, {"type": "null"}],
        "default": None,
    }


def test_function_without_parameters_gives_closed_empty_object() -> None:
    def fn() -> None: ...

    spec = build(fn)
    assert spec.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert spec.param_names == ()
    assert spec.validate(None) == {}
    assert spec.validate({}) == {}


def test_function_with_only_a_context_parameter_validates_to_no_arguments() -> None:
    def fn(ctx: Ctx) -> None: ...

    spec = build(fn, context_type=Ctx)
    assert spec.context_param == "ctx"
    assert spec.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert spec.validate({}) == {}


def test_context_parameter_is_excluded_and_reported() -> None:
    def fn(city: str, ctx: Ctx) -> None: ...

    spec = build(fn, context_type=Ctx)
    assert spec.context_param == "ctx"
    assert spec.param_names == ("city",)
    assert list(spec.input_schema["properties"]) == ["city"]
    assert spec.validate({"city": "Oslo"}) == {"city": "Oslo"}


@pytest.mark.parametrize("annotation", ["SubCtx", "Ctx | None", "Optional[Ctx]"])
def test_context_parameter_is_found_through_subclass_and_optional(annotation: str) -> None:
    def fn(city: str, context: Any = None) -> None: ...

    fn.__annotations__["context"] = annotation
    spec = build(fn, context_type=Ctx)
    assert spec.context_param == "context"
    assert spec.param_names == ("city",)


def test_without_context_type_no_parameter_is_treated_as_context() -> None:
    def fn(city: str) -> None: ...

    assert build(fn).context_param is None


def test_two_context_parameters_are_rejected() -> None:
    def fn(a: Ctx, b: Ctx) -> None: ...

    with pytest.raises(TypeError, match="two context parameters"):
        inspect_arguments(fn, context_type=Ctx)


def test_header_marker_adds_x_mcp_header() -> None:
    def fn(
        region: Annotated[str, Header("Region")],
        zone: Annotated[str, Header("Zone")] | None = None,
        other: int = 0,
    ) -> None: ...

    spec = build(fn)
    props = spec.input_schema["properties"]
    assert props["region"] == {"type": "string", "x-mcp-header": "Region"}
    assert props["zone"]["x-mcp-header"] == "Zone"
    assert "x-mcp-header" not in props["other"]
    assert spec.validate({"region": "eu"}) == {"region": "eu", "zone": None, "other": 0}


def test_parameter_names_that_shadow_model_attributes_work() -> None:
    def fn(json: str, schema: int, model_config: bool, copy: float = 1.5) -> None: ...

    spec = build(fn)
    assert spec.validate({"json": "j", "schema": 1, "model_config": True}) == {
        "json": "j",
        "schema": 1,
        "model_config": True,
        "copy": 1.5,
    }


def test_non_json_default_is_left_out_of_the_schema_without_a_warning() -> None:
    missing = object()

    def fn(a: Any = missing) -> None: ...

    spec = build(fn)
    assert spec.input_schema == {"type": "object", "properties": {"a": {}}}
    assert spec.validate({}) == {"a": missing}


def test_mutable_defaults_are_not_shared_between_calls() -> None:
    def fn(tags: list[str] = []) -> None:  # noqa: B006 - the hazard under test
        ...

    spec = build(fn)
    first, second = spec.validate({}), spec.validate({})
    assert first == {"tags": []}
    assert first["tags"] is not second["tags"]


def test_generic_context_type_is_recognised() -> None:
    class GenericCtx(Ctx, Generic[T]):
        pass

    def fn(a: int, ctx: Any) -> None: ...

    fn.__annotations__["ctx"] = GenericCtx[int]
    assert build(fn, context_type=Ctx).context_param == "ctx"


def test_partials_and_callable_objects_are_inspected_through_their_function() -> None:
    def fn(a: int, b: str) -> Size:
        """Make a size.

        Args:
            b: The b.
        """
        return Size(1, 1)

    class Answerer:
        def __call__(self, q: str) -> int:
            """Answer a question."""
            return 42

    spec = build(functools.partial(fn, a=1))
    assert spec.input_schema["properties"] == {
        "a": {"type": "integer", "default": 1},
        "b": {"type": "string", "description": "The b."},
    }
    assert parse_docstring(functools.partial(fn, a=1))[0] == "Make a size."
    assert build(Answerer()).param_names == ("q",)
    assert parse_docstring(Answerer()) == ("Answer a question.", {})
    assert output(Answerer()).schema == {"type": "integer"}


# --------------------------------------------------------------------------- validation


def test_lax_mode_coerces_numeric_strings() -> None:
    def fn(n: int, flag: bool, when: datetime.date) -> None: ...

    spec = build(fn, strict=False)
    assert spec.validate({"n": "3", "flag": "true", "when": "2024-05-01"}) == {
        "n": 3,
        "flag": True,
        "when": datetime.date(2024, 5, 1),
    }


def test_strict_mode_rejects_numeric_strings() -> None:
    def fn(n: int) -> None: ...

    spec = build(fn, strict=True)
    assert spec.validate({"n": 3}) == {"n": 3}
    with pytest.raises(pydantic.ValidationError):
        spec.validate({"n": "3"})


def test_strict_mode_accepts_the_json_forms_of_rich_types() -> None:
    def fn(color: Color, when: datetime.date, size: Size, point: Point) -> None: ...

    spec = build(fn, strict=True)
    kwargs = spec.validate(
        {
            "color": "red",
            "when": "2024-05-01",
            "size": {"width": 1, "height": 2},
            "point": {"x": 1},
        }
    )
    assert kwargs == {
        "color": Color.RED,
        "when": datetime.date(2024, 5, 1),
        "size": Size(1, 2),
        "point": Point(x=1),
    }


def test_strict_mode_accepts_python_objects_that_json_cannot_carry() -> None:
    class Opaque:
        pass

    def fn(point: Point, extra: Any = None) -> None: ...

    thing = Opaque()
    spec = build(fn, strict=True)
    assert spec.validate({"point": Point(x=1), "extra": thing}) == {
        "point": Point(x=1),
        "extra": thing,
    }


def test_validate_none_gives_empty_kwargs() -> None:
    def fn() -> None: ...

    assert build(fn).validate(None) == {}
    assert build(fn, strict=True).validate(None) == {}


def test_validate_none_fills_defaults_and_fails_on_required() -> None:
    def fn(a: int = 2) -> None: ...

    def needs(a: int) -> None: ...

    assert build(fn).validate(None) == {"a": 2}
    with pytest.raises(pydantic.ValidationError):
        build(needs).validate(None)


def test_extra_argument_keys_are_ignored() -> None:
    def fn(a: int) -> None: ...

    assert build(fn).validate({"a": 1, "b": 2}) == {"a": 1}
    assert build(fn, strict=True).validate({"a": 1, "b": 2}) == {"a": 1}
    assert build(lambda: None).validate({"b": 2}) == {}


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(
    "arguments", [{}, {"a": "x"}, {"a": 1, "point": {"y": 1}}, ["a"], {"a": [1]}]
)
def test_bad_input_raises_validation_error(strict: bool, arguments: Any) -> None:
    def fn(a: int, point: Point | None = None) -> None: ...

    with pytest.raises(pydantic.ValidationError):
        build(fn, strict=strict).validate(arguments)


def test_validated_kwargs_can_be_passed_straight_to_the_function() -> None:
    def fn(a: int, ctx: Ctx, b: str = "z") -> str:
        return f"{a}{b}{type(ctx).__name__}"

    spec = build(fn, context_type=Ctx)
    kwargs = spec.validate({"a": "4"})
    assert spec.context_param is not None
    kwargs[spec.context_param] = Ctx()
    assert fn(**kwargs) == "4zCtx"


@pytest.mark.parametrize(
    "source",
    [
        "def fn(a: int, *args: int) -> None: ...",
        "def fn(a: int, **kwargs: int) -> None: ...",
        "def fn(a: int, /, b: int) -> None: ...",
    ],
)
def test_star_args_kwargs_and_positional_only_are_rejected(source: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(TypeError):
        inspect_arguments(namespace["fn"])


def test_bound_method_has_no_self_parameter() -> None:
    class Service:
        def lookup(self, key: str) -> None: ...

    spec = build(Service().lookup)
    assert spec.param_names == ("key",)


def test_string_annotations_from_future_import_are_resolved() -> None:
    def fn(point: Point, ctx: Ctx, when: datetime.date | None = None) -> Size:
        return Size(1, 1)

    # This module uses `from __future__ import annotations`, so these are plain strings.
    assert fn.__annotations__["point"] == "Point"
    spec = build(fn, context_type=Ctx)
    assert spec.context_param == "ctx"
    assert spec.input_schema["properties"]["when"]["type"] == ["string", "null"]
    assert spec.input_schema["properties"]["point"]["type"] == "object"
    assert output(fn).schema == {
        "type": "object",
        "properties": {"width": {"type": "integer"}, "height": {"type": "integer"}},
        "required": ["width", "height"],
    }


def test_unresolvable_annotation_is_a_registration_error() -> None:
    def fn(a: int) -> None: ...

    fn.__annotations__["a"] = "NoSuchType"
    with pytest.raises(
        TypeError, match="parameter 'a' is annotated NoSuchType, but 'NoSuchType' is"
    ):
        inspect_arguments(fn)


# --------------------------------------------------------------------------- output spec


def test_missing_or_none_return_gives_no_output_schema() -> None:
    def missing():  # type: ignore[no-untyped-def]
        ...

    def none() -> None: ...

    for fn in (missing, none):
        spec = output(fn)
        assert (spec.schema, spec.structured) == (None, False)


def test_str_return_is_unstructured() -> None:
    def fn() -> str:
        return ""

    spec = output(fn)
    assert (spec.schema, spec.structured) == (None, False)


@pytest.mark.parametrize(
    "annotation", ["TextContent", "list[Content]", "Sequence[TextContent]", "str | TextContent"]
)
def test_content_return_types_are_unstructured(annotation: str) -> None:
    def fn() -> None: ...

    fn.__annotations__["return"] = annotation
    spec = output(fn, content_types=(Content,))
    assert (spec.schema, spec.structured) == (None, False)


@pytest.mark.parametrize("annotation", ["dict", "dict[str, Any]", "Mapping[str, Any]", "Any"])
def test_loose_mappings_and_any_are_structured_without_schema(annotation: str) -> None:
    def fn() -> None: ...

    fn.__annotations__["return"] = annotation
    spec = output(fn)
    assert (spec.schema, spec.structured) == (None, True)
    value = {"when": datetime.date(2024, 5, 1), "size": Size(1, 2)}
    assert spec.serialize(value) == {"when": "2024-05-01", "size": {"width": 1, "height": 2}}


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("int", {"type": "integer"}),
        ("float", {"type": "number"}),
        ("bool", {"type": "boolean"}),
        ("list[int]", {"type": "array", "items": {"type": "integer"}}),
        ("dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            "Options",
            {
                "type": "object",
                "properties": {"verbose": {"type": "boolean"}},
                "required": ["verbose"],
            },
        ),
        (
            "Point | None",
            {
                "anyOf": [
                    {
                        "description": "A point.",
                        "type": "object",
                        "properties": {
                            "x": {"type": "integer"},
                            "y": {"type": "integer", "default": 0},
                        },
                        "required": ["x"],
                    },
                    {"type": "null"},
                ]
            },
        ),
    ],
)
def test_typed_returns_are_structured_with_schema(annotation: str, expected: Any) -> None:
    def fn() -> None: ...

    fn.__annotations__["return"] = annotation
    spec = output(fn, content_types=(Content,))
    assert spec.structured is True
    assert spec.schema == expected


def test_recursive_return_model_keeps_object_root_and_defs() -> None:
    def fn() -> Node:
        return Node(value=1)

    spec = output(fn)
    assert spec.schema is not None
    assert spec.schema["type"] == "object"
    assert spec.schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "Node" in spec.schema["$defs"]
    assert spec.serialize(Node(value=1, children=[Node(value=2)])) == {
        "value": 1,
        "children": [{"value": 2, "children": []}],
    }


def test_serialize_of_a_dataclass_gives_a_dict() -> None:
    def fn() -> Size:
        return Size(3, 4)

    spec = output(fn)
    result = spec.serialize(fn())
    assert result == {"width": 3, "height": 4}
    json.dumps(result)


def test_serialize_of_a_model_and_of_a_fitting_dict() -> None:
    def fn() -> Point:
        return Point(x=1)

    spec = output(fn)
    assert spec.serialize(Point(x=1)) == {"x": 1, "y": 0}
    assert spec.serialize({"x": 5}) == {"x": 5, "y": 0}


@pytest.mark.parametrize(
    ("annotation", "bad"), [("Size", {"width": 1}), ("int", "lots"), ("list[int]", [1, "x"])]
)
def test_serialize_of_a_bad_value_raises(annotation: str, bad: Any) -> None:
    def fn() -> None: ...

    fn.__annotations__["return"] = annotation
    with pytest.raises(pydantic.ValidationError):
        output(fn).serialize(bad)


# --------------------------------------------------------------------------- clean_schema


def test_clean_schema_inlines_refs_of_a_plain_pydantic_schema_without_mutating_it() -> None:
    class Outer(BaseModel):
        first: Point
        second: Point | None = None

    raw = Outer.model_json_schema()
    before = json.dumps(raw, sort_keys=True)
    cleaned = clean_schema(raw)
    assert json.dumps(raw, sort_keys=True) == before
    assert "$defs" not in cleaned
    assert keys_anywhere(cleaned, "$ref") == []
    Draft202012Validator.check_schema(cleaned)
    # Each inlined copy is independent, so editing one use site cannot leak into another.
    cleaned["properties"]["first"]["properties"]["x"]["type"] = "string"
    assert cleaned["properties"]["second"]["anyOf"][0]["properties"]["x"]["type"] == "integer"


def test_clean_schema_keeps_every_definition_of_a_mutual_recursion() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "leaf": {"$ref": "#/$defs/Leaf"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
            "Leaf": {"type": "string"},
        },
    }
    cleaned = clean_schema(schema)
    assert cleaned["properties"] == {"a": {"$ref": "#/$defs/A"}, "leaf": {"type": "string"}}
    assert set(cleaned["$defs"]) == {"A", "B"}
    Draft202012Validator.check_schema(cleaned)


def test_clean_schema_leaves_property_names_that_look_like_keywords_alone() -> None:
    schema = {"type": "object", "properties": {"$ref": {"type": "string"}}}
    assert clean_schema(schema) == schema


def test_type_schema_gives_a_title_free_inlined_schema() -> None:
    class Outer(BaseModel):
        color: Color
        point: Point

    schema = type_schema(Outer)
    assert keys_anywhere(schema, "title") == []
    assert keys_anywhere(schema, "$ref") == []
    Draft202012Validator.check_schema(schema)


def test_tools_with_the_same_parameters_share_a_validator_but_not_a_schema_dict() -> None:
    def first(a: int, b: str = "x") -> str:
        return b

    def second(a: int, b: str = "x") -> str:
        return b

    one = inspect_arguments(first)
    two = inspect_arguments(second)
    assert one.input_schema == two.input_schema
    assert one.input_schema is not two.input_schema  # editing one cannot change the other
    assert two.validate({"a": "3"}) == {"a": 3, "b": "x"}


def test_a_different_default_of_an_equal_value_is_not_confused() -> None:
    def flag(a: int = 1) -> None: ...

    def boolean(a: int = True) -> None: ...  # 1 == True, yet not the same default

    assert inspect_arguments(flag).input_schema["properties"]["a"]["default"] == 1
    assert inspect_arguments(boolean).input_schema["properties"]["a"]["default"] is True


def test_different_descriptions_give_different_schemas() -> None:
    def one(a: int) -> None:
        """Do it.

        Args:
            a: The first.
        """

    def two(a: int) -> None:
        """Do it.

        Args:
            a: The second.
        """

    assert inspect_arguments(one).input_schema["properties"]["a"]["description"] == "The first."
    assert inspect_arguments(two).input_schema["properties"]["a"]["description"] == "The second."


# ---------------------------------------------------------------- tools alike share the work


def test_functions_of_one_shape_share_a_validator_but_not_a_schema() -> None:
    def first(a: int, b: str = "x") -> str:
        return b

    def second(a: int, b: str = "x") -> str:
        return b

    one, two = inspect_arguments(first), inspect_arguments(second)
    assert one._validate_python is two._validate_python
    assert one.input_schema == two.input_schema
    two.input_schema["properties"]["a"]["title"] = "changed by a user"
    assert "title" not in one.input_schema["properties"]["a"]
    assert inspect_arguments(first).input_schema == one.input_schema


def test_a_different_default_type_or_description_is_a_different_shape() -> None:
    def ints(a: int = 1) -> None: ...

    def floats(a: float = 1.0) -> None: ...

    def described(a: int = 1) -> None:
        """Count things.

        Args:
            a: How many.
        """

    specs = [inspect_arguments(fn) for fn in (ints, floats, described)]
    assert [s.input_schema["properties"]["a"] for s in specs] == [
        {"type": "integer", "default": 1},
        {"type": "number", "default": 1.0},
        {"type": "integer", "default": 1, "description": "How many."},
    ]


def test_a_cached_schema_beyond_json_integers_is_still_copied() -> None:
    def first(a: int = 2**70) -> None: ...

    def second(a: int = 2**70) -> None: ...

    one, two = inspect_arguments(first), inspect_arguments(second)
    assert two.input_schema == one.input_schema
    assert two.input_schema is not one.input_schema
    assert two.input_schema["properties"]["a"]["default"] == 2**70


# --------------------------------------------------------------------------- inlining size


class Leaf(BaseModel):
    name: str
    weight: float = 1.0


def model_tree(levels: int) -> Any:
    """Models nested ``levels`` deep, each naming the level below three times."""
    below: Any = Leaf
    for level in range(levels):
        below = pydantic.create_model(
            f"Level{level}", left=(below, ...), right=(below, ...), spare=(below | None, None)
        )
    return below


def tree_value(levels: int) -> Any:
    value: Any = {"name": "l"}
    for _ in range(levels):
        value = {"left": value, "right": value}
    return value


def test_a_deep_model_tree_keeps_its_defs_instead_of_inlining_megabytes() -> None:
    """Inlined, each level copies the level below three times (3**6 leaves here): past the
    limit the schema keeps $defs and $ref, so it stays small."""
    from mcpserve.server.schema.json_schema import INLINE_LIMIT

    def plant(tree: Any) -> None: ...

    plant.__annotations__["tree"] = model_tree(6)  # a type made at run time, not a name
    spec = build(plant)
    assert len(json.dumps(spec.input_schema)) < INLINE_LIMIT
    assert set(spec.input_schema["$defs"]) == {"Leaf", *(f"Level{n}" for n in range(6))}
    assert spec.input_schema["properties"]["tree"] == {"$ref": "#/$defs/Level5"}
    Draft202012Validator.check_schema(spec.input_schema)
    Draft202012Validator(spec.input_schema).validate({"tree": tree_value(6)})
    leaf = spec.validate({"tree": tree_value(6)})["tree"]
    for _ in range(6):
        leaf = leaf.left
    assert leaf.name == "l"


def test_a_shallow_model_tree_is_still_inlined() -> None:
    def prune(branch: Any) -> None: ...

    prune.__annotations__["branch"] = model_tree(2)
    spec = build(prune)
    assert "$defs" not in spec.input_schema
    assert spec.input_schema["properties"]["branch"]["properties"]["left"]["type"] == "object"
