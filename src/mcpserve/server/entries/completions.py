"""Argument completion for prompts and resource templates (``completion/complete``).

A completer is a function of the partial value typed so far. It may also take a parameter
named ``arguments`` (the other arguments the client already filled in, from
``context.arguments``) and a ``Context``::

    @server.completion(prompt="summarize", argument="topic")
    def topics(value: str) -> list[str]:
        return [t for t in TOPICS if t.startswith(value)]

It returns a list of strings or a :class:`Completion`. At most 100 values go on the wire
(the spec's cap); when there are more, ``total`` and ``hasMore`` say so.

A prompt argument with no completer whose type allows only a few values (a ``Literal`` or an
enum, :attr:`~mcpserve.server.entries.prompts.Prompt.choices`) completes to those that start with
the partial value (:func:`choice_completion`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ..._types import JSONDict, UserFunction
from ...protocol.core import answered
from ...protocol.errors import InvalidParams
from ..context.context import Context
from .entry import FunctionEntry, InvalidArguments, Pool

MAX_VALUES = 100


@dataclass(frozen=True, slots=True)
class Completion:
    """Completion values with optional totals, when a completer knows more than it returns."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class Completer(FunctionEntry):
    """A registered completion function."""

    __slots__ = ("arguments_param", "value_param")

    def __init__(
        self, fn: UserFunction, key: str, *, pool: Pool, blocking: bool | None = None
    ) -> None:
        super().__init__(fn, key, pool=pool, blocking=blocking)
        names = self.arguments.param_names
        self.arguments_param = "arguments" if "arguments" in names else None
        values = [name for name in names if name != "arguments"]
        if not values:
            raise TypeError(f"Completer {fn.__name__}() needs a parameter for the partial value")
        self.value_param = values[0]
        required = set(self.arguments.input_schema.get("required", ()))
        for name in values[1:]:
            if name in required:
                raise TypeError(f"Completer {fn.__name__}() has an unexpected parameter {name}")

    async def complete(self, value: str, arguments: dict[str, str], ctx: Context) -> JSONDict:
        """The ``completion`` object for the partial ``value``."""
        return await answered(self.run((value, arguments), ctx))

    def admit(self, arguments: Any, ctx: Context) -> Any:
        value, known = arguments
        bound = {self.value_param: value}
        if self.arguments_param is not None:
            bound[self.arguments_param] = known
        return bound

    def refuse(self, invalid: InvalidArguments, ctx: Context) -> JSONDict:
        raise InvalidParams(f"Invalid arguments for completion {self.key}: {invalid}")

    def shape(self, value: Any, ctx: Context) -> JSONDict:
        return completion_wire(value)


def choice_completion(choices: Iterable[str], value: str) -> JSONDict:
    """The ``completion`` of an argument without a completer: those of its allowed values
    that start with the partial ``value``, in declared order (none for an open type)."""
    return completion_wire([choice for choice in choices if choice.startswith(value)])


def completion_wire(result: Any) -> JSONDict:
    if isinstance(result, Completion):
        values, total, has_more = list(result.values), result.total, result.has_more
    else:
        values, total, has_more = list(result or ()), None, None
    if len(values) > MAX_VALUES:
        total = total if total is not None else len(values)
        values, has_more = values[:MAX_VALUES], True
    wire: JSONDict = {"values": [str(v) for v in values]}
    if total is not None:
        wire["total"] = total
    if has_more is not None:
        wire["hasMore"] = has_more
    return wire


CompletionKey = tuple[Literal["ref/prompt", "ref/resource"], str, str]


def completer_for(
    fn: UserFunction, argument: str, prompt: str | None, resource: str | None, **run: Any
) -> tuple[CompletionKey, Completer]:
    """``@server.completion(...)``: the registry's key for the argument (of ``prompt``, else
    of the template ``resource``) and its completer (``run``: ``pool`` and ``blocking``)."""
    kind: Literal["ref/prompt", "ref/resource"] = "ref/prompt" if prompt else "ref/resource"
    target = prompt or resource or ""
    return (kind, target, argument), Completer(fn, f"{target}:{argument}", **run)
