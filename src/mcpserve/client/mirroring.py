"""The request headers a 2026-07-28 client mirrors from the body (SEP-2243), sans-IO.

Every POST carries ``MCP-Protocol-Version`` (the ``_meta`` version) and ``Mcp-Method``;
``tools/call``, ``prompts/get``, ``resources/read`` and the task methods add ``Mcp-Name``
(what the body names); a ``tools/call`` adds one ``Mcp-Param-{Name}`` per argument whose
property the tool's ``inputSchema`` annotates with ``x-mcp-header``. The server compares
each header with the body (:mod:`mcpserve.protocol.http_headers`), so these are the same
rules seen from the other side.

:class:`ToolHeaders` learns the annotations from ``tools/list`` results as they pass by. A
tool whose annotations break the rules is dropped from the result, with a warning: a
Streamable HTTP client must not call it (``server/tools.mdx`` § x-mcp-header), and one bad
tool must not hide the others. The rules are the ones the server side checks at
registration (:func:`~mcpserve.protocol.header_annotations.header_annotations`).

Values (``transports/streamable-http.mdx`` § Value Encoding): strings as they are, booleans
as ``true``/``false``, integers in decimal, anything else as compact JSON. A value that is
not plain visible ASCII (non-ASCII, a control character, a tab, leading or trailing
spaces), or that looks like the sentinel itself, is sent as ``=?base64?{UTF-8 base64}?=``.
An absent or ``null`` argument sends no header.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from typing import Any

import orjson

from .._types import JSONDict
from ..protocol import constants as c
from ..protocol.header_annotations import header_annotations
from ..protocol.http_headers import name_for

logger = logging.getLogger("mcpserve.client")

_SENTINEL_PREFIX = "=?base64?"
_SENTINEL_SUFFIX = "?="


def encode_value(text: str) -> str:
    """``text`` as a header value: as it is when that is safe, else the base64 sentinel."""
    plain = text.isascii() and text.isprintable() and text == text.strip(" ")
    looks_encoded = text.startswith(_SENTINEL_PREFIX) and text.endswith(_SENTINEL_SUFFIX)
    if plain and not looks_encoded:
        return text
    return _SENTINEL_PREFIX + base64.b64encode(text.encode()).decode("ascii") + _SENTINEL_SUFFIX


def render(value: Any) -> str:
    """The text a header carries for an argument value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return orjson.dumps(value).decode()


class ToolHeaders:
    """The ``x-mcp-header`` annotations of the tools one server listed."""

    def __init__(self) -> None:
        self._by_tool: dict[str, list[tuple[str, str]]] = {}

    def learn(self, result: JSONDict) -> None:
        """Read a ``tools/list`` result, dropping the tools whose annotations are invalid."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        kept = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            schema = tool.get("inputSchema") if isinstance(tool, dict) else None
            try:
                found = header_annotations(schema) if isinstance(schema, dict) else []
            except ValueError as exc:
                logger.warning("Ignoring tool %r: invalid x-mcp-header (%s)", name, exc)
                continue
            if isinstance(name, str):
                self._by_tool[name] = [(prop, header) for prop, header, _ in found]
            kept.append(tool)
        result["tools"] = kept

    def knows(self, tool: str) -> bool:
        return tool in self._by_tool

    def annotates(self, tool: str) -> bool:
        """Whether calls of ``tool`` may carry ``Mcp-Param-*`` headers."""
        return bool(self._by_tool.get(tool))

    def params(self, tool: str, arguments: Any) -> dict[str, str]:
        """The ``Mcp-Param-*`` headers of one call."""
        annotated = self._by_tool.get(tool)
        if not annotated or not isinstance(arguments, Mapping):
            return {}
        headers = {}
        for prop, header in annotated:
            value = arguments.get(prop)
            if value is not None:
                headers[f"Mcp-Param-{header}"] = encode_value(render(value))
        return headers


def request_headers(message: JSONDict, tools: ToolHeaders) -> dict[str, str]:
    """The mirrored headers of one 2026-07-28 request or notification."""
    method = message.get("method")
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    headers: dict[str, str] = {}
    meta = params.get("_meta")
    version = meta.get(c.META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if isinstance(version, str):
        headers["MCP-Protocol-Version"] = version
    if not isinstance(method, str):
        return headers
    headers["Mcp-Method"] = method
    name = name_for(method, params)
    if name is not None:
        headers["Mcp-Name"] = encode_value(name)
    if method == "tools/call" and isinstance(name, str):
        headers.update(tools.params(name, params.get("arguments")))
    return headers
