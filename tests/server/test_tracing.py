"""OpenTelemetry: a span per request, named and attributed as the MCP conventions say,
parented by the trace context the client sends in ``_meta``."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpserve import Server
from mcpserve.server.tracing import tracer_for
from servers.add_refuse import add_and_refuse
from wire_helpers import asgi_client, call, post, request

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def traced_server(tracing: Any) -> Server:
    server = add_and_refuse("traced", tracing=tracing)

    @server.resource("notes://{id}")
    def note(id: str) -> str:
        return f"note {id}"

    return server


async def test_each_request_is_a_server_span_parented_by_the_callers_trace(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    server = traced_server(provider)
    async with asgi_client(server.http_app()) as http:
        added = await post(http, call(7, "add", {"a": 1, "b": 2}, traceparent=PARENT))
        await post(http, request(8, "resources/read", {"uri": "notes://3"}))
        await post(http, request(9, "tools/list"))
    assert added.result["structuredContent"] == 3
    finished = exporter.get_finished_spans()
    assert [span.name for span in finished] == ["tools/call add", "resources/read notes://3",
                                                "tools/list"]  # fmt: skip
    tool = finished[0]
    assert tool.kind is SpanKind.SERVER
    assert dict(tool.attributes or {}) == {
        "mcp.method.name": "tools/call", "mcp.protocol.version": "2026-07-28",
        "jsonrpc.request.id": "7", "gen_ai.tool.name": "add",
        "gen_ai.operation.name": "execute_tool",
    }  # fmt: skip
    assert format(tool.context.trace_id, "032x") == TRACE_ID
    assert tool.parent is not None
    assert format(tool.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert (finished[1].attributes or {})["mcp.resource.uri"] == "notes://3"
    assert finished[2].parent is None  # no trace context sent: a new trace


async def test_failures_are_marked_on_the_span(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    server = traced_server(provider)
    async with asgi_client(server.http_app()) as http:
        await post(http, call(1, "refuse", {}))
        await post(http, call(2, "missing", {}))
    refused, missing = exporter.get_finished_spans()
    assert (refused.attributes or {})["error.type"] == "tool_error"
    assert refused.status.status_code is StatusCode.ERROR
    assert (missing.attributes or {})["error.type"] == "-32602"
    assert (missing.attributes or {})["rpc.jsonrpc.error_code"] == -32602


async def test_handshake_era_requests_are_traced_too(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    from legacy_schema import initialize_message

    provider, exporter = spans
    server = traced_server(provider)
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=legacy)
        headers = {**legacy, "mcp-session-id": started.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}  # fmt: skip
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "add", "arguments": {"a": 2, "b": 2}}}  # fmt: skip
        await http.post("/mcp", json=message, headers=headers)
    (span,) = exporter.get_finished_spans()
    assert span.name == "tools/call add"
    assert (span.attributes or {})["mcp.protocol.version"] == "2025-11-25"


def test_tracing_is_off_when_switched_off_or_never_configured() -> None:
    assert tracer_for(False) is None
    # opentelemetry-api is installed here, but no provider was ever set: nothing records.
    assert tracer_for(None) is None


async def test_a_server_without_tracing_records_nothing(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    _, exporter = spans
    server = traced_server(False)
    async with asgi_client(server.http_app()) as http:
        await post(http, call(1, "add", {"a": 1, "b": 1}))
    assert exporter.get_finished_spans() == ()
