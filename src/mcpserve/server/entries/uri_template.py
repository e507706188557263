"""RFC 6570 URI templates (levels 1-4), matched against the URIs of ``resources/read``.

Theory of operation
-------------------
A template is parsed once, at construction, into literal text and ``{expression}`` parts.
Parsing rejects what RFC 6570 does not define (stray or unclosed braces, empty or invalid
variable names, unknown or reserved operators, bad prefix lengths) and, beyond the RFC, a
variable used twice: :meth:`URITemplate.match` returns one value per name, so a repeated
name would have no single answer.

Matching is the inverse of RFC 6570's expansion: it finds the values that expand to a URI.
Literal text matches as written or with the characters a URI does not allow percent-encoded
(RFC 6570 section 3.1), as an expanding client writes them. Every part is translated into a piece
of ONE regular expression, compiled at construction; :meth:`URITemplate.match` is a single
``re.fullmatch`` followed by percent-decoding (UTF-8; invalid UTF-8 means "no match"). To
stay linear on hostile input the regex has no nested quantifiers and never backtracks into
a variable: each variable is a possessive run over a character class that excludes the
delimiter ending it (``/ ? #`` for simple variables, plus the first character of whatever
follows). Reserved (``+``) and fragment (``#``) variables may contain ``/``; when more
template follows, they end at the LAST occurrence of what follows (greedy), inside an atomic
group so that the run is scanned once and never revisited. Python >= 3.11 is needed for
possessive quantifiers and atomic groups.

What matching supports: every operator; ``{a,b}`` lists (commas separate the values);
``/`` and ``.`` segments; ``;name=value`` parameters in template order; ``?``/``&`` query
parameters in any order, each optional (absent ones are missing from the result, unknown
ones are ignored, a repeated one gives its first value unless exploded). An exploded
variable that is the last of its expression returns a list of its items. All non-query
variables are required; simple and reserved ones must be non-empty.

What it deliberately does not do: recover associative arrays (an exploded ``{?keys*}``
matches nothing by name; ``{/keys*}`` yields ``"k=v"`` strings); enforce ``:N`` prefix
lengths; split the values of an ``{a}{b}`` pair with no delimiter between them (the first
variable takes everything, so such templates never match); decode ``+`` as a space (that is
HTML form encoding, not RFC 3986); or backtrack to find an alternative split when a
possessive or atomic choice turns out wrong. These are the ambiguous corners of RFC 6570,
where a cheap, predictable rule is worth more than guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote_to_bytes

__all__ = ["URITemplate", "is_template"]


@dataclass(frozen=True, slots=True)
class _Operator:
    first: str  # written before the first defined value
    sep: str  # written between values
    named: bool  # values are written as name=value
    reserved: bool  # reserved characters and existing %XX triplets pass through unencoded


_OPERATORS: Final = {
    "": _Operator("", ",", False, False),
    "+": _Operator("", ",", False, True),
    "#": _Operator("#", ",", False, True),
    ".": _Operator(".", ".", False, False),
    "/": _Operator("/", "/", False, False),
    ";": _Operator(";", ";", True, False),
    "?": _Operator("?", "&", True, False),
    "&": _Operator("&", "&", True, False),
}
_FUTURE_OPERATORS: Final = "=,!@|"  # RFC 6570 section 2.2 reserves these; reject, not guess
_QUERY_OPS: Final = ("?", "&")
_RESERVED_CHARS: Final = ":/?#[]@!$&'()*+,;="
_VARCHAR: Final = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC: Final = re.compile(
    rf"(?P<name>{_VARCHAR}(?:\.?{_VARCHAR})*)(?::(?P<prefix>[1-9][0-9]{{0,3}})|(?P<explode>\*))?"
)
_PCT_TRIPLET: Final = re.compile(r"(%[0-9A-Fa-f]{2})")
_EXPRESSION: Final = re.compile(r"\{[^{}]++\}")


@dataclass(frozen=True, slots=True)
class _VarSpec:
    name: str
    explode: bool
    prefix: int | None


@dataclass(frozen=True, slots=True)
class _Expression:
    op: str
    specs: tuple[_VarSpec, ...]


@dataclass(frozen=True, slots=True)
class _Capture:
    """How to turn one regex group back into a variable value."""

    name: str
    group: str
    split: str | None  # exploded: split the captured run on this separator
    param: str | None  # exploded ';': keep only the items named this


_Part = str | _Expression


def is_template(text: str) -> bool:
    """True if ``text`` contains at least one ``{expression}`` (a cheap check, no validation)."""
    return _EXPRESSION.search(text) is not None


class URITemplate:
    """A parsed RFC 6570 URI template that can expand values and match URIs back to them."""

    __slots__ = (
        "_captures",
        "_parts",
        "_query_groups",
        "_query_vars",
        "_regex",
        "template",
        "variables",
    )

    template: str
    variables: tuple[str, ...]

    def __init__(self, template: str) -> None:
        parts = _parse(template)
        self.template = template
        self.variables = tuple(s.name for p in parts if isinstance(p, _Expression) for s in p.specs)
        # Literals are encoded once here so expand() only concatenates.
        self._parts: tuple[_Part, ...] = tuple(
            _encode(p, reserved=True) if isinstance(p, str) else p for p in parts
        )
        self._captures: list[_Capture] = []
        self._query_groups: list[str] = []
        self._query_vars: list[tuple[str, bool]] = []
        self._regex = re.compile(self._build_regex(parts), re.DOTALL)

    def __str__(self) -> str:
        return self.template

    def __repr__(self) -> str:
        return f"URITemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, URITemplate):
            return self.template == other.template
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.template)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """Return the variable values that expand to ``uri``, or ``None`` if it does not match."""
        m = self._regex.fullmatch(uri)
        if m is None:
            return None
        result: dict[str, str | list[str]] = {}
        try:
            for cap in self._captures:
                raw: str = m.group(cap.group) or ""  # None: ';name' given without '='
                if cap.split is None:
                    result[cap.name] = _decode(raw)
                    continue
                items = raw.split(cap.split)
                if cap.param is not None:
                    items = [v for k, _, v in (i.partition("=") for i in items) if k == cap.param]
                result[cap.name] = [_decode(i) for i in items]
            if self._query_vars:
                # Query parameters come in any order, so every query expression's text is
                # pooled and then looked up by name rather than matched positionally.
                params: dict[str, list[str]] = {}
                for group in self._query_groups:
                    for pair in (m.group(group) or "").split("&"):
                        if pair:
                            key, _, value = pair.partition("=")
                            params.setdefault(key, []).append(value)
                for name, explode in self._query_vars:
                    if (found := params.get(name)) is not None:
                        result[name] = [_decode(v) for v in found] if explode else _decode(found[0])
        except UnicodeError:  # %XX escapes that are not UTF-8, or lone surrogates in the URI
            return None
        return result

    def _build_regex(self, parts: list[_Part]) -> str:
        # Whether a query or fragment can still follow part i: a reserved variable must then
        # stop at '?' or '#' instead of swallowing the rest of the URI.
        later: list[tuple[bool, bool]] = []
        query = fragment = False
        for part in reversed(parts):
            later.append((query, fragment))
            if isinstance(part, str):
                query, fragment = query or "?" in part, fragment or "#" in part
            else:
                query, fragment = query or part.op in _QUERY_OPS, fragment or part.op == "#"
        later.reverse()

        pieces: list[str] = []
        for i, part in enumerate(parts):
            if isinstance(part, str):
                pieces.append(_literal_regex(part))
                continue
            nxt = parts[i + 1] if i + 1 < len(parts) else None
            if nxt is None or (isinstance(nxt, _Expression) and not _OPERATORS[nxt.op].first):
                # End of template, or an adjacent {a}{b} with nothing to split on.
                follow_char, follow_re = "", None
            elif isinstance(nxt, str):
                follow_char, follow_re = nxt[0], _literal_regex(nxt)
            else:
                follow_char = _OPERATORS[nxt.op].first
                follow_re = re.escape(follow_char)
            pieces.append(self._expression_regex(part, follow_char, follow_re, *later[i]))
        return "".join(pieces)

    def _expression_regex(
        self, expr: _Expression, follow_char: str, follow_re: str | None, query: bool, frag: bool
    ) -> str:
        op = _OPERATORS[expr.op]
        if expr.op in _QUERY_OPS:
            group = f"q{len(self._query_groups)}"
            self._query_groups.append(group)
            self._query_vars.extend((s.name, s.explode) for s in expr.specs)
            # Optional as a whole: an absent query expands to nothing at all.
            return f"(?:{re.escape(op.first)}(?P<{group}>{_char_class('#' + follow_char)}*+))?"

        if op.reserved:
            base = ("?" if query else "") + ("#" if frag else "")
        else:
            base = {"": "/?#", ".": "./?#", "/": "/?#", ";": ";/?#"}[expr.op]
        # With a prefix character the presence of a value is visible even when it is empty
        # ("X{.empty}" -> "X."); without one an empty match would be indistinguishable.
        quant = "+" if expr.op in ("", "+") else "*"
        texts: list[str] = []
        for j, spec in enumerate(expr.specs):
            last = j == len(expr.specs) - 1
            explode = spec.explode and last  # only a final exploded variable can be split
            group = f"g{len(self._captures)}"
            excluded = base.replace(op.sep, "") if explode else base
            if not last:
                body = f"(?P<{group}>{_char_class(excluded + op.sep)}{quant}+)"
            elif op.reserved and follow_re is not None and follow_char not in excluded:
                # Greedy up to the last place where what follows can start, then commit.
                body = f"(?>(?P<{group}>{_char_class(excluded)}{quant})(?={follow_re}))"
            else:
                body = f"(?P<{group}>{_char_class(excluded + follow_char)}{quant}+)"
            split = op.sep if explode else None
            param = spec.name if explode and op.named else None
            self._captures.append(_Capture(spec.name, group, split, param))
            if expr.op == ";" and not explode:
                texts.append(f";{re.escape(spec.name)}(?:={body})?")
            elif expr.op in (".", "/", ";"):
                texts.append(re.escape(op.sep) + body)
            else:
                texts.append(body)
        if op.sep == ",":  # "", "+", "#": one prefix, comma-separated values
            return re.escape(op.first) + ",".join(texts)
        return "".join(texts)  # ".", "/", ";": every value carries its own prefix


def _parse(template: str) -> list[_Part]:
    parts: list[_Part] = []
    seen: set[str] = set()
    pos = 0
    while pos < len(template):
        start = template.find("{", pos)
        end = template.find("}", pos)
        if end != -1 and (start == -1 or end < start):
            raise ValueError(f"unmatched '}}' at position {end} in URI template {template!r}")
        if start == -1:
            parts.append(template[pos:])
            break
        if start > pos:
            parts.append(template[pos:start])
        if end == -1 or "{" in template[start + 1 : end]:
            raise ValueError(f"unclosed '{{' at position {start} in URI template {template!r}")
        expr = _parse_expression(template[start + 1 : end], start, template)
        for spec in expr.specs:
            if spec.name in seen:
                raise ValueError(f"duplicate variable {spec.name!r} in URI template {template!r}")
            seen.add(spec.name)
        parts.append(expr)
        pos = end + 1
    return parts


def _parse_expression(body: str, at: int, template: str) -> _Expression:
    where = f"at position {at} in URI template {template!r}"
    if not body:
        raise ValueError(f"empty expression {where}")
    op = body[0]
    if op in _FUTURE_OPERATORS:
        raise ValueError(f"operator {op!r} is reserved for future extensions {where}")
    if op in _OPERATORS:
        body = body[1:]
    elif not (op.isascii() and (op.isalnum() or op in "_%")):
        raise ValueError(f"unknown operator {op!r} {where}")
    specs: list[_VarSpec] = []
    for text in body.split(","):
        m = _VARSPEC.fullmatch(text)
        if m is None:
            name = text.partition(":")[0]
            if not name.removesuffix("*"):
                raise ValueError(f"empty variable name {where}")
            if ":" in text and name.endswith("*"):
                raise ValueError(f"{text!r} combines explode '*' with a prefix ':N' {where}")
            if ":" in text and _VARSPEC.fullmatch(name):
                raise ValueError(f"invalid prefix length in {text!r} (1-9999) {where}")
            raise ValueError(f"invalid variable name {text!r} {where}")
        prefix = int(m.group("prefix")) if m.group("prefix") else None
        specs.append(_VarSpec(m.group("name"), bool(m.group("explode")), prefix))
    return _Expression(op if op in _OPERATORS else "", tuple(specs))


def _char_class(excluded: str) -> str:
    if not excluded:
        return "."  # compiled with DOTALL, so truly any character
    return "[^" + "".join(re.escape(c) for c in sorted(set(excluded))) + "]"


def _literal_regex(literal: str) -> str:
    # Expansion percent-encodes literal characters that are not allowed in a URI; accept
    # both the template's spelling and that encoded form so either kind of client matches.
    encoded = _encode(literal, reserved=True)
    if encoded == literal:
        return re.escape(literal)
    return f"(?:{re.escape(literal)}|{re.escape(encoded)})"


def _encode(text: str, *, reserved: bool) -> str:
    if not reserved:
        return quote(text, safe="")  # leaves exactly the unreserved set: ALPHA DIGIT - . _ ~
    # Reserved expansion keeps existing %XX triplets, so split them out before quoting.
    pieces = _PCT_TRIPLET.split(text)
    return "".join(p if i % 2 else quote(p, safe=_RESERVED_CHARS) for i, p in enumerate(pieces))


def _decode(text: str) -> str:
    if "%" not in text and text.isascii():
        return text  # the common case: nothing to decode, nothing to validate
    # Strict both ways: a lone surrogate fails to encode, invalid UTF-8 fails to decode.
    return unquote_to_bytes(text).decode("utf-8")
