"""SKILL.md frontmatter: the small part of YAML that skills use, read and written here.

A SKILL.md begins with a ``---`` line, YAML, another ``---`` line, then markdown. Skills use
little of YAML: a mapping of keys to text (``name``, ``description``, ``license``,
``compatibility``, ``allowed-tools``), a nested mapping (``metadata``), the odd list or
number. :func:`parse_frontmatter` reads exactly this subset:

* block mappings and block sequences, nested by indentation (spaces; a tab never indents);
* plain scalars (on one line, or folded over more-indented lines), single- and
  double-quoted scalars on one line, block scalars (``|`` and ``>`` with ``-``/``+``
  chomping and an indentation digit), and flow collections (``[a, b]``, ``{k: v}``) on one
  line;
* comments and blank lines.

Everything else is refused with its line number and the reason, never guessed at: anchors,
aliases, tags, directives, quoted scalars that span lines, keys other than plain words, and
duplicate keys. A host parses the same text with its own YAML library and compares the
result with the skill's entry field by field, so a value must mean the same to every YAML
parser: plain scalars resolve as YAML 1.2's core schema says, and those a YAML 1.1 parser
reads differently are refused with a request to quote them (:mod:`.yaml_scalars`).

:func:`render_frontmatter` writes fields back as YAML that this parser (and so any) reads
as the same values: the frontmatter of a skill defined in code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from .._types import JSONDict
from .yaml_scalars import (
    Unreadable,
    double_quoted,
    is_text,
    plain_text,
    quoted,
    render_scalar,
    resolve,
    single_quoted,
)

_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")
_ENTRY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-/]*)[ \t]*:(?:[ \t]+(.*))?")
_CLOSING = re.compile(r"---[ \t]*")
_BLOCK_HEADER = re.compile(r"([|>])(?:([+-])([1-9])?|([1-9])([+-])?)?(?:[ \t]+#.*)?[ \t]*")


class FrontmatterError(ValueError):
    """Frontmatter this module cannot read: the line (counted in the whole file) and why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def split_frontmatter(text: str) -> tuple[list[str], str]:
    """The frontmatter's lines (without the ``---`` lines) and the markdown after them."""
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[0].rstrip("\r") != "---":
        raise FrontmatterError(
            1,
            "a SKILL.md must begin with a '---' line, then the YAML "
            "frontmatter, then another '---' line",
        )
    for number in range(1, len(lines)):
        if _CLOSING.fullmatch(lines[number].rstrip("\r")):
            return [line.rstrip("\r") for line in lines[1:number]], "\n".join(lines[number + 1 :])
    raise FrontmatterError(1, "the frontmatter has no closing '---' line")


def parse_frontmatter(text: str) -> JSONDict:
    """The frontmatter of a SKILL.md as a JSON-able dict; :class:`FrontmatterError` if the
    text does not begin with frontmatter this module can read."""
    lines, _ = split_frontmatter(text)
    return _Parser(lines, first_line=2).document()


def render_frontmatter(fields: Mapping[str, Any]) -> str:
    """``fields`` as frontmatter YAML (no ``---`` lines), which parses back to ``fields``."""
    text = "".join(_render_entry(key, value, 0) for key, value in fields.items())
    if _Parser(text.split("\n")[:-1], first_line=1).document() != json.loads(json.dumps(fields)):
        raise ValueError(
            "these frontmatter fields cannot be written as YAML that reads back the same"
        )
    return text


# -- reading ----------------------------------------------------------------------------------


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _is_item(content: str) -> bool:
    return content == "-" or content.startswith(("- ", "-\t"))


class _Parser:
    """A cursor over the frontmatter's lines; each method reads one kind of node."""

    def __init__(self, lines: list[str], *, first_line: int) -> None:
        self.lines = lines
        self.first_line = first_line
        self.at = 0

    def error(self, reason: str, index: int | None = None) -> FrontmatterError:
        return FrontmatterError(self.first_line + (self.at if index is None else index), reason)

    def document(self) -> JSONDict:
        if self.next_content() is None:
            return {}
        indent, content = self.next_content() or (0, "")
        if indent != 0:
            raise self.error("the frontmatter must start at the left margin")
        if _is_item(content):
            raise self.error("the frontmatter must be a mapping of keys to values, not a list")
        fields = self.mapping(0)
        if self.next_content() is not None:
            raise self.error("unexpected indentation")
        return fields

    def next_content(self) -> tuple[int, str] | None:
        """The indentation and text of the next line that is not blank or a comment."""
        while self.at < len(self.lines):
            line = self.lines[self.at]
            if not _is_blank(line):
                indent = _indent(line)
                if line[indent] == "\t":
                    raise self.error("a tab cannot indent YAML; indent with spaces")
                return indent, line.strip(" ")
            self.at += 1
        return None

    def block(self, indent: int) -> Any:
        _, content = self.next_content() or (0, "")
        return self.sequence(indent) if _is_item(content) else self.mapping(indent)

    def mapping(self, indent: int) -> JSONDict:
        result: JSONDict = {}
        while (found := self.next_content()) is not None:
            at, content = found
            if at < indent:
                break
            if at > indent:
                raise self.error("unexpected indentation")
            if _is_item(content):
                raise self.error("a list item where a key was expected")
            entry = _ENTRY.fullmatch(content)
            if entry is None:
                raise self.error(
                    "cannot read this line: expected 'key: value', with a key of letters, "
                    "digits, '_', '-', '.' or '/'"
                )
            key = entry.group(1)
            if not is_text(key):
                raise self.error(f"the key {key!r} is not text to every YAML parser")
            if key in result:
                raise self.error(f"the key {key!r} appears twice")
            self.at += 1
            result[key] = self.value(entry.group(2) or "", indent, in_mapping=True)
        return result

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (found := self.next_content()) is not None:
            at, content = found
            if at < indent or (at == indent and not _is_item(content)):
                break
            if at > indent:
                raise self.error("unexpected indentation")
            rest = content[1:].lstrip(" \t")
            column = at + len(content) - len(rest)
            if rest and not rest.startswith("#") and (_is_item(rest) or _ENTRY.fullmatch(rest)):
                # "- key: value" or "- - x": the item is a block that begins on this line.
                self.lines[self.at] = " " * column + rest
                items.append(self.block(column))
            else:
                self.at += 1
                items.append(self.value(rest, indent, in_mapping=False))
        return items

    def value(self, text: str, indent: int, *, in_mapping: bool) -> Any:
        """The value after ``key:`` or ``-`` (``text``, the rest of its line)."""
        if not text or text.startswith("#"):
            found = self.next_content()
            if found is not None:
                at, content = found
                if at > indent:
                    return self.block(at)
                if in_mapping and at == indent and _is_item(content):
                    return self.sequence(indent)
            return None
        first = text[0]
        if first in "|>":
            return self.block_scalar(text, indent)
        index = self.at - 1
        if first in "\"'[{":
            try:
                value, end = _flow_value(text, 0)
            except Unreadable as exc:
                raise self.error(str(exc), index) from None
            tail = text[end:].strip()
            if tail and not tail.startswith("#"):
                raise self.error("unexpected text after the value", index)
            if (found := self.next_content()) is not None and found[0] > indent:
                raise self.error(
                    "a quoted value or [...] / {...} must end on its line; for text over "
                    "several lines use a | or > block",
                    index,
                )
            return value
        return self.plain(text, indent, index)

    def plain(self, text: str, indent: int, index: int) -> Any:
        parts = [self.scalar(plain_text, text, index)]
        empty = 0
        while self.at < len(self.lines):  # more-indented lines continue the value, folded
            line = self.lines[self.at]
            stripped = line.strip()
            if not stripped:
                empty += 1
                self.at += 1
                continue
            if _indent(line) <= indent or stripped.startswith("#"):
                break
            parts.append("\n" * empty if empty else " ")
            parts.append(self.scalar(plain_text, stripped, self.at))
            empty = 0
            self.at += 1
        if empty:  # the blank lines after the value belong to no one: read them again
            self.at -= empty
        if len(parts) == 1:
            return self.scalar(resolve, parts[0], index)
        return "".join(parts)

    def scalar(self, read: Callable[[str], Any], text: str, index: int) -> Any:
        try:
            return read(text)
        except Unreadable as exc:
            raise self.error(str(exc), index) from None

    def block_scalar(self, header: str, indent: int) -> str:
        index = self.at - 1
        match = _BLOCK_HEADER.fullmatch(header)
        if match is None:
            raise self.error(
                "cannot read this block scalar header (| or > with an "
                "optional - or + and an indentation digit)",
                index,
            )
        style, chomp = match.group(1), match.group(2) or match.group(5)
        digit = match.group(3) or match.group(4)
        lines: list[str] = []
        content_indent = indent + int(digit) if digit else None
        while self.at < len(self.lines):
            line = self.lines[self.at]
            if line.strip(" ") == "":
                lines.append(line)
                self.at += 1
                continue
            if content_indent is None:
                content_indent = _indent(line)
                if content_indent <= indent:
                    content_indent = None
                    break
            if _indent(line) < content_indent:
                break
            lines.append(line)
            self.at += 1
        if content_indent is None:  # nothing but empty lines: an empty value
            content_indent = indent + 1
        while lines and lines[-1].strip(" ") == "" and len(lines[-1]) <= content_indent:
            # Trailing empty lines count only for "+" chomping; give the rest back as blank.
            if chomp == "+":
                break
            lines.pop()
            self.at -= 1
        texts = [line[content_indent:] if len(line) > content_indent else "" for line in lines]
        return _block_text(texts, style, chomp)


def _block_text(lines: list[str], style: str, chomp: str | None) -> str:
    last = max((i for i, line in enumerate(lines) if line), default=-1)
    body, trailing = lines[: last + 1], len(lines) - last - 1
    if style == "|":
        text = "\n".join(body)
    else:  # folded: a break between two ordinary lines is a space; indented lines keep theirs
        pieces: list[str] = []
        empty, previous_indented = 0, None
        for line in body:
            if not line:
                empty += 1
                continue
            indented = line[0] in " \t"
            if previous_indented is None:
                pieces.append("\n" * empty)
            elif not indented and not previous_indented:
                pieces.append("\n" * empty if empty else " ")
            else:
                pieces.append("\n" * (empty + 1))
            pieces.append(line)
            empty, previous_indented = 0, indented
        text = "".join(pieces)
    if last < 0:
        return "\n" * len(lines) if chomp == "+" else ""
    if chomp == "-":
        return text
    return text + "\n" + ("\n" * trailing if chomp == "+" else "")


def _flow_value(text: str, at: int) -> tuple[Any, int]:
    """The flow node (or quoted scalar) at ``text[at]`` and the index after it."""
    at = _skip_spaces(text, at)
    if at >= len(text):
        raise Unreadable("a [...] or {...} must end on its line")
    first = text[at]
    if first == '"':
        return double_quoted(text, at)
    if first == "'":
        return single_quoted(text, at)
    if first == "[":
        return _flow_sequence(text, at + 1)
    if first == "{":
        return _flow_mapping(text, at + 1)
    end = at
    while end < len(text):
        char = text[end]
        if char in ",[]{}" or (char == ":" and (end + 1 == len(text) or text[end + 1] in " ,[]{}")):
            break
        if char == "#" and text[end - 1] in " \t":
            break
        end += 1
    plain = text[at:end].strip(" \t")
    if not plain:
        raise Unreadable("an empty entry inside [...] or {...}")
    return resolve(plain_text(plain)), end


def _flow_sequence(text: str, at: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    while True:
        at = _skip_spaces(text, at)
        if at < len(text) and text[at] == "]":
            return items, at + 1
        item, at = _flow_value(text, at)
        at = _skip_spaces(text, at)
        if at < len(text) and text[at] == ":":
            raise Unreadable("'key: value' inside [...] is not supported")
        items.append(item)
        at = _flow_separator(text, at, "]")


def _flow_mapping(text: str, at: int) -> tuple[JSONDict, int]:
    result: JSONDict = {}
    while True:
        at = _skip_spaces(text, at)
        if at < len(text) and text[at] == "}":
            return result, at + 1
        key, at = _flow_value(text, at)
        if not isinstance(key, str):
            raise Unreadable("a key inside {...} must be text")
        if key in result:
            raise Unreadable(f"the key {key!r} appears twice")
        at = _skip_spaces(text, at)
        value = None
        if at < len(text) and text[at] == ":":
            value, at = _flow_value(text, at + 1)
        result[key] = value
        at = _flow_separator(text, _skip_spaces(text, at), "}")


def _skip_spaces(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


def _flow_separator(text: str, at: int, closing: str) -> int:
    if at < len(text) and text[at] == ",":
        return at + 1
    if at < len(text) and text[at] == closing:
        return at
    raise Unreadable(f"expected ',' or {closing!r}; a [...] or {{...}} must end on its line")


# -- writing ----------------------------------------------------------------------------------


def _render_entry(key: str, value: Any, indent: int) -> str:
    if not isinstance(key, str) or not _KEY.fullmatch(key) or not is_text(key):
        raise ValueError(
            f"frontmatter key {key!r}: use letters, digits, '_', '-', '.' and '/', and not a "
            "word YAML reads as a boolean or null"
        )
    pad = " " * indent
    if isinstance(value, Mapping) and value:
        nested = "".join(_render_entry(k, v, indent + 2) for k, v in value.items())
        return f"{pad}{key}:\n{nested}"
    if isinstance(value, list | tuple):
        return f"{pad}{key}: {_render_flow(value)}\n"
    if isinstance(value, Mapping):
        return f"{pad}{key}: {{}}\n"
    return f"{pad}{key}: {render_scalar(value)}\n"


def _render_flow(value: Any) -> str:
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_render_flow(item) for item in value) + "]"
    if isinstance(value, Mapping):
        pairs = (f"{quoted(str(k))}: {_render_flow(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return render_scalar(value)
