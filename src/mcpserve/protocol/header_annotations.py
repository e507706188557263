"""``x-mcp-header`` annotations in a tool's ``inputSchema``, checked once at registration.

An annotated property is mirrored by clients into an ``Mcp-Param-{name}`` header on
Streamable HTTP; :func:`.http_headers.check_param_headers` compares the two per request. The
rules are checked here, whatever the transport, so a schema is published only when valid.

Decisions
---------
* ``x-mcp-header`` (``server/tools.mdx`` § x-mcp-header; ``docs/decisions.md``,
  "x-mcp-header") only on properties
  directly under the root ``properties``: the final spec also allows pure ``properties``
  chains, but SEP-2243's conformance table rejects nested properties, and one level keeps the
  per-call lookup to one dict access. ``type`` must be the single string ``"string"``,
  ``"integer"`` or ``"boolean"``; type lists, even ``["string", "null"]``, are refused because
  the official Python client (mcp 2.3) drops tools whose annotated ``type`` is not a string.
  Leave an optional parameter out of ``required`` instead; ``null`` is tolerated at call time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

_ANNOTATION: Final = "x-mcp-header"
_ANNOTATION_BYTES: Final = b'"x-mcp-header"'
_HEADER_TYPES: Final = frozenset({"string", "integer", "boolean"})
_CTL: Final = re.compile(r"[\x00-\x1f\x7f]")
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 § 5.6.2 1*tchar

# Keywords whose values are data rather than schemas (an "x-mcp-header" key inside a `const`
# object is not an annotation) and keywords whose values map names to schemas (a property
# *named* "x-mcp-header" is not an annotation either).
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples"})
_SCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)


def header_annotations(schema: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(property, header, type)`` per ``x-mcp-header`` annotation, after checking every
    rule (raises :class:`ValueError` naming the property and the broken rule)."""
    try:
        encoded: bytes | None = orjson.dumps(schema)
    except (orjson.JSONEncodeError, TypeError):
        encoded = None  # not plain JSON (a user's hand-written schema): walk it
    if encoded is not None and _ANNOTATION_BYTES not in encoded:
        return []  # the common case, found without walking the schema
    return _annotations(schema)


def _annotations(schema: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(property, header, type)`` per annotation, after checking every rule."""
    if _ANNOTATION in schema:
        raise ValueError(f"{_ANNOTATION} is not allowed on the schema root, only on a property")
    raw_props = schema.get("properties")
    # A malformed "properties" (not an object) is searched like any other keyword.
    props: Mapping[str, Any] = raw_props if isinstance(raw_props, Mapping) else {}
    stray = _find_annotation(schema, skip=frozenset({"properties"} if props is raw_props else ()))
    if stray is None:
        for prop, sub in props.items():
            if isinstance(sub, Mapping):
                inner = _find_annotation(sub, skip=frozenset({_ANNOTATION}))
                if inner is not None:
                    stray = f"/properties/{prop}{inner}"
                    break
    if stray is not None:
        raise ValueError(
            f"{_ANNOTATION} at {stray} is not allowed: it may only sit directly on a property "
            "under the root 'properties' (not inside items, anyOf/oneOf/allOf/not, "
            "if/then/else, $defs or nested properties)"
        )
    found: list[tuple[str, str, str]] = []
    seen: dict[str, str] = {}  # lower-cased header name -> property, for uniqueness
    for prop, sub in props.items():
        if not isinstance(sub, Mapping) or _ANNOTATION not in sub:
            continue
        header = sub[_ANNOTATION]
        where = f"{_ANNOTATION} on property {prop!r}"
        if not isinstance(header, str):
            # Only the type name: repr of an arbitrary value may be huge or fail.
            raise ValueError(f"{where} must be a string, not {type(header).__name__}")
        if not header:
            raise ValueError(f"{where} must not be empty")
        if _CTL.search(header):
            raise ValueError(f"{where} must not contain control characters: {header!r}")
        if not _TOKEN.fullmatch(header):
            raise ValueError(
                f"{where} must be an RFC 9110 token (ASCII letters, digits and "
                f"!#$%&'*+-.^_`|~): {header!r}"
            )
        kind = sub.get("type")
        if not isinstance(kind, str) or kind not in _HEADER_TYPES:
            # repr only of strings: repr of an arbitrary JSON value may be huge or fail.
            shown = repr(kind) if isinstance(kind, str) else f"a {type(kind).__name__}"
            raise ValueError(
                f'{where} requires "type" to be exactly "string", "integer" or '
                f'"boolean" (not number, array, object, null or a list of types); '
                f"found {shown}"
            )
        previous = seen.setdefault(header.lower(), prop)
        if previous != prop:
            raise ValueError(
                f"{where} duplicates the header name used by property {previous!r} "
                "(names are compared case-insensitively)"
            )
        found.append((prop, header, kind))
    return found


def _find_annotation(schema: Mapping[str, Any], *, skip: frozenset[str]) -> str | None:
    """JSON-pointer-style path of the first ``x-mcp-header`` nested in ``schema``, if any.

    ``skip`` lists top-level keys not to look into. Iterative, so a deep schema cannot hit the
    recursion limit.
    """
    stack: list[tuple[str, Any, bool]] = []  # (path, node, node maps names to schemas)

    def push_keywords(path: str, node: Mapping[str, Any], skip: frozenset[str]) -> None:
        for key, value in node.items():
            if key not in skip and key not in _DATA_KEYWORDS:
                stack.append((f"{path}/{key}", value, key in _SCHEMA_MAPS))

    push_keywords("", schema, skip)
    while stack:
        path, node, is_name_map = stack.pop()
        if isinstance(node, Mapping):
            if is_name_map:
                stack.extend((f"{path}/{name}", sub, False) for name, sub in node.items())
            elif _ANNOTATION in node:
                return path
            else:
                push_keywords(path, node, frozenset())
        elif isinstance(node, list):
            stack.extend((f"{path}/{i}", item, False) for i, item in enumerate(node))
    return None
