"""Tool transformation: the same function, offered differently.

::

    search_docs = search.transformed(
        name="search_docs",
        description="Search the documentation.",
        fixed={"index": "docs"},               # hidden, always passed
        defaults={"limit": 5},                 # shown, with a new default
        hide=["debug"],                        # hidden; the function's default applies
        schema={"sort": {"enum": ["date", "score"]}, "limit": {"maximum": 20}},  # narrowed
    )
    server.add_tool(search_docs)

    server.transform_tool("billing_pay", hide=["dry_run"])  # a local or mounted tool, in place

A transformed tool is a copy of the tool's record (:class:`~mcpserve.Tool`, a task tool, a
mounted server's tool, another transformed one): the function, its validators and output
schema are shared, not copied. What changes is its name and list entry, and one step before
the call. That step checks what the client sent against the published ``inputSchema``:

* an argument the schema no longer shows (hidden or fixed) is refused, naming it;
* with ``schema=`` narrowing, the arguments must fit the narrowed schema (the whole published
  schema is enforced, with the same messages as a hand-written ``inputSchema``);
* then the fixed values and the new defaults are added, and the call goes on as the
  original's: its own validation, the function, its result.

Problems are an ``isError: true`` result, as for any tool's invalid arguments. Mistakes in
the transformation itself (an argument the tool does not have, a required one hidden
without a value, a value that does not fit its schema) raise ``ValueError`` when it is made.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Protocol, TypedDict

from typing_extensions import Unpack

from .._types import JSONDict, Result
from ..server.context.context import Context
from ..server.entries.entry import InvalidArguments
from ..server.entries.kinds import TOOL_NAME, TaskMode, ToolEntry, error_result
from ..server.registry import Registry
from ..server.schema.raw import RawSchema


class TaskCaller(Protocol):
    """The tasks extension, as a transformed task tool calls it (``extensions/tasks``)."""

    def call(self, tool: Any, arguments: Any, ctx: Context) -> Awaitable[dict[str, Any]]: ...


class ToolOwner(Protocol):
    """A mounted server, as the owner of a tool the parent transforms (``mount/mount.py``)."""

    def transform_tool(self, name: str, transform: ToolTransform) -> ToolEntry: ...


class ToolOwners(Protocol):
    """A server's mounts, asked which owns a tool."""

    def owner_of_tool(self, name: str) -> ToolOwner | None: ...


class ToolChanges(TypedDict, total=False):
    """What a transformation may change; everything left out stays as it was."""

    #: The tool's new name.
    name: str
    #: The new title or description ("" removes it).
    title: str
    description: str
    #: Arguments the client no longer sees; the function's default applies.
    hide: Iterable[str]
    #: Arguments the client no longer sees, always passed with these values.
    fixed: Mapping[str, Any]
    #: Arguments shown with a new default, passed when the client leaves them out.
    defaults: Mapping[str, Any]
    #: Per argument, JSON Schema keywords merged into its schema, to narrow it (an
    #: ``enum``, a ``maximum``, a ``pattern``...). The function's own validation still
    #: applies after, so a keyword can only narrow what the function accepts.
    schema: Mapping[str, Mapping[str, Any]]


class ToolTransform:
    """One transformation, checked against each tool it is applied to."""

    __slots__ = ("changes",)

    def __init__(self, changes: ToolChanges) -> None:
        unknown = set(changes) - set(ToolChanges.__annotations__)
        if unknown:
            raise TypeError(f"Unknown tool change(s): {', '.join(sorted(unknown))}")
        self.changes = changes

    def __repr__(self) -> str:
        return f"ToolTransform({dict(self.changes)!r})"

    def apply(self, tool: ToolEntry) -> TransformedTool:
        changes = self.changes
        name = changes.get("name", tool.name)
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise ValueError(
                f"Tool name {name!r} must be 1-128 characters of A-Z, a-z, 0-9, '_', '-' or '.'"
            )
        schema, step = _published(tool, name, changes)
        wire = {**tool.wire, "name": name, "inputSchema": schema}
        for field in ("title", "description"):
            if field in changes:
                text = changes[field]
                if not isinstance(text, str):
                    raise TypeError(f"{field} must be a string")
                if text:
                    wire[field] = text
                else:
                    wire.pop(field, None)
        return TransformedTool(tool, wire, step)


class TransformedTool:
    """A tool offered differently over another: its name and list entry are its own, its
    calls take the :class:`ArgumentStep` (when there is one) and go on to the tool it wraps,
    which answers them. A transformed task tool runs as a task of the same tasks."""

    __slots__ = ("header_params", "header_types", "inner", "step", "tasks", "wire")

    def __init__(self, inner: ToolEntry, wire: Result, step: ArgumentStep | None) -> None:
        self.inner = inner
        self.wire = wire
        self.step = step
        shown = wire["inputSchema"].get("properties", {})
        self.header_params = {p: h for p, h in inner.header_params.items() if p in shown}
        self.header_types = {p: t for p, t in inner.header_types.items() if p in shown}
        #: The tasks of a task tool: a call starts a task of the transformed tool.
        self.tasks: TaskCaller | None = getattr(inner, "tasks", None) if inner.task_mode else None

    def __repr__(self) -> str:
        return f"TransformedTool({self.key!r}, {self.inner!r})"

    @property
    def key(self) -> str:
        key: str = self.wire["name"]
        return key

    @property
    def name(self) -> str:
        return self.key

    @property
    def scopes(self) -> frozenset[str]:
        return self.inner.scopes

    @property
    def synchronous(self) -> bool:
        return self.inner.synchronous

    @property
    def task_mode(self) -> TaskMode | None:
        return self.inner.task_mode

    @property
    def task_start(self) -> Any:
        return getattr(self.inner, "task_start", None)

    def transformed(self, **changes: Unpack[ToolChanges]) -> TransformedTool:
        """A transformation of this one (both steps are taken, this one's first)."""
        return ToolTransform(changes).apply(self)

    def run(self, arguments: Any, ctx: Context) -> Result | Awaitable[Result]:
        if self.step is not None:
            try:
                arguments = self.step(arguments)
            except InvalidArguments as exc:
                return error_result(f"Invalid arguments for tool {self.key}: {exc}")
        if self.tasks is not None:
            return self.tasks.call(self, arguments, ctx)
        return self.inner.run(arguments, ctx)

    async def work(self, arguments: Any, ctx: Context) -> Result:
        """A task tool's call, its arguments taken through the step already (:class:`Taskable`)."""
        work: Awaitable[Result] = self.inner.work(arguments, ctx)  # type: ignore[attr-defined]
        return await work


class ArgumentStep:
    """What a transformed tool does to a client's arguments before the original sees them."""

    __slots__ = ("check", "defaults", "fixed", "refused")

    def __init__(
        self,
        refused: frozenset[str],
        check: RawSchema | None,
        defaults: JSONDict,
        fixed: JSONDict,
    ) -> None:
        self.refused = refused
        self.check = check
        self.defaults = defaults
        self.fixed = fixed

    def __call__(self, arguments: Result | None) -> Result | None:
        given = arguments or {}
        if self.refused:
            passed = self.refused.intersection(given)
            if passed:
                raise InvalidArguments(
                    [
                        f"{name}: this argument is set by the server; leave it out"
                        for name in sorted(passed)
                    ]
                )
        if self.check is not None:
            problems = self.check.problems(given)
            if problems:
                raise InvalidArguments(problems)
        if not self.defaults and not self.fixed:
            return arguments
        mapped = dict(given)
        for key, value in self.defaults.items():
            if key not in mapped:
                mapped[key] = copy.deepcopy(value)  # a list default is the call's own
        mapped.update((key, copy.deepcopy(value)) for key, value in self.fixed.items())
        return mapped


def _names(value: Any, what: str) -> set[str]:
    if isinstance(value, str):
        return {value}
    names = set(value)
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"{what} takes argument names")
    return names


def _published(
    tool: ToolEntry, name: str, changes: ToolChanges
) -> tuple[Result, ArgumentStep | None]:
    """The transformed ``inputSchema``, and the step its calls take (None: nothing to do)."""
    original = tool.wire["inputSchema"]
    schema: Result = copy.deepcopy(original)
    properties: Result = schema.get("properties") or {}
    hide = _names(changes.get("hide", ()), "hide")
    fixed = dict(changes.get("fixed") or {})
    defaults = dict(changes.get("defaults") or {})
    narrowed = dict(changes.get("schema") or {})
    where = f"Tool {tool.name!r}"
    unknown = (hide | fixed.keys() | defaults.keys() | narrowed.keys()) - properties.keys()
    if unknown:
        raise ValueError(f"{where} has no argument {', '.join(map(repr, sorted(unknown)))}")
    hidden = hide | fixed.keys()
    for what, names in (("a new default", defaults.keys()), ("a narrowed schema", narrowed)):
        both = sorted(hidden & set(names))
        if both:
            raise ValueError(
                f"{where}: {', '.join(map(repr, both))} cannot be hidden and have {what}"
            )
    required = list(schema.get("required", ()))
    for argument in sorted(hide - fixed.keys()):
        if argument in required:
            raise ValueError(
                f"{where}: {argument!r} is required, so hiding it needs a value: "
                f"fixed={{{argument!r}: ...}}"
            )
    for argument, keywords in narrowed.items():
        if not isinstance(keywords, Mapping):
            raise TypeError(f"{where}: schema[{argument!r}] must be a dict of JSON Schema keywords")
        properties[argument] = {**properties[argument], **keywords}
    for argument, value in fixed.items():
        _check_value(where, "fixed", original, original["properties"][argument], argument, value)
    for argument, value in defaults.items():
        _check_value(where, "default", schema, properties[argument], argument, value)
        properties[argument] = {**properties[argument], "default": value}
    for argument in hidden:
        del properties[argument]
    required = [key for key in required if key not in hidden and key not in defaults]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    check = RawSchema(name, schema) if narrowed else None
    if not hidden and not defaults and check is None:
        return schema, None
    return schema, ArgumentStep(frozenset(hidden), check, defaults, fixed)


def _check_value(
    where: str, what: str, root: Result, schema: Result, argument: str, value: Any
) -> None:
    """Refuse a fixed value or default that does not fit the argument's schema."""
    import jsonschema  # only a server that transforms tools with values loads it

    if "$defs" in root:
        schema = {**schema, "$defs": root["$defs"]}
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(value)
    )
    if error is not None:
        raise ValueError(
            f"{where}: the {what} value for {argument!r} does not fit its schema: {error.message}"
        )


def transform_tool(
    registry: Registry, mounts: ToolOwners | None, name: str, changes: ToolChanges
) -> ToolEntry:
    """``server.transform_tool``: replace the tool ``name`` (local or mounted) with its
    transformation, in its place in the list."""
    transform = ToolTransform(changes)
    mount = mounts.owner_of_tool(name) if mounts is not None else None
    if mount is not None:
        return mount.transform_tool(name, transform)
    tools = registry.tools
    if name not in tools:
        raise KeyError(f"No tool named {name!r} is registered")
    made = transform.apply(tools[name])
    if made.name != name and made.name in tools:
        raise ValueError(f"A tool named {made.name!r} is already registered")
    entries = [(made.name, made) if key == name else (key, tool) for key, tool in tools.items()]
    tools.clear()
    tools.update(entries)
    off = registry.disabled["tools"]
    if name in off:
        off.add(made.name)
    registry.changed("tools")
    return made
