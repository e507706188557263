"""The Prometheus sink, and ``/metrics``: the text exposition of what it holds.

Each server has a registry of its own, so two servers in one process (or a test) do not
collide. Labels are always all present, as Prometheus wants; an attribute that does not
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
from typing import Any

from .._types import Receive, Scope, Send
from .names import DURATION_BUCKETS, Bound, Series, Values, label_name

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
#: What ``generate_latest`` writes: the text format every Prometheus reads.
TEXT_FORMAT = b"text/plain; version=0.0.4; charset=utf-8"


def multiprocess() -> bool:
    """Whether this process shares its values with others through a directory."""
    return bool(os.environ.get(MULTIPROCESS_DIR))


class PrometheusSink:
    """Records to prometheus-client collectors in a registry of this server's own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        from .names import ALL

        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess = multiprocess()
        self._collectors: dict[str, Any] = {}
        for series in ALL:
            labels = [label_name(label) for label in series.labels]
            if series.kind == "histogram":
                base = series.prometheus.removesuffix("_seconds")
                collector: Any = Histogram(
                    base,
                    series.description,
                    labels,
                    unit="seconds",
                    registry=self.registry,
                    buckets=DURATION_BUCKETS,
                )
            elif series.kind == "counter":
                collector = Counter(
                    series.prometheus, series.description, labels, registry=self.registry
                )
            else:
                collector = Gauge(
                    series.prometheus,
                    series.description,
                    labels,
                    registry=self.registry,
                    multiprocess_mode="livesum",
                )
            self._collectors[series.otel] = collector
        if self.multiprocess:
            from prometheus_client import multiprocess as shared

            atexit.register(shared.mark_process_dead, os.getpid())

    def bind(self, series: Series, values: Values) -> Bound:
        collector = self._collectors[series.otel]
        child = collector.labels(*(value or "" for value in values)) if values else collector
        if series.kind == "histogram":
            return child.observe  # type: ignore[no-any-return]
        return child.inc  # type: ignore[no-any-return]

    def exposition(self) -> bytes:
        """The text format of every series: this process's, or every process's summed."""
        from prometheus_client import CollectorRegistry, generate_latest

        if not self.multiprocess:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess as shared

        registry = CollectorRegistry()
        shared.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)


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
