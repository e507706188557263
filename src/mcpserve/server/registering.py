"""Registration: the decorators and ``add_``/``remove_`` methods that fill a server's registry.

:class:`~mcpserve.Server` inherits them. Each call builds the record (schemas, validators,
list entry) once, so a request only looks it up; ``blocking`` handlers get the bounded
thread pool kept here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from .registry import Registry
from .resources import CachePolicy, Resource, ResourceTemplate, build_resource
from .tools import Tool

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from .prompts import Prompt

# Prompts and completions load with the first one registered: a tools-only server (the
# commonest kind, and the one spawned on demand over stdio) does not import them.

F = TypeVar("F", bound=Callable[..., Any])


class Registering:
    """Tools, resources, prompts and completions: registering, removing, switching."""

    registry: Registry
    _max_threads: int
    _pool: ThreadPoolExecutor | None

    @overload
    def tool(self, fn: F, /) -> Tool: ...
    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        blocking: bool | None = None,
        requires: dict[str, Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> Callable[[F], Tool]: ...
    def tool(self, fn: F | None = None, /, **options: Any) -> Tool | Callable[[F], Tool]:
        """Register a function as a tool; its type hints become the ``inputSchema``."""

        def register(fn: F) -> Tool:
            tool = Tool.from_function(fn, pool=self.thread_pool, **options)
            self.registry.add_tool(tool)
            return tool

        return register(fn) if fn is not None else register

    def add_tool(
        self, fn: Callable[..., Any] | Tool, *, replace: bool = False, **options: Any
    ) -> Tool:
        """Register a tool at any time, e.g. while serving."""
        tool = (
            fn if isinstance(fn, Tool) else Tool.from_function(fn, pool=self.thread_pool, **options)
        )
        self.registry.add_tool(tool, replace=replace)
        return tool

    def remove_tool(self, name: str) -> Tool:
        return self.registry.remove_tool(name)

    def add_prompt(
        self, fn: Callable[..., Any] | Prompt, *, replace: bool = False, **options: Any
    ) -> Prompt:
        """Register a prompt at any time, e.g. while serving."""
        from .prompts import Prompt

        prompt = (
            fn
            if isinstance(fn, Prompt)
            else Prompt.from_function(fn, pool=self.thread_pool, **options)
        )
        self.registry.add_prompt(prompt, replace=replace)
        return prompt

    def add_resource(
        self, uri: str, fn: Callable[..., Any], *, replace: bool = False, **options: Any
    ) -> Resource | ResourceTemplate:
        """Register a resource or template at any time, e.g. while serving."""
        resource = build_resource(uri, fn, pool=self.thread_pool, **options)
        self.registry.add_resource(resource, replace=replace)
        return resource

    def enable(self, kind: Literal["tools", "prompts", "resources"], key: str) -> None:
        """Switch a registered tool, prompt or resource (URI or template) back on."""
        self.registry.set_enabled(kind, key, True)

    def disable(self, kind: Literal["tools", "prompts", "resources"], key: str) -> None:
        """Hide a tool, prompt or resource from lists and calls, without unregistering it."""
        self.registry.set_enabled(kind, key, False)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: list[dict[str, Any]] | None = None,
        annotations: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        blocking: bool | None = None,
        cache: CachePolicy | None = None,
    ) -> Callable[[F], Resource | ResourceTemplate]:
        """Register a resource at ``uri``, or a template when ``uri`` has ``{variables}``."""

        def register(fn: F) -> Resource | ResourceTemplate:
            resource = build_resource(
                uri, fn, pool=self.thread_pool, name=name, title=title,
                description=description, mime_type=mime_type, size=size, icons=icons,
                annotations=annotations, meta=meta, blocking=blocking, cache=cache,
            )  # fmt: skip
            self.registry.add_resource(resource)
            return resource

        return register

    def remove_resource(self, uri_or_template: str) -> Resource | ResourceTemplate:
        return self.registry.remove_resource(uri_or_template)

    @overload
    def prompt(self, fn: F, /) -> Prompt: ...
    @overload
    def prompt(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        blocking: bool | None = None,
    ) -> Callable[[F], Prompt]: ...
    def prompt(self, fn: F | None = None, /, **options: Any) -> Prompt | Callable[[F], Prompt]:
        """Register a function as a prompt; its parameters are the prompt's arguments."""

        def register(fn: F) -> Prompt:
            from .prompts import Prompt

            prompt = Prompt.from_function(fn, pool=self.thread_pool, **options)
            self.registry.add_prompt(prompt)
            return prompt

        return register(fn) if fn is not None else register

    def remove_prompt(self, name: str) -> Prompt:
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
            from .completions import Completer

            completer = Completer.from_function(fn, pool=self.thread_pool, blocking=blocking)
            if prompt is not None:
                self.registry.add_completer(("ref/prompt", prompt, argument), completer)
            else:
                assert resource is not None
                self.registry.add_completer(("ref/resource", resource, argument), completer)
            return fn

        return register

    def thread_pool(self) -> ThreadPoolExecutor:
        """The bounded pool that runs ``blocking`` handlers, created on first use."""
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # with the first blocking call

            self._pool = ThreadPoolExecutor(self._max_threads, thread_name_prefix="mcpserve")
        return self._pool
