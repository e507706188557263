"""The one seam every measurement passes through: :class:`Metrics`.

Whatever is measured (a request answered, a session ended, a stream opened, a Redis command
failed) is told to the server's :class:`Metrics` as a :class:`~.names.Series`, an amount and
the values of the series' labels, in the order :mod:`.names` lists them (None: the attribute
does not apply). The object fans the measurement out to its sinks: the OpenTelemetry
instruments (:mod:`.otel`) and the Prometheus collectors (:mod:`.prometheus`). Each sink
binds a series and its label values once into a callable that takes the amount, and
:class:`Metrics` keeps those callables by (series, values): after the first request of a
kind, recording is a dict lookup and one call per sink.

A server that records nothing holds None instead of a :class:`Metrics`, and every place that
measures reads that first: no sink is built, and neither ``opentelemetry`` nor
``prometheus_client`` is imported. :class:`Metering` decides which sinks there are, once,
when the server first answers, as tracing does (a meter provider configured after the
server was built still counts).
"""

from __future__ import annotations

import importlib.util
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .names import SESSION_DURATION, SESSIONS, Bound, Series, Values

if TYPE_CHECKING:  # each loads only when a server records to it
    from .prometheus import PrometheusSink

#: ``Server(metrics=...)``: None, True, False, or an OpenTelemetry ``MeterProvider``.
MetricsOption = Any


class Sink(Protocol):
    """Where measurements go: binds a series and its label values to a recording call."""

    def bind(self, series: Series, values: Values) -> Bound: ...


class Metrics:
    """A server's measurements, fanned out to its sinks."""

    __slots__ = ("__weakref__", "_bound", "prometheus", "sinks")

    def __init__(self, sinks: Sequence[Sink], prometheus: PrometheusSink | None = None) -> None:
        self.sinks = tuple(sinks)
        #: The Prometheus sink, which ``/metrics`` reads, or None.
        self.prometheus = prometheus
        self._bound: dict[tuple[str, Values], tuple[Bound, ...]] = {}

    def record(self, series: Series, amount: float, values: Values = ()) -> None:
        """Add ``amount`` to a counter or up-down counter, or observe it in a histogram."""
        for call in self.bound(series, values):
            call(amount)

    def bound(self, series: Series, values: Values) -> tuple[Bound, ...]:
        """The recording calls of one series and label values, for a caller that keeps them."""
        key = (series.otel, values)
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bound[key] = tuple(sink.bind(series, values) for sink in self.sinks)
        return bound

    def session_opened(self, version: str) -> None:
        """A handshake-era session is held by this process now."""
        self.record(SESSIONS, 1, (version,))

    def session_closed(self, version: str, began: float | None, *, ended: bool) -> None:
        """This process holds the session no more; ``ended`` when the session itself is over
        (not kept elsewhere), timed from ``began`` (``time.monotonic()``) when this process
        began it."""
        self.record(SESSIONS, -1, (version,))
        if ended and began is not None:
            self.record(SESSION_DURATION, time.monotonic() - began, (version,))


#: Every server's :class:`Metrics` in this process: what belongs to no one server (a Redis
#: connection's failure, told by ``backends/redis/link.py``) is recorded to each.
RECORDING: weakref.WeakSet[Metrics] = weakref.WeakSet()


def record_everywhere(series: Series, amount: float, values: Values = ()) -> None:
    """Record to every server of this process that records metrics (usually none or one)."""
    for metrics in list(RECORDING):
        metrics.record(series, amount, values)


def one_call(bound: tuple[Bound, ...]) -> Bound:
    """The recording calls of all sinks as one call (the sink's own when there is one)."""
    if len(bound) == 1:
        return bound[0]

    def each(amount: float) -> None:
        for call in bound:
            call(amount)

    return each


class Metering:
    """Decides, once, what a server records to: ``Server(metrics=...)`` and the environment.

    ``prometheus`` is whether ``/metrics`` is served (``metrics=True``, or ``MCPSERVE_METRICS``
    for ``metrics=None``); OpenTelemetry is recorded to when a meter provider is given, or
    configured globally (``metrics`` None or True), as with tracing.
    """

    __slots__ = ("_decided", "_metrics", "option", "prometheus")

    def __init__(self, option: MetricsOption, *, prometheus: bool) -> None:
        self.option = option
        self.prometheus = prometheus
        self._decided = option is False
        self._metrics: Metrics | None = None

    def resolve(self) -> Metrics | None:
        """The server's :class:`Metrics`, or None when it records nothing."""
        if not self._decided:
            self._decided = True
            sinks: list[Sink] = []
            prometheus = None
            if self.prometheus:
                from .prometheus import PrometheusSink

                prometheus = PrometheusSink()
                sinks.append(prometheus)
            meter = meter_for(self.option)
            if meter is not None:
                from .otel import OpenTelemetrySink

                sinks.append(OpenTelemetrySink(meter))
            if sinks:
                self._metrics = Metrics(sinks, prometheus)
                RECORDING.add(self._metrics)
        return self._metrics


def meter_for(option: MetricsOption) -> Any | None:
    """The OpenTelemetry meter to record to, or None."""
    if option is False:
        return None
    if option is None or option is True:
        if importlib.util.find_spec("opentelemetry") is None:
            return None  # not installed: do not even import it
        try:
            from opentelemetry import metrics
        except ImportError:
            return None
        provider = metrics.get_meter_provider()
        if type(provider).__name__ == "_ProxyMeterProvider":
            return None  # installed but never configured: nothing would read the measurements
    else:
        provider = option
    from .._version import __version__

    return provider.get_meter("mcpserve", __version__)


def enabled(value: str | None) -> bool:
    """Whether an environment variable's value turns a feature on (``1``, ``true``, ``yes``,
    ``on``)."""
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")
