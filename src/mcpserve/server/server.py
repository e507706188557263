"""The high-level API: a ``Server`` that decorators fill with tools, resources and prompts.

::

    server = Server("notes", version="1.0.0", instructions="Keeps short notes.")

    @server.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    server.run()  # stdio

Decorators work bare or with options and return the registered record (a :class:`Tool`,
:class:`Resource`, ...), which stays callable like the original function. Registration is
where all the work happens: schemas, validators and list entries are built once. The
registering methods live in :mod:`.registering`; this module has the rest: the method
table and middleware, answering, the lifespan and serving.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..protocol import constants as c
from ..protocol.core import ANONYMOUS, Auth, Dispatcher, Request, Send
from ..protocol.jsonrpc import JSONDict
from .bus import SubscriptionBus, bus_from_url, resource_updated
from .context import Context
from .custom import RESERVED_METHODS, RESERVED_PREFIXES, custom_method
from .legacy import Legacy
from .methods import method_table, tool_arguments
from .middleware import MethodHandler, Middleware, compose
from .registering import Registering
from .registry import Registry
from .resources import CachePolicy
from .subscriptions import Subscriptions
from .tools import Tool

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from ..protocol.request_state import StateSealer
    from ..transports.http import HTTPApp

F = TypeVar("F", bound=Callable[..., Any])
Lifespan = Callable[["Server"], AbstractAsyncContextManager[Any]]


class Server(Registering):
    """An MCP server: what it offers, and how it answers."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        instructions: str | None = None,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        cache: CachePolicy | None = None,
        page_size: int | None = None,
        client_logging: bool = False,
        lifespan: Lifespan | None = None,
        max_threads: int | None = None,
        server_info_in_results: bool = True,
        extensions: dict[str, dict[str, Any]] | None = None,
        state_keys: list[tuple[str, bytes]] | None = None,
        state_ttl_seconds: float = 300.0,
        max_input_rounds: int = 10,
        bus: SubscriptionBus | str | None = None,
        subscription_queue_size: int = 256,
        legacy: bool = True,
        legacy_client_timeout_seconds: float = 120.0,
        max_sessions: int = 1000,
        session_idle_seconds: float = 1800.0,
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        self.info: JSONDict = {"name": name, "version": version}
        for key, value in (
            ("title", title),
            ("description", description),
            ("websiteUrl", website_url),
            ("icons", icons),
        ):
            if value:
                self.info[key] = value
        self.cache = cache or CachePolicy()
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.page_size = page_size
        self.client_logging = client_logging
        self.lifespan = lifespan
        self.lifespan_state: Any = None
        self.extensions = dict(extensions or {})
        self.registry = Registry()
        if bus is None or isinstance(bus, str):
            bus = bus_from_url(bus)
        self.subscriptions = Subscriptions(self, bus, queue_size=subscription_queue_size)
        self.registry.on_change(lambda kind: self.subscriptions.publish({"type": kind}))
        #: The handshake-era front (2025-11-25 and earlier), or None when switched off.
        self.legacy = (
            Legacy(self, client_timeout_seconds=legacy_client_timeout_seconds) if legacy else None
        )
        self.session_limits = (max_sessions, session_idle_seconds)
        self._server_info_in_results = server_info_in_results
        self._max_threads = max_threads or min(32, (os.cpu_count() or 1) + 4)
        self._pool: ThreadPoolExecutor | None = None
        self._middleware: list[Middleware] = []
        self._custom: dict[str, MethodHandler] = {}
        self._dispatcher: Dispatcher | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._running = 0
        self._state_options = (state_keys, state_ttl_seconds, max_input_rounds)
        self._state_sealer: StateSealer | None = None

    # -- custom methods and middleware ------------------------------------------------------

    def method(self, name: str, *, blocking: bool | None = None) -> Callable[[F], F]:
        """Register a handler for a custom JSON-RPC method (use a namespaced name).

        See :mod:`mcpserve.server.custom` for how params and results are handled.
        """
        if (
            name in method_table(self)
            or name in RESERVED_METHODS
            or name.startswith(RESERVED_PREFIXES)
        ):
            raise ValueError(f"{name!r} is reserved by the protocol")

        def register(fn: F) -> F:
            self._custom[name] = custom_method(name, fn, blocking=blocking, pool=self.thread_pool)
            self._dispatcher = None
            return fn

        return register

    def middleware(self, fn: Middleware) -> Middleware:
        """Wrap every request; see :mod:`mcpserve.server.middleware`."""
        self._middleware.append(fn)
        self._dispatcher = None
        return fn

    # -- answering ---------------------------------------------------------------------------

    @property
    def has_middleware(self) -> bool:
        return bool(self._middleware)

    def call_tool_inline(self, tool: Tool, request: Request) -> JSONDict | Awaitable[JSONDict]:
        """The response to ``tools/call`` of a synchronous tool, computed here and now.

        A transport's fast path for servers without middleware: the same checks and answers
        as through :attr:`dispatcher`, minus four coroutines. An awaitable comes back only
        when the tool's plain function returned one.
        """
        dispatcher = self.dispatcher
        try:
            ctx = Context(request, self, inline=True)
            result = tool.call_inline(tool_arguments(request.params), ctx)
        except Exception as exc:
            return dispatcher.failure(request.id, exc)
        if isinstance(result, dict):
            return dispatcher.success(request.id, result)
        return dispatcher.execute(lambda _: result, request)

    def capabilities(self) -> JSONDict:
        """Server capabilities, derived from what is registered (CHECKLIST V04)."""
        registry = self.registry
        capabilities: JSONDict = {}
        # Changes reach listeners through subscriptions/listen, so listChanged and
        # subscribe are always true for the features that exist.
        if registry.tools:
            capabilities["tools"] = {"listChanged": True}
        if registry.resources or registry.templates:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if registry.prompts:
            capabilities["prompts"] = {"listChanged": True}
        if registry.completers:
            capabilities["completions"] = {}
        if self.client_logging:
            capabilities["logging"] = {}
        if self.extensions:
            capabilities["extensions"] = self.extensions
        return capabilities

    @property
    def dispatcher(self) -> Dispatcher:
        """The protocol core, wired to this server's method table."""
        if self._dispatcher is None:
            handlers: dict[str, MethodHandler] = {**method_table(self), **self._custom}
            self._dispatcher = Dispatcher(
                {name: self._entry(compose(self._middleware, h)) for name, h in handlers.items()},
                server_info=self.info if self._server_info_in_results else None,
                versions=c.MODERN_VERSIONS,
                legacy_versions=c.LEGACY_VERSIONS if self.legacy is not None else (),
            )
        return self._dispatcher

    def _entry(self, chain: MethodHandler) -> Callable[[Request], Any]:
        async def entry(request: Request) -> JSONDict:
            ctx = Context(request, self)
            try:
                return await chain(ctx)
            except asyncio.CancelledError:
                ctx.mark_cancelled()  # wakes worker threads polling ctx.cancelled
                raise

        return entry

    async def handle(
        self, message: Any, *, send: Send | None = None, auth: Auth = ANONYMOUS
    ) -> JSONDict | None:
        """Answer one decoded JSON-RPC message (``None`` for notifications)."""
        return await self.dispatcher.handle(message, send=send, auth=auth)

    @property
    def state_sealer(self) -> StateSealer:
        """Seals ``requestState`` for multi round-trip requests (created on first use).

        Keys come from ``state_keys=`` or ``MCPSERVE_STATE_KEYS``; without either, this
        process makes a random key, which only works while one process serves.
        """
        if self._state_sealer is None:
            from ..protocol.request_state import StateSealer

            keys, ttl, rounds = self._state_options
            self._state_sealer = StateSealer(keys, ttl_seconds=ttl, max_rounds=rounds)
        return self._state_sealer

    def require_shared_state_keys(self, processes: int) -> None:
        """Refuse to serve from several processes with per-process ``requestState`` keys.

        Each process would seal with its own random key, so a retry landing on another
        worker or instance would be rejected.
        """
        if processes <= 1 or self._state_options[0] is not None:
            return
        if os.environ.get("MCPSERVE_STATE_KEYS"):
            from ..protocol.request_state import parse_keys

            parse_keys(os.environ["MCPSERVE_STATE_KEYS"])  # a malformed value fails here
        else:
            raise RuntimeError(
                f"Serving from {processes} processes needs a shared requestState key: set "
                "MCPSERVE_STATE_KEYS (e.g. the output of `mcpserve keygen`) or pass "
                "Server(state_keys=...)"
            )

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell listeners subscribed to ``uri`` (or a parent of it), in every process."""
        await self.subscriptions.publish_now(resource_updated(uri))

    # -- running -----------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Server]:
        """Run the lifespan (once, however many transports nest) around serving."""
        if self._running == 0:
            stack = AsyncExitStack()
            if self.lifespan is not None:
                self.lifespan_state = await stack.enter_async_context(self.lifespan(self))
            await self.subscriptions.start()
            stack.push_async_callback(self.subscriptions.shutdown)
            self._exit_stack = stack
        self._running += 1
        try:
            yield self
        finally:
            self._running -= 1
            if self._running == 0 and self._exit_stack is not None:
                stack, self._exit_stack = self._exit_stack, None
                try:
                    await stack.aclose()
                finally:
                    self.lifespan_state = None

    def http_app(self, path: str = "/mcp", **options: Any) -> HTTPApp:
        """A plain ASGI app serving Streamable HTTP at ``path`` (and ``path/``).

        Mount it in any ASGI server or framework. Options: ``max_body_bytes`` (default
        4 MiB), ``allowed_hosts``, ``allowed_origins``, ``public_url`` and ``bind_host``
        (DNS-rebinding protection, see ``transports/origin.py``; by default only loopback
        host names pass), ``keepalive_seconds`` for SSE comments, and
        ``authenticate(headers)``, which returns the caller's :class:`Auth` (seen as
        ``ctx.principal`` and ``ctx.scopes``) or ``None`` to answer 401.
        """
        from ..transports.serve import build_http_app

        return build_http_app(self, path, **options)

    def run(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        log_level: str = "info",
        **app_options: Any,
    ) -> None:
        """Serve until stopped: ``"stdio"`` (default) or ``"http"`` with uvicorn.

        ``app_options`` go to the transport: :func:`~mcpserve.transports.stdio.serve_stdio`
        (``max_message_bytes``, ``shutdown_grace``) or :meth:`http_app`.
        """
        if transport == "stdio":
            from ..transports.stdio import serve_stdio

            asyncio.run(serve_stdio(self, **app_options))
        elif transport == "http":
            from ..transports.serve import run_http

            run_http(self, host=host, port=port, path=path, log_level=log_level, **app_options)
        else:
            raise ValueError(f"Unknown transport {transport!r}; use 'stdio' or 'http'")
