"""The signatures the documents show are the code's.

* A ``python signature`` block (in any document) shows how to call a public callable,
  ``Server(name, version="0.1.0", *, instructions=None, ...)``: it must list exactly the
  callable's parameters, in order and of the same kinds, with the same plain defaults
  (``None``, ``30.0``, ``"mcpserve client"``; an expression such as ``TokenCache()`` stands
  for what the code's ``None`` means, and ``...`` for a value to give). ``test_docs.py``
  calls :func:`check_signature` as it runs each document.
* ``docs/reference.md`` also writes calls inline: `` `@server.tool(name=, title=, ...)` ``.
  Every keyword such a span names must be one its callable accepts: a parameter of its
  signature, or a key of the ``TypedDict`` its ``**options`` unpacks. A span whose name is
  no public callable (a sentence's ``f(x)``) is not a signature and is left alone.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from typing import Any

import pytest

from markdown_blocks import ROOT, Block
from mcpserve import Server

REFERENCE = ROOT / "docs" / "reference.md"
#: An inline call: a name (``server.tool``, ``mcpserve.auth.JWTVerifier``) and its arguments.
SPAN = re.compile(r"`@?([A-Za-z_][\w.]*)\(([^`]*)\)`")
KEYWORD = re.compile(r"(?<![\w.\"'])([a-z_][a-z0-9_]*)=")
QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


#: Where a call shape starts: a name and its parenthesis at the start of a line.
SIGNATURE_START = re.compile(r"^([A-Za-z_][\w.]*)\(", re.M)


def check_signature(block: Block, namespace: dict[str, Any]) -> None:
    """Each call shape of the block (one or more, each from the start of a line) equals its
    callable's signature: parameter names and kinds in order, and the defaults that are
    plain values (``None``, ``30.0``, ``"mcpserve client"``)."""
    starts = list(SIGNATURE_START.finditer(block.code))
    assert starts, f"{block.where}: no call shape"
    for start, end in zip(starts, [*starts[1:], None], strict=True):
        shape = block.code[start.start() : end.start() if end else None].strip()
        compare_signature(block.where, start.group(1), shape, namespace)


#: Where a call shape's name is looked up when the document's namespace lacks it.
PUBLIC_MODULES = ("mcpserve", "mcpserve.auth", "mcpserve.client.oauth", "mcpserve.proxy")


def resolve(name: str, namespace: dict[str, Any]) -> Any:
    head, _, rest = name.partition(".")
    if head in namespace:
        found = namespace[head]
    else:
        modules = [importlib.import_module(module) for module in PUBLIC_MODULES]
        owners = [module for module in modules if head in dir(module)]
        assert owners, f"{name} is neither in the document nor in {PUBLIC_MODULES}"
        found = getattr(owners[0], head)
    for part in rest.split(".") if rest else ():
        found = getattr(found, part)
    return found


def compare_signature(where: str, name: str, shape: str, namespace: dict[str, Any]) -> None:
    assert shape.endswith(")"), f"{where}: {name}(...) is not one call shape"
    target: Any = resolve(name, namespace)
    documented = ast.parse(f"def _({shape[len(name) + 1 : -1]}): ...").body[0]
    assert isinstance(documented, ast.FunctionDef)
    args = documented.args
    shown = [
        *[(arg.arg, "POSITIONAL_OR_KEYWORD") for arg in args.args],
        *[(arg.arg, "KEYWORD_ONLY") for arg in args.kwonlyargs],
    ]
    if args.kwarg is not None:
        shown.append((args.kwarg.arg, "VAR_KEYWORD"))
    actual = inspect.signature(target)
    real = [(param, kind.kind.name) for param, kind in actual.parameters.items()]
    defaults_of = {param: p.default for param, p in actual.parameters.items()}
    typed = typed_keywords(target)
    if typed is not None:  # **options: Unpack[SomeOptions]: the keywords the record names
        options, keywords, defaults = typed
        real = [entry for entry in real if entry[0] != options]
        real += [(keyword, "KEYWORD_ONLY") for keyword in keywords]
        defaults_of |= {keyword: defaults.get(keyword) for keyword in keywords}
    assert shown == real, f"{where}: {name} is documented as {shown}, but takes {real}"
    defaults = dict(zip([a.arg for a in args.args][::-1], args.defaults[::-1], strict=False))
    defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d}
    for param, node in defaults.items():
        try:
            value = ast.literal_eval(node)
        except ValueError:
            continue  # an expression, such as TokenCache(): what None stands for
        if value is Ellipsis:
            continue  # "..." : a value the caller gives
        default = defaults_of[param]
        assert default == value, f"{where}: {name}'s {param} defaults to {default!r}, not {value!r}"


def typed_keywords(target: Any) -> tuple[str, list[str], dict[str, Any]] | None:
    """For ``**options: Unpack[SomeOptions]``: the parameter's name, the keywords the
    TypedDict names (in order) and their defaults (its module's ``DEFAULTS``, else None)."""
    function = target.__init__ if inspect.isclass(target) else target
    for param in inspect.signature(function).parameters.values():
        annotation = str(param.annotation)
        if param.kind is param.VAR_KEYWORD and annotation.startswith("Unpack["):
            record = function.__globals__[annotation.removeprefix("Unpack[").removesuffix("]")]
            defaults = getattr(sys.modules[record.__module__], "DEFAULTS", {})
            return param.name, list(record.__annotations__), dict(defaults)
    return None


def callable_of(name: str) -> Any:
    head, _, rest = name.partition(".")
    if head in ("server", "Server"):
        return getattr(Server, rest, None) if rest else Server  # not server.subscriptions.x
    if head == "mcpserve":
        module, _, attribute = name.rpartition(".")
        return getattr(__import__(module, fromlist=[attribute]), attribute, None)
    try:
        return resolve(name, {})
    except (AssertionError, AttributeError):
        return None


def accepted(target: Any) -> set[str] | None:
    """The keywords ``target`` takes; None when that cannot be known (``**kwargs`` of any
    name, a signature Python does not expose)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    names = set(signature.parameters)
    for param in signature.parameters.values():
        if param.kind is not param.VAR_KEYWORD:
            continue
        unpacked = re.fullmatch(r"Unpack\[(\w+)\]", str(param.annotation))
        if unpacked is None:
            return None
        options = typed_dict(unpacked.group(1))
        names |= options.__required_keys__ | options.__optional_keys__
    return names


def typed_dict(name: str) -> Any:
    """The ``TypedDict`` of that name in mcpserve (annotations name it as a string)."""
    for path in (ROOT / "src").rglob("*.py"):
        if f"class {name}(" in path.read_text():
            parts = path.relative_to(ROOT / "src").with_suffix("").parts
            return getattr(importlib.import_module(".".join(parts)), name)
    raise AssertionError(f"no TypedDict {name} in mcpserve")


def top_level_keywords(arguments: str) -> set[str]:
    """The ``name=`` of the call itself, not of calls nested in its defaults."""
    depth, flat = 0, []
    for char in QUOTED.sub("", arguments):
        depth += char in "([{"
        depth -= char in ")]}"
        flat.append(char if depth == 0 else " ")
    return set(KEYWORD.findall("".join(flat)))


def spans() -> list[Any]:
    found = []
    for match in SPAN.finditer(REFERENCE.read_text()):
        target = callable_of(match.group(1))
        if callable(target):
            line = REFERENCE.read_text().count("\n", 0, match.start()) + 1
            found.append(pytest.param(match.group(1), match.group(2), target, id=f"{line}"))
    return found


@pytest.mark.parametrize(("name", "arguments", "target"), spans())
def test_a_documented_keyword_is_a_parameter(name: str, arguments: str, target: Any) -> None:
    names = accepted(target)
    shown = top_level_keywords(arguments)
    if names is not None:
        assert shown <= names, f"{name} takes no {sorted(shown - names)}"


def test_the_reference_shows_the_calls_of_the_public_constructors() -> None:
    shown = {match.group(1) for match in SPAN.finditer(REFERENCE.read_text())}
    text = REFERENCE.read_text()
    for name in ("Tool", "Prompt", "server.thread_pool"):
        assert name in shown or f"```python signature\n{name}(" in text, name
