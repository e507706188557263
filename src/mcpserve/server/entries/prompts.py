"""Prompts: functions that render messages from string arguments.

The function's parameters are the prompt's arguments. On the wire every argument is a
string; they are validated in lax mode, so a parameter annotated ``int`` receives ``3``
for ``"3"``. A missing required argument or one that does not convert is -32602.

A prompt returns a ``str`` (one user message), a :class:`Message`, a list mixing both,
a dict already shaped as a ``PromptMessage``, or a full ``GetPromptResult``-shaped dict.

An argument whose type allows only a few values (a ``Literal`` or an enum) lists them in
:attr:`Prompt.choices`, which ``completion/complete`` offers when no completer is registered
for that argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pydantic
from typing_extensions import Unpack

from ..._content import to_block
from ..._types import JSONDict, UserFunction
from ...protocol.errors import InvalidParams
from ..context.context import Context
from ..schema.signature import ArgumentSpec, parse_docstring
from .catalogue import catalogue_meta
from .entry import FunctionEntry, InvalidArguments, Pool, called_name, list_entry
from .options import Options, refuse_unknown


@dataclass(frozen=True, slots=True)
class Message:
    """One prompt message; ``content`` is a ``str``, a content helper or a content dict."""

    content: Any
    role: Literal["user", "assistant"] = "user"

    def to_wire(self) -> JSONDict:
        return {"role": self.role, "content": to_block(self.content)}


def user(content: Any) -> Message:
    return Message(content, "user")


def assistant(content: Any) -> Message:
    return Message(content, "assistant")


def to_messages(value: Any) -> JSONDict:
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


class Prompt(FunctionEntry):
    """A registered prompt. Build one with ``@server.prompt``."""

    __slots__ = ("choices",)

    def __init__(self, fn: UserFunction, *, pool: Pool, **options: Unpack[Options]) -> None:
        refuse_unknown(options, Options, "Prompt")
        name = options.get("name")
        name = fn.__name__ if name is None else name
        title, description = options.get("title"), options.get("description")
        icons = options.get("icons")
        meta = catalogue_meta(
            options.get("meta"), options.get("tags"), options.get("version"), name
        )
        blocking, scopes = options.get("blocking"), options.get("scopes", ())
        if not name:
            raise ValueError("A prompt name cannot be empty")
        super().__init__(fn, name, pool=pool, blocking=blocking, scopes=scopes)
        _, param_docs = parse_docstring(fn)
        schema = self.arguments.input_schema
        required = set(schema.get("required", ()))
        listed = []
        for param in self.arguments.param_names:
            entry: JSONDict = {"name": param}
            param_description = schema["properties"][param].get("description")
            if param_description or param in param_docs:
                entry["description"] = param_description or param_docs[param]
            entry["required"] = param in required
            listed.append(entry)
        #: Per argument with a closed set of values (``Literal``, an enum): those values, as
        #: the strings a client sends, in declared order. Open types are not listed.
        self.choices: dict[str, list[str]] = {}
        for param in self.arguments.param_names:
            values = argument_choices(self.arguments, param)
            if values:
                self.choices[param] = values
        self.wire = list_entry(
            fn,
            {"name": name},
            title=title,
            description=description,
            arguments=listed,
            icons=icons,
            _meta=meta,
        )

    @property
    def name(self) -> str:
        return self.key

    def admit(self, arguments: Any, ctx: Context) -> Any:
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidParams("Invalid params: prompt arguments must be an object")
        ctx.begin_rounds(called_name(ctx, self.key), arguments or {})
        return arguments

    def refuse(self, invalid: InvalidArguments, ctx: Context) -> JSONDict:
        raise InvalidParams(f"Invalid arguments for prompt {called_name(ctx, self.key)}: {invalid}")

    def shape(self, value: Any, ctx: Context) -> JSONDict:
        return to_messages(value)


def argument_choices(arguments: ArgumentSpec, name: str) -> list[str]:
    """The values argument ``name`` may take when its type allows only a few: the members of
    a ``Literal`` or the values of an enum (also inside ``X | None``), as strings the
    prompt accepts. Empty for an open type such as ``str``, or a union with one."""
    schema = arguments.input_schema["properties"][name]
    options = schema.get("anyOf") or schema.get("oneOf") or [schema]
    candidates: list[Any] = []
    for option in options:
        if not isinstance(option, dict):
            return []
        if "enum" in option:
            candidates.extend(option["enum"])
        elif "const" in option:
            candidates.append(option["const"])
        elif option.get("type") != "null":
            return []
    texts = dict.fromkeys(
        value if isinstance(value, str) else str(value)
        for value in candidates
        if isinstance(value, str | int) and not isinstance(value, bool)
    )
    # Arguments arrive as strings: offer only those the prompt takes (an IntEnum's "1"
    # converts, a Literal[1]'s does not).
    return [text for text in texts if _accepts(arguments, name, text)]


def _accepts(arguments: ArgumentSpec, name: str, text: str) -> bool:
    try:
        arguments.validate({name: text})
    except pydantic.ValidationError as exc:
        return not any(error["loc"][:1] == (name,) for error in exc.errors())
    return True
