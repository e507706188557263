"""What ``Server(...)`` takes, as one typed record, and the environment variables it reads.

``Server`` keeps flat keywords for its users; inside, :class:`ServerConfig` turns them into
the records each part is built from (:class:`.settings.Settings`, :class:`.runtime.Runtime`,
the subscription bus, the task store), so no part reads another's options from the server.
The environment is read here and nowhere else in ``server/``: ``MCPSERVE_REDIS_URL``,
``MCPSERVE_BUS``, ``MCPSERVE_TASK_STORE``, ``MCPSERVE_TASK_QUEUE``, ``MCPSERVE_STATE_KEYS`` and
``MCPSERVE_METRICS``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypedDict

from .. import _environment as environment
from .._types import JSONDict
from ..backends.buses import bus_from_url
from ..protocol import constants as c
from .bus import LocalBus, SubscriptionBus
from .context.store import StateStores
from .entries.cache import CachePolicy
from .entries.catalogue import TagFilter
from .entries.dependencies import DependencyOverrides
from .entries.options import check_timeout, refuse_unknown
from .loop_watch import DEFAULT_BLOCKING_WARNING_SECONDS, LoopWatch
from .registry import Registry
from .runtime import AnswersWithoutState, Runtime, UpstreamTokens
from .settings import Settings
from .subscriptions import Subscriptions

if TYPE_CHECKING:  # auth/ loads only with auth=; extensions/ sits above server/
    from ..auth.mounting import IssuesTokens
    from ..auth.resource import ResourceServer
    from ..auth.tokens import TokenVerifier
    from ..backends.keyvalue import KeyValueStore
    from ..extensions.tasks.records import TaskStore
    from ..metrics.recorder import Metering

logger = logging.getLogger("mcpserve")


class ServerOptions(TypedDict, total=False):
    """The keywords of ``Server(name, version, ...)``; ``docs/reference.md`` has each."""

    instructions: str | None
    title: str | None
    description: str | None
    website_url: str | None
    icons: list[JSONDict] | None
    cache: CachePolicy | None
    page_size: int | None
    client_logging: bool
    max_threads: int | None
    blocking_warning_seconds: float | None
    server_info_in_results: bool
    extensions: dict[str, JSONDict] | None
    state_keys: list[tuple[str, bytes]] | None
    state_ttl_seconds: float
    max_input_rounds: int
    answers_without_state: AnswersWithoutState
    redis_url: str | None
    bus: SubscriptionBus | str | None
    subscription_queue_size: int
    legacy: bool
    legacy_client_timeout_seconds: float
    task_store: TaskStore | str | None
    auth: ResourceServer | TokenVerifier | IssuesTokens | None
    raise_exceptions: bool
    tracing: object
    # The catalogue: tags shown to every caller; tools/list as search_tools and call_tool.
    include_tags: Iterable[str] | None
    exclude_tags: Iterable[str] | None
    tool_search: bool

    # State that outlives a request (ctx.store), and the tools' default timeout
    store: KeyValueStore | str | None
    tool_timeout: float | None

    # Metrics: OpenTelemetry when a meter provider is there, /metrics for Prometheus when True
    metrics: object

    # Task tools run on workers (`mcpserve worker`) that take them off this Redis queue
    task_queue: str | None
    # Seconds a queued task waits for a worker before it fails (None: as long as it lives)
    task_queue_timeout: float | None


#: What an option is when ``Server(...)`` is not given it (the others default to None).
DEFAULTS: ServerOptions = {
    "client_logging": False,
    "blocking_warning_seconds": DEFAULT_BLOCKING_WARNING_SECONDS,
    "server_info_in_results": True,
    "state_ttl_seconds": 300.0,
    "max_input_rounds": 10,
    "answers_without_state": "ask",
    "subscription_queue_size": 256,
    "legacy": True,
    "legacy_client_timeout_seconds": 120.0,
    "raise_exceptions": False,
    # The catalogue
    "tool_search": False,
    # State that outlives a request (ctx.store), and the tools' default timeout
    "tool_timeout": None,
    # Seconds a queued task waits for a worker before it fails
    "task_queue_timeout": 300.0,
}


class ServerConfig:
    """A server's options, checked, with the environment's defaults filled in."""

    def __init__(self, name: str, version: str, options: ServerOptions) -> None:
        refuse_unknown(options, ServerOptions, "Server")
        self.name = name
        self.version = version
        self.options: ServerOptions = {**DEFAULTS, **options}
        #: The Redis every process of this server shares: the subscription bus, handshake-era
        #: sessions over HTTP, the task store. None: each process keeps its own.
        self.redis_url = options.get("redis_url") or environment.read(environment.REDIS_URL) or None
        self.max_threads = options.get("max_threads") or min(32, (os.cpu_count() or 1) + 4)
        self.handshake_era = self.options["legacy"]

    def info(self) -> JSONDict:
        """``serverInfo``: name, version and the display fields that were given."""
        info: JSONDict = {"name": self.name, "version": self.version}
        for key, option in (
            ("title", "title"),
            ("description", "description"),
            ("websiteUrl", "website_url"),
            ("icons", "icons"),
        ):
            value = self.options.get(option)
            if value:
                info[key] = value
        return info

    def registry(self) -> Registry:
        """An empty registry showing the tags ``include_tags`` and ``exclude_tags`` allow."""
        o = self.options
        return Registry(TagFilter(o.get("include_tags"), o.get("exclude_tags") or ()))

    def settings(self) -> Settings:
        o = self.options
        return Settings(
            self.info(),
            instructions=o.get("instructions"),
            cache=o.get("cache"),
            page_size=o.get("page_size"),
            client_logging=o["client_logging"],
            extensions=o.get("extensions"),
            tool_search=o["tool_search"],
        )

    def runtime(self) -> Runtime:
        o = self.options
        return Runtime(
            client_logging=o["client_logging"],
            client_timeout_seconds=o["legacy_client_timeout_seconds"],
            state_keys=o.get("state_keys"),
            state_ttl_seconds=o["state_ttl_seconds"],
            max_input_rounds=o["max_input_rounds"],
            answers_without_state=o["answers_without_state"],
            max_threads=self.max_threads,
            loop_watch=LoopWatch(o["blocking_warning_seconds"]),
            upstream_tokens=_upstream_tokens(o.get("auth")),
            state_stores=self.state_stores(),
            tool_timeout=check_timeout(o["tool_timeout"], "Server(tool_timeout=...)"),
            dependency_overrides=DependencyOverrides(),
            metering=self.metering(),
        )

    def metering(self) -> Metering | None:
        """What decides the metrics' sinks: ``metrics=`` and ``MCPSERVE_METRICS``."""
        option = self.options.get("metrics")
        if option is False:
            return None
        from ..metrics.recorder import Metering, enabled

        prometheus = option is True or (
            option is None and enabled(environment.read(environment.METRICS))
        )
        return Metering(option, prometheus=prometheus)

    def state_stores(self) -> StateStores:
        """``store=`` (a store or a URL), else the shared Redis when there is one, else this
        process's memory; keys under the server's name."""
        chosen = self.options.get("store")  # not `or`: an empty MemoryKeyValue is falsy
        if chosen is None:
            chosen = self.redis_url or "memory://"
        return StateStores(chosen, namespace=self.name)

    @property
    def versions(self) -> list[str]:
        """The protocol versions served: 2026-07-28's, and the handshake era's unless off."""
        return [*c.MODERN_VERSIONS, *(c.HANDSHAKE_VERSIONS if self.handshake_era else ())]

    def subscriptions(self, registry: Registry) -> Subscriptions:
        """``subscriptions/listen`` and the event bus, over ``registry``."""
        return Subscriptions(
            registry, self.bus(), queue_size=self.options["subscription_queue_size"]
        )

    def bus(self) -> SubscriptionBus:
        """``bus=`` (a bus or a URL), else ``$MCPSERVE_BUS``, else the shared Redis's pub/sub
        when there is one, else this process's own."""
        bus = self.options.get("bus")
        if bus is None and self.redis_url is not None and not environment.read(environment.BUS):
            from ..backends.redis.bus import RedisBus

            # One channel per server: two servers (or staging and production) sharing a
            # Redis do not hear each other; pub/sub ignores the database number.
            return RedisBus(self.redis_url, channel=f"mcpserve:{{{self.name}}}:events")
        if bus is None or isinstance(bus, str):
            bus = bus_from_url(bus)
        chosen: SubscriptionBus = bus
        if self.redis_url is not None and isinstance(bus, LocalBus):
            logger.warning(
                "Server %r: sessions are shared in Redis but the subscription bus "
                "is this process's own (MCPSERVE_BUS=memory://): answers, "
                "cancellations and notifications will not reach other processes",
                self.name,
            )
        return chosen

    @property
    def task_queue(self) -> str | None:
        """``task_queue=``, else ``$MCPSERVE_TASK_QUEUE``: the Redis whose workers run the
        task tools; None runs them in the process that was called."""
        return self.options.get("task_queue") or environment.read(environment.TASK_QUEUE)

    def task_store(self) -> TaskStore:
        """``task_store=`` (a store or a URL), else ``$MCPSERVE_TASK_STORE``, else the shared
        Redis when there is one, else the task queue's Redis, else this process's memory."""
        from ..backends.task_stores import task_store_from_url

        chosen = self.options.get("task_store")
        if chosen is None:  # workers read the tasks where the front-ends keep them
            chosen = (
                environment.read(environment.TASK_STORE)
                or self.redis_url
                or self.task_queue
                or "memory://"
            )
        if isinstance(chosen, str):
            return task_store_from_url(chosen, namespace=self.name)
        store: TaskStore = chosen
        return store


def _upstream_tokens(auth: object) -> UpstreamTokens | None:
    """``auth=`` when it keeps the identity provider's tokens (``ctx.upstream_token()``)."""
    return auth if isinstance(auth, UpstreamTokens) else None
