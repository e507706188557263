"""A mounted server's entries, as its parent registers them.

``parent.mount(child, namespace="billing")`` (:mod:`.mounting`) puts a copy of each of the
child's tools, prompts, resources, templates, completers and its resource lister in the
parent's registry, so the parent finds them as it finds its own: one dict access, nothing in
between. A copy shares everything with the child's entry (its function, validators,
schemas, scopes, annotations, ``_meta``, output schema) except:

* its key and list entry, under the :class:`Namespace`;
* a task tool's tasks, which are the parent's: the parent answers ``tasks/*``;
* when its function takes a ``Context``: while the function runs, ``ctx.runtime`` is a
  :class:`ChildRuntime`, so ``ctx.lifespan_state`` is the child's; the rest (requestState
  keys, client logging, timeouts) stays that of the server answering the request;
* under a namespace, the URIs its results name that the child serves read as the parent
  serves them: resource links and embedded resources in tool results and prompt messages,
  and the contents of a read;
* when the child has middleware, the copy runs inside it.

The last two need methods of their own, so such copies are instances of a subclass of the
entry's class, made once per mount and class (:meth:`Copier.kind_of`).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ...protocol.core import answered
from ...server.context.context import Context
from ...server.entries.entry import Registered
from ...server.entries.resources import ResourceTemplate
from ...server.entries.tools import Tool
from ...server.middleware import Middleware, compose, for_method
from ...server.runtime import Runtime

if TYPE_CHECKING:
    from ...extensions.tasks.runner import Tasks
    from ...protocol.request_state import StateSealer
    from ...server.handlers import Invoker
    from ...server.registry import Registry

R = TypeVar("R", bound=Registered)
Result = dict[str, Any]

#: A namespace is a tool-name prefix and a URI scheme prefix at once, so it takes the
#: characters both allow (docs/decisions.md, "Names and URIs of a mounted server").
_NAMESPACE = re.compile(r"[A-Za-z][A-Za-z0-9.\-]{0,63}")
SEPARATOR = "_"
URI_SEPARATOR = "+"
#: Schemes hosts read by name keep theirs, the namespace joining what follows instead, with
#: its separator: an app's view must stay a ``ui://`` URI for a host to render it, and a
#: skill a ``skill://`` one whose last folder is its name (the namespace a folder above).
_KEPT_SCHEMES = {"ui://": URI_SEPARATOR, "skill://": "/"}
#: Content blocks that name a resource by its URI.
_LINKING = frozenset({"resource_link", "resource"})


class Namespace:
    """How a mounted server's names and URIs read in its parent.

    Under ``billing``, tool or prompt ``pay`` is ``billing_pay`` and resource
    ``notes://42`` (or template ``notes://{id}``) is ``billing+notes://42``: the namespace
    joins the URI's scheme, whatever the URI is, so every URI and template maps one to one
    and a template still matches exactly the rewritten URIs. An app's view keeps its
    ``ui://`` scheme, the namespace joining what follows: ``ui://billing+invoice/view``;
    a skill's file keeps ``skill://``, the namespace a folder above the skill:
    ``skill://billing/refunds/SKILL.md``.
    Without a namespace nothing is rewritten.
    """

    __slots__ = ("prefix",)

    def __init__(self, prefix: str | None) -> None:
        if prefix is not None and not _NAMESPACE.fullmatch(prefix):
            raise ValueError(
                f"Namespace {prefix!r} must be 1-64 characters of A-Z, a-z, 0-9, '-' or '.', "
                "starting with a letter: it prefixes tool names and URI schemes"
            )
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"Namespace({self.prefix!r})"

    def name(self, name: str) -> str:
        """A tool's or prompt's name in the parent."""
        return name if self.prefix is None else f"{self.prefix}{SEPARATOR}{name}"

    def uri(self, uri: str) -> str:
        """A resource's URI (or a template) in the parent."""
        if self.prefix is None:
            return uri
        for kept, separator in _KEPT_SCHEMES.items():
            if uri.startswith(kept):
                return f"{kept}{self.prefix}{separator}{uri[len(kept) :]}"
        return f"{self.prefix}{URI_SEPARATOR}{uri}"

    def child_name(self, name: str) -> str | None:
        """The child's name for a parent's name, or None when the namespace has no such."""
        if self.prefix is None:
            return name
        head = self.prefix + SEPARATOR
        return name[len(head) :] if name.startswith(head) and len(name) > len(head) else None

    def child_uri(self, uri: str) -> str | None:
        """The child's URI for a parent's URI, or None when the namespace has no such."""
        if self.prefix is None:
            return uri
        for kept, separator in _KEPT_SCHEMES.items():
            if uri.startswith(kept):
                head = kept + self.prefix + separator
                return kept + uri[len(head) :] if uri.startswith(head) else None
        head = self.prefix + URI_SEPARATOR
        return uri[len(head) :] if uri.startswith(head) else None


class ChildRuntime(Runtime):
    """``ctx.runtime`` while a mounted child's function runs: the settings and requestState
    keys of the server answering the request, and the child's lifespan state."""

    __slots__ = ("answering",)

    def __init__(self, answering: Runtime, lifespan_state: Any) -> None:
        super().__init__(
            client_logging=answering.client_logging,
            client_timeout_seconds=answering.client_timeout_seconds,
            answers_without_state=answering.answers_without_state,
            loop_watch=answering.loop_watch,
        )
        self.answering = answering
        self.lifespan_state = lifespan_state

    @property
    def sealer(self) -> StateSealer:
        return self.answering.sealer


class ChildState:
    """Hands a mounted child's functions the :class:`ChildRuntime` they run with."""

    __slots__ = ("_child", "_view")

    def __init__(self, child: Runtime) -> None:
        self._child = child
        self._view: ChildRuntime | None = None

    def view(self, answering: Runtime) -> ChildRuntime:
        state = self._child.lifespan_state
        view = self._view
        # Made again only when the answering runtime or the child's state changed (never,
        # while a server serves): views are read-only, so requests share one.
        if view is None or view.answering is not answering or view.lifespan_state is not state:
            view = self._view = ChildRuntime(answering, state)
        return view


def _in_child_state(invoke: Invoker, param: str, state: ChildState) -> Invoker:
    async def call(kwargs: dict[str, Any]) -> Any:
        ctx = kwargs.get(param)
        if not isinstance(ctx, Context):
            return await invoke(kwargs)
        answering = ctx.runtime
        ctx.runtime = state.view(answering)
        try:
            return await invoke(kwargs)
        finally:
            ctx.runtime = answering

    return call


def _in_child_state_inline(
    fn: Callable[..., Any], param: str, state: ChildState
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(**kwargs: Any) -> Any:
        ctx = kwargs.get(param)
        if not isinstance(ctx, Context):
            return fn(**kwargs)
        answering = ctx.runtime
        ctx.runtime = state.view(answering)
        try:
            return fn(**kwargs)
        finally:
            ctx.runtime = answering

    return call


class Copier:
    """Makes the parent's copies of one mounted child's entries."""

    def __init__(
        self,
        namespace: Namespace,
        child: Registry,
        child_runtime: Runtime,
        middleware: list[Middleware],
        tasks: Callable[[], Tasks],
    ) -> None:
        self.namespace = namespace
        self.child = child
        #: The child's middleware list itself: what it holds when a copy runs is what runs.
        self.middleware = middleware
        self._tasks = tasks
        self._state = ChildState(child_runtime)
        self._kinds: dict[tuple[type, bool, Any], type] = {}

    # -- one entry of each kind --------------------------------------------------------------

    def tool(self, tool: Tool, key: str) -> Tool:
        wire = {**tool.wire, "name": key}
        if "_meta" in wire:
            wire["_meta"] = self._app_links(wire["_meta"])
        made = self._copy(tool, key, wire, self._links(self._tool_result))
        if getattr(tool, "task_mode", None) is not None:
            made.tasks = self._tasks()  # type: ignore[attr-defined]
        return made

    def prompt(self, prompt: R, key: str) -> R:
        return self._copy(
            prompt, key, {**prompt.wire, "name": key}, self._links(self._prompt_result)
        )

    def resource(self, resource: R, key: str) -> R:
        if isinstance(resource, ResourceTemplate):
            from ...server.entries.uri_template import URITemplate

            wire = {**resource.wire, "uriTemplate": key}
            made = self._copy(resource, key, wire, self._read_result)
            made.template = URITemplate(key)
            return made
        return self._copy(resource, key, {**resource.wire, "uri": key}, self._read_result)

    def other(self, entry: R, key: str) -> R:
        """A completer or a resource lister: nothing listed, nothing to rename but its key."""
        return self._copy(entry, key, entry.wire, None)

    def _links(self, rewrite: Callable[[Result], Result]) -> Callable[[Result], Result] | None:
        # A child that serves no resources has no URIs to rewrite: its tools and prompts
        # shape their results as they do in the child (the mount copies them again when
        # that changes).
        return rewrite if self.child.offers_resources else None

    def _copy(
        self,
        entry: R,
        key: str,
        wire: dict[str, Any],
        rewrite: Callable[[Result], Result] | None,
    ) -> R:
        made = copy.copy(entry)
        kind = self.kind_of(type(entry), rewrite if self.namespace.prefix is not None else None)
        if kind is not type(entry):
            made.__class__ = kind  # same layout: the subclass adds methods, no slots
        made.key = key
        made.wire = wire
        param = entry.arguments.context_param
        if param is not None:
            made.invoke = _in_child_state(entry.invoke, param, self._state)
            made.fn = _in_child_state_inline(entry.fn, param, self._state)
        if self.middleware:
            made.synchronous = False  # middleware may await: never answered inline
        return made

    # -- the subclasses copies need -----------------------------------------------------------

    def kind_of(self, base: type[R], rewrite: Callable[[Result], Result] | None) -> type[R]:
        """``base``, or the subclass of it that rewrites URIs and runs the middleware."""
        wrapped = bool(self.middleware)
        kind = self._kinds.get((base, wrapped, rewrite))
        if kind is None:
            body: dict[str, Any] = {"__slots__": ()}
            if rewrite is not None:
                body["shape"] = _shaping(base, rewrite)
            if wrapped:
                body["run"] = _running(base, self.middleware)
            metaclass: Any = type(base)  # Registered's: ABCMeta
            kind = base if len(body) == 1 else metaclass(f"Mounted{base.__name__}", (base,), body)
            self._kinds[(base, wrapped, rewrite)] = kind
        return kind

    def _app_links(self, meta: Any) -> Any:
        """A tool's ``_meta`` with the view it links to (MCP Apps) as the parent serves it."""
        if not isinstance(meta, dict):
            return meta
        moved = dict(meta)
        ui = meta.get("ui")
        if isinstance(ui, dict) and "resourceUri" in ui:
            moved["ui"] = {**ui, "resourceUri": self.outward(ui["resourceUri"])}
        if "ui/resourceUri" in meta:
            moved["ui/resourceUri"] = self.outward(meta["ui/resourceUri"])
        return moved

    # -- URIs in results ----------------------------------------------------------------------

    def outward(self, uri: Any) -> Any:
        """``uri`` as the parent serves it, when the child serves it; otherwise as it is (an
        https link, say, is not the child's to rename)."""
        if isinstance(uri, str) and self.child.find_resource(uri) is not None:
            return self.namespace.uri(uri)
        return uri

    def block(self, block: Any) -> Any:
        """A content block with the child's resource URIs rewritten (a new dict if any)."""
        if not isinstance(block, dict):
            return block
        kind = block.get("type")
        if kind == "resource_link":
            uri = self.outward(block.get("uri"))
            return block if uri is block.get("uri") else {**block, "uri": uri}
        if kind == "resource" and isinstance(block.get("resource"), dict):
            inner = block["resource"]
            uri = self.outward(inner.get("uri"))
            return (
                block if uri is inner.get("uri") else {**block, "resource": {**inner, "uri": uri}}
            )
        return block

    def _tool_result(self, result: Result) -> Result:
        content = result.get("content")
        if not isinstance(content, list):
            return result
        moved = content
        for index, block in enumerate(content):  # most results link nothing: no copies
            if type(block) is dict and block.get("type") in _LINKING:
                new = self.block(block)
                if new is not block:
                    if moved is content:
                        moved = list(content)  # the list may be the function's own
                    moved[index] = new
        result["content"] = moved
        return result

    def _prompt_result(self, result: Result) -> Result:
        messages = result.get("messages")
        if isinstance(messages, list):
            result["messages"] = [self._message(message) for message in messages]
        return result

    def _message(self, message: Any) -> Any:
        if not isinstance(message, dict):
            return message
        content = self.block(message.get("content"))
        return message if content is message.get("content") else {**message, "content": content}

    def _read_result(self, result: Result) -> Result:
        contents = result.get("contents")
        if isinstance(contents, list):
            result["contents"] = [self._entry(entry) for entry in contents]
        return result

    def _entry(self, entry: Any) -> Any:
        if not isinstance(entry, dict):
            return entry
        uri = self.outward(entry.get("uri"))
        return entry if uri is entry.get("uri") else {**entry, "uri": uri}


def _shaping(base: Any, rewrite: Callable[[Result], Result]) -> Callable[..., Result]:
    def shape(self: Any, value: Any, ctx: Context | None = None) -> Result:
        return rewrite(base.shape(self, value, ctx))

    return shape


def _running(base: Any, middleware: list[Middleware]) -> Callable[..., Any]:
    async def run(self: Any, arguments: Any, ctx: Context) -> Result:
        async def inner(ctx: Context) -> Result:
            result: Result = await answered(base.run(self, arguments, ctx))
            return result

        return await answered(compose(for_method(middleware, ctx.method), inner)(ctx))

    return run
