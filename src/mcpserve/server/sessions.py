"""Legacy-era sessions: the state a 2025-11-25 client and the server share after initialize.

The handshake era is stateful (CHECKLIST Y07): the negotiated version, the client's
capabilities and identity, the log level, resource subscriptions and the server's own
requests to the client (elicitation, sampling, roots) that await answers all belong to a
session. On stdio the process is the session; over HTTP a session is named by the
``Mcp-Session-Id`` the server mints at ``initialize``.

:class:`SessionStore` keeps HTTP sessions bounded: at most ``max_sessions`` live at once
(further ``initialize`` requests are refused), and a session idle for ``idle_seconds`` is
closed the next time the store is touched. Closing a session cancels its requests, fails
its pending questions to the client and drops every reference to it.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..protocol.errors import MCPError
from ..protocol.jsonrpc import JSONDict, RequestId
from .bus import Event

Emit = Callable[[JSONDict], None]


class LegacySession:
    """One handshake-era client."""

    def __init__(
        self,
        version: str,
        client_capabilities: dict[str, Any],
        client_info: dict[str, Any] | None,
        *,
        session_id: str | None = None,
    ) -> None:
        # 144 random bits from the OS CSPRNG, in visible ASCII (CHECKLIST Y09).
        self.id = session_id or base64.urlsafe_b64encode(os.urandom(18)).decode()
        self.version = version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.log_level: str | None = None
        self.initialized = False
        self.resource_subscriptions: set[str] = set()
        self.tasks: dict[RequestId, asyncio.Task[Any]] = {}
        self.pending: dict[str, asyncio.Future[JSONDict]] = {}
        self.last_used = time.monotonic()
        self.closed = False
        #: Where notifications unrelated to a request go (stdout, or the GET stream).
        self.emit: Emit | None = None
        self.streams: OrderedDict[str, Any] = OrderedDict()
        #: The HTTP GET stream for notifications unrelated to a request, when open.
        self.standalone: Any = None
        self._ids = itertools.count(1)

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the session was last used; 0 while a request or stream is open."""
        if self.tasks or (self.standalone is not None and not self.standalone.finished):
            return 0.0
        return time.monotonic() - self.last_used

    # -- the server's own requests to the client (Y18) ------------------------------------

    async def call_client(
        self, send: Callable[[JSONDict], Any], request: JSONDict, wait_seconds: float
    ) -> JSONDict:
        """Send ``{"method", "params"}`` as a request on ``send``; return the client's result."""
        request_id = f"mcpserve-{next(self._ids)}"
        future: asyncio.Future[JSONDict] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        message: JSONDict = {"jsonrpc": "2.0", "id": request_id, "method": request["method"]}
        if "params" in request:
            message["params"] = request["params"]
        try:
            outcome = send(message)
            if asyncio.iscoroutine(outcome):
                await outcome
            response = await asyncio.wait_for(future, wait_seconds)
        finally:
            self.pending.pop(request_id, None)
        if "error" in response:
            error = response["error"] if isinstance(response["error"], dict) else {}
            code = error.get("code")
            reason = str(error.get("message", "The client refused the request"))
            raise MCPError(reason, code=code if type(code) is int else None)
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    def receive_response(self, message: JSONDict) -> bool:
        """Route a client's response to the request awaiting it; False if none is."""
        future = self.pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return False
        future.set_result(message)
        return True

    # -- session-level notifications (Y17) -------------------------------------------------

    def on_event(self, event: Event) -> None:
        """A bus event, as this session's legacy notification (if it wants one)."""
        emit = self.emit
        if emit is None or self.closed:
            return
        kind = event.get("type")
        if kind in ("tools", "prompts", "resources"):
            emit({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})
        elif kind == "updated":
            uri = event.get("uri")
            if isinstance(uri, str) and any(
                uri == sub or uri.startswith(sub.rstrip("/") + "/")
                for sub in self.resource_subscriptions
            ):
                emit({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                      "params": {"uri": uri}})  # fmt: skip

    def close(self) -> None:
        """End everything in flight; nothing of the session is kept."""
        self.closed = True
        self.emit = None
        for task in self.tasks.values():
            task.cancel()
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError("the session ended"))
        for stream in self.streams.values():
            stream.finish()
        self.tasks.clear()
        self.pending.clear()
        self.streams.clear()
        self.standalone = None
        self.resource_subscriptions.clear()


class TooManySessions(Exception):
    pass


class SessionStore:
    """Live HTTP sessions, bounded in number and idle time."""

    def __init__(self, *, max_sessions: int = 1000, idle_seconds: float = 1800.0) -> None:
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self._sessions: OrderedDict[str, LegacySession] = OrderedDict()
        self.on_close: Callable[[LegacySession], None] | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: LegacySession) -> None:
        self.sweep()
        if len(self._sessions) >= self.max_sessions:
            raise TooManySessions
        self._sessions[session.id] = session

    def get(self, session_id: str) -> LegacySession | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.idle_for() > self.idle_seconds:
            self.remove(session_id)
            return None
        session.touch()
        self._sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: str) -> bool:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        if self.on_close is not None:
            self.on_close(session)
        return True

    def sweep(self) -> None:
        """Close sessions idle for too long (the least recently used come first)."""
        expired = [s.id for s in self._sessions.values() if s.idle_for() > self.idle_seconds]
        for session_id in expired:
            self.remove(session_id)

    def close_all(self) -> None:
        for session_id in list(self._sessions):
            self.remove(session_id)
