"""Docstrings as descriptions: a summary for the tool or prompt, one line per parameter.

Google (``Args:``), NumPy (``Parameters`` over a rule) and Sphinx (``:param x:``) styles are
read; ``Returns``/``Raises`` sections are left out of the description.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

from ..._types import UserFunction

R = TypeVar("R")


def remember_last(read: Callable[[UserFunction], R]) -> Callable[[UserFunction], R]:
    """Keep ``read``'s answer for the last function it was asked about (by identity).

    Registration reads a function's docstring and type hints more than once in a row (for
    its parameters, its return type, its description). Only the last one is kept: nothing
    is held for functions long registered, and unhashable callables work too.
    """
    last: list[Any] = [None, None]

    @functools.wraps(read)
    def remembered(fn: UserFunction) -> R:
        seen, answer = last
        if seen is fn:
            return cast(R, answer)
        answer = read(fn)
        last[:] = [fn, answer]
        return answer

    return remembered


def unwrap(fn: UserFunction) -> Any:
    """Where the annotations and docstring of a partial or a callable object live."""
    if isinstance(fn, functools.partial):
        return fn.func
    if inspect.isroutine(fn) or inspect.isclass(fn):
        return fn
    return type(fn).__call__


_GOOGLE_HEADER = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Returns?|Yields?|Raises?|Exceptions?|Examples?|Notes?|Warnings?|Warns|See Also|"
    r"Attributes|References|Todo):(?:\s.*)?"  # "Returns: the count." inline counts too
)
_PARAM_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Other Parameters"}
    | {"Keyword Args", "Keyword Arguments"}
)
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(?P<names>\w+)\s*(?:\(.*?\))?\s*:(?P<desc>.*)")
_NUMPY_RULE = re.compile(r"-{3,}")
_NUMPY_ENTRY = re.compile(r"(?P<names>\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?")
_SPHINX_FIELD = re.compile(r":[A-Za-z]+(?:\s[^:]*)?:")
_SPHINX_PARAM = re.compile(
    r":(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*?\s+)?\*{0,2}(?P<name>\w+)\s*:"
    r"(?P<desc>.*)"
)


@remember_last
def parse_docstring(fn: UserFunction) -> tuple[str | None, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Understands Google (``Args:``), NumPy (``Parameters`` over a dashed rule) and Sphinx
    (``:param x:``) styles. The description is everything before the first section of any
    kind, so ``Returns:``, ``Raises:`` and the like never leak into it.
    """
    doc = inspect.getdoc(unwrap(fn))
    if not doc:
        return None, {}
    lines = doc.splitlines()
    params: dict[str, str] = {}
    description_end = len(lines)
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        top_level = bool(line) and not lines[i][0].isspace()
        below = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if top_level and (google := _GOOGLE_HEADER.fullmatch(line)):
            end = i + 1
            while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
                end += 1
            if google[1] in _PARAM_SECTIONS:
                params.update(_parse_entries(lines[i + 1 : end], _GOOGLE_ENTRY))
        elif top_level and _NUMPY_RULE.fullmatch(below):
            end = i + 2
            while end < len(lines) and not (
                lines[end].strip()
                and end + 1 < len(lines)
                and _NUMPY_RULE.fullmatch(lines[end + 1].strip())
            ):
                end += 1
            if line in _PARAM_SECTIONS:
                params.update(_parse_entries(lines[i + 2 : end], _NUMPY_ENTRY))
        elif top_level and _SPHINX_FIELD.match(line):
            end = i + 1
            while end < len(lines) and lines[end].strip() and lines[end][0].isspace():
                end += 1
            if field := _SPHINX_PARAM.match(line):
                params[field["name"]] = _join([field["desc"], *lines[i + 1 : end]])
        else:
            i += 1
            continue
        description_end = min(description_end, i)
        i = end
    description = "\n".join(lines[:description_end]).strip()
    return description or None, params


def _parse_entries(block: list[str], entry: re.Pattern[str]) -> dict[str, str]:
    """Parse ``name ...: text`` entries; lines indented deeper than the entries continue them."""
    body = [line for line in block if line.strip()]
    margin = min((len(line) - len(line.lstrip()) for line in body), default=0)
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in body:
        match = entry.fullmatch(line.strip()) if len(line) - len(line.lstrip()) == margin else None
        if match is None:
            current.append(line)
            continue
        # Names sharing an entry ("x, y : int") share one list of description lines.
        current = [match.groupdict().get("desc") or ""]
        for name in match["names"].split(","):
            found[name.strip().lstrip("*")] = current
    return {name: _join(text) for name, text in found.items()}


def _join(parts: list[str]) -> str:
    return " ".join(part.strip() for part in parts if part.strip())
