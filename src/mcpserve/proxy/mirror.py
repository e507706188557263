"""The proxy's registry, kept equal to the upstream's lists.

:meth:`Mirror.load` reads one list from the upstream (every page) and makes the registry
match it: new entries are added, entries the upstream no longer lists are removed, and an
entry whose upstream listing changed is replaced; an unchanged one is left alone. Each
change goes through the registry, so the proxy's own listeners hear ``list_changed`` for
exactly what changed, as for any server whose registrations change while it serves.

A list read from a handshake-era client's own upstream process (:mod:`.sessions`) only
adds and changes entries: that process is one client's, and what it lacks is still
listed by the proxy's own. Its tools come in the handshake era's shape, so one that
differs only by the wrapping of its output schema is left alone.

Entries the proxy's own code registered (``@proxy.tool``) stay, and win over an upstream
entry of the same name, which is left out with a warning. An upstream entry the proxy
cannot serve (not an object, no name, an invalid ``inputSchema``, ``x-mcp-header`` or URI
template) is left out with a warning too: one bad entry hides no other.

When the upstream offers completions, each prompt argument and template variable gets a
forwarding completer.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from .._types import JSONDict, JSONValue
from ..extensions.tasks.runner import Tasks
from ..protocol.errors import MCPError
from ..protocol.handshake import handshake_tool
from ..server.entries.kinds import Entry
from ..server.registry import CompletionKey, Registry
from .changes import ListSource
from .entries import (
    ForwardedCompleter,
    ForwardedPrompt,
    ForwardedResource,
    ForwardedTemplate,
    ForwardedTool,
)
from .forwarding import Forwarder
from .tasks import ForwardedTaskTool
from .upstream import Upstream, UpstreamUnavailable
from .wire import UpstreamError

logger = logging.getLogger("mcpserve.proxy")


#: The lists the proxy mirrors, by the capability that offers them.
KINDS = ("tools", "resources", "prompts")
#: Pages read from one list at most (a cursor that never ends is the upstream's bug).
MAX_PAGES = 1000
_FORWARDED = (
    ForwardedTool,
    ForwardedPrompt,
    ForwardedResource,
    ForwardedTemplate,
    ForwardedCompleter,
)


class Mirror:
    """Copies the upstream's tools, resources, templates and prompts into a registry."""

    def __init__(
        self,
        registry: Registry,
        forwarder: Forwarder,
        upstream: Upstream,
        tasks: Callable[[], Tasks],
    ) -> None:
        self.registry = registry
        self.forwarder = forwarder
        self.upstream = upstream
        #: The server's tasks extension, made only for an upstream that offers tasks.
        self._tasks = tasks

    async def load_all(self) -> None:
        """Every list; one the upstream answers badly is left empty, with a warning."""
        for kind in KINDS:
            try:
                await self.load(kind)
            except UpstreamUnavailable:
                raise
            except MCPError as exc:
                logger.warning(
                    "Leaving out the %s of the upstream server %s: %s",
                    kind,
                    self.upstream.label,
                    exc.message,
                )

    async def load(self, kind: str, source: ListSource | None = None) -> None:
        """Make the registry's ``kind`` list (``"resources"``: templates too) the upstream's.

        With ``source`` (a handshake-era client's own upstream process, :mod:`.sessions`),
        the list is read there and only adds and changes entries: what that process does
        not list stays, as the proxy's own connection lists it."""
        offered = kind in self.upstream.capabilities
        lister = source or self.upstream
        apply = functools.partial(self._apply, legacy=lister.legacy, additive=source is not None)
        if kind == "tools":
            tools = await self._list(lister, "tools/list", "tools") if offered else []
            apply(self.registry.tools, self._built(tools, self._tool), "tools")
        elif kind == "prompts":
            prompts = await self._list(lister, "prompts/list", "prompts") if offered else []
            apply(self.registry.prompts, self._built(prompts, self._prompt), "prompts")
        else:
            resources = await self._list(lister, "resources/list", "resources") if offered else []
            templates = (
                await self._list(lister, "resources/templates/list", "resourceTemplates")
                if offered
                else []
            )
            apply(self.registry.resources, self._built(resources, self._resource), "resources")
            apply(self.registry.templates, self._built(templates, self._template), "resources")
        self._complete()

    async def _list(self, lister: ListSource, method: str, key: str) -> list[JSONValue]:
        entries: list[JSONValue] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = await lister.request(method, {"cursor": cursor} if cursor else {})
            page = result.get(key) if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise UpstreamError(
                    f"The upstream server {self.upstream.label} answered "
                    f"{method} with an invalid result (no {key} list)"
                )
            entries.extend(page)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return entries
        logger.warning(
            "The upstream server %s lists more than %d pages of %s; the rest are left out",
            self.upstream.label,
            MAX_PAGES,
            key,
        )
        return entries

    # -- building entries ------------------------------------------------------------------

    def _built(
        self, listed: list[JSONValue], build: Callable[[JSONDict], Entry | None]
    ) -> dict[str, Entry]:
        built: dict[str, Entry] = {}
        for entry in listed:
            try:
                item = build(entry) if isinstance(entry, dict) else None
            except (KeyError, TypeError, ValueError) as exc:
                logger.warning(
                    "Leaving out an entry of the upstream server %s: %s", self.upstream.label, exc
                )
                continue
            if item is None:
                logger.warning(
                    "Leaving out an entry of the upstream server %s that is not a "
                    "valid listing: %.200r",
                    self.upstream.label,
                    entry,
                )
                continue
            built.setdefault(item.key, item)
        return built

    def _tool(self, entry: JSONDict) -> ForwardedTool | None:
        if type(entry.get("name")) is not str or not isinstance(entry.get("inputSchema"), dict):
            return None
        if self.upstream.offers_tasks:
            return ForwardedTaskTool(entry, self.forwarder, self._tasks())
        return ForwardedTool(entry, self.forwarder)

    def _prompt(self, entry: JSONDict) -> ForwardedPrompt | None:
        if type(entry.get("name")) is not str:
            return None
        return ForwardedPrompt(entry, self.forwarder)

    def _resource(self, entry: JSONDict) -> ForwardedResource | None:
        if type(entry.get("uri")) is not str:
            return None
        return ForwardedResource(entry, self.forwarder)

    def _template(self, entry: JSONDict) -> ForwardedTemplate | None:
        if type(entry.get("uriTemplate")) is not str:
            return None
        return ForwardedTemplate(entry, self.forwarder)

    # -- applying them -----------------------------------------------------------------------

    def _apply(
        self,
        current: Mapping[str, Entry],
        built: Mapping[str, Entry],
        kind: str,
        *,
        legacy: bool = False,
        additive: bool = False,
    ) -> None:
        """Make ``current`` hold ``built`` (``additive``: and keep what it does not list).
        ``legacy``: listed in the handshake era, where a tool the same but for its output
        schema's wrapping is unchanged."""
        registry = self.registry
        for key, item in list(current.items()):
            if self._mine(item) and key not in built and not additive:
                _remove(registry, kind, item, key)
        for key, item in built.items():
            existing = current.get(key)
            if existing is None:
                _add(registry, kind, item, replace=False)
            elif not self._mine(existing):
                logger.warning(
                    "The upstream server %s offers %r, which the proxy itself "
                    "registered: the proxy's own is kept",
                    self.upstream.label,
                    key,
                )
            elif type(existing) is not type(item) or not _same(existing.wire, item.wire, legacy):
                _add(registry, kind, item, replace=True)

    def _mine(self, item: object) -> bool:
        return isinstance(item, _FORWARDED) and item.forwarder is self.forwarder

    def _complete(self) -> None:
        """One forwarding completer per prompt argument and template variable, when the
        upstream completes; none otherwise."""
        wanted: dict[CompletionKey, ForwardedCompleter] = {}
        if "completions" in self.upstream.capabilities:
            for name, prompt in self.registry.prompts.items():
                if isinstance(prompt, ForwardedPrompt) and self._mine(prompt):
                    ref = {"type": "ref/prompt", "name": prompt.upstream_name}
                    for argument in prompt.argument_names:
                        key: CompletionKey = ("ref/prompt", name, argument)
                        wanted[key] = ForwardedCompleter(ref, argument, self.forwarder)
            for template_key, template in self.registry.templates.items():
                if isinstance(template, ForwardedTemplate) and self._mine(template):
                    ref = {"type": "ref/resource", "uri": template.upstream_template}
                    for variable in template.template.variables:
                        key = ("ref/resource", template_key, variable)
                        wanted[key] = ForwardedCompleter(ref, variable, self.forwarder)
        completers = self.registry.completers
        for key, completer in list(completers.items()):
            if self._mine(completer) and key not in wanted:
                del completers[key]
        for key, completer in wanted.items():
            existing = completers.get(key)
            if existing is None or (
                isinstance(existing, ForwardedCompleter) and existing.ref != completer.ref
            ):
                self.registry.add_completer(key, completer)


def _same(held: JSONDict, listed: JSONDict, legacy: bool) -> bool:
    if held == listed:
        return True
    return legacy and handshake_tool(held) == handshake_tool(listed)


def _add(registry: Registry, kind: str, item: Any, *, replace: bool) -> None:
    if kind == "tools":
        registry.add_tool(item, replace=replace)
    elif kind == "prompts":
        registry.add_prompt(item, replace=replace)
    else:
        registry.add_resource(item, replace=replace)


def _remove(registry: Registry, kind: str, item: object, key: str) -> None:
    if kind == "tools":
        registry.remove_tool(key)
    elif kind == "prompts":
        registry.remove_prompt(key)
    else:
        registry.remove_resource(key)
