"""Metrics: what a server counts and times while it serves, for OpenTelemetry and Prometheus.

:mod:`.names` lists every series (its OpenTelemetry name, its Prometheus name, its labels);
:mod:`.recorder` is the one seam the rest of the package records through (a
:class:`~.recorder.Metrics`, or None when nothing is recorded); :mod:`.otel` and
:mod:`.prometheus` are the two places it records to, each loaded only when used;
:mod:`.multiprocess` gives ``mcpserve run --workers N --metrics`` its shared directory.
Importing this package loads neither ``opentelemetry`` nor ``prometheus_client``.
"""
