"""Serving handshake-era clients (2025-11-25 and earlier) with the same handlers.

A handshake-era request goes through the same dispatcher as a 2026-07-28 one
(``protocol/core.py``); what differs is where its protocol facts come from (the
:class:`~mcpserve.protocol.handshake.Session` agreed at ``initialize``) and how its answer is
written (``protocol/handshake.py``). Here is what only the handshake era has, whatever the
transport:

* :meth:`Handshake.initialize`, the handshake, which starts a session;
* the capabilities a session is told of (no extensions but the apps one);
* :func:`ask_client`: ``ctx.elicit``, ``ctx.sample`` and ``ctx.list_roots`` as real requests
  to the client, which the transport sends (``Request.ask``) and this awaits with a
  timeout. The handler's code is the same in both eras.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._types import JSONDict
from ..protocol.capabilities import missing_capabilities
from ..protocol.constants import APPS_EXTENSION
from ..protocol.errors import (
    InvalidParams,
    MCPError,
    MissingClientCapability,
    ToolError,
)
from ..protocol.handshake import Session, SessionEnded, negotiate
from ..protocol.jsonrpc import error_response
from .context.rounds import MISSING, InputRequest
from .settings import Settings, capabilities

if TYPE_CHECKING:
    from .context.context import Context
    from .registry import Registry

_ASK_ATTEMPTS = 3


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


# -- questions to the client, as real requests ------------------------------------------


async def ask_client(ctx: Context, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
    """Ask everything at once over the request's session; the answers by key."""
    needed: dict[str, Any] = {}
    for request in requests.values():
        needed.update(request.required_capabilities())
    missing = missing_capabilities(needed, ctx.client_capabilities)
    if missing:
        raise MissingClientCapability(missing)
    keys = list(requests)
    answers = await asyncio.gather(*(_ask_one(ctx, requests[key]) for key in keys))
    return dict(zip(keys, answers, strict=True))


async def _ask_one(ctx: Context, request: InputRequest) -> Any:
    ask = ctx.request.ask
    assert ask is not None
    wire = _for_version(request.to_wire(), ctx.protocol_version)
    method = wire["method"]
    timeout = ctx.runtime.client_timeout_seconds
    for _ in range(_ASK_ATTEMPTS):
        try:
            result = await asyncio.wait_for(ask(wire), timeout)
        except TimeoutError:
            raise ToolError(f"The client did not answer {method} within {timeout:g} s") from None
        except SessionEnded:
            raise ToolError(f"The session ended before the client answered {method}") from None
        except MCPError as exc:  # the client's error is not this request's own error
            raise ToolError(f"The client refused {method}: {exc.message}") from None
        parsed = request.parse(result)
        if parsed is not MISSING:
            return parsed
    raise InvalidParams(f"The client's answers to {method} were not valid")


def _for_version(wire: JSONDict, version: str) -> JSONDict:
    """An input request in the shape a handshake-era version expects."""
    if wire["method"] != "elicitation/create":
        return wire
    params = dict(wire["params"])
    if params.get("mode") == "url":
        if version != "2025-11-25":
            raise MissingClientCapability(
                {"elicitation": {"url": {}}},
                f"URL elicitation needs protocol 2025-11-25, not {version}",
            )
        params["elicitationId"] = os.urandom(16).hex()  # 2025-11-25 requires one
    elif version != "2025-11-25":
        params.pop("mode", None)  # older versions know only forms, without a mode field
    return {**wire, "params": params}
