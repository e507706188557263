"""Custom JSON-RPC methods: ``@server.method("vendor/name")``.

The request's params (without ``_meta``) are validated against the function's
parameters in lax mode, -32602 when they do not fit. The function returns a dict, a
pydantic model or dataclass (dumped to a dict), or ``None`` for an empty result.
"""

from __future__ import annotations

from typing import Any

from .._types import JSONDict, UserFunction
from ..protocol.core import answered
from ..protocol.errors import InvalidParams
from .context.context import Context
from .entries.entry import FunctionEntry, InvalidArguments, Pool
from .schema.signature import inspect_output

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
        "resources/directory/read",
    }
)
RESERVED_PREFIXES = ("notifications/", "rpc.", "tasks/", "skills/")


class CustomMethod(FunctionEntry):
    """A function answering one custom JSON-RPC method."""

    __slots__ = ("output",)

    def __init__(
        self, name: str, fn: UserFunction, *, pool: Pool, blocking: bool | None = None
    ) -> None:
        super().__init__(fn, name, pool=pool, blocking=blocking)
        self.output = inspect_output(fn)

    async def answer(self, ctx: Context) -> JSONDict:
        """The method's result for one request."""
        return await answered(self.run(ctx.request.params, ctx))

    def admit(self, arguments: Any, ctx: Context) -> Any:
        return {k: v for k, v in arguments.items() if k != "_meta"}

    def refuse(self, invalid: InvalidArguments, ctx: Context) -> JSONDict:
        raise InvalidParams(
            f"Invalid params for {self.key}: {len(invalid.errors)} error(s)", data=invalid.errors
        )

    def shape(self, value: Any, ctx: Context) -> JSONDict:
        if value is None:
            return {}
        if isinstance(value, dict):
            return dict(value)
        serialized = self.output.serialize(value)
        if not isinstance(serialized, dict):
            raise TypeError(
                f"{self.key} returned {type(value).__name__}: a custom method returns a dict, "
                "a pydantic model or dataclass, or None"
            )
        return serialized
