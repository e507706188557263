"""OpenAPI schemas as JSON Schema 2020-12, the only dialect a tool's schemas use.

An OpenAPI 3.1 Schema Object already is JSON Schema 2020-12; a 3.0 one is a dialect of
draft 4 with a few words of its own. One translation serves both, leniently, since
documents in the wild mix them:

* ``nullable: true`` adds ``"null"`` to ``type`` (and ``None`` to ``enum``); a schema
  without ``type`` (a ``$ref``, an ``allOf``) becomes ``anyOf: [<it>, {"type": "null"}]``;
* boolean ``exclusiveMinimum``/``exclusiveMaximum`` become the numeric bounds of 2020-12;
* ``example`` becomes ``examples: [...]``;
* what means nothing to a JSON Schema validator, or would change how references resolve,
  is dropped: ``discriminator``, ``xml``, ``externalDocs``, ``x-`` extensions, ``$id``,
  ``$schema``, anchors and nested ``$defs`` (every reference is rewritten below).

References: a ``$ref`` must point into the document (``#/...``; nothing is retrieved). Each
target becomes one definition, ``#/$defs/<name>`` (``Pet`` for ``#/components/schemas/Pet``),
translated once and shared by every tool that uses it. :meth:`Translator.finish` gives a
tool's schema the definitions it reaches and hands it to
:func:`~mcpserve.server.schema.json_schema.clean_schema`, which inlines them except recursive
ones, kept in ``$defs`` (``docs/decisions.md``, "Schema inlining"): a cycle of references
stays a cycle of ``$ref``s, never an endless copy.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from ..._types import JSONDict
from ...server.schema.json_schema import clean_schema

_DROPPED = frozenset(
    {"discriminator", "xml", "externalDocs", "nullable", "example", "$id", "$schema", "$anchor"}
    | {"$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef", "$vocabulary"}
    | {"$defs", "definitions"}
)
_ONE = frozenset(
    {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
    | {"unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
)
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"properties", "patternProperties", "dependentSchemas"})
#: What describes a nullable schema rather than constrains it: it stays outside the anyOf.
_ANNOTATIONS = (
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
)
_NULL: JSONDict = {"type": "null"}
_BOOLEAN: dict[bool, JSONDict] = {True: {}, False: {"not": {}}}
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


class UnsupportedSchema(ValueError):
    """A schema this translation cannot give a tool (a reference out of the document, say)."""


def resolve_pointer(document: Any, ref: str) -> Any:
    """What a local reference (``#/components/schemas/Pet``) points to in ``document``."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise UnsupportedSchema(
            f"$ref {ref!r} points outside the document; only local references (#/...) are resolved"
        )
    node = document
    pointer = unquote(ref[1:])
    for raw in pointer.split("/")[1:] if pointer else ():
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise UnsupportedSchema(f"$ref {ref!r} points to nothing in the document")
    return node


def follow_refs(document: Any, node: Any) -> Any:
    """``node`` with a chain of ``$ref``s followed (a reference to a reference...)."""
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if ref in seen:
            raise UnsupportedSchema(f"$ref {ref!r} refers to itself")
        seen.add(ref)
        node = resolve_pointer(document, ref)
    return node


class Translator:
    """Translates the schemas of one OpenAPI document, keeping its definitions."""

    def __init__(self, document: JSONDict) -> None:
        self._document = document
        #: Definition name by the reference that named it.
        self._names: dict[str, str] = {}
        #: Translated definitions, by name (also what a reference mid-translation reads).
        self._defs: JSONDict = {}

    def translate(self, schema: Any) -> Any:
        """``schema`` in JSON Schema 2020-12, its references pointing to ``#/$defs/...``.

        Raises :class:`UnsupportedSchema`, and then keeps none of the definitions this call
        began: a later schema sharing them gets the same error, never half a definition.
        """
        names, defs = dict(self._names), dict(self._defs)
        try:
            return self._translate(schema)
        except UnsupportedSchema:
            self._names, self._defs = names, defs
            raise

    def _translate(self, schema: Any) -> Any:
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            raise UnsupportedSchema(f"a schema must be an object or a boolean, not {schema!r}")
        out: JSONDict = {}
        for key, value in schema.items():
            if key.startswith("x-") or key in _DROPPED:
                continue
            if key == "$ref":
                out[key] = f"#/$defs/{self._define(value)}"
            elif key in _ONE:
                out[key] = self._translate(value)
            elif key in _LIST and isinstance(value, list):
                out[key] = [self._translate(item) for item in value]
            elif key in _MAP and isinstance(value, dict):
                out[key] = {name: self._translate(item) for name, item in value.items()}
            else:
                out[key] = value
        if "example" in schema and "examples" not in schema:
            out["examples"] = [schema["example"]]
        _exclusive_bounds(out)
        return _nullable(out) if schema.get("nullable") is True else out

    def finish(self, schema: JSONDict) -> JSONDict:
        """A translated schema, ready to publish: definitions it reaches inlined, except
        recursive ones, which stay in ``$defs``."""
        reached = self._reached(schema)
        if not reached:
            return clean_schema(schema)
        return clean_schema({**schema, "$defs": {name: self._defs[name] for name in reached}})

    def _define(self, ref: Any) -> str:
        """The definition name for the target of ``ref``, translating it the first time."""
        if not isinstance(ref, str):
            raise UnsupportedSchema(f"$ref must be a string, not {ref!r}")
        name = self._names.get(ref)
        if name is not None:
            return name
        target = resolve_pointer(self._document, ref)
        follow_refs(self._document, target)  # a cycle of bare references describes nothing
        base = _UNSAFE_NAME.sub("_", ref.rstrip("/").rpartition("/")[2]) or "schema"
        name, number = base, 1
        while name in self._defs:
            number += 1
            name = f"{base}_{number}"
        self._names[ref] = name
        self._defs[name] = {}  # a reference back to it, while it is translated, finds it
        translated = self._translate(target)
        # As objects: a boolean schema means the same, and inlining merges objects.
        self._defs[name] = (
            translated if isinstance(translated, dict) else dict(_BOOLEAN[translated])
        )
        return name

    def _reached(self, schema: Any) -> list[str]:
        """The definitions ``schema`` reaches through references, in the order found."""
        found: dict[str, None] = {}
        pending = [schema]
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/$defs/"):
                    name = ref.removeprefix("#/$defs/")
                    if name in self._defs and name not in found:
                        found[name] = None
                        pending.append(self._defs[name])
                pending.extend(node.values())
            elif isinstance(node, list):
                pending.extend(node)
        return list(found)


def _exclusive_bounds(schema: JSONDict) -> None:
    """OpenAPI 3.0's ``exclusiveMinimum: true`` beside ``minimum``, as 2020-12 spells it."""
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(exclusive)
        if flag is True and bound in schema:
            schema[exclusive] = schema.pop(bound)
        elif isinstance(flag, bool):
            del schema[exclusive]


def _nullable(schema: JSONDict) -> JSONDict:
    kind = schema.get("type")
    if isinstance(kind, str | list):
        kinds = [kind] if isinstance(kind, str) else list(kind)
        schema["type"] = kinds if "null" in kinds else [*kinds, "null"]
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    outside = {key: schema.pop(key) for key in _ANNOTATIONS if key in schema}
    return {"anyOf": [schema, dict(_NULL)], **outside}
