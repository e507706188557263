"""JSON Schema 2020-12 from pydantic, cleaned for MCP clients.

Schemas come from pydantic's generator with
:class:`~.schema_generator.CleanJsonSchemaGenerator`, which never invents titles from field
or class names but keeps the ones users set, and then go through :func:`clean_schema`:

* ``$ref``s are inlined and ``$defs`` dropped, because several MCP clients ignore ``$defs``.
  Recursive definitions cannot be inlined, so those alone stay in ``$defs``. Inlining copies
  a definition once per use, so a deep tree of models can grow to megabytes: a schema whose
  inlined form would exceed :data:`INLINE_LIMIT` bytes of JSON keeps ``$defs`` and ``$ref``
  (its size is computed from the definitions, without building it).
* ``Optional[X]`` becomes ``{"type": [t, "null"], ...}`` when ``X`` is *flat*: one string
  ``type`` and no ``enum``, ``const`` or subschemas. Every other keyword of a flat schema only
  constrains values of type ``t``, so the rewrite is exact and reads better. Anything richer
  (objects, arrays, enums, literals) stays ``{"anyOf": [X, {"type": "null"}]}``; there the
  type-list form would be wrong (``enum`` would still reject ``null``) or harder to read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal, cast

import orjson

from ..._types import JSONDict

_NULL: JSONDict = {"type": "null"}
_DEF_PREFIX = "#/$defs/"
_SUBSCHEMA = frozenset(
    {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
    | {"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)
_SUBSCHEMA_LIST = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SUBSCHEMA_MAP = frozenset({"properties", "patternProperties", "dependentSchemas"})
# Keywords that restrict values beyond "type" or nest schemas: "null" cannot join such a type.
_NOT_FLAT = _SUBSCHEMA | _SUBSCHEMA_LIST | _SUBSCHEMA_MAP | {"$ref", "$defs", "enum", "const"}
#: The largest schema (bytes of compact JSON) published with its ``$ref``s inlined.
INLINE_LIMIT = 64 * 1024


def clean_schema(schema: JSONDict) -> JSONDict:
    """Inline ``$ref``s (keeping ``$defs`` only for recursive definitions) and collapse
    ``Optional`` of flat schemas into a ``type`` list. Returns a new dict and leaves the input
    alone. Titles are the generator's business: see
    :class:`~.schema_generator.CleanJsonSchemaGenerator`."""
    defs: JSONDict = schema.get("$defs") or {}
    recursive = _recursive_defs(defs)
    if defs and _inlined_size(schema, defs, recursive) > INLINE_LIMIT:
        recursive = set(defs)  # too big inlined: every definition stays in $defs

    def walk(node: Any, *, inline_recursive: bool = False) -> Any:
        if not isinstance(node, dict):
            return copy.deepcopy(node)
        out: JSONDict = {}
        # Only descend where the keyword holds schemas, so that a property *named* "$ref" or
        # a default value shaped like a schema is never mistaken for one.
        for key, value in node.items():
            if key in _SUBSCHEMA:
                out[key] = walk(value)
            elif key in _SUBSCHEMA_LIST and isinstance(value, list):
                out[key] = [walk(item) for item in value]
            elif key in _SUBSCHEMA_MAP and isinstance(value, dict):
                out[key] = {name: walk(item) for name, item in value.items()}
            elif key != "$defs":
                out[key] = copy.deepcopy(value)
        name = _def_name(out.get("$ref"))
        if name in defs and (inline_recursive or name not in recursive):
            del out["$ref"]
            # Keys beside the $ref (a field's description, default or title) are more specific
            # than the definition's, so they win.
            out = {**walk(defs[name]), **out}
        return _collapse_nullable(out)

    # A recursive root is unfolded once so that the root still says "type": "object"; its
    # inner references keep pointing into the retained $defs.
    result = cast(JSONDict, walk(schema, inline_recursive=True))
    if kept := {name: walk(body) for name, body in defs.items() if name in recursive}:
        result["$defs"] = kept
    return result


def _inlined_size(schema: JSONDict, defs: JSONDict, recursive: set[str]) -> int:
    """About how many bytes ``schema`` takes once its non-recursive ``$ref``s are inlined."""
    sizes: dict[str, int] = {}

    def size(node: Any) -> int:
        body = {key: value for key, value in node.items() if key != "$defs"}
        total = len(orjson.dumps(body))
        for name, uses in _ref_uses(body).items():
            if name in defs and name not in recursive:
                if name not in sizes:
                    sizes[name] = size(defs[name])
                total += uses * sizes[name]
        return total

    try:
        return size(schema)
    except RecursionError:  # a chain of definitions thousands deep: certainly too big
        return INLINE_LIMIT + 1


def _ref_uses(node: Any) -> dict[str, int]:
    """How often each definition is referenced in ``node``."""
    uses: dict[str, int] = {}
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            name = _def_name(item.get("$ref"))
            if name is not None:
                uses[name] = uses.get(name, 0) + 1
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return uses


def _def_name(ref: Any) -> str | None:
    if isinstance(ref, str) and ref.startswith(_DEF_PREFIX):
        return ref[len(_DEF_PREFIX) :]
    return None


def _refs_in(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*map(_refs_in, node))
    if not isinstance(node, dict):
        return set()
    found: set[str] = set().union(*map(_refs_in, node.values()))
    if (name := _def_name(node.get("$ref"))) is not None:
        found.add(name)
    return found


def _recursive_defs(defs: Mapping[str, Any]) -> set[str]:
    """Definitions that can reach themselves through ``$ref``s."""
    edges = {name: _refs_in(body) for name, body in defs.items()}
    recursive: set[str] = set()
    for start in defs:
        seen: set[str] = set()
        pending = list(edges[start])
        while pending and start not in seen:
            name = pending.pop()
            if name not in seen:
                seen.add(name)
                pending.extend(edges.get(name, ()))
        if start in seen:
            recursive.add(start)
    return recursive


def _collapse_nullable(node: JSONDict) -> JSONDict:
    branches = node.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and _NULL in branches):
        return node
    other = branches[1] if branches[0] == _NULL else branches[0]
    if not (isinstance(other, dict) and isinstance(other.get("type"), str)):
        return node
    if other["type"] == "null" or not other.keys().isdisjoint(_NOT_FLAT):
        return node
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    return {**other, **rest, "type": [other["type"], "null"]}


def type_schema(
    tp: Any, *, mode: Literal["validation", "serialization"] = "validation"
) -> JSONDict:
    """The cleaned, title-free JSON Schema of any type pydantic understands."""
    from pydantic import TypeAdapter

    from .generator import CleanJsonSchemaGenerator

    adapter: TypeAdapter[Any] = TypeAdapter(tp)
    return clean_schema(adapter.json_schema(mode=mode, schema_generator=CleanJsonSchemaGenerator))
