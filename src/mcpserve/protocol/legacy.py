"""The handshake era (2025-11-25, 2025-06-18, 2025-03-26): what differs on the wire.

A dual-era server answers both wires on one endpoint. Which era a message belongs to is
decided per message (CHECKLIST Y01): per-request ``_meta`` means the 2026-07-28 wire,
always, even inside a session; otherwise ``initialize`` starts a legacy session, and a
message inside one (an initialized stdio process, or a live ``Mcp-Session-Id``) is legacy.

Handlers are shared: a legacy request runs through the same method table, with its
protocol facts (version, client capabilities, log level) taken from the session instead
of ``_meta``. This module converts the modern answers for a legacy peer (Y05, Y08):

* results lose ``resultType``, ``ttlMs``, ``cacheScope`` and the reserved ``serverInfo``
  ``_meta`` key;
* legacy tools declare only object output schemas and send only object
  ``structuredContent``, so a tool returning a number keeps its text content only;
* a missing resource is -32002 (with ``data.uri``) instead of -32602.
"""

from __future__ import annotations

from typing import Any

from . import constants as c

#: What a legacy ``initialize`` gets when it asks for a version we do not speak (§19-Q14).
NEWEST_LEGACY = c.LEGACY_VERSIONS[0]
RESOURCE_NOT_FOUND = -32002
_MODERN_ONLY_FIELDS = ("resultType", "ttlMs", "cacheScope")


def negotiate(requested: object) -> str:
    """The version a legacy ``initialize`` result names (lifecycle: echo it if supported)."""
    if isinstance(requested, str) and requested in c.LEGACY_VERSIONS:
        return requested
    return NEWEST_LEGACY


def legacy_result(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """A modern result as a legacy peer expects it."""
    result = {k: v for k, v in result.items() if k not in _MODERN_ONLY_FIELDS}
    meta = result.get("_meta")
    if isinstance(meta, dict) and c.META_SERVER_INFO in meta:
        meta = {k: v for k, v in meta.items() if k != c.META_SERVER_INFO}
        if meta:
            result["_meta"] = meta
        else:
            del result["_meta"]
    if method == "tools/list":
        result["tools"] = [legacy_tool(tool) for tool in result.get("tools", ())]
    elif method == "tools/call" and not isinstance(result.get("structuredContent", {}), dict):
        del result["structuredContent"]
    return result


def legacy_tool(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("outputSchema")
    if schema is None or schema.get("type") == "object":
        return tool
    return {k: v for k, v in tool.items() if k != "outputSchema"}


def legacy_error(method: str, error: dict[str, Any]) -> dict[str, Any]:
    """A modern error object as a legacy peer expects it."""
    data = error.get("data")
    if (
        method == "resources/read"
        and error.get("code") == c.INVALID_PARAMS
        and isinstance(data, dict)
        and "uri" in data
    ):
        return {**error, "code": RESOURCE_NOT_FOUND}
    return error


def legacy_response(method: str, response: dict[str, Any]) -> dict[str, Any]:
    if "result" in response:
        return {**response, "result": legacy_result(method, response["result"])}
    if "error" in response:
        return {**response, "error": legacy_error(method, response["error"])}
    return response
