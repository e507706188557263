"""Registration: the decorators and ``add_``/``remove_`` methods that fill a server's registry.

:class:`~mcpserve.Server` inherits them. Each call builds the record (schemas, validators,
list entry) once, so a request only looks it up; ``blocking`` handlers get the bounded
thread pool kept here. The options of each kind are declared once, as the ``TypedDict``s
below, and shared by its decorator and its ``add_`` method.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, overload

from typing_extensions import Unpack

from .entries.kinds import is_entry
from .entries.resources import CachePolicy, Resource, ResourceTemplate, build_resource
from .entries.tools import Tool
from .registry import Registry

if TYPE_CHECKING:
    import os
    from concurrent.futures import ThreadPoolExecutor

    import httpx2

    from ..compose.openapi import OpenAPISelection
    from ..extensions.apps import App, AppOptions
    from ..extensions.skills.extension import Skills
    from ..extensions.skills.skill import Skill, SkillOptions
    from ..extensions.tasks.runner import Tasks
    from .entries.kinds import PromptEntry, ResourceEntry, TemplateEntry, ToolEntry
    from .entries.prompts import Prompt

# Prompts and completions load with the first one registered: a tools-only server (the
# commonest kind, and the one spawned on demand over stdio) does not import them.

F = TypeVar("F", bound=Callable[..., Any])


class Options(TypedDict, total=False):
    """What every kind of registration takes."""

    name: str
    title: str
    description: str
    icons: list[dict[str, Any]]
    meta: dict[str, Any]
    #: Run a plain function in the thread pool (``None``: only when marked ``@blocking``).
    blocking: bool
    #: Scopes an authenticated caller needs to see and use it (403 with a step-up challenge
    #: otherwise). No restriction when the server has no authentication.
    scopes: Iterable[str]


class ToolOptions(Options, total=False):
    annotations: dict[str, Any]
    #: Client capabilities the tool cannot do without (-32021 when a request lacks them).
    requires: dict[str, Any]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    #: Run as a task (the tasks extension) when the client declares it: "optional" also
    #: runs as an ordinary call for other clients, "required" refuses them (-32021).
    task: Literal["optional", "required"]
    #: When the task starts: with the "call" (default), or when the "handler" awaits
    #: ``ctx.start_task()`` (its questions before that are multi round-trip rounds).
    task_start: Literal["call", "handler"]
    #: Who keeps the requestState of its multi round-trip rounds: mcpserve, sealed
    #: ("sealed", default), or the "handler" (``ctx.raw_request_state`` in, verbatim
    #: ``ctx.set_raw_request_state`` out; nothing verified).
    request_state: Literal["sealed", "handler"]
    #: The MCP App (``server.app(...)``, or its ``ui://`` URI) that shows the tool's results.
    app: App | str
    #: Who may call the tool where apps are shown: "model", "app" (default: both).
    visibility: Iterable[Literal["model", "app"]]


class ResourceOptions(Options, total=False):
    mime_type: str
    size: int
    annotations: dict[str, Any]
    cache: CachePolicy


class Registering:
    """Tools, resources, prompts and completions: registering, removing, switching."""

    registry: Registry
    _max_threads: int
    _pool: ThreadPoolExecutor | None

    if TYPE_CHECKING:  # Server provides it: the tasks extension task tools run in

        @property
        def tasks(self) -> Tasks: ...

        @property
        def skills(self) -> Skills: ...

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
        if "app" in options or "visibility" in options:
            from ..extensions.apps import with_app_meta

            options = with_app_meta(options)  # type: ignore[assignment]
        if "task" not in options:
            return Tool(fn, pool=self.thread_pool, **options)  # type: ignore[misc]
        from ..extensions.tasks.runner import TaskTool

        return TaskTool(fn, tasks=self.tasks, pool=self.thread_pool, **options)

    def remove_tool(self, name: str) -> ToolEntry:
        return self.registry.remove_tool(name)

    def add_openapi(
        self,
        spec: Mapping[str, Any] | str | bytes,
        *,
        client: httpx2.AsyncClient,
        **selection: Unpack[OpenAPISelection],
    ) -> list[Tool]:
        """Register a tool per operation of an OpenAPI 3.0/3.1 document (a dict or JSON text),
        called with ``client``; ``operation_ids=``, ``tags=``, ``include=`` choose which, and
        ``prefix=`` begins their names (see :mod:`mcpserve.compose.openapi`)."""
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
        tools linked to it (``@server.tool(app=...)``). From ``html``, a file at ``path``
        (read at each ``resources/read``), or the decorated function's return value (see
        :mod:`mcpserve.extensions.apps`)."""
        from ..extensions.apps import register_app

        return register_app(
            self.registry, uri, pool=self.thread_pool, html=html, path=path, **options
        )

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

        def register(fn: F) -> Skill:
            from ..extensions.skills.skill import generated_skill

            return self.add_skill(generated_skill(fn, **options))

        return register(fn) if fn is not None else register

    def add_skill(self, skill: Skill, *, replace: bool = False) -> Skill:
        """Serve a :class:`~mcpserve.Skill` and its files as ``skill://`` resources."""
        self.skills.add([skill], replace=replace)
        return skill

    def add_skills(
        self,
        directory: str | os.PathLike[str],
        *,
        prefix: str | None = None,
        scopes: Iterable[str] | str = (),
        cache: CachePolicy | None = None,
        replace: bool = False,
    ) -> list[Skill]:
        """Serve every skill below ``directory`` (each folder with a SKILL.md), read and
        checked now: a skill that breaks a rule raises ``ValueError`` naming its file."""
        from ..extensions.skills.files import load_skills

        skills = load_skills(directory, prefix=prefix, scopes=scopes, cache=cache)
        self.skills.add(skills, replace=replace, nested=True)
        return skills

    def remove_skill(self, uri: str) -> Skill:
        """Stop serving the skill whose SKILL.md is at ``uri``, and its files."""
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
        """List more resources on each ``resources/list``, after the registered ones: the
        function returns their entries (see :mod:`mcpserve.server.entries.resource_lister`). One per
        server; registering another replaces it."""

        def register(fn: F) -> F:
            from .entries.resource_lister import ResourceLister

            self.registry.set_resource_lister(
                ResourceLister(fn, pool=self.thread_pool, blocking=blocking)
            )
            return fn

        return register(fn) if fn is not None else register

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
        if (prompt is None) == (resource is None):
            raise TypeError("completion() takes exactly one of prompt= or resource=")

        def register(fn: F) -> F:
            from .entries.completions import Completer

            target = prompt if prompt is not None else resource
            assert target is not None
            completer = Completer(
                fn, f"{target}:{argument}", pool=self.thread_pool, blocking=blocking
            )
            kind: Literal["ref/prompt", "ref/resource"] = (
                "ref/prompt" if prompt is not None else "ref/resource"
            )
            self.registry.add_completer((kind, target, argument), completer)
            return fn

        return register

    def enable(self, kind: Literal["tools", "prompts", "resources"], key: str) -> None:
        """Switch a registered tool, prompt or resource (URI or template) back on."""
        self.registry.set_enabled(kind, key, True)

    def disable(self, kind: Literal["tools", "prompts", "resources"], key: str) -> None:
        """Hide a tool, prompt or resource from lists and calls, without unregistering it."""
        self.registry.set_enabled(kind, key, False)

    def thread_pool(self) -> ThreadPoolExecutor:
        """The bounded pool that runs ``blocking`` handlers, created on first use."""
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # with the first blocking call

            self._pool = ThreadPoolExecutor(self._max_threads, thread_name_prefix="mcpserve")
        return self._pool
