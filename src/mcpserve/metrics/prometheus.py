"""The Prometheus sink, and ``/metrics``: the text exposition of what it holds.

Each server has a registry of its own, so two servers in one process (or a test) do not
collide. One process keeps its values in plain objects (:class:`LocalCollector`), read only
when scraped: recording costs an addition, not prometheus-client's locks and label
lookups. Labels are always all present, as Prometheus wants; an attribute that does not
apply is the empty string, which PromQL treats as absent.

Several processes (``mcpserve run --workers N --metrics``) share a directory,
``PROMETHEUS_MULTIPROC_DIR``, where prometheus-client keeps each process's values in files
(it reads the variable when it is imported, so it must be set before). Then ``/metrics``
reads every process's files and answers their sum, from whichever process is asked: counters
and histograms add up by themselves, and the gauges are made ``livesum`` (the sum over
processes still alive; a process's own files of them are removed when it exits).
"""

from __future__ import annotations

import atexit
import os
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from .._types import Receive, Scope, Send
from .names import ALL, DURATION_BUCKETS, Bound, Series, Values, label_name

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
#: What ``generate_latest`` writes: the text format every Prometheus reads.
TEXT_FORMAT = b"text/plain; version=0.0.4; charset=utf-8"


def multiprocess() -> bool:
    """Whether this process shares its values with others through a directory."""
    return bool(os.environ.get(MULTIPROCESS_DIR))


class PrometheusSink:
    """Records to Prometheus: in this process's memory, or (several processes) through
    prometheus-client's shared files; read by :meth:`exposition`."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry

        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess = multiprocess()
        if self.multiprocess:
            self._shared = SharedCollectors(self.registry)
        else:
            self._local = LocalCollector()
            self.registry.register(self._local)

    def bind(self, series: Series, values: Values) -> Bound:
        if self.multiprocess:
            return self._shared.bind(series, values)
        return self._local.bind(series, values)

    def exposition(self) -> bytes:
        """The text format of every series: this process's, or every process's summed."""
        from prometheus_client import CollectorRegistry, generate_latest

        if not self.multiprocess:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess as shared

        registry = CollectorRegistry()
        shared.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)


class Histogram:
    """One histogram's counts in memory: a bucket per bound (and +Inf), and the sum."""

    __slots__ = ("buckets", "sum")

    def __init__(self) -> None:
        self.buckets = [0] * (len(DURATION_BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        # Measurements are made on the event loop's thread, one at a time: no lock needed.
        self.buckets[bisect_left(DURATION_BUCKETS, amount)] += 1
        self.sum += amount


class Value:
    """One counter's or gauge's value in memory."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def add(self, amount: float) -> None:
        self.value += amount


class LocalCollector:
    """This process's series, kept in plain objects and turned into metric families only
    when scraped: recording is an addition, with no lock and no label lookup."""

    def __init__(self) -> None:
        self.children: dict[Series, dict[Values, Histogram | Value]] = {s: {} for s in ALL}

    def bind(self, series: Series, values: Values) -> Bound:
        children = self.children[series]
        child = children.get(values)
        if child is None:
            child = children[values] = Histogram() if series.kind == "histogram" else Value()
        return child.observe if isinstance(child, Histogram) else child.add

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        bounds = [repr(bound) for bound in DURATION_BUCKETS] + ["+Inf"]
        for series, children in self.children.items():
            labels = [label_name(label) for label in series.labels]
            family: Any
            if series.kind == "histogram":
                family = HistogramMetricFamily(series.prometheus, series.description, labels=labels)
            elif series.kind == "counter":
                family = CounterMetricFamily(series.prometheus, series.description, labels=labels)
            else:
                family = GaugeMetricFamily(series.prometheus, series.description, labels=labels)
            if not labels and not children:
                children = {(): Value()}  # an unlabelled series is there from the start, at 0
            for values, child in list(children.items()):
                shown = [value or "" for value in values]
                if isinstance(child, Histogram):
                    running, cumulative = 0, []
                    for bound, count in zip(bounds, child.buckets, strict=True):
                        running += count
                        cumulative.append((bound, running))
                    family.add_metric(shown, cumulative, child.sum)
                else:
                    family.add_metric(shown, child.value)
            yield family


class SharedCollectors:
    """prometheus-client's own collectors, whose values it keeps in the shared directory's
    files; gauges summed over the processes alive."""

    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge
        from prometheus_client import Histogram as SharedHistogram
        from prometheus_client import multiprocess as shared

        self._collectors: dict[Series, Any] = {}
        for series in ALL:
            labels = [label_name(label) for label in series.labels]
            if series.kind == "histogram":
                collector: Any = SharedHistogram(
                    series.prometheus.removesuffix("_seconds"),
                    series.description,
                    labels,
                    unit="seconds",
                    registry=registry,
                    buckets=DURATION_BUCKETS,
                )
            elif series.kind == "counter":
                collector = Counter(
                    series.prometheus, series.description, labels, registry=registry
                )
            else:
                collector = Gauge(
                    series.prometheus,
                    series.description,
                    labels,
                    registry=registry,
                    multiprocess_mode="livesum",
                )
            self._collectors[series] = collector
        atexit.register(shared.mark_process_dead, os.getpid())

    def bind(self, series: Series, values: Values) -> Bound:
        collector = self._collectors[series]
        child = collector.labels(*(value or "" for value in values)) if values else collector
        if series.kind == "histogram":
            return child.observe  # type: ignore[no-any-return]
        return child.inc  # type: ignore[no-any-return]


class MetricsRoute:
    """``/metrics``: an ASGI app answering GET (and HEAD) with the exposition."""

    def __init__(self, sink: PrometheusSink) -> None:
        self.sink = sink

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if method not in ("GET", "HEAD"):
            headers = [(b"allow", b"GET, HEAD"), (b"content-type", b"text/plain")]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": b"Method Not Allowed"})
            return
        body = self.sink.exposition()
        headers = [
            (b"content-type", TEXT_FORMAT),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
