"""What a registry holds: the small protocol every entry keeps, one per kind.

An entry is what a request names and runs. Every kind has a ``key`` (a name or a URI), its
list entry as published (``wire``), the ``scopes`` a checked caller needs, whether it answers
without waiting (``synchronous``: the pipeline may then run it inline) and ``run``, which
answers one call: the result, or an awaitable of it.

The function-backed entries (:class:`~.tools.Tool`, :class:`~.prompts.Prompt`,
:class:`~.resources.Resource`, ...) are one implementation; a proxy's forwarded entries
another; a mounted server's entries and transformed tools wrap an entry and answer through
it. Whatever reads the registry (the method table, the lists, the HTTP header checks)
reads these protocols, never a class, so every implementation is served alike.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from typing_extensions import TypeIs

from ..._content import text
from ..._types import JSONDict, Result
from ..context.context import Context
from .cache import CachePolicy

if TYPE_CHECKING:  # loads with the first resource template
    from .uri_template import URITemplate

TaskMode = Literal["optional", "required"]


#: What a tool's name may be: 1 to 128 of A-Z, a-z, 0-9, "_", "-" and ".".
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def error_result(message: str) -> dict[str, Any]:
    """A tool's answer that it failed: ``isError`` with the message as its text."""
    return {"content": [text(message)], "isError": True}


class Entry(Protocol):
    """What every kind of entry has."""

    @property
    def key(self) -> str: ...
    @property
    def wire(self) -> JSONDict: ...
    @property
    def scopes(self) -> frozenset[str]: ...
    @property
    def synchronous(self) -> bool: ...
    def run(self, arguments: Any, ctx: Context) -> Result | Awaitable[Result]: ...


class ToolEntry(Entry, Protocol):
    """A tool: its name is its key; ``header_params`` and ``header_types`` are its
    arguments that a 2026-07-28 HTTP client mirrors into ``Mcp-Param-*`` headers (checked by
    the transport); ``task_mode`` is set when it may run as a task."""

    @property
    def name(self) -> str: ...
    @property
    def header_params(self) -> Mapping[str, str]: ...
    @property
    def header_types(self) -> Mapping[str, str]: ...
    @property
    def task_mode(self) -> TaskMode | None: ...


class PromptEntry(Entry, Protocol):
    """A prompt; ``choices`` are its arguments' known values (from ``Literal`` or ``Enum``
    annotations), which complete without a completer."""

    @property
    def name(self) -> str: ...
    @property
    def choices(self) -> Mapping[str, Sequence[str]]: ...


class ResourceEntry(Entry, Protocol):
    """A resource at one URI; ``cache`` overrides the server's caching hints for reads."""

    @property
    def uri(self) -> str: ...
    @property
    def cache(self) -> CachePolicy | None: ...
    @property
    def mime_type(self) -> str | None: ...


class TemplateEntry(Entry, Protocol):
    """A resource template: ``match`` gives the variables of a URI it serves, or None."""

    @property
    def template(self) -> URITemplate: ...
    @property
    def cache(self) -> CachePolicy | None: ...
    @property
    def mime_type(self) -> str | None: ...
    def match(self, uri: str) -> JSONDict | None: ...


class CompleterEntry(Entry, Protocol):
    """Completions of one prompt argument or template variable."""

    async def complete(self, value: str, arguments: dict[str, str], ctx: Context) -> JSONDict: ...


def is_entry(value: object) -> TypeIs[Entry]:
    """Whether ``value`` is an entry already (a :class:`~.tools.Tool`, a transformed tool,
    ...), to register as it is, rather than a function to make one of."""
    return hasattr(value, "wire") and callable(getattr(value, "run", None))
