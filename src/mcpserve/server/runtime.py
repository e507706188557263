"""What the requests of one server share while it serves, and all that a ``Context`` reads
beyond its own request: the lifespan's state, whether client logging is on, how long a
handshake-era client gets to answer a question, the sealer of ``requestState``, the records
behind ``ctx.store`` and the tools' default timeout.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .. import _environment as environment
from ..protocol.core import Auth
from .loop_watch import DEFAULT_BLOCKING_WARNING_SECONDS, LoopWatch

if TYPE_CHECKING:  # the thread pool's module and requestState sealing load on first use
    from concurrent.futures import ThreadPoolExecutor

    from ..metrics.recorder import Metering, Metrics
    from ..protocol.request_state import StateSealer
    from .context.store import StateStores

#: Where a shared ``requestState`` key comes from when ``state_keys`` is not given.


AnswersWithoutState = Literal["ask", "first-round"]


@runtime_checkable
class UpstreamTokens(Protocol):
    """An ``auth=`` that logs users in at an identity provider and keeps its tokens."""

    async def upstream_token(self, auth: Auth) -> str: ...


class Runtime:
    """Shared, per server: made once, read by every request's context."""

    __slots__ = (
        "_pool",
        "_sealer",
        "_state_options",
        "answers_without_state",
        "client_logging",
        "client_timeout_seconds",
        "dependency_overrides",
        "lifespan_state",
        "loop_watch",
        "max_threads",
        "metering",
        "metrics",
        "state_stores",
        "stop_deadline",
        "tool_timeout",
        "upstream_tokens",
    )

    def __init__(
        self,
        *,
        client_logging: bool = False,
        client_timeout_seconds: float = 120.0,
        state_keys: list[tuple[str, bytes]] | None = None,
        state_ttl_seconds: float = 300.0,
        max_input_rounds: int = 10,
        answers_without_state: AnswersWithoutState = "ask",
        loop_watch: LoopWatch | None = None,
        max_threads: int = 4,
        upstream_tokens: UpstreamTokens | None = None,
        state_stores: StateStores | None = None,
        tool_timeout: float | None = None,
        dependency_overrides: MutableMapping[Callable[..., Any], Callable[..., Any]] | None = None,
        metering: Metering | None = None,
    ) -> None:
        if answers_without_state not in ("ask", "first-round"):
            raise ValueError('answers_without_state must be "ask" or "first-round"')
        #: What a retry with ``inputResponses`` but no ``requestState`` gets: its questions
        #: asked again ("ask"), or its answers taken for the first questions ("first-round";
        #: docs/decisions.md, "Answers without a state").
        self.answers_without_state = answers_without_state
        self.client_logging = client_logging
        #: Seconds a handshake-era client gets to answer ``ctx.elicit`` and friends.
        self.client_timeout_seconds = client_timeout_seconds
        #: What the server's lifespan yielded, while it runs; None otherwise.
        self.lifespan_state: Any = None
        #: Names a plain function that holds the event loop too long (:mod:`.loop_watch`).
        self.loop_watch = loop_watch or LoopWatch(DEFAULT_BLOCKING_WARNING_SECONDS)
        self._state_options = (state_keys, state_ttl_seconds, max_input_rounds)
        self._sealer: StateSealer | None = None
        #: The size of the pool that runs ``blocking`` handlers.
        self.max_threads = max_threads
        #: Where ``ctx.upstream_token()`` gets the identity provider's token (an
        #: ``OIDCProxy`` given as ``auth=``), or None.
        self.upstream_tokens = upstream_tokens
        self._pool: ThreadPoolExecutor | None = None
        #: Replacements of dependencies, by the function they replace (tests set them).
        self.dependency_overrides: MutableMapping[Callable[..., Any], Callable[..., Any]] = (
            {} if dependency_overrides is None else dependency_overrides
        )
        #: The records behind ``ctx.store`` (``context/store.py``), or None (a bare runtime).
        self.state_stores = state_stores
        #: Seconds an awaited tool may run unless it names its own ``timeout=``; None: no limit.
        self.tool_timeout = tool_timeout
        #: Until when (``time.monotonic()``) background work may finish once the process
        #: stops, as its transport announced after a drain (``math.inf``: no limit); None
        #: while no stop was announced (then the lifespan's end fails it at once).
        self.stop_deadline: float | None = None
        #: Decides what the server records metrics to, when it first answers (None: nothing).
        self.metering = metering
        #: Where measurements go (``mcpserve.metrics``), once decided; None: nowhere.
        self.metrics: Metrics | None = None

    def resolve_metrics(self) -> Metrics | None:
        """Decide (once) where measurements go, and keep it in :attr:`metrics`."""
        if self.metering is not None:
            self.metrics = self.metering.resolve()
        return self.metrics

    async def aclose(self) -> None:
        """Release what serving opened (the store behind ``ctx.store``, if made from a URL)."""
        if self.state_stores is not None:
            await self.state_stores.aclose()

    def thread_pool(self) -> ThreadPoolExecutor:
        """The bounded pool that runs ``blocking`` handlers, created on first use."""
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # with the first blocking call

            self._pool = ThreadPoolExecutor(self.max_threads, thread_name_prefix="mcpserve")
        return self._pool

    @property
    def sealer(self) -> StateSealer:
        """Seals ``requestState`` for multi round-trip requests (created on first use).

        Keys come from ``state_keys=`` or ``MCPSERVE_STATE_KEYS``; without either, this
        process makes a random key, which only works while one process serves.
        """
        if self._sealer is None:
            from ..protocol.request_state import StateSealer  # cryptography loads on first use

            keys, ttl, rounds = self._state_options
            self._sealer = StateSealer(keys, ttl_seconds=ttl, max_rounds=rounds)
        return self._sealer

    @property
    def state_keys_shared(self) -> bool:
        """Whether ``requestState`` keys were given (so other processes can have them too),
        rather than made up by this process."""
        return (
            self._state_options[0] is not None
            or environment.read(environment.STATE_KEYS) is not None
        )

    def require_shared_state_keys(self, processes: int) -> None:
        """Refuse to serve from several processes with per-process ``requestState`` keys.

        Each process would seal with its own random key, so a retry landing on another
        worker or instance would be rejected.
        """
        if processes <= 1 or self._state_options[0] is not None:
            return
        if self.state_keys_shared:
            from ..protocol.request_state import parse_keys

            parse_keys(
                environment.read(environment.STATE_KEYS) or ""
            )  # a malformed value fails here
        else:
            raise RuntimeError(
                f"Serving from {processes} processes needs a shared requestState key: set "
                f"{environment.STATE_KEYS} (e.g. the output of `mcpserve keygen`) or pass "
                "Server(state_keys=...)"
            )
