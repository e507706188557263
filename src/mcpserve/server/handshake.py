"""Serving handshake-era clients (2025-11-25 and earlier) with the same handlers.

A handshake-era request goes through the same dispatcher as a 2026-07-28 one
(``protocol/core.py``); what differs is where its protocol facts come from (the
:class:`~mcpserve.protocol.handshake.Session` agreed at ``initialize``) and how its answer is
written (``protocol/handshake.py``). Here is what only the handshake era has, whatever the
transport:

* :meth:`Handshake.initialize`, the handshake, which starts a session;
* the capabilities a session is told of (no extensions but the apps one);
* and, in ``context/session_questions.py``, ``ctx.elicit`` and friends as real requests to
  the client.
"""

from __future__ import annotations

from .._types import JSONDict
from ..protocol.constants import APPS_EXTENSION
from ..protocol.errors import (
    InvalidParams,
)
from ..protocol.handshake import Session, negotiate
from ..protocol.jsonrpc import error_response
from .registry import Registry
from .settings import Settings, capabilities


class Handshake:
    """The handshake era of one server: the handshake that starts a session (the methods
    only a session has are in the one method table, ``methods.py``)."""

    def __init__(self, registry: Registry, settings: Settings) -> None:
        self.registry = registry
        self.settings = settings

    def capabilities(self) -> JSONDict:
        offered = capabilities(self.registry, self.settings)
        extensions = offered.pop("extensions", None)  # negotiated on the 2026-07-28 wire
        # ... but the apps extension is defined for both ("docs/decisions.md", "Apps in both
        # eras").
        if extensions and APPS_EXTENSION in extensions:
            offered["extensions"] = {APPS_EXTENSION: extensions[APPS_EXTENSION]}
        return offered

    def initialize(self, message: JSONDict) -> tuple[Session | None, JSONDict]:
        """A new session and the ``initialize`` response (or None and an error response)."""
        request_id = message["id"]
        params = message.get("params") or {}
        client_capabilities = params.get("capabilities")
        if not isinstance(params.get("protocolVersion"), str) or not isinstance(
            client_capabilities, dict
        ):
            error = InvalidParams(
                "Invalid params: initialize needs protocolVersion and capabilities"
            )
            return None, error_response(request_id, error)
        info = params.get("clientInfo")
        session = Session(
            negotiate(params["protocolVersion"]),
            client_capabilities,
            info if isinstance(info, dict) else None,
        )
        result: JSONDict = {
            "protocolVersion": session.version,
            "capabilities": self.capabilities(),
            "serverInfo": dict(self.settings.info),
        }
        if self.settings.instructions:
            result["instructions"] = self.settings.instructions
        return session, {"jsonrpc": "2.0", "id": request_id, "result": result}
