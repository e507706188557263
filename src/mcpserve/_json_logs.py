"""The JSON log format: every line the process writes is one JSON object.

``--log-format json`` (``server.run(log_format="json")``, ``MCPSERVE_LOG_FORMAT=json``)
routes the root logger, and uvicorn's own loggers, through :class:`JSONFormatter` on
stderr (over stdio, stdout is the protocol). A line has ``time`` (RFC 3339, UTC),
``level``, ``logger`` and ``message``; ``exc_info`` (the traceback, as one string: the
encoder escapes its newlines, so it never spans lines) when the record has one; and, while
a request is handled, ``request_id`` and ``principal`` (``_request_context.py``), and
``trace_id`` and ``span_id`` of the current OpenTelemetry span when tracing is on.

uvicorn configures its loggers with handlers of its own and ``propagate=False``, in every
process it starts (its workers and reloader too), from the ``log_config`` it is handed:
:func:`logging_config` is that dictionary, which puts the JSON handler on the root logger
and sends uvicorn's loggers to it. Tracing is read only when OpenTelemetry is already
imported (by the tracing of a server that has a tracer provider): formatting a line never
imports it.
"""

from __future__ import annotations

import logging
import logging.config
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

from . import _request_context as request_context

#: The values ``log_format`` takes.
LOG_FORMATS = ("text", "json")


class JSONFormatter(logging.Formatter):
    """One JSON object per record, on one line. Constructing one makes transports record
    the request each line is written during (:data:`._request_context.recording`)."""

    def __init__(self) -> None:
        super().__init__()
        request_context.recording = True

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc_info"] = record.exc_text
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        facts = request_context.current.get()
        if facts is not None:
            line["request_id"] = facts.request_id
            if facts.principal is not None:
                line["principal"] = facts.principal
        span = current_span_ids()
        if span is not None:
            line["trace_id"], line["span_id"] = span
        return orjson.dumps(line, default=str).decode()


def current_span_ids() -> tuple[str, str] | None:
    """The current OpenTelemetry span's trace and span ids in hex, when there is one; never
    imports OpenTelemetry (a server without tracing has not)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def logging_config(level: str = "info") -> dict[str, Any]:
    """The ``logging.config.dictConfig`` dictionary of the JSON format, also uvicorn's
    ``log_config``: the root logger writes JSON to stderr, and uvicorn's loggers go to it."""
    level_name = level.upper()
    routed = {"handlers": [], "propagate": True}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JSONFormatter}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level_name},
        "loggers": {name: dict(routed) for name in ("uvicorn", "uvicorn.error", "uvicorn.access")},
    }


def configure_json_logs(level: str = "info") -> dict[str, Any]:
    """Write every log line of this process as JSON on stderr; returns the configuration,
    for uvicorn's ``log_config``."""
    config = logging_config(level)
    logging.config.dictConfig(config)
    return config
