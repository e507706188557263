"""The path a message takes from a transport to a handler and back.

``Dispatcher.handle`` is the whole request surface for the 2026-07-28 wire:

1. classify the envelope (-32600 for anything that is not one request or notification);
2. read ``params._meta`` (-32602 when the version or client capabilities are missing);
3. check the protocol version (-32022 naming the supported ones);
4. find the method (-32601);
5. await the handler, which returns a fresh result dict;
6. stamp the result with ``resultType`` and ``_meta["io.modelcontextprotocol/serverInfo"]``.

Steps 2-4 are public methods too, so the HTTP transport can interleave its header checks in
the order documented in ``docs/reference.md``. Nothing here does I/O: request-scoped
notifications leave through the ``send`` callable a transport passes in, and the returned
response is the transport's to write. Notifications and client responses return ``None``;
a transport that cares about one (stdio and ``notifications/cancelled``) reads it itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from . import constants as c
from .errors import MCPError, MethodNotFound, UnsupportedProtocolVersion, error_from_exception
from .jsonrpc import (
    JSONDict,
    Kind,
    RequestId,
    classify,
    error_response,
    readable_id,
)
from .meta import InvalidMeta, RequestMeta, read_meta
from .records import Record

Send = Callable[[JSONDict], Awaitable[None]]
_SERVER_INFO = c.META_SERVER_INFO


class Auth(Record):
    """Who is calling, as established by the transport's authentication hook."""

    __slots__ = ("principal", "scopes")  # a Record: see protocol/records.py

    def __init__(self, principal: str | None = None, scopes: frozenset[str] = frozenset()) -> None:
        self.principal = principal
        self.scopes = scopes


ANONYMOUS = Auth()


class Request:
    """One validated request, as a handler sees it."""

    # A plain class, not a dataclass: generating dataclass methods at import costs a
    # noticeable share of a stdio server's cold start (~0.3 ms per class on Python 3.11).
    __slots__ = ("auth", "id", "meta", "method", "params", "send", "session")

    def __init__(
        self,
        id: RequestId,
        method: str,
        params: JSONDict,
        meta: RequestMeta,
        send: Send | None = None,
        auth: Auth = ANONYMOUS,
        session: Any = None,
    ) -> None:
        self.id = id
        self.method = method
        self.params = params
        self.meta = meta
        self.send = send
        self.auth = auth
        #: The legacy-era session this request belongs to (None on the 2026-07-28 wire).
        self.session = session

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r})"


Handler = Callable[[Request], Awaitable[JSONDict]]


class Dispatcher:
    """Routes validated requests through one method table."""

    def __init__(
        self,
        methods: Mapping[str, Handler],
        *,
        server_info: JSONDict | None,
        versions: Sequence[str] = c.MODERN_VERSIONS,
        legacy_versions: Sequence[str] = (),
    ) -> None:
        self.methods = methods
        self.versions = frozenset(versions)
        self.legacy_versions = frozenset(legacy_versions)
        self.supported_versions = [*versions, *legacy_versions]
        self._server_info = dict(server_info) if server_info else None

    # -- the steps, in order -------------------------------------------------------------

    def read_meta(self, params: JSONDict) -> RequestMeta:
        """:func:`read_meta`, with the supported versions named in a missing-``_meta`` error
        so a client without ``_meta`` learns what to send (§19-Q15)."""
        try:
            return read_meta(params)
        except InvalidMeta as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            exc.data = {**data, "supported": self.supported_versions}
            raise

    def check_version(self, meta: RequestMeta) -> None:
        version = meta.protocol_version
        if version in self.versions:
            return
        message = None
        if version in self.legacy_versions:
            message = (
                f"Protocol version {version} requires the initialize handshake; "
                "per-request _meta needs one of " + ", ".join(sorted(self.versions))
            )
        raise UnsupportedProtocolVersion(version[:64], self.supported_versions, message)

    def lookup(self, method: str) -> Handler:
        handler = self.methods.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method[:100]}")
        return handler

    def finish(self, result: JSONDict) -> JSONDict:
        """Stamp a handler's (fresh, owned) result dict with the protocol fields."""
        if "resultType" not in result:
            result["resultType"] = "complete"
        if self._server_info is not None:
            # Fresh dicts each time: a caller may edit a response without touching the next.
            meta = {_SERVER_INFO: self._server_info.copy()}
            own = result.get("_meta")
            result["_meta"] = meta if own is None else {**meta, **own}
        return result

    # -- the whole path ------------------------------------------------------------------

    async def execute(self, handler: Handler, request: Request) -> JSONDict:
        """Run a looked-up handler and build its response (result or error)."""
        try:
            result = await handler(request)
        except Exception as exc:  # CancelledError is not an Exception: it propagates.
            return self.failure(request.id, exc)
        return self.success(request.id, result)

    def success(self, request_id: RequestId, result: JSONDict) -> JSONDict:
        return {"jsonrpc": "2.0", "id": request_id, "result": self.finish(result)}

    def failure(self, request_id: RequestId, exc: Exception) -> JSONDict:
        return error_response(request_id, error_from_exception(exc))

    async def handle(
        self, message: Any, *, send: Send | None = None, auth: Auth = ANONYMOUS
    ) -> JSONDict | None:
        """Answer one decoded message; ``None`` for notifications and client responses."""
        try:
            kind = classify(message)
        except MCPError as exc:
            return error_response(readable_id(message), exc)
        if kind is not Kind.REQUEST:
            return None
        request_id: RequestId = message["id"]
        try:
            params = message.get("params")
            if params is None:
                params = {}
            method = message["method"]
            if method == "initialize" and not has_modern_meta(params):
                raise self.handshake_refusal(params)
            meta = self.read_meta(params)
            self.check_version(meta)
            handler = self.lookup(method)
        except MCPError as exc:
            return error_response(request_id, exc)
        return await self.execute(handler, Request(request_id, method, params, meta, send, auth))

    def handshake_refusal(self, params: JSONDict) -> UnsupportedProtocolVersion:
        """What a modern-only server says to a legacy ``initialize`` (CHECKLIST V08)."""
        requested = params.get("protocolVersion")
        requested = requested[:64] if isinstance(requested, str) else ""
        versions = ", ".join(self.supported_versions)
        return UnsupportedProtocolVersion(
            requested,
            self.supported_versions,
            f"This server does not support the initialize handshake; supported versions: "
            f"{versions}",
        )


def has_modern_meta(params: JSONDict) -> bool:
    """Whether a request carries 2026-07-28 per-request ``_meta`` (CHECKLIST Y01)."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and c.META_PROTOCOL_VERSION in meta
