"""What a server says about itself and how it answers lists: fixed when the server is made.

:func:`capabilities` derives the advertised capabilities from what is registered, so what
``server/discover`` (and a handshake-era ``initialize``) promises is always what the method table
serves (``docs/decisions.md``, "Capabilities follow the registry").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._types import JSONDict
from ..protocol.constants import APP_MIME_TYPE, APPS_EXTENSION, TASKS_EXTENSION
from .entries.cache import CachePolicy
from .registry import Registry


class Settings:
    """A server's identity and answering options; read, never changed while serving."""

    __slots__ = (
        "cache",
        "client_logging",
        "extensions",
        "info",
        "instructions",
        "page_size",
        "tool_search",
    )

    def __init__(
        self,
        info: dict[str, Any],
        *,
        instructions: str | None = None,
        cache: CachePolicy | None = None,
        page_size: int | None = None,
        client_logging: bool = False,
        extensions: dict[str, dict[str, Any]] | None = None,
        tool_search: bool = False,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        #: ``serverInfo``: name, version and the optional display fields.
        self.info = info
        self.instructions = instructions
        #: The caching hints of lists, discovery and resources without a policy of their own.
        self.cache = cache or CachePolicy()
        self.page_size = page_size
        self.client_logging = client_logging
        self.extensions = dict(extensions or {})
        #: tools/list shows search_tools and call_tool instead of the tools (.tool_search).
        self.tool_search = tool_search


def capabilities(
    registry: Registry, settings: Settings, extensions: Mapping[str, JSONDict] | None = None
) -> JSONDict:
    """Server capabilities, derived from what is registered; ``extensions``: what the
    extensions that joined the server offer now (:mod:`.extension`)."""
    offered: JSONDict = {}
    # Changes reach listeners through subscriptions/listen (and handshake-era sessions), so
    # listChanged and subscribe are always true for the features that exist.
    if registry.tools:
        offered["tools"] = {"listChanged": True}
    if registry.offers_resources:
        offered["resources"] = {"subscribe": True, "listChanged": True}
    if registry.prompts:
        offered["prompts"] = {"listChanged": True}
    if registry.completers or any(prompt.choices for prompt in registry.prompts.values()):
        offered["completions"] = {}
    if settings.client_logging:
        offered["logging"] = {}
    declared: JSONDict = {}
    # Apps and tasks are declared by what is registered, wherever it came from (a mounted
    # server's app or task tool included): an app is a resource of the app MIME type.
    if any(resource.mime_type == APP_MIME_TYPE for resource in registry.resources.values()):
        declared[APPS_EXTENSION] = {}
    declared.update(settings.extensions)
    if any(getattr(tool, "task_mode", None) for tool in registry.tools.values()):
        declared[TASKS_EXTENSION] = {}
    declared.update(extensions or {})
    if declared:
        offered["extensions"] = declared
    return offered
