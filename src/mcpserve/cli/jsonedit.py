"""Setting one member of a JSON document while leaving every other byte as it was.

A config file is someone's: re-serialising it would reflow their arrays, reorder nothing but
still rewrite every line, and make the diff shown before writing useless. So the document
is scanned for the spans of the objects on the way to the member (``json``'s own decoder
finds where each value ends), and only the member's value is replaced, or the member
inserted after the last one of its object, in the indentation that object already uses
(two spaces in a new or one-line file).
"""

from __future__ import annotations

import json
import re

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


class Member:
    """One ``"key": value`` of an object, by position in the text."""

    __slots__ = ("key", "key_start", "value_end", "value_start")

    def __init__(self, key: str, key_start: int, value_start: int, value_end: int) -> None:
        self.key = key
        self.key_start = key_start
        self.value_start = value_start
        self.value_end = value_end


def _skip(text: str, index: int) -> int:
    match = _SPACE.match(text, index)
    return match.end() if match else index


def members(text: str, start: int) -> tuple[list[Member], int]:
    """The members of the object whose ``{`` is at ``start``, and the index of its ``}``."""
    found: list[Member] = []
    index = _skip(text, start + 1)
    if text[index] == "}":
        return found, index
    while True:
        key_start = index
        key, index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        assert text[index] == ":", "the text was checked to be valid JSON"
        value_start = _skip(text, index + 1)
        _, value_end = _DECODER.raw_decode(text, value_start)
        found.append(Member(key, key_start, value_start, value_end))
        index = _skip(text, value_end)
        if text[index] == "}":
            return found, index
        index = _skip(text, index + 1)  # past the comma


def indent_unit(text: str) -> str:
    """The indentation one level adds in ``text`` (two spaces when nothing is indented)."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def _line_indent(text: str, index: int) -> str:
    line_start = text.rfind("\n", 0, index) + 1
    return re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]


def _render(value: object, indent: str, unit: str) -> str:
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def set_member(text: str, keys: list[str], value: object) -> str:
    """``text`` (a JSON object) with ``document[keys[0]]...[keys[-1]] = value``.

    Objects on the way that are missing are created; the ones there must be objects (the
    caller checks, having parsed the document)."""
    unit = indent_unit(text)
    start = _skip(text, 0)
    for depth, key in enumerate(keys):
        found, close = members(text, start)
        member = next((m for m in found if m.key == key), None)
        rest = keys[depth + 1 :]
        if member is not None and rest:
            start = member.value_start
            continue
        if member is not None:
            indent = _line_indent(text, member.key_start)
            rendered = _render(value, indent, unit)
            return text[: member.value_start] + rendered + text[member.value_end :]
        # Missing here: insert the rest of the path, as nested objects, as a new member.
        for name in reversed(rest):
            value = {name: value}
        return _insert(text, start, found, close, key, value, unit)
    raise ValueError("set_member needs at least one key")


def _insert(
    text: str, start: int, found: list[Member], close: int, key: str, value: object, unit: str
) -> str:
    if not found:  # an empty object: lay it out afresh, one level in from its line
        outer = _line_indent(text, start)
        inner = outer + unit
        body = f"{json.dumps(key)}: {_render(value, inner, unit)}"
        return text[:start] + "{\n" + inner + body + "\n" + outer + "}" + text[close + 1 :]
    last = found[-1]
    if "\n" not in text[start : found[0].key_start]:  # an object written on one line
        body = f", {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
        return text[: last.value_end] + body + text[last.value_end :]
    indent = _line_indent(text, last.key_start)
    body = f",\n{indent}{json.dumps(key)}: {_render(value, indent, unit)}"
    return text[: last.value_end] + body + text[last.value_end :]


def new_document(keys: list[str], value: object) -> str:
    """A whole new file holding only ``value`` at ``keys``, indented by two spaces."""
    for name in reversed(keys):
        value = {name: value}
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
