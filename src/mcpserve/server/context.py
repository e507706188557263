"""The per-request context a handler receives when it asks for one.

Declare a parameter annotated ``Context`` and mcpserve passes it in::

    @server.tool
    async def crunch(rows: int, ctx: Context) -> str:
        for done in range(rows):
            await ctx.progress(done + 1, total=rows)
        return "ok"

Everything here describes *this* request only: the client's capabilities, identity,
protocol version and log level come from its ``_meta`` and are never remembered. Each
helper is a no-op when the client did not ask for it: ``progress`` without a progress
token, ``log`` without a log level. Notifications go out on the request's own stream.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..protocol import constants as c
from ..protocol.capabilities import missing_capabilities
from ..protocol.core import Request
from ..protocol.jsonrpc import RequestId, notification

if TYPE_CHECKING:
    from .server import Server

_PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class Context:
    """What a handler may know about, and do for, the request it is serving."""

    __slots__ = ("_last_progress", "_task", "request", "server")

    def __init__(self, request: Request, server: Server) -> None:
        self.request = request
        self.server = server
        self._last_progress: float | None = None
        self._task = asyncio.current_task()

    # -- facts about the request ---------------------------------------------------------

    @property
    def request_id(self) -> RequestId:
        return self.request.id

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def protocol_version(self) -> str:
        return self.request.meta.protocol_version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.request.meta.client_capabilities

    @property
    def client_info(self) -> dict[str, Any] | None:
        """Self-reported client name and version: for display and logs, not for decisions."""
        return self.request.meta.client_info

    @property
    def log_level(self) -> str | None:
        return self.request.meta.log_level

    @property
    def progress_token(self) -> str | int | None:
        return self.request.meta.progress_token

    @property
    def trace_context(self) -> dict[str, str]:
        """W3C ``traceparent``/``tracestate``/``baggage`` from ``_meta``, when present."""
        return self.request.meta.trace

    @property
    def principal(self) -> str | None:
        return self.request.auth.principal

    @property
    def scopes(self) -> frozenset[str]:
        return self.request.auth.scopes

    def has_scope(self, *scopes: str) -> bool:
        """True when the caller was granted every scope named."""
        return all(scope in self.request.auth.scopes for scope in scopes)

    def client_supports(self, capabilities: dict[str, Any]) -> bool:
        """True when this request's client declared all of ``capabilities``."""
        return not missing_capabilities(capabilities, self.client_capabilities)

    @property
    def lifespan_state(self) -> Any:
        """Whatever the server's lifespan yielded (``None`` without a lifespan)."""
        return self.server.lifespan_state

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this request."""
        task = self._task
        return task is not None and (task.cancelling() > 0 or task.cancelled())

    # -- talking back ----------------------------------------------------------------------

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Report progress; returns whether a notification was sent.

        Sends nothing when the client gave no progress token, or when ``progress`` does not
        increase (the spec requires strictly increasing values).
        """
        token = self.request.meta.progress_token
        send = self.request.send
        if token is None or send is None:
            return False
        if self._last_progress is not None and progress <= self._last_progress:
            return False
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await send(notification("notifications/progress", params))
        return True

    async def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send a log message to the client if it asked for this level; returns whether sent.

        The message also goes to Python's ``logging`` (logger ``mcpserve.client`` or the
        name given), where your own logging configuration decides what happens to it.
        """
        if level not in c.LOG_LEVEL_RANK:
            raise ValueError(f"Unknown log level {level!r}; use one of {', '.join(c.LOG_LEVELS)}")
        python_logger = logging.getLogger(
            f"mcpserve.client.{logger}" if logger else "mcpserve.client"
        )
        if python_logger.isEnabledFor(_PYTHON_LEVELS[level]):
            python_logger.log(_PYTHON_LEVELS[level], "%s", data)
        wanted = self.request.meta.log_level
        send = self.request.send
        if wanted is None or send is None or not self.server.client_logging:
            return False
        if c.LOG_LEVEL_RANK[level] < c.LOG_LEVEL_RANK[wanted]:
            return False
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await send(notification("notifications/message", params))
        return True
