"""A person at the terminal as the client's user: answering what a server asks mid-call.

* Elicitation (a form): the message is shown, the user picks accept, decline or cancel, and
  on accept each field of ``requestedSchema`` is asked for with a click prompt typed by the
  field (string, number, integer, boolean, a choice for ``enum``/``oneOf``, a comma-separated
  list for an array of choices; a nullable ``[t, "null"]`` type as ``t``). An optional field
  left empty is left out. A form with a field outside the spec's primitives (an object, a
  list of free values, a union) cannot be typed in: the reason is shown and the user may only
  decline or cancel, rather than send text the server would refuse and ask for again. A URL
  elicitation shows the URL and asks for the action only.
* Sampling: the messages are shown and the user types the reply, sent as the model's.
* Roots: the current directory, as a ``file://`` root; no question asked.

Everything is written to stderr, so stdout keeps only the command's result. The handlers
are plain functions, run on the event loop: while a person types there is nothing else
to do, and Ctrl-C then interrupts the prompt itself (a prompt in a worker thread would
leave the process waiting for that thread after the interrupt).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._types import JSONDict, JSONValue

if TYPE_CHECKING:  # generic in newer click, so subscripted only for the type checker
    ParamType = click.ParamType[Any]
else:
    ParamType = click.ParamType

#: What the CLI client declares: it can answer every kind a server may ask.
CAPABILITIES: JSONDict = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
    "roots": {},
}

_ACTIONS = click.Choice(["accept", "decline", "cancel"])
_REFUSALS = click.Choice(["decline", "cancel"])
_KINDS: dict[str, ParamType] = {
    "integer": click.INT,
    "number": click.FLOAT,
    "boolean": click.BOOL,
}


def say(message: str) -> None:
    """A progress line or a question's context: stderr, so stdout stays the result."""
    click.echo(message, err=True)


def elicit(params: JSONDict) -> JSONDict:
    """Answer ``elicitation/create`` by asking at the terminal."""
    say(f"The server asks: {params.get('message', '')}")
    if params.get("mode") == "url":
        say(f"  Open: {params.get('url')}")
    schema = params.get("requestedSchema") or {}
    fields: JSONDict = {}
    if params.get("mode") != "url":
        fields = schema.get("properties") or {}
    problem = next(filter(None, (_unaskable(name, field) for name, field in fields.items())), None)
    if problem is not None:
        say(f"  This form cannot be filled in at the terminal: {problem}.")
        return {"action": click.prompt("Answer", type=_REFUSALS, default="cancel", err=True)}
    action = click.prompt("Answer", type=_ACTIONS, default="accept", err=True)
    if action != "accept":
        return {"action": action}
    if params.get("mode") == "url":
        return {"action": "accept"}
    required = set(schema.get("required") or ())
    content: JSONDict = {}
    for name, field in fields.items():
        value = ask_field(name, field, name in required)
        if value is not None:
            content[name] = value
    return {"action": "accept", "content": content}


def _unaskable(name: str, field: JSONValue) -> str | None:
    """Why a field cannot be typed in (None when it can): not one of the spec's primitives."""
    if not isinstance(field, dict):
        return f"field {name!r} is not a schema"
    field = _without_null(field)
    kind = field.get("type")
    if kind in ("string", "number", "integer", "boolean"):
        return None
    if kind in (None, "array") and _choices(field) is not None:
        return None
    if kind == "object" or "properties" in field:
        what = "an object"
    elif kind == "array":
        what = "a list of free values"
    elif isinstance(kind, list) or "anyOf" in field or "oneOf" in field:
        what = "a choice of several types"
    else:
        what = "of no type a form knows" if kind is None else f"of type {kind!r}"
    return (
        f"field {name!r} is {what}, and a form field is a string, a number, a boolean or a choice"
    )


def _without_null(field: JSONDict) -> JSONDict:
    """``X`` for a nullable ``X`` (``[t, "null"]``, or ``anyOf`` with ``null``): leaving the
    field out is how a form answers "none"."""
    kind = field.get("type")
    if isinstance(kind, list) and len(kind) == 2 and "null" in kind:
        return {**field, "type": next(t for t in kind if t != "null")}
    branches = field.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        other = branches[1] if branches[0] == {"type": "null"} else branches[0]
        if isinstance(other, dict):
            rest = {key: value for key, value in field.items() if key != "anyOf"}
            return {**other, **rest}
    return field


def ask_field(name: str, field: JSONDict, required: bool) -> object:
    """One form field, prompted for by its type; ``None`` for an optional one left empty."""
    field = _without_null(field)
    label = field.get("title") or name
    if field.get("description"):
        label = f"{label} ({field['description']})"
    choices = _choices(field)
    multiple = field.get("type") == "array"
    kind: ParamType
    if choices is not None:
        kind = _ChoiceList(choices) if multiple else _Choice(choices)
        label = f"{label} [{', '.join(choices)}]" + (" (comma-separated)" if multiple else "")
    else:
        kind = _KINDS.get(str(field.get("type")), click.STRING)
    default = field.get("default")
    if isinstance(default, list):
        default = ",".join(str(item) for item in default)
    if required and default is None:
        return click.prompt(label, type=kind, err=True, show_choices=False)
    # Optional: an empty answer means "leave it out", so the prompt takes text and the
    # type converts only what was typed.
    return click.prompt(
        label,
        type=_Optional(kind),
        err=True,
        show_choices=False,
        default="" if default is None else default,
        show_default=default is not None,
    )


def _choices(field: JSONDict) -> JSONDict | None:
    """The values a field may take, by the text the user types for each."""
    holder = field.get("items") if field.get("type") == "array" else field
    if not isinstance(holder, dict):
        return None
    if isinstance(holder.get("enum"), list):
        return {str(value): value for value in holder["enum"]}
    options = holder.get("oneOf") or holder.get("anyOf")
    if isinstance(options, list) and all(isinstance(o, dict) and "const" in o for o in options):
        return {str(option["const"]): option["const"] for option in options}
    return None


class _Choice(ParamType):
    name = "choice"

    def __init__(self, choices: JSONDict) -> None:
        self.choices = choices

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value in self.choices:
            return self.choices[value]
        if value in self.choices.values():
            return value
        return self.fail(f"{value!r} is not one of: {', '.join(self.choices)}", param, ctx)


class _ChoiceList(_Choice):
    name = "choices"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, list):
            return value
        words = [word.strip() for word in str(value).split(",") if word.strip()]
        return [super(_ChoiceList, self).convert(word, param, ctx) for word in words]


class _Optional(ParamType):
    """``inner``, except that an empty answer is ``None`` (the field left out)."""

    name = "optional"

    def __init__(self, inner: ParamType) -> None:
        self.inner = inner

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "" or value is None:
            return None
        return self.inner.convert(value, param, ctx)


def sample(params: JSONDict) -> JSONDict:
    """Answer ``sampling/createMessage`` with the reply the user types."""
    say("The server asks for a model reply to:")
    if params.get("systemPrompt"):
        say(f"  [system] {params['systemPrompt']}")
    for message in params.get("messages") or []:
        say(f"  [{message.get('role', '?')}] {_content_text(message.get('content'))}")
    reply = click.prompt("Reply", err=True)
    return {
        "role": "assistant",
        "content": {"type": "text", "text": reply},
        "model": "mcpserve-cli (typed at the terminal)",
        "stopReason": "endTurn",
    }


def _content_text(content: JSONValue) -> str:
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            parts.append(f"<{block.get('type')} {block.get('mimeType', '')}>".replace(" >", ">"))
        else:
            parts.append(json.dumps(block))
    return " ".join(parts)


def list_roots(params: JSONDict) -> JSONDict:
    """Answer ``roots/list``: the current directory."""
    here = Path.cwd()
    return {"roots": [{"uri": here.as_uri(), "name": here.name or str(here)}]}
