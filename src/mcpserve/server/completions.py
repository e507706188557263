"""Argument completion for prompts and resource templates (``completion/complete``).

A completer is a function of the partial value typed so far. It may also take a parameter
named ``arguments`` (the other arguments the client already filled in, from
``context.arguments``) and a ``Context``::

    @server.completion(prompt="summarize", argument="topic")
    def topics(value: str) -> list[str]:
        return [t for t in TOPICS if t.startswith(value)]

It returns a list of strings or a :class:`Completion`. At most 100 values go on the wire
(CHECKLIST C03); when there are more, ``total`` and ``hasMore`` say so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_type_hints

from .context import Context
from .handlers import Invoker, make_invoker

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

MAX_VALUES = 100


@dataclass(frozen=True, slots=True)
class Completion:
    """Completion values with optional totals, when a completer knows more than it returns."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class Completer:
    """A registered completion function, with how to call it."""

    # A plain class, like the other registrations (see :class:`~.tools.Tool`).
    __slots__ = ("arguments_param", "context_param", "fn", "invoke", "value_param")

    def __init__(
        self,
        fn: Callable[..., Any],
        invoke: Invoker,
        value_param: str,
        arguments_param: str | None,
        context_param: str | None,
    ) -> None:
        self.fn = fn
        self.invoke = invoke
        self.value_param = value_param
        self.arguments_param = arguments_param
        self.context_param = context_param

    def __repr__(self) -> str:
        return f"Completer(fn={self.fn!r})"

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        pool: Callable[[], ThreadPoolExecutor],
        blocking: bool | None = None,
    ) -> Completer:
        hints = get_type_hints(fn)
        value_param = arguments_param = context_param = None
        for param in inspect.signature(fn).parameters.values():
            hint = hints.get(param.name)
            if isinstance(hint, type) and issubclass(hint, Context):
                context_param = param.name
            elif param.name == "arguments":
                arguments_param = param.name
            elif value_param is None:
                value_param = param.name
            elif param.default is inspect.Parameter.empty:
                raise TypeError(
                    f"Completer {fn.__name__}() has an unexpected parameter {param.name}"
                )
        if value_param is None:
            raise TypeError(f"Completer {fn.__name__}() needs a parameter for the partial value")
        return cls(
            fn,
            make_invoker(fn, blocking=blocking, pool=pool),
            value_param,
            arguments_param,
            context_param,
        )

    async def complete(self, value: str, arguments: dict[str, str], ctx: Context) -> dict[str, Any]:
        kwargs: dict[str, Any] = {self.value_param: value}
        if self.arguments_param is not None:
            kwargs[self.arguments_param] = arguments
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        return completion_wire(await self.invoke(kwargs))


def completion_wire(result: Any) -> dict[str, Any]:
    if isinstance(result, Completion):
        values, total, has_more = list(result.values), result.total, result.has_more
    else:
        values, total, has_more = list(result or ()), None, None
    if len(values) > MAX_VALUES:
        total = total if total is not None else len(values)
        values, has_more = values[:MAX_VALUES], True
    wire: dict[str, Any] = {"values": [str(v) for v in values]}
    if total is not None:
        wire["total"] = total
    if has_more is not None:
        wire["hasMore"] = has_more
    return wire
