"""Prompts: functions that render messages from string arguments.

The function's parameters are the prompt's arguments. On the wire every argument is a
string; they are validated in lax mode, so a parameter annotated ``int`` receives ``3``
for ``"3"``. A missing required argument or one that does not convert is -32602
(CHECKLIST P04).

A prompt returns a ``str`` (one user message), a :class:`Message`, a list mixing both,
a dict already shaped as a ``PromptMessage``, or a full ``GetPromptResult``-shaped dict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pydantic

from ..protocol.errors import InvalidParams
from .content import to_block
from .context import Context
from .handlers import Invoker, make_invoker
from .rounds import run_asking
from .schema import ArgumentSpec, inspect_arguments, parse_docstring

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor


@dataclass(frozen=True, slots=True)
class Message:
    """One prompt message; ``content`` is a ``str``, a content helper or a content dict."""

    content: Any
    role: Literal["user", "assistant"] = "user"

    def to_wire(self) -> dict[str, Any]:
        return {"role": self.role, "content": to_block(self.content)}


def user(content: Any) -> Message:
    return Message(content, "user")


def assistant(content: Any) -> Message:
    return Message(content, "assistant")


def to_messages(value: Any) -> dict[str, Any]:
    """A prompt function's return value as a ``GetPromptResult`` body."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return dict(value)
    items = value if isinstance(value, list | tuple) else [value]
    messages = []
    for item in items:
        if isinstance(item, Message):
            messages.append(item.to_wire())
        elif isinstance(item, dict) and "role" in item and "content" in item:
            messages.append(item)
        else:
            messages.append({"role": "user", "content": to_block(item)})
    return {"messages": messages}


class Prompt:
    """A registered prompt. Build one with ``@server.prompt``."""

    # A plain class, like the other registrations (see :class:`~.tools.Tool`).
    __slots__ = ("arguments", "fn", "invoke", "name", "wire")

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        arguments: ArgumentSpec,
        invoke: Invoker,
        wire: dict[str, Any],
    ) -> None:
        self.name = name
        self.fn = fn
        self.arguments = arguments
        self.invoke = invoke
        self.wire = wire

    def __repr__(self) -> str:
        return f"Prompt(name={self.name!r}, fn={self.fn!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not registered."""
        return self.fn(*args, **kwargs)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        pool: Callable[[], ThreadPoolExecutor],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        blocking: bool | None = None,
    ) -> Prompt:
        arguments = inspect_arguments(fn, context_type=Context, strict=False)
        doc_description, param_docs = parse_docstring(fn)
        schema = arguments.input_schema
        required = set(schema.get("required", ()))
        listed = []
        for param in arguments.param_names:
            entry: dict[str, Any] = {"name": param}
            param_description = schema["properties"][param].get("description")
            if param_description or param in param_docs:
                entry["description"] = param_description or param_docs[param]
            entry["required"] = param in required
            listed.append(entry)
        name = fn.__name__ if name is None else name
        if not name:
            raise ValueError("A prompt name cannot be empty")
        wire: dict[str, Any] = {"name": name}
        optional = {
            "title": title,
            "description": description if description is not None else doc_description,
            "arguments": listed,
            "icons": icons,
            "_meta": meta,
        }
        wire.update({key: value for key, value in optional.items() if value})
        return cls(name, fn, arguments, make_invoker(fn, blocking=blocking, pool=pool), wire)

    async def render(self, arguments: Any, ctx: Context) -> dict[str, Any]:
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidParams("Invalid params: prompt arguments must be an object")
        ctx.begin_rounds(self.name, arguments or {})
        try:
            kwargs = self.arguments.validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}"
                for e in exc.errors(include_url=False, include_input=False)[:10]
            )
            raise InvalidParams(f"Invalid arguments for prompt {self.name}: {problems}") from None
        if self.arguments.context_param is not None:
            kwargs[self.arguments.context_param] = ctx
        value, input_required = await run_asking(ctx, lambda: self.invoke(kwargs))
        return input_required if input_required is not None else to_messages(value)
