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
registering methods live in :mod:`.registering`, composition (mounting, transformations,
proxies, OpenAPI) in :mod:`.composing`, the pipeline's assembly in :mod:`.assembly`; this
module has the rest: the method table and middleware, answering, the lifespan and serving.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, Literal

from typing_extensions import TypeVar

from ..protocol import constants as c
from ..protocol.core import ANONYMOUS, Auth, Dispatcher, Handler, Send
from ..protocol.errors import raise_unexpected
from ..protocol.handshake import Session
from ..protocol.jsonrpc import JSONDict
from .assembly import build_dispatcher, initialize_through_middleware
from .bus import BUS_ENV, LocalBus, SubscriptionBus, bus_from_url, resource_updated
from .composing import Composing
from .context.context import Context
from .custom import CustomMethod
from .entries.resources import CachePolicy
from .extending import Extending
from .handshake import Legacy
from .loop_watch import DEFAULT_BLOCKING_WARNING_SECONDS, LoopWatch
from .methods import MethodTable, method_table
from .middleware import Middleware
from .registering import Registering
from .registry import Registry
from .runtime import AnswersWithoutState, Runtime
from .settings import Settings, capabilities
from .subscriptions import Subscriptions

if TYPE_CHECKING:
    from ..auth.resource import ResourceServer
    from ..auth.tokens import TokenVerifier
    from ..compose.mount.mount import Mount, Mounts
    from ..extensions.skills.extension import Skills
    from ..extensions.tasks.records import TaskStore
    from ..extensions.tasks.runner import Tasks
    from ..protocol.request_state import StateSealer
    from .notifications import NotificationHandler

logger = logging.getLogger("mcpserve")
F = TypeVar("F", bound=Callable[..., Any])
#: Where the shared Redis is named when ``redis_url`` is not given.
REDIS_URL_ENV = "MCPSERVE_REDIS_URL"
#: Where the task store is named when ``task_store`` is not given.
TASK_STORE_ENV = "MCPSERVE_TASK_STORE"
#: What the lifespan yields, typed: ``Server[AppState]`` and ``Context[AppState]``.
StateT = TypeVar("StateT", default=Any)
Lifespan = Callable[["Server[StateT]"], AbstractAsyncContextManager[StateT]]
#: The ASGI callable ``http_app`` returns (scope, receive, send).
ASGIApp = Callable[[Any, Any, Any], Any]

#: Serving, named by import path and loaded on first use: ``server/`` sits below
#: ``transports/`` and never imports it, and a stdio server never loads the HTTP stack.
_SERVING = {
    "stdio": "mcpserve.transports.stdio:run_stdio",
    "http": "mcpserve.transports.serve:run_http",
    "http_app": "mcpserve.transports.serve:build_http_app",
}


def _tracer(tracing: Any) -> Any:
    from .tracing import tracer_for  # opentelemetry itself loads only if it is installed

    return tracer_for(tracing)


def _serving(name: str) -> Callable[..., Any]:
    module, _, attribute = _SERVING[name].partition(":")
    entry: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
    return entry


class Server(Registering, Composing, Extending, Generic[StateT]):
    """An MCP server: what it offers, and how it answers.

    The server is where the parts meet: the registry (what is offered), the settings (what
    it says about itself), the runtime (what requests share), the subscriptions, the
    handshake-era front and the dispatcher, each given only the others it uses.
    """

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
        lifespan: Lifespan[StateT] | None = None,
        max_threads: int | None = None,
        blocking_warning_seconds: float | None = DEFAULT_BLOCKING_WARNING_SECONDS,
        server_info_in_results: bool = True,
        extensions: dict[str, dict[str, Any]] | None = None,
        state_keys: list[tuple[str, bytes]] | None = None,
        state_ttl_seconds: float = 300.0,
        max_input_rounds: int = 10,
        answers_without_state: AnswersWithoutState = "ask",
        redis_url: str | None = None,
        bus: SubscriptionBus | str | None = None,
        subscription_queue_size: int = 256,
        legacy: bool = True,
        legacy_client_timeout_seconds: float = 120.0,
        task_store: TaskStore | str | None = None,
        auth: ResourceServer | TokenVerifier | None = None,
        raise_exceptions: bool = False,
        tracing: Any = None,
    ) -> None:
        self.name = name
        #: OpenTelemetry spans per request: None (on when installed and configured), False,
        #: True, or a TracerProvider (see :mod:`.tracing`).
        self.tracing = tracing
        #: For tests: an unexpected exception in a handler propagates out of :meth:`handle`
        #: (so ``Client(server)`` raises it) instead of being masked as "Internal error (ref
        #: ...)". Transports answer through the dispatcher, not ``handle``: the wire keeps
        #: its answers whatever this says.
        self.raise_exceptions = raise_exceptions
        #: Who may call over HTTP: OAuth bearer tokens, checked by a verifier
        #: (``mcpserve.auth``). stdio ignores it: whoever started the process is trusted,
        #: and credentials come from the environment.
        self.auth = auth
        self.version = version
        info: JSONDict = {"name": name, "version": version}
        for key, value in (
            ("title", title),
            ("description", description),
            ("websiteUrl", website_url),
            ("icons", icons),
        ):
            if value:
                info[key] = value
        self.settings = Settings(
            info,
            instructions=instructions,
            cache=cache,
            page_size=page_size,
            client_logging=client_logging,
            extensions=extensions,
        )
        self.registry = Registry()
        self.runtime = Runtime(
            client_logging=client_logging,
            client_timeout_seconds=legacy_client_timeout_seconds,
            state_keys=state_keys,
            state_ttl_seconds=state_ttl_seconds,
            max_input_rounds=max_input_rounds,
            answers_without_state=answers_without_state,
            loop_watch=LoopWatch(blocking_warning_seconds),
        )
        #: The Redis every process of this server shares: the subscription bus, handshake-era
        #: sessions over HTTP. None: each process keeps its own.
        self.redis_url = redis_url or os.environ.get(REDIS_URL_ENV) or None
        if bus is None and self.redis_url is not None and not os.environ.get(BUS_ENV):
            from ..backends.redis.bus import RedisBus

            # One channel per server: two servers (or staging and production) sharing a
            # Redis do not hear each other; pub/sub ignores the database number.
            bus = RedisBus(self.redis_url, channel=f"mcpserve:{{{name}}}:events")
        if bus is None or isinstance(bus, str):
            bus = bus_from_url(bus)
        if self.redis_url is not None and isinstance(bus, LocalBus):
            logger.warning(
                "Server %r: sessions are shared in Redis but the subscription bus "
                "is this process's own (MCPSERVE_BUS=memory://): answers, "
                "cancellations and notifications will not reach other processes",
                name,
            )
        self.subscriptions = Subscriptions(self.registry, bus, queue_size=subscription_queue_size)
        self.registry.on_change(lambda kind: self.subscriptions.publish({"type": kind}))
        #: The handshake-era front (2025-11-25 and earlier), or None when switched off.
        self.legacy = Legacy(self.registry, self.settings) if legacy else None
        self.lifespan = lifespan
        self._server_info_in_results = server_info_in_results
        self._max_threads = max_threads or min(32, (os.cpu_count() or 1) + 4)
        self._pool = None
        self._middleware: list[Middleware] = []
        self._custom: dict[str, CustomMethod] = {}
        self._notifications: dict[str, NotificationHandler] = {}
        self._dispatcher: Dispatcher[Context] | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._running = 0
        self._task_store = task_store
        self._tasks: Tasks | None = None
        self._skills: Skills | None = None
        self._mounts: Mounts | None = None
        #: Where this server is mounted (``mounting.py``).
        self._mounted_in: list[Mount] = []

    @property
    def tasks(self) -> Tasks:
        """The tasks extension (``task_runner.py``), made when the first task tool is
        registered: a server without one never loads it."""
        if self._tasks is None:
            from ..extensions.tasks.runner import Tasks

            self._tasks = Tasks(
                self.runtime, store=self._make_task_store(), publish=self.subscriptions.publish_now
            )
            self.subscriptions.sinks.add(self._tasks.control)
            self._dispatcher = None  # the tasks/* methods join the table
        return self._tasks

    @property
    def skills(self) -> Skills:
        """The skills extension (``skills.py``), made when the first skill is added."""
        if self._skills is None:
            from ..extensions.skills.extension import Skills

            self._skills = Skills(self.registry, self.settings, self.thread_pool)
            self._dispatcher = None  # its methods join the table
        return self._skills

    @property
    def served_skills(self) -> Skills | None:
        """The skills extension if any skill was ever added, without making it."""
        return self._skills

    @property
    def info(self) -> JSONDict:
        """``serverInfo``: name, version and the optional display fields."""
        return self.settings.info

    @property
    def instructions(self) -> str | None:
        return self.settings.instructions

    # -- answering ---------------------------------------------------------------------------

    def capabilities(self) -> JSONDict:
        """Server capabilities, derived from what is registered."""
        return capabilities(self.registry, self.settings)

    @property
    def dispatcher(self) -> Dispatcher[Context]:
        """The request pipeline, wired to this server's method tables (built on first use,
        again after a middleware or custom method is added)."""
        if self._dispatcher is None:
            legacy_versions = c.LEGACY_VERSIONS if self.legacy is not None else ()
            supported = [*c.MODERN_VERSIONS, *legacy_versions]
            table: MethodTable = method_table(
                self.registry, self.settings, self.subscriptions, supported, self._tasks
            )
            if self._skills is not None:
                table.update(self._skills.handlers())
            table.update({name: Handler(custom.answer) for name, custom in self._custom.items()})
            notifications = {
                name: Handler(handler.receive) for name, handler in self._notifications.items()
            }
            self._dispatcher = build_dispatcher(
                table,
                runtime=self.runtime,
                legacy=self.legacy,
                notifications=notifications,
                middleware=self._middleware,
                tracer=None if self.tracing is False else _tracer(self.tracing),
                server_info=self.info if self._server_info_in_results else None,
            )
        return self._dispatcher

    async def legacy_initialize(
        self,
        message: JSONDict,
        auth: Auth = ANONYMOUS,
        http: Mapping[str, Any] | None = None,
    ) -> tuple[Session | None, JSONDict]:
        """A handshake-era ``initialize``: the new session (None when refused) and the
        response, through the middleware when there is any, as every other message."""
        assert self.legacy is not None
        return await initialize_through_middleware(
            self.legacy, self._middleware, self.runtime, message, auth, http
        )

    async def handle(
        self, message: Any, *, send: Send | None = None, auth: Auth = ANONYMOUS
    ) -> JSONDict | None:
        """Answer one decoded 2026-07-28 JSON-RPC message (``None`` for notifications).

        The in-process entry point (``Client(server)`` uses it): a legacy ``initialize`` is
        refused here, since sessions belong to a transport (stdio, HTTP). With
        ``raise_exceptions``, a handler's unexpected exception is raised here, unmasked.
        """
        if not self.raise_exceptions:
            return await self.dispatcher.handle(message, send=send, auth=auth)
        token = raise_unexpected.set(asyncio.current_task())
        try:
            return await self.dispatcher.handle(message, send=send, auth=auth)
        finally:
            raise_unexpected.reset(token)

    @property
    def lifespan_state(self) -> StateT:
        """Whatever the lifespan yielded, while the server runs (``None`` otherwise)."""
        state: StateT = self.runtime.lifespan_state
        return state

    @property
    def state_sealer(self) -> StateSealer:
        """Seals ``requestState`` for multi round-trip requests (see :class:`Runtime`)."""
        return self.runtime.sealer

    def require_shared_state_keys(self, processes: int) -> None:
        """Refuse to serve from several processes with per-process ``requestState`` keys."""
        self.runtime.require_shared_state_keys(processes)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell listeners subscribed to ``uri`` (or a parent of it), in every process."""
        await self.subscriptions.publish_now(resource_updated(uri))

    # -- running -----------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Server[StateT]]:
        """Run the lifespan (once, however many transports nest) around serving."""
        if self._running == 0:
            stack = AsyncExitStack()
            if self.lifespan is not None:
                state = await stack.enter_async_context(self.lifespan(self))
                self.runtime.lifespan_state = state
            if self._mounts is not None:
                await self._mounts.start(stack)
            await self.subscriptions.start()
            stack.push_async_callback(self.subscriptions.shutdown)
            stack.push_async_callback(self._end_tasks)
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
                    self.runtime.lifespan_state = None

    def _make_task_store(self) -> TaskStore:
        """``task_store=`` (a store or a URL), else ``$MCPSERVE_TASK_STORE``, else the shared
        Redis when there is one, else this process's memory."""
        from ..extensions.tasks.runner import task_store_from_url

        chosen = self._task_store
        if chosen is None:
            chosen = os.environ.get(TASK_STORE_ENV) or self.redis_url or "memory://"
        if isinstance(chosen, str):
            return task_store_from_url(chosen, namespace=self.name)
        return chosen

    @property
    def running_count(self) -> int:
        """How many :meth:`running` blocks are open (0: the lifespan is not running)."""
        return self._running

    async def _end_tasks(self) -> None:
        if self._tasks is not None:
            await self._tasks.shutdown()

    def http_app(self, path: str = "/mcp", **options: Any) -> ASGIApp:
        """A plain ASGI app serving Streamable HTTP at ``path`` (and ``path/``).

        Mount it in any ASGI server or framework. Options: ``max_body_bytes`` (default
        4 MiB), ``allowed_hosts``, ``allowed_origins``, ``public_url`` and ``bind_host``
        (DNS-rebinding protection, see ``transports/origin.py``; by default only loopback
        host names pass), ``keepalive_seconds`` for SSE comments, and
        ``auth`` (default: the server's ``auth=``), a
        :class:`~mcpserve.auth.ResourceServer` or a token verifier that protects the
        endpoint with OAuth bearer tokens and serves the protected resource metadata; or
        ``authenticate(headers)`` for a scheme of your own, which returns the caller's
        :class:`Auth` (seen as ``ctx.principal`` and ``ctx.scopes``) or ``None`` to answer
        401.
        """
        app: ASGIApp = _serving("http_app")(self, path, **options)
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
        **app_options: Any,
    ) -> None:
        """Serve until stopped: ``"stdio"`` (default) or ``"http"`` with uvicorn.

        Over HTTP uvicorn runs with uvloop and httptools when installed (``mcpserve[http]``
        brings them), without an access log unless ``access_log=True``, and without
        rewriting client addresses from ``X-Forwarded-For`` unless ``proxy_headers=True``.

        ``app_options`` go to the transport: :func:`~mcpserve.transports.stdio.serve_stdio`
        (``max_message_bytes``, ``shutdown_grace``) or :meth:`http_app`.
        """
        if transport == "stdio":
            _serving("stdio")(self, **app_options)
        elif transport == "http":
            _serving("http")(
                self,
                host=host,
                port=port,
                path=path,
                log_level=log_level,
                access_log=access_log,
                proxy_headers=proxy_headers,
                **app_options,
            )
        else:
            raise ValueError(f"Unknown transport {transport!r}; use 'stdio' or 'http'")
