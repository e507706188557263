"""The handshake era (2025-11-25, 2025-06-18, 2025-03-26): which messages belong to it and
what differs on their wire.

A dual-era server answers both wires on one endpoint. Which era a message belongs to is
decided per message by :func:`era_of` (``docs/decisions.md``, "Era per message"):
per-request ``_meta`` means the 2026-07-28 wire, always, even inside a session; otherwise
``initialize`` starts a handshake-era :class:`Session`, and a message inside one (an
initialized stdio process, a live ``Mcp-Session-Id``) belongs to it.

Handlers are shared: a handshake-era request runs through the same dispatcher, with its
protocol facts (version, client capabilities, log level) taken from the session instead of
``_meta`` (:meth:`Session.meta`). Its answer is converted for the handshake-era peer by
:func:`handshake_result` and :func:`handshake_error`:

* results lose ``resultType``, ``ttlMs`` and ``cacheScope`` and get no ``serverInfo``;
* a handshake-era tool's ``outputSchema`` and ``structuredContent`` must be objects, so a
  tool whose output is not one is published wrapped, ``{"result": <value>}``, with a matching schema
  (what the official SDK does), and a handshake-era client gets structured output too;
* a missing resource is -32002 (with ``data.uri``) instead of -32602.

What a session hears of the server's changes is :func:`notification_for`; a question to the
client that can no longer be answered fails with :class:`SessionEnded`. How a message finds
its session, and a session its end, is the era's state machine (``handshake_state.py``).
"""

from __future__ import annotations

from enum import Enum

from .._types import JSONDict
from . import constants as c
from .jsonrpc import notification
from .meta import RequestMeta

#: What a handshake-era ``initialize`` gets when it asks for a version we do not speak.
NEWEST_HANDSHAKE = c.HANDSHAKE_VERSIONS[0]
RESOURCE_NOT_FOUND = -32002
_MODERN_ONLY_FIELDS = ("resultType", "ttlMs", "cacheScope")
_LIST_CHANGES = frozenset({"tools", "prompts", "resources"})


class SessionEnded(ConnectionError):
    """The session went away (the client deleted it, or disconnected) before it answered."""


class Era(Enum):
    """What a message says about its era, before any session is considered."""

    #: Per-request ``_meta``: the 2026-07-28 wire, always, even inside a session.
    MODERN = "modern"
    #: A handshake-era ``initialize`` request: it starts a handshake-era session.
    HANDSHAKE = "handshake"
    #: Anything else: it belongs to the session it arrives in, or else to 2026-07-28.
    IN_CONTEXT = "in-context"


def era_of(message: JSONDict) -> Era:
    """The era rule, as far as the message alone decides it (the transport knows the rest:
    whether the message arrived inside a handshake-era session)."""
    params = message.get("params")
    if type(params) is dict:
        meta = params.get("_meta")
        if type(meta) is dict and c.META_PROTOCOL_VERSION in meta:
            return Era.MODERN
    if message.get("method") == "initialize" and "id" in message:
        return Era.HANDSHAKE
    return Era.IN_CONTEXT


def negotiate(requested: object) -> str:
    """The version a handshake-era ``initialize`` result names: the requested one if we speak it."""
    if isinstance(requested, str) and requested in c.HANDSHAKE_VERSIONS:
        return requested
    return NEWEST_HANDSHAKE


class Session:
    """What a handshake-era client and the server agreed at ``initialize``, and the state the
    era keeps per session: the log level and the resources subscribed to.

    Plain data, so any transport (or a store shared between processes) can hold it.
    """

    # __weakref__: whoever keeps something for a session (a proxy, its upstream session)
    # learns of the session's end when the transport drops it.
    __slots__ = (
        "__weakref__",
        "client_capabilities",
        "client_info",
        "log_level",
        "principal",
        "resource_subscriptions",
        "version",
    )

    def __init__(
        self,
        version: str,
        client_capabilities: JSONDict,
        client_info: JSONDict | None = None,
        principal: str | None = None,
    ) -> None:
        self.version = version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        #: Who started the session (an authenticated caller); only they may use it.
        self.principal = principal
        #: Set by ``logging/setLevel``; clients that never set one still hear info and above.
        self.log_level: str | None = None
        self.resource_subscriptions: set[str] = set()

    def __repr__(self) -> str:
        return f"Session(version={self.version!r})"

    def agreed(self) -> JSONDict:
        """What ``initialize`` settled, as JSON-able data (it never changes afterwards)."""
        agreed = {
            "version": self.version,
            "capabilities": self.client_capabilities,
            "clientInfo": self.client_info,
        }
        if self.principal is not None:
            agreed["principal"] = self.principal
        return agreed

    @classmethod
    def from_agreed(cls, agreed: JSONDict) -> Session:
        """The session :meth:`agreed` describes (its log level and subscriptions unset)."""
        capabilities = agreed.get("capabilities")
        info = agreed.get("clientInfo")
        principal = agreed.get("principal")
        return cls(
            str(agreed["version"]),
            capabilities if isinstance(capabilities, dict) else {},
            info if isinstance(info, dict) else None,
            principal if isinstance(principal, str) else None,
        )

    def state(self) -> tuple[str | None, frozenset[str]]:
        """What requests of the session may change: the log level and the subscriptions."""
        return self.log_level, frozenset(self.resource_subscriptions)

    def meta(self, params: JSONDict) -> RequestMeta:
        """A request's protocol facts: the session's, plus the request's own progress token."""
        request_meta = params.get("_meta")
        raw = request_meta if isinstance(request_meta, dict) else {}
        token = raw.get("progressToken")
        return RequestMeta(
            self.version,
            self.client_capabilities,
            self.client_info,
            self.log_level or "info",
            token if type(token) in (str, int) else None,
            None,
            raw,
        )

    def wants_update(self, uri: str) -> bool:
        """Whether a ``resources/updated`` for ``uri`` concerns this session's subscriptions."""
        return any(
            uri == sub or uri.startswith(sub.rstrip("/") + "/")
            for sub in self.resource_subscriptions
        )


def handshake_result(method: str, result: JSONDict) -> JSONDict:
    """A handler's result, as a handshake-era peer expects it (the result is the caller's
    to change)."""
    for key in _MODERN_ONLY_FIELDS:
        result.pop(key, None)
    if method == "tools/list":
        result["tools"] = [handshake_tool(tool) for tool in result.get("tools", ())]
    elif method == "tools/call" and "structuredContent" in result:
        # A tool whose schema is wrapped wraps its own results (whatever their value: an
        # object may fit a schema that does not promise one); this is for tools without one.
        structured = result["structuredContent"]
        if not isinstance(structured, dict):
            result["structuredContent"] = {"result": structured}
    return result


def wraps_output(schema: JSONDict | None) -> bool:
    """Whether a handshake-era peer sees this output schema (and so the tool's structured results)
    wrapped as ``{"result": ...}``: whenever it does not promise an object."""
    return schema is not None and schema.get("type") != "object"


def handshake_tool(tool: JSONDict) -> JSONDict:
    """A ``tools/list`` entry whose output schema is not an object, wrapped as one."""
    schema = tool.get("outputSchema")
    if not wraps_output(schema):
        return tool
    assert schema is not None
    wrapped: JSONDict = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if "$defs" in schema:  # references from inside the wrapped schema still resolve at the root
        wrapped["$defs"] = schema["$defs"]
        wrapped["properties"] = {"result": {k: v for k, v in schema.items() if k != "$defs"}}
    return {**tool, "outputSchema": wrapped}


def handshake_error(method: str, error: JSONDict) -> JSONDict:
    """A 2026-07-28 error object as a handshake-era peer expects it."""
    data = error.get("data")
    if (
        method == "resources/read"
        and error.get("code") == c.INVALID_PARAMS
        and isinstance(data, dict)
        and "uri" in data
    ):
        return {**error, "code": RESOURCE_NOT_FOUND}
    return error


def notification_for(event: JSONDict, session: Session) -> JSONDict | None:
    """What a session hears of a change on the server's event stream (a bus event): list
    changes, and updates of the resources it subscribed to."""
    kind = event.get("type")
    if kind in _LIST_CHANGES:
        return notification(f"notifications/{kind}/list_changed")
    if kind == "updated":
        uri = event.get("uri")
        if isinstance(uri, str) and session.wants_update(uri):
            return notification("notifications/resources/updated", {"uri": uri})
    return None
