"""Every series mcpserve records, named once for both places it goes.

The MCP semantic conventions name two: ``mcp.server.operation.duration`` and
``mcp.server.session.duration``, histograms in seconds. The others are mcpserve's own and
carry its name. Prometheus names follow the OpenTelemetry-to-Prometheus mapping: dots become
underscores, a histogram in seconds ends in ``_seconds``, a counter in ``_total`` (which
prometheus-client adds), and so do the label names (``mcp.method.name`` is
``mcp_method_name``). ``docs/observability.md`` has this table for readers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

Kind = Literal["histogram", "counter", "updown"]
#: The values of a series' labels, in its order; None where an attribute does not apply.
Values = tuple[str | None, ...]
#: Records an amount to one series with its label values bound.
Bound = Callable[[float], None]
#: Histogram bucket bounds, in seconds, for both sinks: fine below 10 ms (most answers), and
#: up to five minutes (a long tool call).
DURATION_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
)  # fmt: skip

METHOD = "mcp.method.name"
TOOL = "gen_ai.tool.name"
VERSION = "mcp.protocol.version"
ERROR = "error.type"
TASK_STATUS = "mcp.task.status"
COMPONENT = "mcpserve.component"


class Series(NamedTuple):
    """One series: its OpenTelemetry name and unit, its Prometheus base name, its labels."""

    otel: str
    prometheus: str
    kind: Kind
    unit: str
    description: str
    labels: tuple[str, ...]


OPERATION_DURATION = Series(
    "mcp.server.operation.duration",
    "mcp_server_operation_duration_seconds",
    "histogram",
    "s",
    "Time to answer one request, by method, tool, protocol version and error type.",
    (METHOD, TOOL, ERROR, VERSION),
)
SESSION_DURATION = Series(
    "mcp.server.session.duration",
    "mcp_server_session_duration_seconds",
    "histogram",
    "s",
    "How long a handshake-era session lasted, from initialize to its end.",
    (VERSION,),
)
IN_FLIGHT = Series(
    "mcpserve.requests.in_flight",
    "mcpserve_requests_in_flight",
    "updown",
    "{request}",
    "Requests being answered now, by method.",
    (METHOD,),
)
SESSIONS = Series(
    "mcpserve.sessions.active",
    "mcpserve_sessions_active",
    "updown",
    "{session}",
    "Handshake-era sessions open in this process.",
    (VERSION,),
)
LISTEN_STREAMS = Series(
    "mcpserve.listen.streams",
    "mcpserve_listen_streams",
    "updown",
    "{stream}",
    "Open subscriptions/listen streams.",
    (),
)
TASKS = Series(
    "mcpserve.tasks",
    "mcpserve_tasks",
    "updown",
    "{task}",
    "Tasks this process started, by their current status.",
    (TASK_STATUS,),
)
REDIS_ERRORS = Series(
    "mcpserve.redis.errors",
    "mcpserve_redis_errors",
    "counter",
    "{error}",
    "Redis commands that failed, by the part of mcpserve that sent them.",
    (COMPONENT,),
)
RATE_LIMITED = Series(
    "mcpserve.rate_limit.refusals",
    "mcpserve_rate_limit_refusals",
    "counter",
    "{request}",
    "Requests the RateLimit middleware refused, by method.",
    (METHOD,),
)

ALL = (
    OPERATION_DURATION,
    SESSION_DURATION,
    IN_FLIGHT,
    SESSIONS,
    LISTEN_STREAMS,
    TASKS,
    REDIS_ERRORS,
    RATE_LIMITED,
)


def label_name(attribute: str) -> str:
    """The Prometheus label of an OpenTelemetry attribute: ``mcp.method.name`` ->
    ``mcp_method_name``."""
    return attribute.replace(".", "_")
