"""The high-level API: a ``Server`` that decorators fill with tools, resources and prompts.

Decorators work bare or with options and return the registered entry (a :class:`Tool`,
:class:`Resource`, ...), which stays callable like the original function; registration
builds schemas, validators and list entries once. ``Server`` is the composition root: its
``__init__`` builds the parts (registry, settings, runtime, subscriptions, the handshake
era's front, extensions, method table, pipeline, lifecycle), each given only the others it
uses, and each method hands its call to the part that does the work
(``docs/architecture.md``). Serving imports the transports only when called.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

from typing_extensions import TypeVar as DefaultTypeVar
from typing_extensions import Unpack

from .._types import ASGIApp, JSONDict
from ..protocol import constants as c
from ..protocol.core import ANONYMOUS, Auth, SendMessage
from ..protocol.errors import raise_unexpected
from .bus import resource_updated
from .config import ServerConfig, ServerOptions
from .custom import CustomMethod
from .endpoint import ServerEndpoint
from .entries.catalogue import Tags, switch, visibility_rule
from .entries.kinds import PromptEntry, ResourceEntry, TemplateEntry, ToolEntry, is_entry
from .entries.options import Options, ResourceOptions, ToolOptions
from .entries.resources import CachePolicy, Resource, ResourceTemplate, build_resource
from .entries.tools import Tool
from .extension import Extensions
from .handshake import Handshake
from .lifecycle import Lifecycle
from .methods import Methods
from .middleware import Middleware
from .pipeline import Pipeline
from .registry import ListKind
from .settings import capabilities

if TYPE_CHECKING:  # each loads on first use: thread pool, httpx2, serving, compose/, extensions/
    from concurrent.futures import ThreadPoolExecutor

    import httpx2

    from .._serving import HTTPOptions, ServeOptions
    from ..compose.mount.mount import Mount, Mounts
    from ..compose.openapi import OpenAPISelection
    from ..compose.transform import ToolChanges
    from ..extensions.apps import App, AppOptions
    from ..extensions.skills.extension import Skills
    from ..extensions.skills.skill import Skill, SkillOptions
    from ..extensions.tasks.extension import TasksExtension
    from ..extensions.tasks.runner import Tasks
    from .entries.prompts import Prompt

F = TypeVar("F", bound=Callable[..., Any])
#: What the lifespan yields, typed: ``Server[AppState]`` and ``Context[AppState]``.
StateT = DefaultTypeVar("StateT", default=Any)
Lifespan = Callable[["Server[StateT]"], AbstractAsyncContextManager[StateT]]


class Server(Generic[StateT]):
    """An MCP server: what it offers, and how it answers."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        lifespan: Lifespan[StateT] | None = None,
        **options: Unpack[ServerOptions],
    ) -> None:
        config = ServerConfig(name, version, options)
        self.name, self.version = name, version
        #: Who may call over HTTP (``mcpserve.auth``); stdio trusts whoever started it.
        self.auth = options.get("auth")
        #: Runs around serving; what it yields is ``ctx.lifespan_state`` (and types it).
        self.lifespan = lifespan
        #: For tests: a handler's unexpected exception propagates out of :meth:`handle`.
        self.raise_exceptions = config.options["raise_exceptions"]
        self.redis_url = config.redis_url
        self.settings = config.settings()
        self.registry = config.registry()
        self.runtime = config.runtime()
        #: Replacements of ``Depends`` functions, by the function replaced (for tests).
        self.dependency_overrides = self.runtime.dependency_overrides
        self.subscriptions = config.subscriptions(self.registry)
        self.registry.on_change(lambda kind: self.subscriptions.publish({"type": kind}))
        #: The handshake era's front (2025-11-25 and earlier), or None when switched off.
        self.handshake = Handshake(self.registry, self.settings) if config.handshake_era else None
        self.extensions = Extensions(on_change=lambda: self.pipeline.changed())
        self.methods = Methods(
            self.registry, self.settings, self.subscriptions, self.capabilities, config.versions
        )
        self.pipeline = Pipeline(
            self.methods.table,
            self.extensions,
            self.runtime,
            handshake=self.handshake,
            tracing=options.get("tracing"),
            server_info=self.info if config.options["server_info_in_results"] else None,
        )
        self._config = config
        self._mounts: Mounts | None = None
        starts = [self._start_mounts, self.subscriptions.run_in, self.extensions.start]
        self.lifecycle: Lifecycle[Server[StateT]] = Lifecycle(self.runtime, starts)

    @property
    def info(self) -> JSONDict:
        """``serverInfo``: name, version and the optional display fields."""
        return self.settings.info

    @property
    def instructions(self) -> str | None:
        return self.settings.instructions

    def capabilities(self) -> JSONDict:
        """Server capabilities, derived from what is registered and what extensions offer."""
        return capabilities(self.registry, self.settings, self.extensions.capabilities())

    # -- registering: tools, resources, prompts, completions --------------------------------

    @overload
    def tool(self, fn: F, /) -> Tool: ...
    @overload
    def tool(self, fn: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], Tool]: ...
    def tool(
        self, fn: F | None = None, /, **options: Unpack[ToolOptions]
    ) -> Tool | Callable[[F], Tool]:
        """Register a function as a tool; its type hints become the ``inputSchema``."""

        def register(fn: F) -> Tool:
            tool = self._make_tool(fn, options)
            self.registry.add_tool(tool)
            return tool

        return register(fn) if fn is not None else register

    def add_tool(
        self,
        fn: Callable[..., Any] | ToolEntry,
        *,
        replace: bool = False,
        **options: Unpack[ToolOptions],
    ) -> ToolEntry:
        """Register a tool at any time, e.g. while serving: a function, or a tool made
        already (``Tool(...)``, ``tool.transformed(...)``)."""
        tool: ToolEntry = fn if is_entry(fn) else self._make_tool(fn, options)
        self.registry.add_tool(tool, replace=replace)
        return tool

    def _make_tool(self, fn: Callable[..., Any], options: ToolOptions) -> Tool:
        from ..extensions.tool_options import make_tool

        return make_tool(fn, options, pool=self.thread_pool, tasks=self.use_tasks)

    def remove_tool(self, name: str) -> ToolEntry:
        return self.registry.remove_tool(name)

    def add_openapi(
        self,
        spec: Mapping[str, Any] | str | bytes,
        *,
        client: httpx2.AsyncClient,
        **selection: Unpack[OpenAPISelection],
    ) -> list[Tool]:
        """Register a tool per chosen operation of an OpenAPI 3.0/3.1 document (a dict or
        JSON text), called with ``client`` (``docs/openapi.md``)."""
        from ..compose.openapi import add_openapi

        return list(add_openapi(self, spec, client=client, **selection))

    def resource(
        self, uri: str, **options: Unpack[ResourceOptions]
    ) -> Callable[[F], Resource | ResourceTemplate]:
        """Register a resource at ``uri``, or a template when ``uri`` has ``{variables}``."""

        def register(fn: F) -> Resource | ResourceTemplate:
            resource = build_resource(uri, fn, pool=self.thread_pool, **options)
            self.registry.add_resource(resource)
            return resource

        return register

    def add_resource(
        self,
        uri: str,
        fn: Callable[..., Any],
        *,
        replace: bool = False,
        **options: Unpack[ResourceOptions],
    ) -> Resource | ResourceTemplate:
        """Register a resource or template at any time, e.g. while serving."""
        resource = build_resource(uri, fn, pool=self.thread_pool, **options)
        self.registry.add_resource(resource, replace=replace)
        return resource

    def remove_resource(self, uri_or_template: str) -> ResourceEntry | TemplateEntry:
        return self.registry.remove_resource(uri_or_template)

    @overload
    def app(self, uri: str, *, html: str, **options: Unpack[AppOptions]) -> App: ...
    @overload
    def app(
        self, uri: str, *, path: str | os.PathLike[str], **options: Unpack[AppOptions]
    ) -> App: ...
    @overload
    def app(self, uri: str, **options: Unpack[AppOptions]) -> Callable[[F], App]: ...
    def app(
        self,
        uri: str,
        *,
        html: str | None = None,
        path: str | os.PathLike[str] | None = None,
        **options: Unpack[AppOptions],
    ) -> App | Callable[[F], App]:
        """Register an MCP App: the HTML view at a ``ui://`` URI that hosts render for the
        tools linked to it, from ``html``, a file at ``path`` or the decorated function's
        return value (:mod:`mcpserve.extensions.apps`)."""
        from ..extensions.apps import register_app

        pool = self.thread_pool
        return register_app(self.registry, uri, pool=pool, html=html, path=path, **options)

    @overload
    def skill(self, fn: F, /) -> Skill: ...
    @overload
    def skill(
        self, fn: None = None, /, **options: Unpack[SkillOptions]
    ) -> Callable[[F], Skill]: ...
    def skill(
        self, fn: F | None = None, /, **options: Unpack[SkillOptions]
    ) -> Skill | Callable[[F], Skill]:
        """Serve a generated skill: the function returns its SKILL.md body on every read; its
        name (``_`` as ``-``) and docstring name and describe it unless given (the skills
        extension, :mod:`mcpserve.extensions.skills.extension`)."""

        from ..extensions.skills.skill import skill_maker

        make = skill_maker(self.add_skill, options)
        return make(fn) if fn is not None else make

    def add_skill(self, skill: Skill, *, replace: bool = False) -> Skill:
        """Serve a :class:`~mcpserve.Skill` and its files as ``skill://`` resources."""
        self.use_skills().add([skill], replace=replace)
        return skill

    def add_skills(
        self,
        directory: str | os.PathLike[str],
        *,
        prefix: str | None = None,
        scopes: Iterable[str] | str = (),
        cache: CachePolicy | None = None,
        tags: Iterable[str] | None = None,
        replace: bool = False,
    ) -> list[Skill]:
        """Serve every skill below ``directory`` (each folder with a SKILL.md), read and
        checked now: a skill that breaks a rule raises ``ValueError`` naming its file."""
        from ..extensions.skills.files import load_skills

        skills = load_skills(directory, prefix=prefix, scopes=scopes, cache=cache, tags=tags)
        self.use_skills().add(skills, replace=replace, nested=True)
        return skills

    def remove_skill(self, uri: str) -> Skill:
        """Stop serving the skill whose SKILL.md is at ``uri``, and its files."""
        if self.skills is None:
            raise KeyError(f"No skill is served at {uri!r}")
        return self.skills.remove(uri)

    @overload
    def resource_lister(self, fn: F, /) -> F: ...
    @overload
    def resource_lister(
        self, fn: None = None, /, *, blocking: bool | None = None
    ) -> Callable[[F], F]: ...
    def resource_lister(
        self, fn: F | None = None, /, *, blocking: bool | None = None
    ) -> F | Callable[[F], F]:
        """List more resources on each ``resources/list``, after the registered ones (one
        lister per server: :mod:`mcpserve.server.entries.resource_lister`)."""

        from .entries.resource_lister import lister_maker

        make = lister_maker(self.registry.set_resource_lister, self.thread_pool, blocking)
        return make(fn) if fn is not None else make

    @overload
    def prompt(self, fn: F, /) -> Prompt: ...
    @overload
    def prompt(self, fn: None = None, /, **options: Unpack[Options]) -> Callable[[F], Prompt]: ...
    def prompt(
        self, fn: F | None = None, /, **options: Unpack[Options]
    ) -> Prompt | Callable[[F], Prompt]:
        """Register a function as a prompt; its parameters are the prompt's arguments."""

        def register(fn: F) -> Prompt:
            from .entries.prompts import Prompt

            prompt = Prompt(fn, pool=self.thread_pool, **options)
            self.registry.add_prompt(prompt)
            return prompt

        return register(fn) if fn is not None else register

    def add_prompt(
        self,
        fn: Callable[..., Any] | PromptEntry,
        *,
        replace: bool = False,
        **options: Unpack[Options],
    ) -> PromptEntry:
        """Register a prompt at any time, e.g. while serving."""
        from .entries.prompts import Prompt

        prompt: PromptEntry = fn if is_entry(fn) else Prompt(fn, pool=self.thread_pool, **options)
        self.registry.add_prompt(prompt, replace=replace)
        return prompt

    def remove_prompt(self, name: str) -> PromptEntry:
        return self.registry.remove_prompt(name)

    def completion(
        self,
        *,
        argument: str,
        prompt: str | None = None,
        resource: str | None = None,
        blocking: bool | None = None,
    ) -> Callable[[F], F]:
        """Register completions for a prompt argument or a resource template variable."""
        from .entries.completions import completer_for

        if (prompt is None) == (resource is None):
            raise TypeError("completion() takes exactly one of prompt= or resource=")

        def register(fn: F) -> F:
            run = {"pool": self.thread_pool, "blocking": blocking}
            self.registry.add_completer(*completer_for(fn, argument, prompt, resource, **run))
            return fn

        return register

    def enable(
        self, kind: ListKind | None = None, key: str | None = None, *, tags: Tags | None = None
    ) -> None:
        """Switch a tool, prompt or resource (URI or template) back on, or those with any
        of ``tags`` (in ``kind``'s list, or every list): :mod:`.entries.catalogue`."""
        switch(self.registry, kind, key, tags, on=True)

    def disable(
        self, kind: ListKind | None = None, key: str | None = None, *, tags: Tags | None = None
    ) -> None:
        """Hide from lists and calls, without unregistering, an entry or those tagged so."""
        switch(self.registry, kind, key, tags, on=False)

    def pin(self, name: str, version: str | None, *, kind: ListKind | None = None) -> None:
        """Serve ``version`` of the versioned ``name`` (``None``: the highest again)."""
        self.registry.pin(name, version, kind)

    def visibility(self, rule: F | None = None, /, *, blocking: bool | None = None) -> Any:
        """Decide per request what each caller sees and may call: ``rule(ctx, component)``."""
        return visibility_rule(self.registry, rule, pool=self.thread_pool, blocking=blocking)

    def thread_pool(self) -> ThreadPoolExecutor:
        """The bounded pool that runs ``blocking`` handlers, created on first use."""
        return self.runtime.thread_pool()

    # -- extensions -------------------------------------------------------------------------

    @property
    def tasks(self) -> Tasks | None:
        """The tasks extension, once a task tool joined it to this server; None before."""
        found = self.extensions.get(c.TASKS_EXTENSION)
        return found if found is None else cast("TasksExtension", found).tasks

    @property
    def skills(self) -> Skills | None:
        """The skills extension, once a skill joined it to this server; None before."""
        found = self.extensions.get(c.SKILLS_EXTENSION)
        return found if found is None else cast("Skills", found)

    def use_tasks(self) -> Tasks:
        """The tasks extension, joined to this server now if it had not joined yet (the
        first task tool does this; a server without one never loads it)."""
        if self.tasks is not None:
            return self.tasks
        from ..extensions.tasks.extension import TasksExtension

        joined = TasksExtension.made(self.runtime, self.subscriptions, self._config)
        return self.extensions.add(joined).tasks

    def use_skills(self) -> Skills:
        """The skills extension, joined to this server now if it had not joined yet."""
        if self.skills is not None:
            return self.skills
        from ..extensions.skills.extension import Skills

        return self.extensions.add(Skills(self.registry, self.settings, self.thread_pool))

    # -- composing: mounts, transformations, servers built from elsewhere -------------------

    def mount(self, server: Server[Any], namespace: str | None = None) -> Mount:
        """Serve ``server``'s entries as this server's, names under ``namespace``; it runs
        inside this one (:mod:`mcpserve.compose.mount`)."""
        from ..compose.mount.mount import Mounts

        if self._mounts is None:
            self._mounts = Mounts(self)
        mount = self._mounts.add(server, namespace, middleware=server.pipeline.middleware)
        # Middleware the child gets later wraps its entries here too.
        server.pipeline.middleware_listeners.append(mount.middleware_changed)
        return mount

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """The servers mounted in this one, in mount order."""
        return tuple(self._mounts.mounts) if self._mounts is not None else ()

    def transform_tool(self, tool: str, /, **changes: Unpack[ToolChanges]) -> ToolEntry:
        """Replace tool ``tool`` (local or mounted) with a transformation of it
        (:mod:`mcpserve.compose.transform`)."""
        from ..compose.transform import transform_tool

        return transform_tool(self.registry, self._mounts, tool, changes)

    @classmethod
    def from_openapi(
        cls,
        spec: Mapping[str, Any] | str | bytes,
        *,
        client: httpx2.AsyncClient,
        name: str | None = None,
        version: str | None = None,
        **selection: Unpack[OpenAPISelection],
    ) -> Server[Any]:
        """A server whose tools are an HTTP API's operations (an OpenAPI 3.0/3.1 document, or
        its URL), called with ``client``; see ``docs/openapi.md``."""
        from ..compose.openapi import server_from_openapi as build

        return build(cls, spec, client=client, name=name, version=version, **selection)

    @classmethod
    def proxy(cls, upstream: Any, **options: Any) -> Server[Any]:
        """A server serving another MCP server (a URL, a command, or a ``Server``) to clients
        of either era, over one connection made when it starts (``docs/proxy.md``)."""
        build: Callable[..., Server[Any]] = _proxies().proxy_server
        return build(upstream, server_class=cls, **options)

    @classmethod
    def gateway(cls, upstreams: Mapping[str, Any], **options: Any) -> Server[Any]:
        """Several servers behind one endpoint: a proxy of each upstream (``{"billing": URL,
        "files": "python files.py"}``) mounted under its name (``docs/proxy.md``)."""
        build: Callable[..., Server[Any]] = _proxies().gateway_server
        return build(upstreams, server_class=cls, **options)

    # -- extending: custom methods, notification handlers, middleware -------------------

    def method(self, name: str, *, blocking: bool | None = None) -> Callable[[F], F]:
        """Register a handler for a custom JSON-RPC method (use a namespaced name; see
        :mod:`mcpserve.server.custom`)."""
        self.pipeline.check_method_name(name)

        def register(fn: F) -> F:
            custom = CustomMethod(name, fn, pool=self.thread_pool, blocking=blocking)
            self.pipeline.add_method(name, custom)
            return fn

        return register

    def notification(self, name: str, *, blocking: bool | None = None) -> Callable[[F], F]:
        """Run a function for each client notification ``name`` (both eras; see
        :mod:`mcpserve.server.notifications`)."""
        if not isinstance(name, str) or not name:
            raise ValueError("a notification handler needs the notification's method name")

        def register(fn: F) -> F:
            from .notifications import NotificationHandler

            handler = NotificationHandler(name, fn, pool=self.thread_pool, blocking=blocking)
            self.pipeline.add_notification(name, handler)
            return fn

        return register

    @overload
    def middleware(self, fn: Middleware, *, methods: Iterable[str] | None = None) -> Middleware: ...
    @overload
    def middleware(self, *, methods: Iterable[str]) -> Callable[[Middleware], Middleware]: ...

    def middleware(
        self, fn: Middleware | None = None, *, methods: Iterable[str] | None = None
    ) -> Any:
        """Wrap every request and client notification, of both eras, or only ``methods``;
        see :mod:`mcpserve.server.middleware`."""
        if fn is None:
            if methods is None:
                raise TypeError("middleware() needs a function, or methods=")
            chosen = methods
            return lambda fn: self.middleware(fn, methods=chosen)
        self.pipeline.add_middleware(fn, methods, self)
        return fn

    # -- answering ---------------------------------------------------------------------------

    def endpoint(self) -> ServerEndpoint:
        """What the transports read of this server (``transports/endpoint.py``)."""
        return ServerEndpoint(self)

    async def handle(
        self, message: Any, *, send: SendMessage | None = None, auth: Auth = ANONYMOUS
    ) -> JSONDict | None:
        """Answer one decoded 2026-07-28 JSON-RPC message (``None`` for notifications), in
        process (``Client(server)``): a handshake-era ``initialize`` is refused here, since
        sessions belong to a transport. With ``raise_exceptions`` a handler's unexpected
        exception is raised here, unmasked."""
        dispatcher = self.pipeline.dispatcher()
        if not self.raise_exceptions:
            return await dispatcher.handle(message, send=send, auth=auth)
        token = raise_unexpected.set(asyncio.current_task())
        try:
            return await dispatcher.handle(message, send=send, auth=auth)
        finally:
            raise_unexpected.reset(token)

    @property
    def lifespan_state(self) -> StateT:
        """Whatever the lifespan yielded, while the server runs (``None`` otherwise)."""
        state: StateT = self.runtime.lifespan_state
        return state

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell listeners subscribed to ``uri`` (or a parent of it), in every process."""
        await self.subscriptions.publish_now(resource_updated(uri))

    # -- running -----------------------------------------------------------------------------

    def running(self) -> AbstractAsyncContextManager[Server[StateT]]:
        """Run the lifespan (once, however many transports nest) around serving."""
        return self.lifecycle.running(self, self.lifespan)

    @property
    def running_count(self) -> int:
        """How many :meth:`running` blocks are open (0: the lifespan is not running)."""
        return self.lifecycle.depth

    async def _start_mounts(self, stack: AsyncExitStack) -> None:
        if self._mounts is not None:
            await self._mounts.start(stack)

    def http_app(self, path: str = "/mcp", **options: Unpack[HTTPOptions]) -> ASGIApp:
        """A plain ASGI app serving Streamable HTTP at ``path`` (and ``path/``), to mount in
        any ASGI server or framework; ``docs/reference.md`` lists the options (body limit,
        allowed hosts and origins, keep-alive, ``auth``, ``authenticate``)."""
        from ..transports.serve import build_http_app

        app: ASGIApp = build_http_app(self.endpoint(), path, **options)
        return app

    def run(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        log_level: str = "info",
        access_log: bool = False,
        proxy_headers: bool = False,
        **app_options: Unpack[ServeOptions],
    ) -> None:
        """Serve until stopped: ``"stdio"`` (default) or ``"http"`` with uvicorn (with
        uvloop and httptools when installed, no access log unless ``access_log=True``, no
        ``X-Forwarded-For`` unless ``proxy_headers=True``). ``app_options`` go to the
        transport: ``max_message_bytes`` and ``shutdown_grace`` for stdio, those of
        :meth:`http_app` for HTTP."""
        from ..transports.serve import run_http, run_stdio

        if transport not in ("stdio", "http"):
            raise ValueError(f"Unknown transport {transport!r}; use 'stdio' or 'http'")
        if transport == "stdio":
            run_stdio(self.endpoint(), **app_options)
        else:
            logs: dict[str, Any] = {"log_level": log_level, "access_log": access_log}
            options = {**logs, "proxy_headers": proxy_headers, **app_options}
            run_http(self.endpoint(), host=host, port=port, path=path, **options)


def _proxies() -> Any:
    """``mcpserve.proxy``, loaded when a proxy is made: it sits above ``server/`` (a proxy
    is a server and a client), and is handed this class to build its servers with."""
    return importlib.import_module("mcpserve.proxy")
