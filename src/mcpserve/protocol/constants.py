"""Names and numbers fixed by the MCP specification, in one place."""

from __future__ import annotations

from typing import Final

LATEST_VERSION: Final = "2026-07-28"
#: Versions served statelessly, with per-request ``_meta``.
MODERN_VERSIONS: Final = ("2026-07-28",)
#: Handshake-era versions, served after ``initialize``.
HANDSHAKE_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26")

# Reserved ``_meta`` keys.
META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
TRACE_KEYS: Final = ("traceparent", "tracestate", "baggage")

# JSON-RPC and MCP error codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
#: The caller's token lacks a scope the request needs (HTTP 403, ``docs/decisions.md``).
INSUFFICIENT_SCOPE: Final = -32010
#: The caller sent too many requests: ``data.retryAfterSeconds`` says when to try again
#: (HTTP 429 with ``Retry-After``, ``docs/decisions.md``, "Rate limit refusals").
RATE_LIMITED: Final = -32029

#: syslog severities, least severe first (RFC 5424 order reversed).
LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
LOG_LEVEL_RANK: Final = {level: rank for rank, level in enumerate(LOG_LEVELS)}

#: Methods that may answer with ``resultType: "input_required"``.
INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})

#: The extensions' identifiers, as ``capabilities.extensions`` (and ``_meta``) name them.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
APPS_EXTENSION: Final = "io.modelcontextprotocol/ui"
SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
#: The MIME type of an MCP App's HTML view: a resource of this type is an app.
APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
