"""Elicitation forms: the ``requestedSchema`` a client can render, from a model or a dict.

The spec limits a form (``client/elicitation.mdx``, "Requested Schema") to a flat object
whose properties are each one primitive: a string (``minLength``, ``maxLength``, a
``format`` of email, uri, date or date-time), a number or integer (``minimum``,
``maximum``), a boolean, a single choice (``enum`` of strings, or ``oneOf`` of
``{const, title}``) or a multiple choice (an array whose ``items`` are such a choice, with
``minItems``, ``maxItems``); each may have a ``title``, a ``description`` and a ``default``.
A client renders nothing else, so a schema outside it would be asked again and again.

* A pydantic model is *translated*: its JSON Schema (:mod:`.json_schema`) is rewritten field
  by field into that subset where the rewrite is exact, and refused where it is not.
  ``X | None`` becomes an optional ``X`` (the form leaves it out; a field without a default
  then reads as ``None``); a ``Literal`` of one value becomes a one-value ``enum``; ``gt``/
  ``lt`` on an integer become ``minimum``/``maximum``; a set's ``uniqueItems`` is dropped (a
  choice is picked once); keywords that only annotate (``examples``, ``deprecated``) are
  dropped, and so are the root's title and description (the message says what the form is
  for).
* A dict, a schema written by hand, is *checked* and sent as written: anything a model
  would have rewritten is an error there, naming the rule.

Either way a schema outside the subset raises :class:`FormSchemaError` naming the field and
the rule. Each model and each distinct dict is examined once; the outcome, a refusal too, is
cached, so asking again costs one dictionary lookup.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import orjson
import pydantic

from ..._types import JSONDict
from ..schema.json_schema import type_schema

__all__ = ["FormSchema", "FormSchemaError", "form_schema"]

_FORMATS = ("email", "uri", "date", "date-time")
_COMMON = frozenset({"type", "title", "description", "default"})
_KEYWORDS = {
    "string": _COMMON | {"minLength", "maxLength", "format"},
    "number": _COMMON | {"minimum", "maximum"},
    "integer": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "choice": _COMMON | {"enum", "oneOf", "enumNames"},
    "choices": _COMMON | {"items", "minItems", "maxItems"},
}
#: Keywords that describe without constraining: a translated model loses them.
_ANNOTATIONS = frozenset({"examples", "deprecated", "readOnly", "writeOnly", "$comment"})
_ROOT = frozenset({"type", "properties", "required", "$schema"})
_LABELS = frozenset({"title", "description"})
_PRIMITIVES = "elicitation forms take only strings, numbers, booleans and enums"


class FormSchemaError(TypeError):
    """A schema an elicitation form cannot take; the message names the field and the rule."""


@dataclass(frozen=True, slots=True)
class FormSchema:
    """A form as sent, and what reading its answer needs."""

    #: The ``requestedSchema``: share it read-only, copy it to change it.
    wire: JSONDict
    #: Fields optional only because they may be ``None``: absent from an answer, they are None.
    absent_is_none: tuple[str, ...] = ()


def form_schema(schema: type[pydantic.BaseModel] | JSONDict) -> FormSchema:
    """The form for a pydantic model (translated) or a JSON schema dict (checked).

    >>> form_schema(Loan).wire["properties"]["weeks"]
    {'type': 'integer'}
    """
    outcome: FormSchema | FormSchemaError | None
    if isinstance(schema, dict):
        try:
            key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # Python objects in it: no cache key, so check it afresh
            outcome = _refusal(schema)
        else:
            outcome = _cached_refusal(key)
        outcome = outcome or FormSchema(schema)  # sent as written, in its own key order
    elif isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        outcome = _translated(schema)
    else:
        raise FormSchemaError(
            f"An elicitation form is a pydantic model class or a JSON schema dict, not {schema!r}"
        )
    if isinstance(outcome, FormSchemaError):
        raise FormSchemaError(*outcome.args) from None  # a fresh one: no earlier traceback
    return outcome


@functools.lru_cache(maxsize=256)
def _translated(model: type[pydantic.BaseModel]) -> FormSchema | FormSchemaError:
    name = model.__qualname__.rpartition("<locals>.")[2]  # as written, inside a function too
    try:
        generated = type_schema(model)
    except Exception as exc:
        from ..schema.errors import no_schema_reason

        reason = no_schema_reason(model, "validation", exc)
        return FormSchemaError(f"{name} cannot be an elicitation form: {reason}")
    try:
        return _Form(strict=False).build(generated)
    except FormSchemaError as exc:
        return FormSchemaError(f"{name} cannot be an elicitation form: {exc}")


@functools.lru_cache(maxsize=256)
def _cached_refusal(key: bytes) -> FormSchemaError | None:
    return _refusal(orjson.loads(key))


def _refusal(schema: JSONDict) -> FormSchemaError | None:
    """Why a hand-written schema is no form (None when it is one)."""
    try:
        _Form(strict=True).build(schema)
    except FormSchemaError as exc:
        return FormSchemaError(f"This requested schema cannot be an elicitation form: {exc}")
    return None


class _Form:
    """One walk over a schema: translating (a model's) or only checking (a dict)."""

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict

    def build(self, schema: JSONDict) -> FormSchema:
        if schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
            raise FormSchemaError('its root must be {"type": "object", "properties": {...}}')
        if "properties" not in schema:
            self.rewrite('its root has no "properties" (an empty form has "properties": {})')
        for key in schema.keys() - _ROOT:
            self.rewrite(
                f"its root has {key!r}; a form's root takes only type, properties, "
                "required and $schema"
            )
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            raise FormSchemaError("its 'required' must be a list of property names")
        properties: JSONDict = {}
        optional: list[str] = []
        for name, field in schema.get("properties", {}).items():
            properties[name], nullable = self.field(name, field)
            if nullable and name in required:
                optional.append(name)
        wire: JSONDict = {"type": "object", "properties": properties}
        if "$schema" in schema:
            wire["$schema"] = schema["$schema"]
        if kept := [name for name in required if name not in optional]:
            wire["required"] = kept
        return FormSchema(wire, tuple(optional))

    def rewrite(self, rule: str) -> None:
        """A difference a model's translation removes, and a hand-written schema must not have."""
        if self.strict:
            raise FormSchemaError(rule)

    def field(self, name: str, field: Any) -> tuple[JSONDict, bool]:
        """The field as a form takes it, and whether it was nullable."""
        if not isinstance(field, dict):
            raise FormSchemaError(f"field {name!r} is not a schema (a JSON object)")
        field, nullable = self.without_null(name, dict(field))
        for key in _ANNOTATIONS & field.keys():
            self.rewrite(f"field {name!r} has {key!r}, which elicitation forms do not take")
            del field[key]
        items = field.get("items")
        if field.get("type") == "array" and isinstance(items, dict) and items.keys() & _LABELS:
            # An Enum's docstring and title describe each choice list, not the choices.
            self.rewrite(f"field {name!r}: its 'items' take no title or description")
            field["items"] = {key: value for key, value in items.items() if key not in _LABELS}
        kind = _kind(name, field)
        if kind in ("integer", "number"):
            self.exclusive_bounds(name, field, kind)
        elif kind == "choice" and "const" in field:
            self.rewrite(f"field {name!r} has 'const'; a form's fixed choice is an 'enum'")
            field["enum"] = [field.pop("const")]
        elif kind == "choices" and field.pop("uniqueItems", None) is not None:
            self.rewrite(
                f"field {name!r} has 'uniqueItems', which elicitation forms do not take "
                "(a choice is picked once)"
            )
        if kind == "string" and field.get("format") not in (None, *_FORMATS):
            raise FormSchemaError(_format_rule(name, field["format"]))
        if field.get("default", 0) is None:
            self.rewrite(f"field {name!r} has the default null; leave it out of 'required' instead")
            del field["default"]
        if unknown := sorted(field.keys() - _KEYWORDS[kind]):
            allowed = ", ".join(sorted(_KEYWORDS[kind] - {"enumNames"}))
            raise FormSchemaError(
                f"field {name!r} has {unknown[0]!r}, which elicitation forms do not take "
                f"({_NOUNS[kind]} field takes {allowed})"
            )
        _check_values(name, field, kind)
        return field, nullable

    def without_null(self, name: str, field: JSONDict) -> tuple[JSONDict, bool]:
        """``X | None`` as ``X``: in a form, leaving a field out is how it says "none"."""
        kind = field.get("type")
        if isinstance(kind, list) and "null" in kind and len(kind) == 2:
            self.rewrite(_NULLABLE.format(name=name))
            return {**field, "type": next(t for t in kind if t != "null")}, True
        branches = field.get("anyOf")
        if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
            self.rewrite(_NULLABLE.format(name=name))
            other = branches[1] if branches[0] == {"type": "null"} else branches[0]
            rest = {key: value for key, value in field.items() if key != "anyOf"}
            if isinstance(other, dict):
                return {**other, **rest}, True
        return field, False

    def exclusive_bounds(self, name: str, field: JSONDict, kind: str) -> None:
        for exclusive, inclusive, step in (
            ("exclusiveMinimum", "minimum", 1),
            ("exclusiveMaximum", "maximum", -1),
        ):
            if exclusive not in field:
                continue
            bound = field[exclusive]
            if kind != "integer" or type(bound) is not int or inclusive in field or self.strict:
                raise FormSchemaError(
                    f"field {name!r} has {exclusive!r} (gt=/lt=): elicitation forms take only "
                    "minimum and maximum (ge=/le=)"
                )
            field[inclusive] = bound + step  # exact for integers: > 0 is >= 1
            del field[exclusive]


_NULLABLE = (
    "field {name!r} allows null: a form field has one type; leave it out of 'required' to "
    "make it optional"
)
_NOUNS = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "choice": "a single-choice",
    "choices": "a multiple-choice",
}


def _kind(name: str, field: JSONDict) -> str:
    """Which of the spec's primitives ``field`` is, or the rule it breaks."""
    kind = field.get("type")
    if kind == "object" or "properties" in field or "$ref" in field:
        raise FormSchemaError(
            f"field {name!r} is an object: {_PRIMITIVES}; ask for its parts as separate fields"
        )
    if isinstance(kind, list) or (
        "type" not in field
        and ("anyOf" in field or "oneOf" in field)
        and not _titled_choices(field.get("oneOf"))
    ):
        raise FormSchemaError(
            f"field {name!r} may take several types: a form field has one type (string, "
            "number, integer or boolean) or a set of string choices"
        )
    if kind == "array":
        _check_items(name, field.get("items"))
        return "choices"
    if "enum" in field or "const" in field or "oneOf" in field:
        choices = field.get("enum", [field.get("const")] if "const" in field else None)
        if (
            kind != "string"
            or (choices is None and not _titled_choices(field.get("oneOf")))
            or (choices is not None and not all(isinstance(choice, str) for choice in choices))
        ):
            raise FormSchemaError(
                f"field {name!r} is a choice of values that are not all strings: form choices "
                "are strings (a Literal or an Enum of strings)"
            )
        return "choice"
    if kind in ("string", "number", "integer", "boolean"):
        return str(kind)
    if kind is None:
        raise FormSchemaError(
            f"field {name!r} has no type: {_PRIMITIVES} (annotate it str, int, float, bool, "
            "a Literal or an Enum)"
        )
    raise FormSchemaError(f"field {name!r} is of type {kind!r}: {_PRIMITIVES}")


def _check_items(name: str, items: Any) -> None:
    if isinstance(items, dict) and (items.get("type") == "object" or "properties" in items):
        raise FormSchemaError(
            f"field {name!r} is a list of objects: {_PRIMITIVES}, and a list only as a "
            "multiple choice of strings"
        )
    untitled = (
        isinstance(items, dict)
        and items.keys() == {"type", "enum"}
        and items["type"] == "string"
        and isinstance(items["enum"], list)
        and all(isinstance(choice, str) for choice in items["enum"])
    )
    titled = (
        isinstance(items, dict) and items.keys() == {"anyOf"} and _titled_choices(items["anyOf"])
    )
    if not (untitled or titled):
        raise FormSchemaError(
            f"field {name!r} is a list of free values: elicitation forms take a list only as a "
            "multiple choice of strings (a list of a Literal or an Enum of strings)"
        )


def _titled_choices(options: Any) -> bool:
    return (
        isinstance(options, list)
        and bool(options)
        and all(
            isinstance(option, dict)
            and option.keys() == {"const", "title"}
            and isinstance(option["const"], str)
            and isinstance(option["title"], str)
            for option in options
        )
    )


def _format_rule(name: str, fmt: Any) -> str:
    if fmt == "password":
        return (
            f"field {name!r} is a secret: elicitation forms must never ask for one; send "
            "the user to a page of yours with ctx.elicit(message, url=...)"
        )
    return (
        f"field {name!r} has the format {fmt!r}: elicitation forms take only the formats "
        f"{', '.join(_FORMATS)} (make it a str field and parse the answer yourself)"
    )


def _check_values(name: str, field: JSONDict, kind: str) -> None:
    """The values of the keywords: the spec's types, and a default that fits the field."""
    for key in ("title", "description"):
        if key in field and not isinstance(field[key], str):
            raise FormSchemaError(f"field {name!r}: its {key!r} must be a string")
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        if key in field and type(field[key]) is not int:
            raise FormSchemaError(f"field {name!r}: its {key!r} must be an integer")
    for key in ("minimum", "maximum"):
        if key in field and type(field[key]) not in (int, float):
            raise FormSchemaError(f"field {name!r}: its {key!r} must be a number")
    names = field.get("enumNames")
    if names is not None and not (
        isinstance(names, list)
        and all(isinstance(label, str) for label in names)
        and len(names) == len(field.get("enum", ()))
    ):
        raise FormSchemaError(
            f"field {name!r}: its 'enumNames' must be one string per 'enum' value"
        )
    if "default" not in field:
        return
    default = field["default"]
    fits = {
        "string": isinstance(default, str),
        "choice": isinstance(default, str),
        "number": type(default) in (int, float),
        "integer": type(default) in (int, float),
        "boolean": isinstance(default, bool),
        "choices": isinstance(default, list) and all(isinstance(v, str) for v in default),
    }[kind]
    if not fits:
        raise FormSchemaError(
            f"field {name!r}: its default {default!r} does not fit {_NOUNS[kind]} field"
        )
