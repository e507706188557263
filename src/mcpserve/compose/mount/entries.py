"""A mounted server's entries, as its parent registers them.

``parent.mount(child, namespace="billing")`` (:mod:`.mount`) puts an entry in the parent's
registry for each of the child's tools, prompts, resources, templates, completers and its
resource lister, so the parent finds them as it finds its own: one dict access. Each is a
:class:`Mounted`, which wraps the child's entry and answers through it: the function,
validators, schemas, scopes, annotations, ``_meta`` and output schema are the child's, and
so is everything the call decides. What the wrapper changes:

* its key and list entry, under the :class:`Namespace`;
* a task tool's tasks, which are the parent's: the parent answers ``tasks/*``;
* while the child's entry runs, ``ctx.runtime`` is a :class:`ChildRuntime`, so
  ``ctx.lifespan_state``, dependency overrides and ``tool_timeout`` are the child's (the
  rest, requestState keys, client logging and timeouts, the store behind ``ctx.store``,
  stays that of the server answering the request), and a resource read names the URI as
  the child serves it;
* when the child has middleware, the call runs inside it;
* under a namespace, the URIs its results name that the child serves read as the parent
  serves them: resource links and embedded resources in tool results and prompt messages,
  and the contents of a read.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._types import JSONDict, JSONValue, Result
from ...protocol.core import answered
from ...server.context.context import Context
from ...server.entries.cache import CachePolicy
from ...server.entries.kinds import (
    Entry,
    PromptEntry,
    ResourceEntry,
    TaskMode,
    TemplateEntry,
    ToolEntry,
)
from ...server.entries.uri_template import URITemplate
from ...server.middleware import Middleware, compose, for_method
from ...server.registry import Registry
from ...server.runtime import Runtime

if TYPE_CHECKING:  # load on first use: the tasks extension, requestState sealing
    from concurrent.futures import ThreadPoolExecutor

    from ...extensions.tasks.runner import Tasks, TaskStart
    from ...protocol.request_state import StateSealer

#: How an entry answers one call: its ``run``, a task tool's ``work``.
EntryCall = Callable[[JSONValue, "Context"], "Result | Awaitable[Result]"]

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
    """``ctx.runtime`` while a mounted child's function runs: what the server answering the
    request serves with (requestState keys, client settings, the store behind
    ``ctx.store``, upstream tokens, the thread pool), and what the child's author chose for
    its own functions: its lifespan state, its dependency overrides (after the answering
    server's), and its ``tool_timeout`` (else the answering server's)."""

    __slots__ = ("answering",)

    def __init__(self, answering: Runtime, child: Runtime) -> None:
        super().__init__(
            client_logging=answering.client_logging,
            client_timeout_seconds=answering.client_timeout_seconds,
            answers_without_state=answering.answers_without_state,
            loop_watch=answering.loop_watch,
            max_threads=answering.max_threads,
            upstream_tokens=answering.upstream_tokens,
            state_stores=answering.state_stores,
            tool_timeout=answering.tool_timeout
            if child.tool_timeout is None
            else child.tool_timeout,
        )
        self.answering = answering
        self.lifespan_state = child.lifespan_state
        # Both servers' replacements of dependencies, the answering server's first.
        self.dependency_overrides = ChainMap(
            answering.dependency_overrides, child.dependency_overrides
        )

    @property
    def sealer(self) -> StateSealer:
        return self.answering.sealer

    def thread_pool(self) -> ThreadPoolExecutor:
        return self.answering.thread_pool()

    async def aclose(self) -> None:
        """Nothing of its own to release: what it uses is the answering server's."""


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
            view = self._view = ChildRuntime(answering, self._child)
        return view


class Copier:
    """Makes the parent's entries for one mounted child's entries."""

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
        #: The child's middleware list itself: what it holds when an entry runs is what runs.
        self.middleware = middleware
        self.state = ChildState(child_runtime)
        self._tasks = tasks

    # -- one entry of each kind --------------------------------------------------------------

    def tool(self, tool: ToolEntry, key: str) -> Mounted:
        wire = {**tool.wire, "name": key}
        if "_meta" in wire:
            wire["_meta"] = self._app_links(wire["_meta"])
        tasks = self._tasks() if tool.task_mode is not None else None
        return self._copy(tool, key, wire, self._links(self._tool_result), tasks=tasks)

    def prompt(self, prompt: PromptEntry, key: str) -> Mounted:
        return self._copy(
            prompt, key, {**prompt.wire, "name": key}, self._links(self._prompt_result)
        )

    def resource(self, resource: ResourceEntry | TemplateEntry, key: str) -> Mounted:
        if "uriTemplate" in resource.wire:
            wire = {**resource.wire, "uriTemplate": key}
            return self._copy(resource, key, wire, self._read_result, template=URITemplate(key))
        return self._copy(resource, key, {**resource.wire, "uri": key}, self._read_result)

    def other(self, entry: Entry, key: str) -> Mounted:
        """A completer or a resource lister: nothing listed, nothing to rename but its key."""
        return self._copy(entry, key, entry.wire, None)

    def _links(self, rewrite: Callable[[Result], Result]) -> Callable[[Result], Result] | None:
        # A child that serves no resources has no URIs to rewrite: its tools and prompts
        # shape their results as they do in the child (the mount copies them again when
        # that changes).
        return rewrite if self.child.offers_resources else None

    def _copy(
        self,
        entry: Any,
        key: str,
        wire: JSONDict,
        rewrite: Callable[[Result], Result] | None,
        *,
        template: URITemplate | None = None,
        tasks: Tasks | None = None,
    ) -> Mounted:
        return Mounted(
            entry,
            key,
            wire,
            self,
            rewrite if self.namespace.prefix is not None else None,
            template=template,
            tasks=tasks,
        )

    def _app_links(self, meta: JSONValue) -> JSONValue:
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

    def outward(self, uri: JSONValue) -> JSONValue:
        """``uri`` as the parent serves it, when the child serves it; otherwise as it is (an
        https link, say, is not the child's to rename)."""
        if isinstance(uri, str) and self.child.find_resource(uri) is not None:
            return self.namespace.uri(uri)
        return uri

    def block(self, block: JSONValue) -> JSONValue:
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

    def _message(self, message: JSONValue) -> JSONValue:
        if not isinstance(message, dict):
            return message
        content = self.block(message.get("content"))
        return message if content is message.get("content") else {**message, "content": content}

    def _read_result(self, result: Result) -> Result:
        contents = result.get("contents")
        if isinstance(contents, list):
            result["contents"] = [self._entry(entry) for entry in contents]
        return result

    def _entry(self, entry: JSONValue) -> JSONValue:
        if not isinstance(entry, dict):
            return entry
        uri = self.outward(entry.get("uri"))
        return entry if uri is entry.get("uri") else {**entry, "uri": uri}


class Mounted:
    """One of a mounted child's entries, as the parent serves it: the child's entry under a
    key and list entry of the parent's, answering through it (see the module's text).

    It has what every kind of entry has, and what the kind it wraps has of its own (a
    tool's header parameters and task mode, a prompt's choices, a resource's caching).
    """

    __slots__ = ("_copier", "_rewrite", "inner", "key", "synchronous", "tasks", "template", "wire")

    def __init__(
        self,
        inner: Any,
        key: str,
        wire: JSONDict,
        copier: Copier,
        rewrite: Callable[[Result], Result] | None,
        *,
        template: URITemplate | None = None,
        tasks: Tasks | None = None,
    ) -> None:
        self.inner = inner
        self.key = key
        self.wire = wire
        #: The parent's tasks, for a task tool: the parent answers its tasks/* methods.
        self.tasks = tasks
        self.template = template
        # Middleware may await, and a task outlives the request: never answered inline.
        self.synchronous: bool = inner.synchronous and not copier.middleware and tasks is None
        self._copier = copier
        self._rewrite = rewrite

    def __repr__(self) -> str:
        return f"Mounted({self.key!r}, {self.inner!r})"

    # -- what the wrapped entry has -----------------------------------------------------------

    @property
    def scopes(self) -> frozenset[str]:
        scopes: frozenset[str] = self.inner.scopes
        return scopes

    @property
    def child_registry(self) -> Registry:
        """The mounted server's registry: its visibility rule decides this entry too."""
        return self._copier.child

    @property
    def name(self) -> str:
        return self.key

    @property
    def uri(self) -> str:
        return self.key

    @property
    def header_params(self) -> Mapping[str, str]:
        header_params: Mapping[str, str] = self.inner.header_params
        return header_params

    @property
    def header_types(self) -> Mapping[str, str]:
        header_types: Mapping[str, str] = self.inner.header_types
        return header_types

    @property
    def task_mode(self) -> TaskMode | None:
        return getattr(self.inner, "task_mode", None)

    @property
    def task_start(self) -> TaskStart:
        task_start: TaskStart = self.inner.task_start
        return task_start

    @property
    def choices(self) -> Mapping[str, Sequence[str]]:
        choices: Mapping[str, Sequence[str]] = self.inner.choices
        return choices

    @property
    def cache(self) -> CachePolicy | None:
        cache: CachePolicy | None = self.inner.cache
        return cache

    @property
    def mime_type(self) -> str | None:
        return getattr(self.inner, "mime_type", None)

    def match(self, uri: str) -> JSONDict | None:
        assert self.template is not None
        return self.template.match(uri)

    # -- one call -----------------------------------------------------------------------------

    def run(self, arguments: JSONValue, ctx: Context) -> Result | Awaitable[Result]:
        if self.tasks is not None:
            return self.tasks.call(self, arguments, ctx)
        return self._through(self.inner.run, arguments, ctx)

    async def work(self, arguments: JSONValue, ctx: Context) -> Result:
        """A task tool's call, in a task of the parent's or not (:class:`Taskable`)."""
        return await answered(self._through(self.inner.work, arguments, ctx))

    async def complete(self, value: str, arguments: dict[str, str], ctx: Context) -> Result:
        def complete(_: JSONValue, ctx: Context) -> Awaitable[Result]:
            completion: Awaitable[Result] = self.inner.complete(value, arguments, ctx)
            return completion

        return await answered(self._through(complete, None, ctx))

    def _through(
        self,
        call: EntryCall,
        arguments: JSONValue,
        ctx: Context,
    ) -> Result | Awaitable[Result]:
        """``call(arguments, ctx)`` as the child answers it: with its runtime on the context
        and its URI for a resource read, inside its middleware; then with the URIs of the
        result as the parent serves them."""
        request = ctx.request
        answering, params = ctx.runtime, request.params
        ctx.runtime = self._copier.state.view(answering)
        if self.key != self.inner.key and "uri" in params:
            request.params = {**params, "uri": self._copier.namespace.child_uri(params["uri"])}
        try:
            chain = for_method(self._copier.middleware, ctx.method)
            if chain:
                answer = compose(chain, lambda ctx: call(arguments, ctx))(ctx)
            else:
                answer = call(arguments, ctx)
        except BaseException:
            ctx.runtime, request.params = answering, params
            raise
        if isinstance(answer, dict):
            ctx.runtime, request.params = answering, params
            return answer if self._rewrite is None else self._rewrite(answer)
        return self._finished(answer, ctx, answering, params)

    async def _finished(
        self, pending: Awaitable[Result], ctx: Context, answering: Runtime, params: Result
    ) -> Result:
        try:
            result = await pending
        finally:
            ctx.runtime, ctx.request.params = answering, params
        return result if self._rewrite is None else self._rewrite(result)
