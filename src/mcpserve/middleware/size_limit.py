"""``ResponseSizeLimit``: a tool result too large to send becomes a tool error.

A ``tools/call`` result is measured as the UTF-8 JSON it will be sent as (compact, as the
transports write it); over ``max_bytes`` it is replaced by an ``isError`` result saying
"Result of N bytes exceeds the limit of M bytes", so the model learns why and can ask for
less. It is never cut short: a truncated result would be read as a whole one. Other
methods are not measured (lists and reads are the server's own, and pages).
"""

from __future__ import annotations

from .._types import Result
from ..protocol.jsonrpc import encode
from ..server.context.context import Context
from ..server.middleware import CallNext


class ResponseSizeLimit:
    """Refuse ``tools/call`` results larger than ``max_bytes`` as UTF-8 JSON."""

    def __init__(self, max_bytes: int) -> None:
        if type(max_bytes) is not int or max_bytes < 1:
            raise ValueError(
                f"max_bytes must be a whole number of bytes, at least 1, not {max_bytes!r}"
            )
        self.max_bytes = max_bytes

    async def __call__(self, ctx: Context, call_next: CallNext) -> Result:
        result = await call_next()
        if ctx.request.method != "tools/call" or "resultType" in result:
            return result  # only tool results; an interim answer is not the result
        size = len(encode(result))
        if size <= self.max_bytes:
            return result
        message = f"Result of {size} bytes exceeds the limit of {self.max_bytes} bytes"
        return {"content": [{"type": "text", "text": message}], "isError": True}
