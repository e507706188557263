"""One downstream request's upstream side: where the upstream's questions, progress and
logs about it go.

Which downstream request an upstream message belongs to: the one in whose task it was
read (:data:`CURRENT`, set around each call: over HTTP a request's messages arrive on its
own stream, read by its own task), else the only call in flight. A question that belongs
to none (stdio, several calls at once) is refused rather than put to the wrong user; a log
message is dropped.

An :class:`Exchange` answers a handshake-era upstream's question for its request: over the
client's session when the client has one, else (a 2026-07-28 client) by holding the
question until the client's retry brings the answer (:mod:`.forwarding` parks the call).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

from .._types import JSONDict, JSONValue
from ..protocol import constants as c
from ..protocol.errors import MCPError
from ..protocol.jsonrpc import notification
from ..server.context.context import Context
from .wire import can_answer, modern_question, session_question

#: The exchange whose upstream call the current task is making.
CURRENT: ContextVar[Exchange | None] = ContextVar("mcpserve_proxy_exchange", default=None)


class Forwarded:
    """What to send upstream (``method``, ``params`` without ``_meta``), and what the
    proxy's ``requestState`` is bound to (the downstream ``target`` and ``arguments``)."""

    __slots__ = ("arguments", "method", "params", "target")

    def __init__(self, method: str, params: JSONDict, target: str, arguments: JSONValue) -> None:
        self.method = method
        self.params = params
        self.target = target
        self.arguments = arguments


class Exchange:
    """One downstream request's upstream call: where its questions, progress and logs go."""

    __slots__ = ("asked", "changed", "ctx", "expiry", "live", "pending", "task")

    def __init__(self, ctx: Context) -> None:
        #: The downstream attempt being served (a parked call gets each retry's).
        self.ctx = ctx
        #: Whether a downstream request is waiting on this exchange right now.
        self.live = True
        #: Questions a handshake-era upstream asked a 2026-07-28 client: key -> (the
        #: question as an inputRequests entry, the answer to come).
        self.pending: dict[str, tuple[JSONDict, asyncio.Future[JSONValue]]] = {}
        #: Set when a question is added (made for a parked call only).
        self.changed: asyncio.Event | None = None
        self.task: asyncio.Task[JSONDict] | None = None
        self.expiry: asyncio.TimerHandle | None = None
        self.asked = 0

    async def ask(self, method: str, params: JSONDict) -> JSONDict:
        """The downstream client's answer to an upstream question (handshake-era upstream)."""
        ctx = self.ctx
        if not can_answer(method, params, ctx.client_capabilities):
            raise MCPError(f"The client does not support {method}", code=c.METHOD_NOT_FOUND)
        if ctx.request.ask is not None:
            return await ask_session(ctx, modern_question(method, params))
        if self.changed is None:  # a 2026-07-28 client is asked with input_required only
            raise MCPError(
                f"The upstream sent {method} on the 2026-07-28 wire, where a "
                "server asks with input_required",
                code=c.INVALID_REQUEST,
            )
        self.asked += 1
        key = f"q{self.asked}"
        answer: asyncio.Future[JSONValue] = asyncio.get_running_loop().create_future()
        self.pending[key] = (modern_question(method, params), answer)
        self.changed.set()
        try:
            result: JSONDict = await answer
        finally:
            self.pending.pop(key, None)
        return result

    def unanswered(self) -> JSONDict:
        return {key: q for key, (q, answer) in self.pending.items() if not answer.done()}

    def resume(self, ctx: Context, responses: JSONDict) -> None:
        """A retry arrived: it is the attempt served now, and its answers go to the
        questions waiting for them."""
        self.ctx = ctx
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None
        for key, (_, answer) in list(self.pending.items()):
            # An answer that is no result object is no answer: the question is asked again.
            if isinstance(responses.get(key), dict) and not answer.done():
                answer.set_result(responses[key])

    def abandon(self, reason: str) -> None:
        """Nobody will answer: the questions fail with ``reason``, the upstream call ends."""
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None
        for _, answer in self.pending.values():
            if not answer.done():
                answer.set_exception(MCPError(reason, code=c.INTERNAL_ERROR))
        if self.task is not None:
            self.task.cancel()

    async def progress(self, progress: JSONValue, total: JSONValue, message: JSONValue) -> None:
        if not self.live or not _is_number(progress):
            return
        await self.ctx.progress(
            progress,
            total if _is_number(total) else None,
            message if isinstance(message, str) else None,
        )

    async def relay(self, message: JSONDict) -> None:
        """An upstream notification for this request (a log, a vendor's own), passed on
        when the client is there to hear it and, for a log, asked for its level."""
        ctx = self.ctx
        send = ctx.request.send
        if not self.live or send is None or ctx.cancelled:
            return
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/message":
            level, wanted = params.get("level"), ctx.log_level
            if level not in c.LOG_LEVEL_RANK or wanted is None:
                return
            if c.LOG_LEVEL_RANK[level] < c.LOG_LEVEL_RANK[wanted]:
                return
        await send(notification(str(method), params))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


async def ask_session(ctx: Context, question: JSONDict) -> JSONDict:
    """Ask a handshake-era client over its session; its result."""
    ask = ctx.request.ask
    assert ask is not None
    wire = session_question(question, ctx.protocol_version)
    method = wire["method"]
    timeout = ctx.runtime.client_timeout_seconds
    try:
        return await asyncio.wait_for(ask(wire), timeout)
    except TimeoutError:
        raise MCPError(
            f"The client did not answer {method} within {timeout:g} s", code=c.INTERNAL_ERROR
        ) from None
    except ConnectionError:  # the session ended (SessionEnded)
        raise MCPError(
            f"The client's session ended before it answered {method}", code=c.INTERNAL_ERROR
        ) from None
