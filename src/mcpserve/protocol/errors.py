"""Errors that know their wire form.

Every failure that reaches the peer is an :class:`MCPError` carrying its JSON-RPC code.
A :class:`ToolError` is different: it is the tool telling the model something went wrong,
so it becomes a ``CallToolResult`` with ``isError: true`` rather than a JSON-RPC error.
Anything else raised by user code is unexpected: :func:`error_from_exception` logs it with
a correlation id and hands the peer only that id.

A test wants the opposite: the exception itself, not its id. :data:`raise_unexpected` names
the task in which a caller awaits the answer and wants such exceptions raised
(``Server(raise_exceptions=True)`` sets it around each in-memory request). Every place that
would mask an unexpected exception calls :func:`reraise_unexpected` first, and in that task
the exception propagates to the caller, with its own traceback. Anywhere else (a task
tool's background job, a worker thread) no one awaits it, and it is masked as ever.
"""

from __future__ import annotations

import asyncio
import logging
import os
from contextvars import ContextVar
from typing import Any

from .._types import JSONDict
from . import constants as c

logger = logging.getLogger("mcpserve")


class MCPError(Exception):
    """A JSON-RPC error with its code, one-sentence message and optional ``data``.

    Over HTTP, an error a handler raises is answered with the status its code calls for
    (200 for most, ``docs/decisions.md``, "HTTP status of errors"); ``http_status`` (400-599)
    chooses another where the spec leaves the choice, e.g. 404 for a resource that does not
    exist or 429 when the caller must slow down. The codes whose status the spec fixes
    (-32020, -32021, -32022: 400; -32601: 404) keep theirs.
    """

    code: int = c.INTERNAL_ERROR
    http_status: int | None = None

    def __init__(
        self,
        message: str,
        *,
        data: Any = None,
        code: int | None = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        if code is not None:
            self.code = code
        if http_status is not None:
            if type(http_status) is not int or not 400 <= http_status <= 599:
                raise ValueError("http_status must be an error status, 400 to 599")
            self.http_status = http_status

    def to_wire(self) -> JSONDict:
        """The JSON-RPC ``error`` object."""
        error: JSONDict = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"


class ParseError(MCPError):
    code = c.PARSE_ERROR


class InvalidRequest(MCPError):
    code = c.INVALID_REQUEST


class MethodNotFound(MCPError):
    code = c.METHOD_NOT_FOUND


class InvalidParams(MCPError):
    code = c.INVALID_PARAMS


class ResourceNotFound(InvalidParams):
    """No resource at this URI: -32602 with ``data.uri`` (never an empty ``contents``)."""

    def __init__(self, uri: str, *, http_status: int | None = None) -> None:
        super().__init__("Resource not found", data={"uri": uri}, http_status=http_status)


class InternalError(MCPError):
    code = c.INTERNAL_ERROR


class HeaderMismatch(MCPError):
    code = c.HEADER_MISMATCH


class MissingClientCapability(MCPError):
    """The request's ``clientCapabilities`` lack something the server cannot do without."""

    code = c.MISSING_CLIENT_CAPABILITY

    def __init__(self, required: JSONDict, message: str | None = None) -> None:
        names = ", ".join(sorted(required)) or "a capability"
        super().__init__(
            message or f"This request requires the client capability: {names}",
            data={"requiredCapabilities": required},
        )


class InsufficientScope(MCPError):
    """The caller was authenticated, but its token lacks scopes this request needs.

    ``data.requiredScopes`` lists every scope the operation needs, not only the missing
    ones: over HTTP it becomes the 403 challenge's ``scope``, and a client asks for exactly
    that set (with what it already had) in one step-up.
    """

    code = c.INSUFFICIENT_SCOPE

    def __init__(self, required: frozenset[str] | set[str], missing: frozenset[str] | set[str]):
        scopes = sorted(required)
        super().__init__(
            "Insufficient scope: this request needs the scope " + " ".join(sorted(missing)),
            data={"requiredScopes": scopes},
        )
        self.required = frozenset(required)


class UnsupportedProtocolVersion(MCPError):
    code = c.UNSUPPORTED_PROTOCOL_VERSION

    def __init__(self, requested: str, supported: list[str], message: str | None = None) -> None:
        super().__init__(
            message or f"Unsupported protocol version: {requested}",
            data={"supported": supported, "requested": requested},
        )


class ToolError(Exception):
    """Raise inside a tool to return ``isError: true`` with this message, verbatim.

    The message is meant for the model: say what went wrong and how to fix the call.
    """


#: The task whose caller wants unexpected exceptions raised rather than masked. A context
#: variable, so the request's handlers see it; tasks they start inherit it, but are not it.
raise_unexpected: ContextVar[asyncio.Task[Any] | None] = ContextVar(
    "mcpserve_raise_unexpected", default=None
)


def reraise_unexpected(exc: BaseException) -> None:
    """Raise ``exc`` again if it is unexpected (neither an :class:`MCPError` nor a
    :class:`ToolError`, which are answers) and this is the task :data:`raise_unexpected`
    names."""
    __tracebackhide__ = True  # pytest shows the handler's frames, not this one
    answering = raise_unexpected.get()
    if answering is None or isinstance(exc, MCPError | ToolError):
        return
    try:
        current = asyncio.current_task()
    except RuntimeError:  # a thread without a loop: no one awaits it here
        return
    if current is answering:
        raise exc


def new_ref() -> str:
    """A correlation id that ties a masked error to its log entry."""
    return os.urandom(6).hex()


def error_from_exception(exc: BaseException) -> MCPError:
    """Turn any exception into the error the peer may see.

    An :class:`MCPError` passes through, and a :class:`ToolError` raised outside a tool
    keeps its message (written for the peer) as an internal error. Anything else is logged
    here with a correlation id; the peer gets that id and nothing of the exception itself.
    """
    if isinstance(exc, MCPError):
        return exc
    if isinstance(exc, ToolError):
        return InternalError(str(exc))
    reraise_unexpected(exc)
    ref = new_ref()
    logger.error("Unhandled error (ref %s)", ref, exc_info=exc)
    return InternalError(f"Internal error (ref {ref})")
