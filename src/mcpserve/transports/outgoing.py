"""The server's own requests to a handshake-era client, and the answers they await.

In the handshake era a handler's ``ctx.elicit`` (or ``sample``, ``list_roots``) is a real
JSON-RPC request to the client, with an id the server chooses; the client answers with a
JSON-RPC response (a line on stdin, or a POST over HTTP) that :meth:`OutgoingRequests.receive`
routes back. Waiting has no deadline here: the caller puts one around it
(``server/handshake.py``, ``ask_client``). When the session ends, every question still
waiting fails with :class:`~mcpserve.protocol.handshake.SessionEnded`, which the handler sees
as a clear error.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from .._types import JSONDict
from ..protocol.errors import MCPError
from ..protocol.handshake import SessionEnded
from ..protocol.jsonrpc import is_valid_id


class OutgoingRequests:
    """Requests sent to one client and not answered yet."""

    __slots__ = ("_ids", "_pending", "closed")

    def __init__(self) -> None:
        #: Our request id -> (the answer to come, the task waiting for it).
        self._pending: dict[str, tuple[asyncio.Future[JSONDict], asyncio.Task[Any] | None]] = {}
        self._ids = itertools.count(1)
        self.closed = False

    async def call(
        self,
        send: Callable[[JSONDict], Awaitable[None] | None],
        request: JSONDict,
        *,
        owner: asyncio.Task[Any] | None = None,
    ) -> JSONDict:
        """Send ``{"method", "params"}`` as a request on ``send``; return the client's result.

        The client's JSON-RPC error raises :class:`MCPError` with its code and message.
        ``owner`` is the task of the request that asks (default: the current task).
        """
        if self.closed:
            raise SessionEnded("the session has ended")
        request_id = f"mcpserve-{next(self._ids)}"
        future: asyncio.Future[JSONDict] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (future, owner or asyncio.current_task())
        message: JSONDict = {"jsonrpc": "2.0", "id": request_id, "method": request["method"]}
        if "params" in request:
            message["params"] = request["params"]
        try:
            sent = send(message)
            if sent is not None:
                await sent
            response = await future
        finally:
            self._pending.pop(request_id, None)
        if "error" in response:
            error = response["error"] if isinstance(response["error"], dict) else {}
            code = error.get("code")
            reason = str(error.get("message", "The client refused the request"))[:200]
            raise MCPError(reason, code=code if type(code) is int else None)
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    def receive(self, message: dict[str, Any]) -> bool:
        """Route a client's response to the request awaiting it; False if none is."""
        request_id = message.get("id")
        if type(request_id) is not str or not is_valid_id(request_id):
            return False  # ours are strings; anything else (a list, an object) answers nothing
        pending = self._pending.get(request_id)
        if pending is None or pending[0].done():
            return False
        pending[0].set_result(message)
        return True

    def close(self) -> set[asyncio.Task[Any]]:
        """The session ended: every question still waiting fails, and no new one is sent.

        Returns the tasks that were waiting: they now end with that error, so whoever ends
        the session's other requests need not cancel these.
        """
        self.closed = True
        waiting: set[asyncio.Task[Any]] = set()
        for future, task in self._pending.values():
            if not future.done():
                future.set_exception(SessionEnded("the session ended"))
                if task is not None:
                    waiting.add(task)
        self._pending.clear()
        return waiting
