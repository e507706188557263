"""OpenTelemetry: a span for every request the server answers.

With ``opentelemetry-api`` installed (``pip install "mcpserve[otel]"``) and a tracer
provider configured (the OpenTelemetry SDK, or any distribution's auto-configuration), each
request of either era becomes a ``SERVER`` span named after its method and target
(``tools/call add_note``), as the MCP semantic conventions name them, with:

* ``mcp.method.name``, ``mcp.protocol.version``, ``jsonrpc.request.id``;
* the target: ``gen_ai.tool.name`` (a tool), ``gen_ai.prompt.name`` (a prompt),
  ``mcp.resource.uri`` (a read);
* ``gen_ai.operation.name`` ``execute_tool`` for a tool call;
* on failure, ``error.type`` (the exception's class, ``tool_error`` for an ``isError``
  result, or the JSON-RPC code) and ``rpc.jsonrpc.error_code`` for protocol errors.

The parent is the caller's trace: a client puts ``traceparent``/``tracestate`` in the
request's ``_meta`` (W3C trace context), read with the configured propagator, so a
client's span and the server's line up in one trace.

``Server(tracing=None)`` (the default) turns this on when both are there when the server
first answers; ``tracing=False`` never, ``tracing=True`` always (with the global provider),
and a ``TracerProvider`` uses that one. A server without tracing pays nothing: the method
table is not wrapped and ``opentelemetry`` is never imported. A traced request cannot run
inline (the span is entered around an awaited call), which costs some throughput.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from .._extras import missing_extra
from .._types import JSONDict
from .._version import __version__
from ..metrics.operations import TARGETS, error_type, result_error_type
from ..protocol.core import Answer, Handler, answered
from ..protocol.errors import MCPError
from .context.context import Context

Tracing = Any  # bool | None | opentelemetry.trace.TracerProvider
MethodHandler = Callable[[Context], Answer]


def tracer_for(tracing: Tracing) -> Any | None:
    """The tracer to use, or None when requests are not traced."""
    if tracing is False:
        return None
    if tracing is None and importlib.util.find_spec("opentelemetry") is None:
        return None  # not installed: do not even import it
    try:
        from opentelemetry import trace
    except ImportError:
        if tracing is True:
            raise missing_extra("Server(tracing=True)", "opentelemetry") from None
        return None
    if tracing is None or tracing is True:
        provider = trace.get_tracer_provider()
        if tracing is None and isinstance(provider, trace.ProxyTracerProvider):
            return None  # installed but never configured: nothing would record the spans
    else:
        provider = tracing
    return provider.get_tracer("mcpserve", __version__)


def traced(table: dict[str, Handler[Context]], tracer: Any) -> dict[str, Handler[Context]]:
    """Each handler of ``table`` inside a span."""
    return {
        name: Handler(
            _span_around(name, handler.call, tracer), resolve=handler.resolve, scopes=handler.scopes
        )
        for name, handler in table.items()
    }


def _span_around(method: str, call: MethodHandler, tracer: Any) -> MethodHandler:
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind, Status, StatusCode

    target_key, target_param = TARGETS.get(method, (None, "name"))

    async def in_span(ctx: Context) -> JSONDict:
        request = ctx.request
        params = request.params
        target = params.get(target_param)
        target = target if isinstance(target, str) else None
        attributes: dict[str, str] = {
            "mcp.method.name": method,
            "mcp.protocol.version": request.meta.protocol_version,
            "jsonrpc.request.id": str(request.id),
        }
        if target_key is not None and target is not None:
            attributes[target_key] = target[:200]
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
        carrier = request.meta.trace
        parent = propagate.extract(carrier) if carrier else None
        name = f"{method} {target[:200]}" if target is not None else method
        with tracer.start_as_current_span(
            name,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await answered(call(ctx))
            except MCPError as exc:
                span.set_attribute("error.type", error_type(exc))
                span.set_attribute("rpc.jsonrpc.error_code", exc.code)
                span.set_status(Status(StatusCode.ERROR, exc.message))
                raise
            except Exception as exc:  # the operator's telemetry: the exception may be recorded
                span.set_attribute("error.type", error_type(exc))
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR))
                raise
            outcome = result_error_type(result)
            if outcome is not None:
                span.set_attribute("error.type", outcome)
                span.set_status(Status(StatusCode.ERROR))
            return result

    return in_span
