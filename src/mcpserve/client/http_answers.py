"""What a Streamable HTTP answer is, and how its body is read: JSON, or an event stream.

A POST is answered with a JSON-RPC message as JSON, with an event stream that carries it
(and notifications before it), or with neither (a 404 page, a 405, a 401), which raises
:class:`HTTPStatusError`: the era negotiation reads that as "not a modern server". The
client's connection (:mod:`.http`), its handshake-era sessions (:mod:`.http_handshake`)
and the proxy's lean link all read answers by these rules.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from ..protocol.jsonrpc import loads

#: How long to wait before resuming a stream when the server named no ``retry``.
DEFAULT_RETRY_MS = 1000
#: Resumptions of one request's stream, and reconnections of the standalone stream in a row.
MAX_RESUMES = 5
#: How long to wait for the end of a stream whose answer has arrived.
DRAIN_SECONDS = 0.25


class HTTPStatusError(ConnectionError):
    """An HTTP answer without a JSON-RPC message in it."""

    def __init__(self, status: int, body: bytes, method: str | None) -> None:
        self.status = status
        self.body = body
        shown = body[:200].decode("utf-8", "replace")
        super().__init__(f"HTTP {status} for {method or 'a message'}: {shown!r}")


def decode(data: bytes | str) -> Any:
    try:
        return loads(data, exact_integers=False)
    except Exception:  # not JSON at all: the caller says what it expected
        return None


def is_response(message: Any) -> bool:
    # An OAuth refusal's body ({"error": "invalid_token"}) is not a JSON-RPC error object.
    return (
        isinstance(message, dict)
        and "method" not in message
        and ("result" in message or isinstance(message.get("error"), dict))
    )


async def drain(stream: AsyncIterator[Any]) -> None:
    """Read a stream to its end when that is at hand (the answer ends it, as the server
    should), so its connection goes back to the pool; a stream that goes on is closed."""
    with contextlib.suppress(TimeoutError, httpx2.HTTPError):
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in stream:
                pass


def is_stream(response: httpx2.Response) -> bool:
    content_type = response.headers.get("content-type", "")
    return response.status_code == 200 and content_type.startswith("text/event-stream")
