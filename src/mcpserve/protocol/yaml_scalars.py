"""YAML scalars that mean the same to every YAML parser: read, resolved and written.

A host reads a skill's frontmatter with whatever YAML library it has, and must get what the
server put in the skill's entry. YAML 1.2 parsers and YAML 1.1 ones (PyYAML, and many hosts)
agree on quoted scalars but not on every plain one: ``yes``, ``off``, ``0755``, ``1_000``,
``1e5``, ``2024-01-01`` and ``12:30`` are text to one and a boolean, number or date to the
other. :func:`resolve` reads a plain scalar as YAML 1.2's core schema does and refuses the
ones a YAML 1.1 parser reads differently, so the author quotes them and every host agrees
(``docs/decisions.md``, "SKILL.md frontmatter"). Numbers must also be JSON numbers: finite,
and integers within what a JavaScript host reads exactly.

:func:`render_scalar` writes a value back: plain when that reads back as the same value,
double-quoted (JSON's escapes are a subset of YAML's) otherwise.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: The largest integer every JSON peer reads exactly (JavaScript numbers are doubles).
_SAFE_INTEGER = 2**53

# YAML 1.2 core schema.
_CORE_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_CORE_TRUE = frozenset({"true", "True", "TRUE"})
_CORE_FALSE = frozenset({"false", "False", "FALSE"})
_CORE_INT = re.compile(r"[-+]?[0-9]+")
_CORE_OCTAL = re.compile(r"0o[0-7]+")
_CORE_HEX = re.compile(r"0x[0-9a-fA-F]+")
_CORE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_CORE_INFINITY = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_CORE_NAN = frozenset({".nan", ".NaN", ".NAN"})

# What a YAML 1.1 parser reads as something other than text.
_OLD_TRUE = frozenset({"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_OLD_FALSE = frozenset({"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_OLD_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_OLD_HEX = re.compile(r"[-+]?0x[0-9a-fA-F]+")
_OLD_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?|\.[0-9]+(?:[eE][-+][0-9]+)?")
_OLD_OTHER = re.compile(
    r"[-+]?0b[01_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"  # integers
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"  # base 60
    r"|[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}"  # a date, or a time stamp:
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?"
    r"|<<|="
)
_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_UNSUPPORTED = {
    "&": "anchors",
    "*": "aliases",
    "!": "tags",
    "%": "directives",
    "@": "reserved characters",
    "`": "reserved characters",
}
_MULTI_LINE_QUOTE = (
    "the quoted value does not end on its line (for text over several lines use a | or > block)"
)


class Unreadable(ValueError):
    """A scalar this module will not read, and why (the caller adds the line)."""


def plain_text(text: str) -> str:
    """The text of a plain scalar on one line, its comment cut off."""
    first = text[0]
    if first in _UNSUPPORTED:
        raise Unreadable(f"{_UNSUPPORTED[first]} ({first}) are not supported")
    if first in _INDICATORS and (first not in "-?:" or len(text) == 1 or text[1] in " \t"):
        raise Unreadable(f"a value cannot start with {first!r}; quote it")
    comment = re.search(r"[ \t]#", text)
    if comment is not None:
        text = text[: comment.start()]
    text = text.rstrip(" \t")
    if ": " in text or ":\t" in text or text.endswith(":"):
        raise Unreadable("a value with ': ' in it must be quoted")
    return text


def resolve(text: str) -> Any:
    """A plain scalar's value, refused unless every YAML parser agrees on it."""
    value = _core_value(text)
    old = _old_reading(text)
    agreed = (
        old is None
        if isinstance(value, str)
        else old is not None and type(old[0]) is type(value) and old[0] == value
    )
    if not agreed:
        raise Unreadable(f"YAML parsers disagree on what {text!r} is; quote it")
    if isinstance(value, float) and not math.isfinite(value):
        raise Unreadable(f"{text!r} is not a JSON number; quote it")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _SAFE_INTEGER:
        raise Unreadable(f"{text!r} is too large for a JSON number; quote it")
    return value


def is_text(key: str) -> bool:
    """Whether every YAML parser reads this plain scalar as text (as a key must be)."""
    return isinstance(_core_value(key), str) and _old_reading(key) is None


def double_quoted(text: str, at: int) -> tuple[str, int]:
    """The double-quoted scalar opening at ``text[at]`` and the index after it."""
    out: list[str] = []
    position = at + 1
    while position < len(text):
        char = text[position]
        if char == '"':
            return "".join(out), position + 1
        if char != "\\":
            out.append(char)
            position += 1
            continue
        code = text[position + 1 : position + 2]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            position += 2
            continue
        digits = _HEX_ESCAPES.get(code, 0)
        hex_digits = text[position + 2 : position + 2 + digits]
        if not digits or not re.fullmatch(f"[0-9a-fA-F]{{{digits}}}", hex_digits):
            raise Unreadable("an unknown escape in a double-quoted value")
        out.append(chr(int(hex_digits, 16)))
        position += 2 + digits
    raise Unreadable(_MULTI_LINE_QUOTE)


def single_quoted(text: str, at: int) -> tuple[str, int]:
    """The single-quoted scalar opening at ``text[at]`` and the index after it."""
    out: list[str] = []
    position = at + 1
    while position < len(text):
        char = text[position]
        if char == "'":
            if text[position + 1 : position + 2] != "'":
                return "".join(out), position + 1
            position += 1  # '' is one quote
        out.append(char)
        position += 1
    raise Unreadable(_MULTI_LINE_QUOTE)


def render_scalar(value: Any) -> str:
    """A JSON scalar as YAML that every parser reads back as ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        if exponent and "." not in mantissa:
            text = f"{mantissa}.0e{exponent}"  # YAML 1.1 floats need the dot
        return text
    if isinstance(value, str):
        return value if _reads_back_plain(value) else quoted(value)
    raise ValueError(f"frontmatter value {value!r} is not JSON")


def quoted(text: str) -> str:
    """A double-quoted YAML scalar: JSON's escapes, plus those for what YAML cannot show."""
    return "".join(
        char
        if char.isprintable() and char not in "\u2028\u2029\ufeff"
        else (f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
        for char in json.dumps(text, ensure_ascii=False)
    )


def _reads_back_plain(text: str) -> bool:
    if not text or text != text.strip() or not text.isprintable() or text[0] in "\"'[{|>":
        return False
    try:
        return bool(resolve(plain_text(text)) == text)
    except Unreadable:
        return False


def _core_value(text: str) -> Any:
    """A plain scalar as YAML 1.2's core schema reads it."""
    if text in _CORE_NULL:
        return None
    if text in _CORE_TRUE:
        return True
    if text in _CORE_FALSE:
        return False
    if _CORE_INT.fullmatch(text):
        return int(text)
    if _CORE_OCTAL.fullmatch(text):
        return int(text[2:], 8)
    if _CORE_HEX.fullmatch(text):
        return int(text[2:], 16)
    if _CORE_FLOAT.fullmatch(text):
        return float(text)
    if _CORE_INFINITY.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if text in _CORE_NAN:
        return math.nan
    return text


def _old_reading(text: str) -> tuple[Any] | None:
    """What a YAML 1.1 parser reads a plain scalar as: ``None`` for text, ``(value,)`` for a
    value it is known to read, ``(Ellipsis,)`` for one whose reading here is not worked out."""
    if text in _CORE_NULL:
        return (None,)
    if text in _OLD_TRUE:
        return (True,)
    if text in _OLD_FALSE:
        return (False,)
    if _OLD_DECIMAL.fullmatch(text):
        return (int(text),)
    if _OLD_HEX.fullmatch(text):
        sign = -1 if text.startswith("-") else 1
        return (sign * int(text.lstrip("+-")[2:], 16),)
    if _OLD_FLOAT.fullmatch(text):
        return (float(text),)
    if _OLD_OTHER.fullmatch(text):
        return (...,)
    return None
