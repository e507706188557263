"""The request a log line is written during, for the JSON log format (``_json_logs.py``).

A transport binds the request's facts (its JSON-RPC id, the caller's principal when known)
in a context variable the moment it has decoded a request, before anything runs for it.
asyncio copies the context into every task it creates, so whatever runs for the request
sees them: the tool's own log lines, the handshake era's request tasks, and uvicorn's access
line, which uvicorn writes from inside the app's ``send`` (in the request's own task).

Binding is skipped altogether unless a JSON formatter exists in this process
(:data:`recording`, which :class:`~._json_logs.JSONFormatter` turns on), so serving with the
text log format pays one module attribute read per request. It sits at the bottom of the
package so that every layer that meets a request may import it.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import NamedTuple


class RequestFacts(NamedTuple):
    """What a log line says of the request it was written during."""

    #: The JSON-RPC id, as ``StructuredLogging`` logs it.
    request_id: str | int
    #: Who is calling, when the request was authenticated.
    principal: str | None


#: The facts of the request being handled in this context; None outside any request.
current: ContextVar[RequestFacts | None] = ContextVar("mcpserve_request", default=None)

#: Whether transports bind requests (``True`` once a JSON formatter exists in this process).
recording = False


def bind(request_id: str | int, principal: str | None) -> Token[RequestFacts | None]:
    """Make ``request_id`` (and ``principal``) the request of this context and what it
    starts; the token undoes it (``current.reset``) where the context outlives the request."""
    return current.set(RequestFacts(request_id, principal))
