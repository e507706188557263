"""JSON-RPC 2.0 framing: decode, classify and build messages as plain dicts.

MCP never batches, so a message is exactly one JSON object. Classification follows the
JSON-RPC rules with MCP's tightening: an ``id`` is a string or an integer (never null,
never a float or a boolean), and ``params``, when present, is an object.
"""

from __future__ import annotations

import json
import logging
import sys
from enum import Enum
from typing import Any

import orjson

from .._types import JSONDict
from .errors import InternalError, InvalidRequest, MCPError, ParseError, new_ref

logger = logging.getLogger("mcpserve")

RequestId = str | int


class Kind(Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"


#: A 19-digit run is the shortest integer literal orjson may read inexactly (beyond 64 bits).
_DIGITS = b"0123456789"
_DIGIT_MAP = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19
#: Up to this size a text is scanned for long digit runs; beyond it, scanning would cost more
#: than decoding, so the decoded value is searched for the floats such integers become.
_SCAN_LIMIT = 4096
_LOST_INTEGER = 2.0**63
#: Deepest nesting the standard library must follow: orjson refuses anything deeper.
_MAX_DEPTH = 1100


def loads(data: bytes | bytearray | memoryview | str, *, exact_integers: bool = True) -> Any:
    """Decode one JSON text, raising :class:`ParseError` for anything unparsable.

    orjson reads an integer beyond 64 bits as a float, but JSON-RPC puts no bound on an id
    and a tool's ``int`` argument has none either. A text that may hold such an integer is
    decoded again by the standard library, which keeps integers exact. orjson refuses
    nesting deeper than 1024 levels, numbers that overflow a double, invalid UTF-8 and lone
    surrogates; the second pass only ever sees texts it accepted.

    ``exact_integers=False`` keeps only the id exact: for a client reading results, where a
    scan of every large answer would cost more than the rare integer it could save.
    """
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"Parse error: {_reason(exc)}") from None
    if not exact_integers:
        if type(message) is not dict or type(message.get("id")) is not float:
            return message
    elif len(data) <= _SCAN_LIMIT:
        raw = data if type(data) is bytes else _as_bytes(data)
        if len(raw) - len(raw.translate(None, _DIGITS)) < 19:
            return message  # the common case: too few digits for a long integer
        if _LONG_DIGIT_RUN not in raw.translate(_DIGIT_MAP):
            return message
    elif not _holds_lost_integer(message):
        return message
    try:
        with _deep_recursion():
            return json.loads(_as_bytes(data))
    except ValueError:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise ParseError("Parse error: an integer in the message has too many digits") from None


def _as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


def _holds_lost_integer(value: Any) -> bool:
    """Whether a decoded value holds a float that may have been an integer beyond 64 bits."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind is float and abs(item) >= _LOST_INTEGER and item.is_integer():
            return True
    return False


def _reason(exc: orjson.JSONDecodeError) -> str:
    # orjson's reasons name the problem and a position, never the input itself.
    return str(exc)[:200]


class _deep_recursion:
    """Let the standard library's recursive JSON coder follow what orjson accepted.

    Its C code counts nesting against the interpreter's recursion limit (1000 by default),
    below orjson's 1024 levels; the limit is raised around the call and put back.
    """

    def __enter__(self) -> None:
        self._limit = sys.getrecursionlimit()
        sys.setrecursionlimit(self._limit + _MAX_DEPTH)

    def __exit__(self, *exc_info: object) -> None:
        sys.setrecursionlimit(self._limit)


def dumps(message: JSONDict) -> bytes:
    """Encode one message as compact UTF-8 JSON (no raw newlines, so it frames on stdio).

    A response that cannot be encoded (a value that is not JSON) becomes an internal error
    answer instead of an exception in the transport.
    """
    try:
        return encode(message)
    except (TypeError, ValueError):
        if "id" not in message or "method" in message:
            raise
        ref = new_ref()
        logger.error("Response to %r is not JSON-serializable (ref %s)", message["id"], ref)
        return orjson.dumps(
            error_response(message["id"], InternalError(f"Internal error (ref {ref})"))
        )


def encode(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact UTF-8 JSON for any JSON value; ``sort_keys`` gives one spelling per value.

    orjson refuses integers beyond 64 bits and nesting beyond 254 levels; the standard
    library writes both. Raises ``TypeError`` or ``ValueError`` for what is not JSON.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:
        pass
    try:
        with _deep_recursion():
            text = json.dumps(
                value,
                separators=(",", ":"),
                ensure_ascii=False,
                allow_nan=False,
                sort_keys=sort_keys,
            )
    except RecursionError:
        raise ValueError("nested too deeply to encode") from None
    return text.encode()


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


def error_response(request_id: RequestId | None, error: MCPError) -> JSONDict:
    """An error response; ``id`` is omitted when it could not be read."""
    if request_id is None:
        return {"jsonrpc": "2.0", "error": error.to_wire()}
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


def notification(method: str, params: JSONDict | None = None) -> JSONDict:
    if params is None:
        return {"jsonrpc": "2.0", "method": method}
    return {"jsonrpc": "2.0", "method": method, "params": params}
