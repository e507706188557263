"""What a handler can ask the client for in the middle of a request, and how the answers
are read (into the records of :mod:`mcpserve.protocol.input_answers`, which the client
shares).

Each kind knows its wire form (an entry of ``inputRequests``), the client capability it
needs and how to read the client's answer. An answer that does not have the right shape
reads as *no answer*, so the server asks again instead of failing (``docs/decisions.md``,
"Elicitation answers").

* :class:`Elicit` asks the user: a form (``schema``: a pydantic model or a JSON schema of
  flat primitive properties, checked when the ``Elicit`` is made, :mod:`.form_schema`) or a
  URL to visit (``url``). Never use forms for secrets: the spec sends those through a URL.
* :class:`Sample` asks the client's LLM for a completion.
* :class:`ListRoots` asks for the client's roots.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import orjson
import pydantic

from ..._content import to_block
from ..._types import JSONDict
from ...protocol.input_answers import ElicitResult as ElicitResult
from ...protocol.input_answers import Root as Root
from ...protocol.input_answers import SampleResult as SampleResult
from .forms import FormSchema, form_schema
from .rounds import MISSING

_EMPTY_FORM = FormSchema({"type": "object", "properties": {}})


@functools.lru_cache(maxsize=256)
def _content_validator(schema_json: bytes) -> Any:
    """A JSON Schema 2020-12 validator for a requested schema (one per distinct schema)."""
    import jsonschema  # loaded with the first elicitation answered against a raw schema

    return jsonschema.Draft202012Validator(orjson.loads(schema_json))


def _check_content(schema: JSONDict, content: JSONDict) -> bool:
    """Whether an accepted form's content fits the requested schema: types, required
    fields, ``enum``/``oneOf`` choices, lengths and ranges, as JSON Schema 2020-12 says."""
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not plain JSON (a hand-written schema with Python objects in it)
        import jsonschema

        return bool(jsonschema.Draft202012Validator(schema).is_valid(content))
    return bool(_content_validator(key).is_valid(content))


@dataclass(frozen=True, slots=True)
class Elicit:
    """Ask the user to fill in a form (``schema``) or to visit a ``url``.

    A schema outside what the spec lets a form hold raises :class:`.form_schema.FormSchemaError`
    here, when the ``Elicit`` is made (so at import for one made at module level).
    """

    message: str
    schema: type[pydantic.BaseModel] | JSONDict | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None and self.schema is not None:
            raise ValueError("An elicitation is either a form (schema) or a URL, not both")
        self._form()  # refuses a schema no form can hold now, not after the client saw it

    def _form(self) -> FormSchema:
        return _EMPTY_FORM if self.schema is None else form_schema(self.schema)

    def _json_schema(self) -> JSONDict:
        return self._form().wire

    def to_wire(self) -> JSONDict:
        params: JSONDict = {"mode": "form", "message": self.message}
        if self.url is not None:
            params["mode"] = "url"
            params["url"] = self.url
        else:
            # A copy: whoever handles the result may edit it; the cached schema stays put.
            params["requestedSchema"] = orjson.loads(orjson.dumps(self._json_schema()))
        return {"method": "elicitation/create", "params": params}

    def required_capabilities(self) -> JSONDict:
        return {"elicitation": {"url" if self.url is not None else "form": {}}}

    def parse(self, raw: Any) -> Any:
        if not isinstance(raw, dict) or raw.get("action") not in ("accept", "decline", "cancel"):
            return MISSING
        action = raw["action"]
        if action != "accept":
            return ElicitResult(action)
        if self.url is not None:
            return ElicitResult("accept")
        content = raw.get("content")
        if not isinstance(content, dict):
            return MISSING
        if self.schema is None or isinstance(self.schema, dict):
            if not _check_content(self._json_schema(), content):
                return MISSING
            return ElicitResult("accept", content, content)
        # A model asked with is validated by pydantic: the constraints its schema shows. A
        # field the form made optional because it may be None reads as None when left out.
        missing = [name for name in self._form().absent_is_none if name not in content]
        try:
            data = self.schema.model_validate({**dict.fromkeys(missing), **content})
        except pydantic.ValidationError:
            return MISSING
        return ElicitResult("accept", data, content)


@dataclass(frozen=True, slots=True)
class Sample:
    """Ask the client's LLM. ``messages`` may be one string (a user message)."""

    messages: Any
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    model_preferences: JSONDict | None = None
    metadata: JSONDict | None = None
    tools: list[JSONDict] | None = None
    tool_choice: JSONDict | None = None
    extra: JSONDict = field(default_factory=dict)

    def _messages(self) -> list[JSONDict]:
        items = [self.messages] if isinstance(self.messages, str) else list(self.messages)
        wire = []
        for item in items:
            if isinstance(item, dict) and "role" in item:
                wire.append(item)
            elif hasattr(item, "to_wire"):
                wire.append(item.to_wire())
            else:
                wire.append({"role": "user", "content": to_block(item)})
        return wire

    def to_wire(self) -> JSONDict:
        params: JSONDict = {"messages": self._messages(), "maxTokens": self.max_tokens}
        for key, value in (
            ("systemPrompt", self.system_prompt),
            ("temperature", self.temperature),
            ("stopSequences", self.stop_sequences),
            ("modelPreferences", self.model_preferences),
            ("metadata", self.metadata),
            ("tools", self.tools),
            ("toolChoice", self.tool_choice),
        ):
            if value is not None:
                params[key] = value
        params.update(self.extra)
        return {"method": "sampling/createMessage", "params": params}

    def required_capabilities(self) -> JSONDict:
        return {"sampling": {"tools": {}} if self.tools else {}}

    def parse(self, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return MISSING
        role, content, model = raw.get("role"), raw.get("content"), raw.get("model")
        if role not in ("user", "assistant") or not isinstance(model, str):
            return MISSING
        if not isinstance(content, dict | list):
            return MISSING
        stop = raw.get("stopReason")
        return SampleResult(role, content, model, stop if isinstance(stop, str) else None)


@dataclass(frozen=True, slots=True)
class ListRoots:
    """Ask for the client's roots (the directories or URIs it works in)."""

    def to_wire(self) -> JSONDict:
        return {"method": "roots/list", "params": {}}

    def required_capabilities(self) -> JSONDict:
        return {"roots": {}}

    def parse(self, raw: Any) -> Any:
        roots = raw.get("roots") if isinstance(raw, dict) else None
        if not isinstance(roots, list):
            return MISSING
        parsed = []
        for root in roots:
            if not isinstance(root, dict) or type(root.get("uri")) is not str:
                return MISSING
            name = root.get("name")
            parsed.append(Root(root["uri"], name if isinstance(name, str) else None))
        return parsed
