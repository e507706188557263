"""``StructuredLogging``: one JSON line per request, for log pipelines to index.

The line is logged when the request is answered, at INFO, on the ``mcpserve.requests``
logger (or the one given), as the record's message: ``request_id``, ``trace_id`` (from
``_meta.traceparent``), ``method``, ``target`` (the tool's or prompt's name, the resource's
URI), ``principal``, ``era`` (``"2026-07-28"``, or ``"handshake"`` inside a handshake-era
session), ``duration_ms`` and ``outcome``: ``ok``, ``tool_error`` (a tool's ``isError``
result) or ``error`` (a JSON-RPC error, with its ``error_code``; a cancelled request,
with ``cancelled: true``). Arguments and results can
hold anything a user typed, so they are left out unless asked for (``arguments=True``,
``results=True``). Client notifications are not requests and are not logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from .._types import Result
from ..protocol.constants import INTERNAL_ERROR
from ..protocol.errors import MCPError
from ..server.context.context import Context
from ..server.middleware import CallNext
from . import facts

REQUEST_LOGGER = "mcpserve.requests"


class StructuredLogging:
    """Log each request as one JSON line on ``logger`` (default ``mcpserve.requests``)."""

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        arguments: bool = False,
        results: bool = False,
    ) -> None:
        self.logger = logger if logger is not None else logging.getLogger(REQUEST_LOGGER)
        self.arguments = arguments
        self.results = results

    async def __call__(self, ctx: Context, call_next: CallNext) -> Result:
        if facts.is_notification(ctx) or not self.logger.isEnabledFor(logging.INFO):
            return await call_next()
        started = time.perf_counter()
        line = self._line(ctx)
        try:
            result = await call_next()
        except (Exception, asyncio.CancelledError) as exc:
            line["outcome"] = "error"
            if isinstance(exc, asyncio.CancelledError):
                line["cancelled"] = True
            else:
                line["error_code"] = exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR
            self._log(line, started)
            raise
        line["outcome"] = "tool_error" if result.get("isError") is True else "ok"
        if self.results:
            line["result"] = result
        self._log(line, started)
        return result

    def _line(self, ctx: Context) -> dict[str, Any]:
        request = ctx.request
        line: dict[str, Any] = {
            "request_id": request.id,
            "trace_id": facts.trace_id(ctx),
            "method": request.method,
            "target": facts.target(ctx),
            "principal": request.auth.principal,
            "era": facts.era(ctx),
        }
        if self.arguments:
            line["arguments"] = request.params.get("arguments")
        return line

    def _log(self, line: dict[str, Any], started: float) -> None:
        line["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self.logger.info("%s", json.dumps(line, default=str, ensure_ascii=False))
