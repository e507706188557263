"""OpenTelemetry data points as the metrics tests read them back.

:func:`points` collects one metric's data points from the SDK's ``InMemoryMetricReader``
(each a pair: its attributes as a dict, and the point), sorted by attributes so a test can
compare a whole list; :func:`values` is the same for a counter or up-down counter, with
each point's value.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader


def points(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, Any], Any]]:
    """The data points of one metric: (attributes, point), in a stable order."""
    found: list[tuple[dict[str, Any], Any]] = []
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend((dict(p.attributes or {}), p) for p in metric.data.data_points)
    return sorted(found, key=lambda pair: sorted(pair[0].items()))


def values(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, Any], Any]]:
    """A counter's (or up-down counter's) points: (attributes, value)."""
    return [(attributes, point.value) for attributes, point in points(reader, name)]
