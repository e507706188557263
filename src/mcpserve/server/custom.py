"""Custom JSON-RPC methods: ``@server.method("vendor/name")``.

The request's params (without ``_meta``) are validated against the function's
parameters in lax mode, -32602 when they do not fit. The function returns a dict, a
pydantic model or dataclass (dumped to a dict), or ``None`` for an empty result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pydantic

from ..protocol.errors import InvalidParams
from ..protocol.jsonrpc import JSONDict
from .context import Context
from .handlers import make_invoker
from .middleware import MethodHandler
from .schema import inspect_arguments, inspect_output

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

#: Methods of this and other protocol revisions, never available as custom methods.
RESERVED_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "subscriptions/listen",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
    }
)
RESERVED_PREFIXES = ("notifications/", "rpc.", "tasks/")


def custom_method(
    name: str,
    fn: Callable[..., Any],
    *,
    blocking: bool | None,
    pool: Callable[[], ThreadPoolExecutor],
) -> MethodHandler:
    arguments = inspect_arguments(fn, context_type=Context, strict=False)
    output = inspect_output(fn)
    invoke = make_invoker(fn, blocking=blocking, pool=pool)

    async def handler(ctx: Context) -> JSONDict:
        params = {k: v for k, v in ctx.request.params.items() if k != "_meta"}
        try:
            kwargs = arguments.validate(params)
        except pydantic.ValidationError as exc:
            raise InvalidParams(
                f"Invalid params for {name}: {exc.error_count()} error(s)",
                data=exc.errors(include_url=False, include_input=False),
            ) from None
        if arguments.context_param is not None:
            kwargs[arguments.context_param] = ctx
        value = await invoke(kwargs)
        if value is None:
            return {}
        if isinstance(value, dict):
            return dict(value)
        return dict(output.serialize(value))

    return handler
