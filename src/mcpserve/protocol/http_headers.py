"""Header/body consistency checks for the Streamable HTTP transport (SEP-2243), sans-IO.

Theory of operation
-------------------
On the 2026-07-28 wire each POST mirrors parts of its JSON-RPC body into HTTP headers so that
intermediaries can route without parsing JSON (``basic/transports/streamable-http.mdx``
§ Request Metadata). A load balancer may route on a header while we execute the body, so any
disagreement is a security problem: it raises :class:`~mcpserve.protocol.errors.HeaderMismatch`
(-32020; the transport answers HTTP 400, § Server Validation). Everything here is a pure
function of the header mapping (lower-cased names, latin-1 values, as ASGI delivers them) and
the decoded body. The order (``docs/decisions.md``, "Check order on HTTP"):
:func:`check_required_headers` (presence) and :func:`check_header_values` with
``include_name=False``; then ``_meta`` (-32602), version supported and method known
(elsewhere); then :func:`check_name_header` and, for ``tools/call``,
:func:`check_param_headers`. ``x-mcp-header`` is validated once at registration
(:mod:`.header_annotations`), so per request only dict lookups and compares remain.
:class:`HeaderChecks` plugs these rules into the dispatcher (``protocol/core.py``) as one
request's checks.

Decisions
---------
* Values: optional whitespace (SP/HTAB) around a value is trimmed (RFC 9110 § 5.5; SEP-2243
  "Extra whitespace in header"). The rest must be visible ASCII, SP or HTAB: CTLs (CR, LF,
  NUL ...), DEL and bytes 0x80-0xFF are invalid characters, rejected in all four MCP headers
  (streamable-http.mdx § Value Encoding, § Server Validation; SEP-2243 § Character Restrictions).
* Base64 sentinel, for ``Mcp-Name`` and ``Mcp-Param-*`` only: exact lowercase ``=?base64?``
  prefix and ``?=`` suffix, not overlapping (``=?base64?=`` is literal, ``=?base64??=`` is "").
  The payload must be canonical padded standard base64 (strict decode plus a round trip, so a
  value has one spelling) of UTF-8, else mismatch. Near misses are literal (SEP-2243 § Server
  Validation Edge Cases).
* ``Mcp-Name`` mirrors ``params.name`` (``tools/call``, ``prompts/get``), ``params.uri``
  (``resources/read``) or ``params.taskId`` (``tasks/get|update|cancel``;
  ``seps/2663-tasks-extension.md`` § Routing Headers). A missing or non-string body value is
  not checked: params validation rejects that request (-32602), so nothing runs under it.
* The version header is compared only when ``_meta`` holds a string (a missing one is
  -32602, checked next). Treating a missing header as legacy (``docs/decisions.md``, "A
  missing MCP-Protocol-Version") is decided before these checks run.
* Notifications (``docs/decisions.md``, "Notifications over HTTP"): ``Mcp-Method`` is
  optional, but if sent it must equal the method.
* ``Mcp-Param-*``: a number for an ``integer`` property compares numerically and exactly
  (``Decimal``, no float rounding) with a header in JSON number syntax: ``42``, ``42.0`` and
  ``4.2e1`` equal 42; ``+42``, ``042``, ``0x2a`` and ``4_2`` do not. Any other value compares
  exactly with the text a client mirrors for it (SEP-2243 § Value Encoding: strings as-is,
  ``true``/``false``, decimal integers; other values as compact JSON), so ``"42"`` sent for an
  integer property matches ``42`` and argument validation then explains the type error.
* An absent or ``null`` argument expects no header, and one sent anyway is ignored: the body
  has no value for it to contradict, so the tool never acts on the header's value.
* Messages follow § Server Validation's example ("Header mismatch: Mcp-Name header value 'foo'
  does not match body value 'bar'"); values are ``repr``-escaped (no raw CR/LF reaches logs or
  clients) and cut to 100 characters, so a 1 MB header yields a short message.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, DecimalException
from typing import Any, Final

import orjson

from .constants import META_PROTOCOL_VERSION
from .errors import HeaderMismatch

# Lower-cased, as in the ASGI header mapping we are given.
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"
PARAM_HEADER_PREFIX: Final = "mcp-param-"

_B64_PREFIX: Final = "=?base64?"
_B64_SUFFIX: Final = "?="
_B64_MIN_LEN: Final = len(_B64_PREFIX) + len(_B64_SUFFIX)
_SHOW_LIMIT: Final = 100

_NAME_SOURCES: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

# Only reached when the isascii()/isprintable() fast path fails: HTAB is the one legal
# character outside 0x20-0x7E.
_INVALID_CHAR: Final = re.compile(r"[^\t\x20-\x7e]")
_JSON_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


# --------------------------------------------------------------------------- values


def decode_header_value(raw: str, *, header: str = "MCP") -> str:
    """Trim OWS, reject invalid characters, and decode the ``=?base64?...?=`` sentinel.

    ``header`` names the header in error messages. Raises :class:`HeaderMismatch`.
    """
    value = _plain(raw, header)
    if not value.startswith(_B64_PREFIX):  # the common case: one C-level compare, no regex
        return value
    if len(value) < _B64_MIN_LEN or not value.endswith(_B64_SUFFIX):
        return value  # a near miss is a literal value (SEP-2243 "Missing suffix")
    payload = value[len(_B64_PREFIX) : -len(_B64_SUFFIX)]
    try:
        data: bytes | None = binascii.a2b_base64(payload, strict_mode=True)
    except binascii.Error:
        data = None
    # strict_mode still accepts non-zero padding bits ("SGVsbG9=" is also "Hello"); insisting
    # on the canonical form leaves one spelling per value for everyone who compares them.
    if data is None or base64.b64encode(data).decode("ascii") != payload:
        raise HeaderMismatch(
            f"Header mismatch: {header} header value {_quote(value)} is not valid base64"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise HeaderMismatch(
            f"Header mismatch: {header} header value {_quote(value)} does not decode to UTF-8"
        ) from None


def _plain(raw: str, header: str) -> str:
    """Trim OWS and reject characters RFC 9110 and the MCP spec do not allow in a value."""
    value = raw.strip(" \t")
    # isascii() and isprintable() together mean exactly 0x20-0x7E, checked in C.
    if not (value.isascii() and value.isprintable()) and _INVALID_CHAR.search(value):
        raise HeaderMismatch(
            f"Header mismatch: {header} header value {_quote(value)} contains characters "
            "not allowed in an HTTP field value"
        )
    return value


def _quote(text: str) -> str:
    """``repr`` of ``text`` (so CR/LF and friends are escaped), cut to a readable length."""
    if len(text) <= _SHOW_LIMIT:
        return repr(text)
    return f"{text[:_SHOW_LIMIT] + '…'!r} ({len(text)} characters)"


def _show_body(value: Any) -> str:
    """A body value for a message: strings quoted, other JSON values as (escaped) JSON text."""
    if isinstance(value, str):
        return _quote(value)
    text = _render(value)
    if text is None:
        return "(a value too large to show)"
    return _quote(text)[1:-1] if len(text) <= _SHOW_LIMIT else _quote(text)


def _render(value: Any) -> str | None:
    """The header text a client mirrors for ``value`` (SEP-2243 § Value Encoding, type conversion).

    ``None`` when there is none: an int beyond CPython's int-to-str digit limit, or a value
    JSON cannot represent.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        if isinstance(value, int | float):
            return str(value)
        return orjson.dumps(value).decode()
    except (TypeError, ValueError):
        return None


def _mismatch(header: str, sent: str, body: Any) -> HeaderMismatch:
    return HeaderMismatch(
        f"Header mismatch: {header} header value {_quote(sent)} "
        f"does not match body value {_show_body(body)}"
    )


def _missing(header: str, body: Any = None) -> HeaderMismatch:
    detail = "" if body is None else f" (body value {_show_body(body)})"
    return HeaderMismatch(f"Header mismatch: required {header} header is missing{detail}")


# --------------------------------------------------------------------------- standard headers


def name_for(method: str, params: Mapping[str, Any]) -> str | None:
    """The body value ``Mcp-Name`` must equal, or ``None`` when the method has none.

    A missing or non-string value also gives ``None``; params validation rejects that request.
    """
    key = _NAME_SOURCES.get(method)
    if key is None:
        return None
    value = params.get(key)
    return value if isinstance(value, str) else None


def _params(message: Mapping[str, Any]) -> Mapping[str, Any]:
    params = message.get("params")
    return params if isinstance(params, Mapping) else {}


def check_required_headers(headers: Mapping[str, str], message: Mapping[str, Any]) -> None:
    """``MCP-Protocol-Version`` and ``Mcp-Method`` are present (the first header check)."""
    if PROTOCOL_VERSION_HEADER not in headers:
        raise _missing("MCP-Protocol-Version")
    if METHOD_HEADER not in headers:
        raise _missing("Mcp-Method", message.get("method"))


def check_header_values(
    headers: Mapping[str, str], message: Mapping[str, Any], *, include_name: bool = True
) -> None:
    """The version and method headers equal the body; then ``Mcp-Name`` unless excluded.

    A missing header is reported here too, so this is safe to call on its own. Pass
    ``include_name=False`` to run :func:`check_name_header` later, after the method is known.
    """
    raw = headers.get(PROTOCOL_VERSION_HEADER)
    if raw is None:
        raise _missing("MCP-Protocol-Version")
    meta = _params(message).get("_meta")
    body_version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, Mapping) else None
    sent = _plain(raw, "MCP-Protocol-Version")
    if isinstance(body_version, str) and sent != body_version:
        raise _mismatch("MCP-Protocol-Version", sent, body_version)
    _check_method(headers, message, required=True)
    if include_name:
        check_name_header(headers, message)


def check_name_header(headers: Mapping[str, str], message: Mapping[str, Any]) -> None:
    """``Mcp-Name`` is present and, after decoding, equals :func:`name_for` when that applies."""
    method = message.get("method")
    expected = name_for(method, _params(message)) if isinstance(method, str) else None
    if expected is None:
        return
    raw = headers.get(NAME_HEADER)
    if raw is None:
        raise _missing("Mcp-Name", expected)
    sent = decode_header_value(raw, header="Mcp-Name")
    if sent != expected:
        raise _mismatch("Mcp-Name", sent, expected)


def check_notification_headers(headers: Mapping[str, str], message: Mapping[str, Any]) -> None:
    """Notifications: ``Mcp-Method`` may be absent, but if sent it must match."""
    _check_method(headers, message, required=False)


def _check_method(
    headers: Mapping[str, str], message: Mapping[str, Any], *, required: bool
) -> None:
    raw = headers.get(METHOD_HEADER)
    method = message.get("method")
    if raw is None:
        if required:
            raise _missing("Mcp-Method", method)
        return
    sent = _plain(raw, "Mcp-Method")
    if sent != method:  # case-sensitive: "TOOLS/CALL" is not "tools/call"
        raise _mismatch("Mcp-Method", sent, method)


# --------------------------------------------------------------------------- Mcp-Param-*


def check_param_headers(
    headers: Mapping[str, str],
    arguments: Mapping[str, Any] | None,
    header_params: Mapping[str, str],
    property_types: Mapping[str, str],
) -> None:
    """Each annotated argument that is present and not null has an equal ``Mcp-Param-*``."""
    if not header_params or not isinstance(arguments, Mapping):
        return  # most tools have no annotations; a non-object is rejected by params validation
    for prop, header in header_params.items():
        value = arguments.get(prop)
        if value is None:
            continue  # absent or null: not expected, and a stray header is ignored (see above)
        display = f"Mcp-Param-{header}"
        raw = headers.get(PARAM_HEADER_PREFIX + header.lower())
        if raw is None:
            raise _missing(display, value)
        sent = decode_header_value(raw, header=display)
        if not _param_matches(sent, value, property_types.get(prop)):
            raise _mismatch(display, sent, value)


def _param_matches(sent: str, value: Any, kind: str | None) -> bool:
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        # Numerically and exactly (streamable-http.mdx § Server Validation: "42.0" == 42).
        if not _JSON_NUMBER.fullmatch(sent):
            return False
        try:
            return Decimal(sent) == Decimal(value)
        except DecimalException:  # an exponent beyond Decimal's range
            return False
    return sent == _render(value)


# --------------------------------------------------------------------------- one request


def header_bytes(raw: Sequence[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """ASGI headers as a dict of lower-case names to values, still bytes: what the hot path
    looks up. Repeated headers are joined as in :func:`decode_headers`."""
    headers = dict(raw)
    if len(headers) == len(raw) and b"".join(headers).islower():
        return headers
    return {k.encode("latin-1"): v.encode("latin-1") for k, v in decode_headers(raw).items()}


def decode_headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """ASGI headers as a dict of lower-case names; repeated headers are joined with ", "."""
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in raw}
    if len(headers) != len(raw) or not "".join(headers).islower():
        # Rare: a repeated header (every value must be seen: two Mcp-Name headers mismatch),
        # or a server that does not lower-case names as the ASGI spec asks.
        headers = {}
        for raw_name, raw_value in raw:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


_VERSION_BYTES: Final = PROTOCOL_VERSION_HEADER.encode()
_METHOD_BYTES: Final = METHOD_HEADER.encode()
_NAME_BYTES: Final = NAME_HEADER.encode()


class HeaderChecks:
    """The rules above as the checks of one 2026-07-28 request (``protocol/core.Checks``).

    ``headers`` are the raw bytes the hot path compares: headers that equal the body exactly
    need no trimming or decoding. Only a rule that must see every header as text, or a value
    that is not an exact match, decodes them (once).
    """

    __slots__ = ("_message", "_text", "headers", "raw")

    def __init__(self, headers: Mapping[bytes, bytes], raw: Sequence[tuple[bytes, bytes]]) -> None:
        self.headers = headers
        self.raw = raw
        self._text: dict[str, str] | None = None
        self._message: Mapping[str, Any] = {}

    def text(self) -> dict[str, str]:
        if self._text is None:
            self._text = decode_headers(self.raw)
        return self._text

    def envelope(self, message: Mapping[str, Any]) -> None:
        """``MCP-Protocol-Version`` and ``Mcp-Method`` are present and equal the body."""
        self._message = message
        headers = self.headers
        version = headers.get(_VERSION_BYTES)
        method = headers.get(_METHOD_BYTES)
        if version is None or method is None:
            check_required_headers(self.text(), message)  # raises, naming the missing one
            return
        params = message.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        body_version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
        sent_method = method.decode("latin-1")
        sent_version = version.decode("latin-1")
        # An exact match needs no decoding, unless its edges hold what trimming would remove
        # (whitespace, or a CR/LF that must be refused).
        if (
            sent_method != message["method"]
            or sent_version != body_version
            or sent_method != sent_method.strip()
            or sent_version != sent_version.strip()
        ):
            check_header_values(self.text(), message, include_name=False)

    def target(self, request: Any) -> None:
        """``Mcp-Name`` equals what the body names; a tool's ``Mcp-Param-*`` its arguments."""
        method = request.method
        key = _NAME_SOURCES.get(method)
        if key is None:
            return  # most methods name nothing
        expected = request.params.get(key)
        if type(expected) is str:  # not a string: params validation refuses the request
            name = self.headers.get(_NAME_BYTES)
            if (
                name is None
                or name.startswith(b"=?")
                or not name.isascii()
                or name.decode("latin-1") != expected
            ):
                check_name_header(self.text(), self._message)
        tool = request.target if method == "tools/call" else None
        if tool is not None and tool.header_params:
            arguments = request.params.get("arguments")
            check_param_headers(
                self.text(),
                arguments if isinstance(arguments, Mapping) else None,
                tool.header_params,
                tool.header_types,
            )
