"""Serving handshake-era clients (2025-11-25 and earlier) with the same handlers.

A legacy request runs through the same method table as a modern one; what differs is
where its protocol facts come from (the session, fixed at ``initialize``, instead of
``_meta``) and how the answer is written (:mod:`mcpserve.protocol.legacy`). The methods
only the handshake era has live here: ``initialize``, ``ping``, ``logging/setLevel``,
``resources/subscribe`` and ``resources/unsubscribe``. ``server/discover`` and
``subscriptions/listen`` are modern-only and answer -32601 inside a session.

Questions to the client (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) become real
requests on the request's own stream, awaited with a timeout: the handler's code is the
same in both eras.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..protocol import constants as c
from ..protocol.capabilities import missing_capabilities
from ..protocol.core import ANONYMOUS, Auth, Request, Send
from ..protocol.errors import (
    InvalidParams,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    MissingClientCapability,
    ToolError,
)
from ..protocol.jsonrpc import JSONDict, Kind, classify, error_response, readable_id
from ..protocol.legacy import legacy_response, negotiate
from ..protocol.meta import RequestMeta
from .rounds import MISSING, InputRequest
from .sessions import LegacySession

if TYPE_CHECKING:
    from .context import Context
    from .server import Server

_MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})
_ASK_ATTEMPTS = 3


class Legacy:
    """The handshake-era front of one server."""

    def __init__(self, server: Server, *, client_timeout_seconds: float = 120.0) -> None:
        self.server = server
        self.client_timeout_seconds = client_timeout_seconds

    def capabilities(self) -> JSONDict:
        capabilities = self.server.capabilities()
        capabilities.pop("extensions", None)
        if self.server.client_logging:
            capabilities["logging"] = {}
        return capabilities

    def initialize(self, message: JSONDict) -> tuple[LegacySession | None, JSONDict]:
        """A new session and the ``initialize`` response (or None and an error)."""
        request_id = message["id"]
        params = message.get("params") or {}
        capabilities = params.get("capabilities")
        if not isinstance(params.get("protocolVersion"), str) or not isinstance(capabilities, dict):
            error = InvalidParams("Invalid params: initialize needs protocolVersion and "
                                  "capabilities")  # fmt: skip
            return None, error_response(request_id, error)
        info = params.get("clientInfo")
        session = LegacySession(
            negotiate(params["protocolVersion"]),
            capabilities,
            info if isinstance(info, dict) else None,
        )
        result: JSONDict = {
            "protocolVersion": session.version,
            "capabilities": self.capabilities(),
            "serverInfo": dict(self.server.info),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return session, {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def handle(
        self,
        message: Any,
        session: LegacySession,
        send: Send | None,
        auth: Auth = ANONYMOUS,
    ) -> JSONDict | None:
        """Answer one message inside ``session`` (None for notifications and responses)."""
        try:
            kind = classify(message)
        except MCPError as exc:
            return error_response(readable_id(message), exc)
        if kind is Kind.RESPONSE:
            session.receive_response(message)
            return None
        if kind is Kind.NOTIFICATION:
            self._notification(message, session)
            return None
        method: str = message["method"]
        try:
            result = self._session_method(method, message.get("params") or {}, session)
        except MCPError as exc:
            return error_response(message["id"], exc)
        if result is not None:
            return {"jsonrpc": "2.0", "id": message["id"], "result": result}
        return await self._shared_method(message, session, send, auth)

    def _notification(self, message: JSONDict, session: LegacySession) -> None:
        method = message["method"]
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "notifications/initialized":
            session.initialized = True
        elif method == "notifications/cancelled":
            task = session.tasks.get(params.get("requestId"))  # type: ignore[union-attr,arg-type]
            if task is not None:
                task.cancel()

    def _session_method(
        self, method: str, params: JSONDict, session: LegacySession
    ) -> JSONDict | None:
        """Methods that only read or change session state; None for everything else."""
        if method == "ping":
            return {}
        if method == "initialize":  # transports start sessions; inside one it is an error
            raise InvalidRequest("Invalid request: this session is already initialized")
        if method == "logging/setLevel":
            if not self.server.client_logging:
                raise MethodNotFound("Method not found: logging/setLevel")
            level = params.get("level")
            if type(level) is not str or level not in c.LOG_LEVEL_RANK:
                raise InvalidParams(f"Invalid params: unknown log level {str(level)[:40]!r}")
            session.log_level = level
            return {}
        if method in ("resources/subscribe", "resources/unsubscribe"):
            registry = self.server.registry
            if not registry.resources and not registry.templates:
                raise MethodNotFound(f"Method not found: {method}")
            uri = params.get("uri")
            if type(uri) is not str:
                raise InvalidParams('Invalid params: "uri" must be a string')
            if method == "resources/subscribe":
                session.resource_subscriptions.add(uri)
            else:
                session.resource_subscriptions.discard(uri)
            return {}
        if method in _MODERN_ONLY:
            raise MethodNotFound(f"Method not found: {method}")
        return None

    async def _shared_method(
        self, message: JSONDict, session: LegacySession, send: Send | None, auth: Auth
    ) -> JSONDict:
        method: str = message["method"]
        params = message.get("params") or {}
        dispatcher = self.server.dispatcher
        try:
            handler = dispatcher.lookup(method)
        except MCPError as exc:
            return error_response(message["id"], exc)
        request_meta = params.get("_meta")
        token = request_meta.get("progressToken") if isinstance(request_meta, dict) else None
        meta = RequestMeta(
            protocol_version=session.version,
            client_capabilities=session.client_capabilities,
            client_info=session.client_info,
            # Without logging/setLevel, clients still hear info and above.
            log_level=session.log_level or "info",
            progress_token=token if type(token) in (str, int) else None,
            raw=request_meta if isinstance(request_meta, dict) else {},
        )
        request = Request(message["id"], method, params, meta, send, auth, session)
        response = await dispatcher.execute(handler, request)
        return legacy_response(method, response)

    # -- questions to the client, as real requests (Y18) --------------------------------------

    async def ask(self, ctx: Context, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        session: LegacySession = ctx.request.session
        needed: dict[str, Any] = {}
        for request in requests.values():
            needed.update(request.required_capabilities())
        missing = missing_capabilities(needed, session.client_capabilities)
        if missing:
            raise MissingClientCapability(missing)
        keys = list(requests)
        answers = await asyncio.gather(*(self._ask_one(ctx, requests[key]) for key in keys))
        return dict(zip(keys, answers, strict=True))

    async def _ask_one(self, ctx: Context, request: InputRequest) -> Any:
        send = ctx.request.send
        if send is None:
            raise InvalidRequest("This request has no stream to ask the client on")
        wire = _for_version(request.to_wire(), ctx.request.session.version)
        for _ in range(_ASK_ATTEMPTS):
            try:
                result = await ctx.request.session.call_client(
                    send, wire, self.client_timeout_seconds
                )
            except TimeoutError:
                raise ToolError(
                    f"The client did not answer {wire['method']} within "
                    f"{self.client_timeout_seconds:g} s"
                ) from None
            except MCPError as exc:  # the client's error is not this request's own error
                raise ToolError(f"The client refused {wire['method']}: {exc.message}") from None
            parsed = request.parse(result)
            if parsed is not MISSING:
                return parsed
        raise InvalidParams(f"The client's answers to {wire['method']} were not valid")


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
