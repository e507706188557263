"""JSON-RPC 2.0 framing: decode, classify and build messages as plain dicts.

MCP never batches, so a message is exactly one JSON object. Classification follows the
JSON-RPC rules with MCP's tightening: an ``id`` is a string or an integer (never null,
never a float or a boolean), and ``params``, when present, is an object.
"""

from __future__ import annotations

import json
import logging
from enum import Enum
from typing import Any

import orjson

from .errors import InternalError, InvalidRequest, MCPError, ParseError, new_ref

logger = logging.getLogger("mcpserve")

JSONDict = dict[str, Any]
RequestId = str | int


class Kind(Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON text, raising :class:`ParseError` for anything unparsable.

    orjson reads an integer beyond 64 bits as a float. JSON-RPC and MCP put no bound on an
    integer id, so a message whose ``id`` came back a float is decoded again by the standard
    library, which keeps integers exact: the id is then echoed digit for digit (and a real
    float id, ``1.5``, is still a float and still refused).
    """
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ParseError("Parse error: the message is not valid JSON") from None
    if type(message) is dict and type(message.get("id")) is float:
        text = data if isinstance(data, str) else bytes(data).decode()  # valid: orjson read it
        return json.loads(text)
    return message


def dumps(message: JSONDict) -> bytes:
    """Encode one message as compact UTF-8 JSON (no raw newlines, so it frames on stdio).

    orjson refuses integers beyond 64 bits; the standard library writes them exactly. A
    message neither can encode becomes an internal error answer (for requests) instead of
    an exception in the transport.
    """
    try:
        return orjson.dumps(message)
    except TypeError:
        pass
    try:
        return json.dumps(
            message, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    except (TypeError, ValueError):
        if "id" not in message or "method" in message:
            raise
        ref = new_ref()
        logger.error("Response to %r is not JSON-serializable (ref %s)", message["id"], ref)
        return orjson.dumps(
            error_response(message["id"], InternalError(f"Internal error (ref {ref})"))
        )


def is_valid_id(value: object) -> bool:
    # bool is a subclass of int, and true/false are not valid ids.
    return (type(value) is str) or (type(value) is int)


def classify(message: Any) -> Kind:
    """Say what ``message`` is, or raise :class:`InvalidRequest` saying why it is none.

    The error carries no id: callers that could read a valid id attach it themselves
    with :func:`readable_id`.
    """
    if not isinstance(message, dict):
        if isinstance(message, list):
            raise InvalidRequest("Invalid request: batch arrays are not supported")
        raise InvalidRequest("Invalid request: a JSON-RPC message must be an object")
    if message.get("jsonrpc") != "2.0":
        raise InvalidRequest('Invalid request: "jsonrpc" must be "2.0"')
    if "method" in message:
        if type(message["method"]) is not str:
            raise InvalidRequest('Invalid request: "method" must be a string')
        if "params" in message and not isinstance(message["params"], dict):
            raise InvalidRequest('Invalid request: "params" must be an object')
        if "id" not in message:
            return Kind.NOTIFICATION
        if not is_valid_id(message["id"]):
            raise InvalidRequest('Invalid request: "id" must be a string or an integer')
        return Kind.REQUEST
    # An error response may lack "id" (the peer could not read ours); never answer it.
    if ("id" in message and "result" in message) or "error" in message:
        return Kind.RESPONSE
    raise InvalidRequest('Invalid request: "method" is missing')


def readable_id(message: Any) -> RequestId | None:
    """The message's id when it is a valid one, so an error can still echo it."""
    if isinstance(message, dict):
        value = message.get("id")
        if is_valid_id(value):
            return value
    return None


def result_response(request_id: RequestId, result: JSONDict) -> JSONDict:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: MCPError) -> JSONDict:
    """An error response; ``id`` is omitted when it could not be read (B05)."""
    if request_id is None:
        return {"jsonrpc": "2.0", "error": error.to_wire()}
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


def notification(method: str, params: JSONDict | None = None) -> JSONDict:
    if params is None:
        return {"jsonrpc": "2.0", "method": method}
    return {"jsonrpc": "2.0", "method": method, "params": params}
