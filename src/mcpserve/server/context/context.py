"""The per-request context a handler receives when it asks for one.

Declare a parameter annotated ``Context`` and mcpserve passes it in::

    @server.tool
    async def crunch(rows: int, ctx: Context) -> str:
        for done in range(rows):
            await ctx.progress(done + 1, total=rows)
        return "ok"

Everything here describes *this* request only: the client's capabilities, identity,
protocol version and log level come from its ``_meta`` and are never remembered. Each
helper is a no-op when the client did not ask for it: ``progress`` without a progress
token, ``log`` without a log level. Notifications go out on the request's own stream.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol

from typing_extensions import TypeVar

from ..._types import JSONDict
from ...protocol import constants as c
from ...protocol.capabilities import missing_capabilities
from ...protocol.core import Auth, Request
from ...protocol.errors import InsufficientScope
from ...protocol.jsonrpc import RequestId, notification
from ..runtime import Runtime
from .rounds import InputRequest, Rounds

_CLIENT_LOGGER = logging.getLogger("mcpserve.client")


class RunningTask(Protocol):
    """The task a call runs as (the tasks extension's, ``extensions/tasks/running.py``):
    where its questions and progress go instead of the client."""

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]: ...

    async def progress(self, message: str) -> None: ...


if TYPE_CHECKING:  # the HTTP request's view and the input questions load on first use
    from ..http_request import HTTPRequest
    from .input_requests import Elicit, ElicitResult, ListRoots, Root, Sample, SampleResult
    from .store import StateStore, StoreScope

_PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


#: What the server's lifespan yields: ``Context[AppState]`` types ``ctx.lifespan_state``.
StateT = TypeVar("StateT", default=Any)


class Context(Generic[StateT]):
    """What a handler may know about, and do for, the request it is serving.

    Annotate it as ``Context[AppState]`` to have ``ctx.lifespan_state`` typed as what your
    lifespan yields (``Server[AppState]``); a plain ``Context`` leaves it ``Any``.
    """

    __slots__ = (
        "_asked",
        "_cancel_flag",
        "_last_progress",
        "_round_target",
        "_rounds",
        "_task",
        "request",
        "runtime",
    )

    #: The task this call runs as, once it does; a task's context (``extensions/tasks/runner.py``, a
    #: subclass with these two as slots) sets them, every other context reads these.
    task: RunningTask | None = None
    #: What :meth:`start_task` does, for a task tool's call.
    task_starter: Callable[[str | None], Awaitable[None]] | None = None

    def __init__(self, request: Request, runtime: Runtime) -> None:
        self.request = request
        #: What the server's requests share (lifespan state, settings, the state sealer).
        self.runtime = runtime
        self._last_progress: float | None = None
        # Known once an answer that has to wait is awaited (attach): an answer given at once
        # ran to completion without yielding to the event loop, and nothing could cancel it.
        self._task: asyncio.Task[Any] | None = None
        self._cancel_flag: tuple[threading.Event, asyncio.Event] | None = None
        self._rounds: Rounds | None = None
        self._round_target: tuple[str, Any, bool] | None = None
        self._asked = 0

    # -- facts about the request ---------------------------------------------------------

    @property
    def request_id(self) -> RequestId:
        return self.request.id

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def protocol_version(self) -> str:
        return self.request.meta.protocol_version

    @property
    def client_capabilities(self) -> JSONDict:
        return self.request.meta.client_capabilities

    @property
    def client_info(self) -> JSONDict | None:
        """Self-reported client name and version: for display and logs, not for decisions."""
        return self.request.meta.client_info

    @property
    def log_level(self) -> str | None:
        return self.request.meta.log_level

    @property
    def progress_token(self) -> str | int | None:
        return self.request.meta.progress_token

    @property
    def trace_context(self) -> dict[str, str]:
        """W3C ``traceparent``/``tracestate``/``baggage`` from ``_meta``, when present."""
        return self.request.meta.trace

    @property
    def principal(self) -> str | None:
        """Who is calling (a token's ``sub``), or ``None`` without authentication."""
        return self.request.auth.principal

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes the caller's token grants (empty without authentication)."""
        return self.request.auth.scopes

    @property
    def auth(self) -> Auth:
        """The whole verified identity: ``principal``, ``scopes``, the token's ``claims``,
        and ``checked`` (False when the server has no authentication)."""
        return self.request.auth

    @property
    def http(self) -> HTTPRequest | None:
        """The HTTP request that carried this call (headers, client address, path, query),
        or ``None`` over stdio and in memory."""
        scope = self.request.http
        if scope is None:
            return None
        from ..http_request import HTTPRequest

        return HTTPRequest.from_scope(scope)

    def has_scope(self, *scopes: str) -> bool:
        """True when the caller may act with every scope named: it was granted them, or the
        server has no authentication (stdio, open HTTP), where scopes restrict nothing."""
        return not self.request.auth.missing(frozenset(scopes))

    def require_scopes(self, *scopes: str) -> None:
        """Go on only if the caller holds ``scopes``; otherwise end the request with
        :class:`~mcpserve.InsufficientScope` (HTTP 403 with a step-up challenge naming every
        scope this operation needs). Does nothing without authentication."""
        needed = frozenset(scopes)
        missing = self.request.auth.missing(needed)
        if missing:
            target = self.request.target
            if isinstance(target, tuple):  # resources/read found (resource, variables)
                target = target[0]
            declared: frozenset[str] = getattr(target, "scopes", frozenset())
            raise InsufficientScope(needed | declared, missing)

    async def upstream_token(self) -> str:
        """The identity provider's access token for the calling user, for calling the
        provider (GitHub, Google, ...) as them: with ``Server(auth=OIDCProxy(...))``, where
        the user logged in there. Renewed first when it is about to expire; when it cannot
        be, the request ends with an error that asks the user to sign in again."""
        source = self.runtime.upstream_tokens
        if source is None:
            raise RuntimeError(
                "ctx.upstream_token() needs Server(auth=OIDCProxy(...)) (or a provider of "
                "mcpserve.auth.providers): only a server its users log in to holds their tokens"
            )
        return await source.upstream_token(self.request.auth)

    @property
    def store(self) -> StateStore:
        """State that outlives this request, kept per caller (``await ctx.store.get(key)``,
        ``set(key, value, ttl=None)``, ``delete(key)``): see ``docs/state.md``."""
        return self.store_for("principal")

    def store_for(self, scope: StoreScope) -> StateStore:
        """The records of another scope: ``"server"`` (every caller's), ``"session"`` (a
        handshake-era session's) or ``"principal"`` (the caller's, as :attr:`store`)."""
        stores = self.runtime.state_stores
        if stores is None:
            raise RuntimeError("ctx.store needs a server: this context has no store")
        return stores.scoped(self.request, scope)

    def client_supports(self, capabilities: JSONDict) -> bool:
        """True when this request's client declared all of ``capabilities``."""
        return not missing_capabilities(capabilities, self.client_capabilities)

    @property
    def lifespan_state(self) -> StateT:
        """Whatever the server's lifespan yielded (``None`` without a lifespan, or while
        the server is not running it)."""
        state: StateT = self.runtime.lifespan_state
        return state

    # -- cancellation ----------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this request.

        Safe to poll from a ``blocking`` handler's worker thread, which keeps running after
        the request's task is cancelled unless it checks.
        """
        if self._cancel_flag is not None and self._cancel_flag[0].is_set():
            return True
        task = self._task
        return task is not None and (task.cancelling() > 0 or task.cancelled())

    def attach(self, task: asyncio.Task[Any] | None) -> None:
        """The task awaiting this request's answer (called by the server, not by handlers)."""
        self._task = task

    def mark_cancelled(self) -> None:
        """Record that the request was cancelled (called by the server, not by handlers)."""
        self._cancel_events()[0].set()
        self._cancel_events()[1].set()

    async def wait_cancelled(self) -> None:
        """Return once the request is cancelled: for helper tasks a handler starts."""
        await self._cancel_events()[1].wait()

    def _cancel_events(self) -> tuple[threading.Event, asyncio.Event]:
        if self._cancel_flag is None:
            self._cancel_flag = (threading.Event(), asyncio.Event())
        return self._cancel_flag

    def close_stream(self, retry_ms: int = 1000) -> bool:
        """End this request's HTTP connection early; the client reconnects to resume.

        Only the handshake era's resumable streams can do this (the server keeps writing,
        the client resumes with ``Last-Event-ID`` after ``retry_ms``). Elsewhere it does
        nothing and returns False.
        """
        detach = getattr(self.request.send, "detach", None)
        if detach is None:
            return False
        detach(retry_ms)
        return True

    # -- asking the client (multi round-trip requests) ------------------------------------

    def begin_rounds(self, target: str, arguments: Any, *, sealed: bool = True) -> None:
        """Bind input requests to this request's target (done by the server); ``sealed``
        False for a tool that keeps its own ``requestState``."""
        self._round_target = (target, arguments, sealed)
        params = self.request.params
        if "requestState" in params or "inputResponses" in params:
            _ = self.rounds  # verify the state now, even if the handler never asks

    @property
    def rounds(self) -> Rounds:
        if self._rounds is None:
            if self._round_target is None:
                raise RuntimeError(
                    f"{self.request.method} cannot ask the client for input "
                    "(only tools, prompts and resources can)"
                )
            self._rounds = Rounds(self, *self._round_target)
        return self._rounds

    def carried_rounds(self) -> JSONDict | None:
        """What this call's sealed rounds took so far (:meth:`.Rounds.carried`); None when
        it asked nothing or keeps its own requestState (then the request carries it all)."""
        rounds = self._rounds
        return rounds.carried() if rounds is not None and rounds.sealed else None

    def replay_rounds(self, target: str, arguments: Any, carried: Mapping[str, Any]) -> Rounds:
        """Run this call's questions again from ``carried`` (:meth:`carried_rounds`, taken in
        another process), for a request without ``requestState`` or ``inputResponses``."""
        rounds = Rounds(self, target, arguments)
        rounds.replay(carried)
        self._rounds = rounds
        return rounds

    @property
    def is_retry(self) -> bool:
        """True when this request answers an earlier ``input_required`` result."""
        params = self.request.params
        return "requestState" in params or "inputResponses" in params

    @property
    def input_responses(self) -> JSONDict:
        """The raw ``inputResponses`` of this retry (empty on a first attempt)."""
        responses = self.request.params.get("inputResponses")
        return responses if isinstance(responses, dict) else {}

    @property
    def raw_request_state(self) -> str | None:
        """The ``requestState`` string the client echoed, unverified and as sent (``None``
        when there is none). For tools that keep their own (``request_state="handler"``):
        what mcpserve seals is read through :attr:`state` and :attr:`request_state`, which
        verify it."""
        state = self.request.params.get("requestState")
        return state if isinstance(state, str) else None

    def set_raw_request_state(self, text: str | None) -> None:
        """The ``requestState`` this attempt hands out if it ends asking (a question, or an
        ``InputRequired`` returned), sent exactly as given; ``None`` sends none. Only for a
        tool registered with ``request_state="handler"``, which protects it itself: the
        client can read and change it, and sends back whatever it likes."""
        rounds = self.rounds
        if rounds.sealed:
            raise RuntimeError(
                f"{rounds.target}'s requestState is sealed by mcpserve: keep your data in "
                'ctx.state, or register the tool with request_state="handler" to hand out '
                "your own"
            )
        if text is not None and type(text) is not str:
            raise TypeError(f"A requestState is a string, not {type(text).__name__}")
        rounds.outgoing = text

    @property
    def state(self) -> JSONDict:
        """Your data that survives round trips: set keys before asking, read them after."""
        return self._sealed_rounds().state

    @property
    def request_state(self) -> JSONDict:
        """The state sealed by a previous round (``InputRequired(state=...)``), or ``{}``."""
        return self._sealed_rounds().state

    def _sealed_rounds(self) -> Rounds:
        rounds = self.rounds
        if not rounds.sealed:
            raise RuntimeError(
                f'{rounds.target} keeps its own requestState (request_state="handler"), so '
                "nothing is sealed: read ctx.raw_request_state and hand yours out with "
                "ctx.set_raw_request_state(text)"
            )
        return rounds

    async def ask(self, **requests: Elicit | Sample | ListRoots) -> JSONDict:
        """Ask several things in one round; returns the answers by key.

        >>> answers = await ctx.ask(name=Elicit("Name?", schema=Name), roots=ListRoots())
        """
        return await self._ask(requests)

    async def _ask(self, requests: Mapping[str, Any]) -> JSONDict:
        if self.task is not None:
            # A task: it waits in input_required until tasks/update brings the answers.
            return await self.task.ask(requests)
        if self.request.ask is not None:
            # Handshake era: real requests to the client, over the transport's session.
            from .session_questions import ask_client

            return await ask_client(self, requests)
        return self.rounds.ask(requests)

    async def elicit(
        self,
        message: str,
        schema: Any = None,
        *,
        url: str | None = None,
        key: str | None = None,
    ) -> ElicitResult:
        """Ask the user: a form for ``schema`` (a pydantic model or JSON schema), or a URL."""
        from .input_requests import Elicit  # loaded by the first server that asks

        request = Elicit(message, schema, url)
        key = key or self._next_key("elicit")
        answer: ElicitResult = (await self._ask({key: request}))[key]
        return answer

    async def sample(
        self, messages: Any, *, max_tokens: int, key: str | None = None, **options: Any
    ) -> SampleResult:
        """Ask the client's LLM; ``messages`` may be a single string."""
        from .input_requests import Sample

        request = Sample(messages, max_tokens, **options)
        key = key or self._next_key("sample")
        answer: SampleResult = (await self._ask({key: request}))[key]
        return answer

    async def list_roots(self, *, key: str | None = None) -> list[Root]:
        """The client's roots."""
        from .input_requests import ListRoots

        key = key or self._next_key("roots")
        roots: list[Root] = (await self._ask({key: ListRoots()}))[key]
        return roots

    def _next_key(self, kind: str) -> str:
        # A replay makes the same calls in the same order, so a per-attempt counter names
        # each call the same way in every round.
        self._asked += 1
        return f"{kind}_{self._asked}"

    # -- talking back ----------------------------------------------------------------------

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Report progress; returns whether a notification was sent.

        Sends nothing when the client gave no progress token, or when ``progress`` does not
        increase (the spec requires strictly increasing values).
        """
        if self.task is not None:  # a task reports progress as its status message
            total_text = "" if total is None else f"/{total:g}"
            await self.task.progress(message or f"{progress:g}{total_text}")
            return False
        token = self.request.meta.progress_token
        send = self.request.send
        if token is None or send is None or self.cancelled:
            return False
        if self._last_progress is not None and progress <= self._last_progress:
            return False
        self._last_progress = progress
        params: JSONDict = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await send(notification("notifications/progress", params))
        return True

    async def notify(self, method: str, params: JSONDict | None = None) -> bool:
        """Send a JSON-RPC notification of your own (``"vendor/thing"``) on this request's
        stream: the response's SSE stream over HTTP, stdout over stdio, in the handshake era
        the stream of the request in its session. Returns False, sending nothing, when
        nothing can carry it (the client does not accept SSE) or the request was cancelled.
        :meth:`progress` and :meth:`log` are the typed shortcuts for the protocol's own."""
        if type(method) is not str or not method:
            raise ValueError("a notification needs a method name")
        send = self.request.send
        if send is None or self.cancelled:
            return False
        await send(notification(method, params or {}))
        return True

    async def start_task(self, message: str | None = None) -> bool:
        """Hand the rest of this call to a task, for a tool registered with
        ``task_start="handler"``: the client gets its ``CreateTaskResult`` now, and the
        function goes on. Returns whether the call is a task (False when the client did
        not declare the tasks extension: the call simply goes on as an ordinary one).
        ``message`` becomes the task's first ``statusMessage``."""
        if self.task is not None:
            return True
        if self.task_starter is None:
            return False
        await self.task_starter(message)
        return True

    async def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send a log message to the client if it asked for this level; returns whether sent.

        The message also goes to Python's ``logging`` (logger ``mcpserve.client`` or the
        name given), where your own logging configuration decides what happens to it.
        """
        if level not in c.LOG_LEVEL_RANK:
            raise ValueError(f"Unknown log level {level!r}; use one of {', '.join(c.LOG_LEVELS)}")
        python_logger = _CLIENT_LOGGER.getChild(logger) if logger else _CLIENT_LOGGER
        if python_logger.isEnabledFor(_PYTHON_LEVELS[level]):
            python_logger.log(_PYTHON_LEVELS[level], "%s", data)
        wanted = self.request.meta.log_level
        send = self.request.send
        if wanted is None or send is None or not self.runtime.client_logging or self.cancelled:
            return False
        if c.LOG_LEVEL_RANK[level] < c.LOG_LEVEL_RANK[wanted]:
            return False
        params: JSONDict = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await send(notification("notifications/message", params))
        return True
