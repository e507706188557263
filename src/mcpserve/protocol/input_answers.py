"""The answers a client gives to a server's input requests, as typed records.

A server handler that asks (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) gets the
client's answer read into one of these; a client's handler may return one instead of the
wire dict, and the client writes it out. Both sides read the same records, so they live
here, apart from either: plain frozen data, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .._types import JSONDict


@dataclass(frozen=True, slots=True)
class ElicitResult:
    """The user's reply: ``action`` is ``"accept"``, ``"decline"`` or ``"cancel"``.

    ``data`` is the validated content when accepted: an instance of the pydantic model
    you asked with, or the content dict for a raw JSON schema.
    """

    action: Literal["accept", "decline", "cancel"]
    data: Any = None
    content: JSONDict | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@dataclass(frozen=True, slots=True)
class SampleResult:
    """The client's LLM reply."""

    role: str
    content: Any
    model: str
    stop_reason: str | None = None

    @property
    def text(self) -> str:
        """The reply's text blocks joined (empty when it holds none)."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


@dataclass(frozen=True, slots=True)
class Root:
    """A directory or other URI the client works in, with a name to show for it."""

    uri: str
    name: str | None = None
