"""Which era a server speaks, settled when a :class:`~mcpserve.Client` connects over HTTP
(or over stdio, made with ``negotiate=True`` or pinned to a handshake-era version).

The probe (``basic/versioning.mdx`` § Backward Compatibility, as the official clients do
it in their automatic mode): ``server/discover`` at the newest version. A client pinned to
a handshake-era version goes straight to ``initialize``; one pinned to another version
does not probe at all (and never falls back). Only positive evidence of a 2026-07-28
server keeps the client modern; everything else falls back to the handshake:

* a discover result listing a version this client speaks: modern (the client switches to
  that version if its own is not listed);
* ``UnsupportedProtocolVersion`` (-32022): :meth:`Client.request` has already retried
  once with a modern version the error lists; if none is listed but a handshake-era one
  is, fall back; otherwise the server speaks nothing we do, and that error is raised;
* ``HeaderMismatch`` (-32020) or ``MissingClientCapability`` (-32021): a modern server
  refusing this request, raised as it is (falling back would hide the real problem);
* any other JSON-RPC error (an unknown method, "missing session", a handshake-era server's own
  "unsupported version" code), any 4xx without a JSON-RPC body, or a discover result that
  lists no modern version or is not one at all: the handshake.

A 5xx or a network failure is an outage, not an answer about eras: it propagates.

The handshake sends ``initialize`` (the newest handshake-era version, or the one the client
was pinned to with ``protocol_version=``), then ``notifications/initialized``, opens the
session's standalone stream and, with ``log_level=``, sends ``logging/setLevel``. In this
era the server asks its questions as requests of its own; :func:`answer_request` answers
them with the client's input handlers, the same ones that answer ``input_required``. A
server that forgets the session (HTTP 404: restarted, or it ended the session) gets a new
one, as the spec has a client start: :func:`renew`.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

from .._types import JSONDict
from ..protocol import constants as c
from ..protocol.errors import MCPError
from .connections import Connection
from .handlers import Handlers
from .listen import Subscription


class EraClient(Protocol):
    """What settling the era needs of a :class:`~mcpserve.Client`, which has it all."""

    capabilities: JSONDict
    client_info: JSONDict
    connection: Connection
    instructions: str | None
    legacy: bool
    log_level: str | None
    pinned: bool
    protocol_version: str
    server_capabilities: JSONDict
    server_info: JSONDict
    subscriptions: set[Subscription]

    async def request(self, method: str, params: JSONDict | None = None) -> JSONDict: ...

    async def send_raw(self, method: str, params: JSONDict) -> JSONDict: ...

    async def notify(self, method: str, params: JSONDict | None = None) -> None: ...


_MODERN_REFUSALS = frozenset({c.HEADER_MISMATCH, c.MISSING_CLIENT_CAPABILITY})


def _supported(data: Any) -> list[str]:
    versions = data.get("supported") if isinstance(data, dict) else None
    return [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []


def modern_retry(exc: MCPError) -> str | None:
    """The version to retry with after an ``UnsupportedProtocolVersion``, if any."""
    if exc.code != c.UNSUPPORTED_PROTOCOL_VERSION:
        return None
    supported = _supported(exc.data)
    return next((v for v in c.MODERN_VERSIONS if v in supported), None)


async def negotiate(client: EraClient) -> None:
    """Settle the era with the server, then record what it said about itself."""
    if client.protocol_version in c.HANDSHAKE_VERSIONS:
        await handshake(client, client.protocol_version)
        return
    if client.pinned:
        return  # that version, as it is: nothing to find out
    try:
        result = await client.request("server/discover")
    except MCPError as exc:
        if exc.code in _MODERN_REFUSALS:
            raise
        version = c.HANDSHAKE_VERSIONS[0]
        if exc.code == c.UNSUPPORTED_PROTOCOL_VERSION:
            listed = [v for v in c.HANDSHAKE_VERSIONS if v in _supported(exc.data)]
            if not listed and _supported(exc.data):
                raise
            version = listed[0] if listed else version
        await handshake(client, version)
        return
    except ConnectionError as exc:  # an HTTP answer without JSON-RPC in it has a status
        status = getattr(exc, "status", None)
        if not isinstance(status, int) or not 400 <= status < 500:
            raise
        await handshake(client, c.HANDSHAKE_VERSIONS[0])
        return
    versions = result.get("supportedVersions")
    mutual = [v for v in c.MODERN_VERSIONS if isinstance(versions, list) and v in versions]
    if not mutual:
        await handshake(client, c.HANDSHAKE_VERSIONS[0])
        return
    if client.protocol_version not in mutual:
        client.protocol_version = mutual[0]
    record(client, result)


async def handshake(client: EraClient, version: str) -> None:
    """``initialize`` at ``version`` and everything the session needs after it."""
    params = {
        "protocolVersion": version,
        "capabilities": client.capabilities,
        "clientInfo": client.client_info,
    }
    result = await client.send_raw("initialize", params)
    agreed = result.get("protocolVersion")
    if agreed not in c.HANDSHAKE_VERSIONS:
        raise MCPError(
            f"The server chose protocol version {agreed!r}, which this client "
            f"does not speak (it speaks {', '.join(c.HANDSHAKE_VERSIONS)})"
        )
    client.protocol_version = agreed
    client.legacy = True
    connection = client.connection
    connection.begin(agreed)  # type: ignore[attr-defined]
    if hasattr(connection, "renew_session"):
        connection.renew_session = functools.partial(renew, client, agreed)
    record(client, result)
    await client.notify("notifications/initialized")
    await connection.open_standalone()  # type: ignore[attr-defined]
    if client.log_level is not None and "logging" in client.server_capabilities:
        await client.request("logging/setLevel", {"level": client.log_level})


async def renew(client: EraClient, version: str) -> None:
    """A new session for one the server forgot (it answered 404): the handshake again, and
    the client's open subscriptions made again in it, as a new session starts with none."""
    await handshake(client, version)
    for subscription in list(client.subscriptions):
        for uri in (subscription.acknowledged or {}).get("resourceSubscriptions", []):
            await client.request("resources/subscribe", {"uri": uri})


def record(client: EraClient, result: JSONDict) -> None:
    """Keep what a discover or ``initialize`` result says about the server."""
    info = result.get("serverInfo") or (result.get("_meta") or {}).get(c.META_SERVER_INFO)
    client.server_info = info if isinstance(info, dict) else {}
    capabilities = result.get("capabilities")
    client.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
    instructions = result.get("instructions")
    client.instructions = instructions if isinstance(instructions, str) else None


async def answer_request(handlers: Handlers, request: JSONDict) -> JSONDict:
    """The JSON-RPC response to one request the server sent (handshake era)."""
    method = request.get("method")
    params = request.get("params")
    answer: JSONDict = {"jsonrpc": "2.0", "id": request.get("id")}
    try:
        if method == "ping":
            answer["result"] = {}
        else:
            asked = {"q": {"method": method, "params": params if isinstance(params, dict) else {}}}
            answer["result"] = (await handlers.answer(asked))["q"]
    except MCPError as exc:
        answer["error"] = exc.to_wire()
    except Exception as exc:  # a handler failed: the server hears it, the session goes on
        answer["error"] = {"code": c.INTERNAL_ERROR, "message": f"The client failed: {exc}"}
    return answer
