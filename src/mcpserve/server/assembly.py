"""How a server's parts become its one request pipeline.

:func:`build_dispatcher` puts the method tables together (the core methods, then the
extensions', then the custom ones), hands the handshake era the same handlers, wraps each
handler in the middleware chain when there is one (then nothing runs inline: middleware
may await), puts tracing outside the middleware (its time belongs in the span), and gives
the lot to one :class:`~mcpserve.protocol.core.Dispatcher`.

:func:`initialize_through_middleware` is the one message that does not pass through the
dispatcher: a handshake-era ``initialize`` makes a session, which belongs to a transport.
It still passes through the middleware, like every other message, which may refuse it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..protocol import constants as c
from ..protocol.core import ANONYMOUS, Auth, Dispatcher, Handler, Request, answered
from ..protocol.errors import InvalidRequest, MCPError, error_from_exception
from ..protocol.handshake import Session
from ..protocol.jsonrpc import JSONDict, error_response
from ..protocol.meta import RequestMeta
from .context.context import Context
from .middleware import Middleware, compose, for_method

if TYPE_CHECKING:
    from .handshake import Legacy
    from .methods import MethodTable
    from .runtime import Runtime

Table = dict[str, Handler[Context]]


def build_dispatcher(
    table: MethodTable,
    *,
    runtime: Runtime,
    legacy: Legacy | None,
    notifications: Table,
    middleware: list[Middleware],
    tracer: Any,
    server_info: JSONDict | None,
) -> Dispatcher[Context]:
    """The pipeline answering ``table``'s methods (and, with ``legacy``, the handshake era's)."""
    legacy_table = legacy.handlers(table) if legacy is not None else None
    any_notification = None
    if middleware:
        table = wrapped(middleware, table)
        legacy_table = wrapped(middleware, legacy_table) if legacy_table is not None else None
        notifications = wrapped(middleware, notifications)
        any_notification = wrapped(middleware, {"": Handler(_nothing, inline=True)})[""]
    if tracer is not None:
        from .tracing import traced

        table = traced(table, tracer)
        legacy_table = traced(legacy_table, tracer) if legacy_table is not None else None
    return Dispatcher(
        table,
        context=functools.partial(Context, runtime=runtime),
        server_info=server_info,
        versions=c.MODERN_VERSIONS,
        legacy_handlers=legacy_table,
        legacy_versions=c.LEGACY_VERSIONS if legacy is not None else (),
        notification_handlers=notifications,
        any_notification=any_notification,
    )


def wrapped(middleware: list[Middleware], table: Table) -> Table:
    """Each handler of ``table`` inside the middleware chain that wraps its method; a
    method no middleware wraps keeps its handler, inline path included."""
    result: Table = {}
    for name, handler in table.items():
        chain = for_method(middleware, name)
        result[name] = (
            handler
            if not chain
            else Handler(
                compose(chain, handler.call), resolve=handler.resolve, scopes=handler.scopes
            )
        )
    return result


def _nothing(ctx: Context) -> JSONDict:
    return {}  # a notification nothing handles, after the middleware saw it


async def initialize_through_middleware(
    legacy: Legacy,
    middleware: list[Middleware],
    runtime: Runtime,
    message: JSONDict,
    auth: Auth = ANONYMOUS,
    http: Mapping[str, Any] | None = None,
) -> tuple[Session | None, JSONDict]:
    """A handshake-era ``initialize``: the new session (None when refused) and the response."""
    middleware = for_method(middleware, "initialize")
    if not middleware:
        return legacy.initialize(message)
    outcome: list[tuple[Session | None, JSONDict]] = []

    async def initialize(ctx: Context) -> JSONDict:
        outcome.append(legacy.initialize(message))
        response = outcome[-1][1]
        if "error" in response:
            error = response["error"]
            raise MCPError(error["message"], code=error["code"], data=error.get("data"))
        result: JSONDict = response["result"]
        return result

    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    version = params.get("protocolVersion")
    capabilities = params.get("capabilities")
    meta = RequestMeta(
        version if isinstance(version, str) else "",
        capabilities if isinstance(capabilities, dict) else {},
    )
    request = Request(message["id"], "initialize", params, meta, auth=auth, http=http)
    try:
        result = await answered(compose(middleware, initialize)(Context(request, runtime)))
    except Exception as exc:
        return None, error_response(message["id"], error_from_exception(exc))
    if not outcome or outcome[-1][0] is None:
        refusal = InvalidRequest("Invalid request: the middleware did not start the session")
        return None, error_response(message["id"], refusal)
    return outcome[-1][0], {"jsonrpc": "2.0", "id": message["id"], "result": result}
