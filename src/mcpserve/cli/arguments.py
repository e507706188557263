"""``key=value`` words on the command line, read as the arguments a tool or prompt takes.

A shell gives only strings, so a tool argument's value is read the way its ``inputSchema``
says: each word is tried first as JSON (``3``, ``true``, ``null``, ``["a","b"]``,
``{"k": 1}``, ``"quoted"``) and then as the plain string, and the first reading that fits the
argument's schema is sent. So ``isbn=9780441013593`` stays a string for a string argument
(the number does not fit) while ``count=3`` is an integer for an integer one.

A tool takes the arguments its schema names in ``properties``, and no others: a name it does
not take is almost always a typo (``yaer=1965``), and the server would drop it without a word
(JSON Schema allows unnamed properties unless told otherwise, and most servers ignore them).
Only a schema that says so welcomes others: ``additionalProperties`` true or a schema (the
value is then read by that schema), a matching ``patternProperties``, or no ``properties`` at
all (``{"type": "object"}``: anything goes, each value sent as JSON when it parses as JSON,
else as the string). See docs/decisions.md, "Arguments a tool does not name".

When no reading fits, the error names the argument, the type it expects and why the value
does not fit; a name the tool does not take (with the closest one it does, when one is close)
and a missing required argument are errors too, before anything is sent. Prompt arguments
are always strings: only their names are checked, the same way.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Iterable, Sequence

import jsonschema
import jsonschema.exceptions

from .._types import JSONDict, JSONValue

SYNTAX = 'KEY=VALUE (e.g. isbn=9780441013593, count=3, tags=\'["a","b"]\', draft=true)'


class ArgumentError(ValueError):
    """A ``key=value`` word that cannot be sent; the message says how to write it."""


def split_pairs(words: Iterable[str]) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` as ``{"a": "1", "b": "x=y"}``: split at the first ``=``."""
    pairs: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals or not key:
            raise ArgumentError(f"Expected {SYNTAX}, got {word!r}")
        if key in pairs:
            raise ArgumentError(f"Argument {key!r} is given twice; give it once")
        pairs[key] = value
    return pairs


def tool_arguments(words: Iterable[str], schema: JSONDict, owner: str = "This tool") -> JSONDict:
    """The ``arguments`` of a ``tools/call``, each value read by ``schema`` (inputSchema);
    ``owner`` names the tool in errors (``"Tool 'add_book'"``)."""
    pairs = split_pairs(words)
    properties: JSONDict = schema.get("properties") or {}
    unknown = [key for key in pairs if _extra_schema(key, schema) is None]
    if unknown:
        raise ArgumentError(not_taken(owner, unknown, list(properties)))
    missing = [name for name in schema.get("required") or () if name not in pairs]
    if missing:
        name = missing[0]
        kind = describe(properties.get(name, {}), schema)
        raise ArgumentError(f"Missing argument {name!r} ({kind}): add {name}=VALUE")
    definitions: JSONDict = {key: schema[key] for key in ("$defs", "definitions") if key in schema}
    sent: JSONDict = {}
    for key, raw in pairs.items():
        described = _extra_schema(key, schema)
        sent[key] = (
            _guess(raw) if described is _ANYTHING else _read(key, raw, described, definitions)
        )
    return sent


#: What :func:`_extra_schema` says of a name the schema leaves open: any value will do.
_ANYTHING = object()


def _extra_schema(key: str, schema: JSONDict) -> JSONValue:
    """The schema of argument ``key``: its ``properties`` entry, else what the schema says of
    other names; ``None`` when the tool does not take it."""
    properties = schema.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, described in patterns.items():
            with contextlib.suppress(re.error):
                if re.search(pattern, key):
                    return described
    extra = schema.get("additionalProperties")
    if extra is True or extra == {}:
        return _ANYTHING
    if isinstance(extra, dict):
        return extra
    if extra is None and not isinstance(properties, dict):
        return _ANYTHING  # {"type": "object"}: the schema names nothing, so takes anything
    return None


def not_taken(owner: str, unknown: Sequence[str], known: Sequence[str]) -> str:
    """``Tool 'add_book' has no argument 'yaer' (did you mean year?); it takes: isbn, year``."""
    names = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        names.append(f"{key!r}" + (f" (did you mean {close[0]}?)" if close else ""))
    takes = ", ".join(known) or "no arguments"
    return f"{owner} has no argument {' or '.join(names)}; it takes: {takes}"


def _guess(raw: str) -> JSONValue:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _read(key: str, raw: str, schema: JSONValue, definitions: JSONDict) -> JSONValue:
    # The argument's schema inside a document with the tool's $defs, so "#/$defs/X" resolves.
    document = {**definitions, **schema} if isinstance(schema, dict) else schema
    validator = jsonschema.Draft202012Validator(document)
    readings: list[JSONValue] = []
    with contextlib.suppress(ValueError):
        readings.append(json.loads(raw))
    if raw not in readings:
        readings.append(raw)
    failures: list[jsonschema.exceptions.ValidationError] = []
    for reading in readings:
        error = jsonschema.exceptions.best_match(validator.iter_errors(reading))
        if error is None:
            return reading
        failures.append(error)
    # A reading of the right type that breaks a constraint (minimum, pattern...) says more
    # than "not an integer": report that one when there is one.
    why = next((e.message for e in failures if e.validator not in _TYPE_CHECKS), None)
    expected = describe(schema, definitions)
    hint = ""
    if "[]" in expected:
        hint = f'; write an array as JSON: {key}=\'["a","b"]\''
    elif "object" in expected:
        hint = f'; write an object as JSON: {key}=\'{{"name": "value"}}\''
    detail = f": {why}" if why else ""
    raise ArgumentError(f"Argument {key!r} expects {expected}, got {raw!r}{detail}{hint}")


_TYPE_CHECKS = frozenset({"type", "anyOf", "oneOf", "enum", "const", "$ref"})


def describe(schema: JSONValue, root: JSONDict | None = None) -> str:
    """A JSON schema in a few words: ``integer``, ``string[]``, ``"red" | "blue"``."""
    if not isinstance(schema, dict):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str) and root is not None:
        target = _resolve(ref, root)
        if target is not None:
            return describe(target, root)
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(value) for value in schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return " | ".join(describe(option, root) for option in options)
    kind = schema.get("type")
    kinds: Sequence[JSONValue] = kind if isinstance(kind, list) else [kind] if kind else []
    if not kinds:
        return "any"
    words = []
    for one in kinds:
        if one == "array":
            items = describe(schema.get("items"), root)
            words.append(f"({items})[]" if " | " in items else f"{items}[]")
        elif one == "string" and isinstance(schema.get("format"), str):
            words.append(f"string ({schema['format']})")
        else:
            words.append(str(one))
    return " | ".join(words)


def _resolve(ref: str, root: JSONDict) -> JSONValue:
    if not ref.startswith("#/"):
        return None
    node: JSONValue = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def prompt_arguments(
    words: Iterable[str], declared: list[JSONDict], owner: str = "This prompt"
) -> dict[str, str]:
    """The ``arguments`` of a ``prompts/get``: strings, checked against the prompt's list;
    ``owner`` names the prompt in errors (``"Prompt 'recommend'"``)."""
    pairs = split_pairs(words)
    names = [argument["name"] for argument in declared]
    unknown = [key for key in pairs if key not in names]
    if unknown:
        raise ArgumentError(not_taken(owner, unknown, names))
    for argument in declared:
        if argument.get("required") and argument["name"] not in pairs:
            raise ArgumentError(
                f"Missing argument {argument['name']!r}: add {argument['name']}=VALUE"
            )
    return pairs
