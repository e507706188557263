"""The JSON log format (``mcpserve._json_logs``) in this process: the fields of a line, and
the current OpenTelemetry span's ids on the lines written while a traced request runs."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpserve import Server, _request_context
from mcpserve._json_logs import JSONFormatter
from wire_helpers import asgi_client, call, post

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture
def shelf_log() -> Iterator[io.StringIO]:
    """The ``shelf`` logger's lines, formatted as JSON; the process left as it was after."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(JSONFormatter())
    logger = logging.getLogger("shelf")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield written
    finally:
        logger.removeHandler(handler)
        _request_context.recording = False


def lines(written: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in written.getvalue().splitlines()]


def shelf(tracing: Any) -> Server:
    server = Server("shelf", tracing=tracing)

    @server.tool
    def shelve(title: str) -> str:
        logging.getLogger("shelf").info("shelving %s", title)
        return title

    return server


async def test_a_traced_requests_lines_carry_its_trace_and_span_ids(
    shelf_log: io.StringIO,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with asgi_client(shelf(provider).http_app()) as http:
        await post(http, call(7, "shelve", {"title": "Dune"}, traceparent=PARENT))
    [span] = exporter.get_finished_spans()
    [line] = lines(shelf_log)
    assert line["message"] == "shelving Dune"
    assert line["request_id"] == 7
    assert line["trace_id"] == TRACE_ID
    assert line["span_id"] == format(span.context.span_id, "016x")


async def test_without_tracing_a_line_has_no_trace_fields(shelf_log: io.StringIO) -> None:
    async with asgi_client(shelf(False).http_app()) as http:
        await post(http, call(8, "shelve", {"title": "Emma"}))
    [line] = lines(shelf_log)
    assert line["request_id"] == 8
    assert "trace_id" not in line
    assert "span_id" not in line


def test_a_line_outside_any_request_has_the_four_fields_only(shelf_log: io.StringIO) -> None:
    logging.getLogger("shelf").warning("%d books", 3)
    [line] = lines(shelf_log)
    assert set(line) == {"time", "level", "logger", "message"}
    assert (line["level"], line["logger"], line["message"]) == ("WARNING", "shelf", "3 books")
    assert line["time"].endswith("Z")


def test_server_run_refuses_an_unknown_log_format() -> None:
    with pytest.raises(ValueError, match="Unknown log format 'yaml'; use 'text' or 'json'"):
        shelf(False).run("stdio", log_format="yaml")  # type: ignore[typeddict-item]
