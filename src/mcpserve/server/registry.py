"""What a server offers: its tools, resources, templates, prompts and completers.

Each collection is an insertion-ordered dict, so list results are deterministic and
lookups by name are one dict access. Every change bumps ``version``; listeners registered
with :meth:`Registry.on_change` hear which list changed, so the subscription layer can tell
clients (and caches keyed on ``version`` know to rebuild).

What depends only on the registry is built once per version and kept: each list's wire
entries (:meth:`Registry.entries`) and the scopes the entries declare
(:meth:`Registry.declared_scopes`, which the HTTP endpoint publishes to OAuth clients).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import Literal, TypeGuard, TypeVar, cast

from .._types import JSONDict
from .entries.kinds import (
    CompleterEntry,
    Entry,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
)

T = TypeVar("T")
ListKind = Literal["tools", "resources", "prompts"]
#: One list's wire entries as built at a registry version: (the version, every entry, and
#: each entry with the scopes it needs, when any needs one).
_BuiltList = tuple[int, list[JSONDict], list[tuple[frozenset[str], JSONDict]]]
CompletionKey = tuple[Literal["ref/prompt", "ref/resource"], str, str]


class Registry:
    def __init__(self) -> None:
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: dict[str, TemplateEntry] = {}
        self.prompts: dict[str, PromptEntry] = {}
        self.completers: dict[CompletionKey, CompleterEntry] = {}
        #: Lists more resources on each resources/list (``@server.resource_lister``).
        self.resource_lister: Entry | None = None
        self.version = 0
        self._listeners: list[Callable[[ListKind], None]] = []
        self._completer_listeners: list[Callable[[], None]] = []
        #: Per list: (registry version, every entry, (scopes, entry) pairs when any is scoped).
        self._entries: dict[str, _BuiltList] = {}
        #: (registry version, every scope a switched-on entry declares).
        self._declared: tuple[int, frozenset[str]] = (-1, frozenset())
        #: Registered but switched off: hidden from lists, unknown to calls and reads.
        self.disabled: dict[ListKind, set[str]] = {
            "tools": set(),
            "prompts": set(),
            "resources": set(),
        }

    def on_change(self, listener: Callable[[ListKind], None]) -> None:
        self._listeners.append(listener)

    def on_completers_change(self, listener: Callable[[], None]) -> None:
        self._completer_listeners.append(listener)

    def _changed(self, kind: ListKind) -> None:
        self.version += 1
        for listener in self._listeners:
            listener(kind)

    def changed(self, kind: ListKind) -> None:
        """Announce edits made to one list's dicts directly (a mounted server's entries,
        several at once): one version bump, one notification."""
        self._changed(kind)

    def completers_changed(self) -> None:
        """Announce edits made to :attr:`completers` directly."""
        self.version += 1
        for listener in self._completer_listeners:
            listener()

    # -- adding and removing ---------------------------------------------------------------

    def add_tool(self, tool: ToolEntry, *, replace: bool = False) -> None:
        _check_new(self.tools, tool.name, "tool", replace)
        self.tools[tool.name] = tool
        self._changed("tools")

    def remove_tool(self, name: str) -> ToolEntry:
        tool = _pop(self.tools, name, "tool")
        self._changed("tools")
        return tool

    def add_resource(
        self, resource: ResourceEntry | TemplateEntry, *, replace: bool = False
    ) -> None:
        if is_template(resource):
            _check_new(self.templates, resource.key, "resource template", replace)
            self.templates[resource.key] = resource
        else:
            _check_new(self.resources, resource.key, "resource", replace)
            self.resources[resource.key] = cast("ResourceEntry", resource)
        self._changed("resources")

    def set_resource_lister(self, lister: Entry | None) -> None:
        self.resource_lister = lister
        self._changed("resources")

    @property
    def offers_resources(self) -> bool:
        return bool(self.resources or self.templates or self.resource_lister)

    def remove_resource(self, uri_or_template: str) -> ResourceEntry | TemplateEntry:
        removed: ResourceEntry | TemplateEntry
        if uri_or_template in self.resources:
            removed = self.resources.pop(uri_or_template)
        else:
            removed = _pop(self.templates, uri_or_template, "resource")
        self._changed("resources")
        return removed

    def add_prompt(self, prompt: PromptEntry, *, replace: bool = False) -> None:
        _check_new(self.prompts, prompt.name, "prompt", replace)
        self.prompts[prompt.name] = prompt
        self._changed("prompts")

    def remove_prompt(self, name: str) -> PromptEntry:
        prompt = _pop(self.prompts, name, "prompt")
        self._changed("prompts")
        return prompt

    def set_enabled(self, kind: ListKind, key: str, enabled: bool) -> None:
        """Switch a tool, prompt, resource or template (by URI or template) on or off."""
        known: dict[str, Mapping[str, Entry]] = {
            "tools": self.tools,
            "prompts": self.prompts,
            "resources": {**self.resources, **self.templates},
        }
        if key not in known[kind]:
            raise KeyError(f"Nothing named {key!r} among the {kind}")
        was_enabled = key not in self.disabled[kind]
        if enabled:
            self.disabled[kind].discard(key)
        else:
            self.disabled[kind].add(key)
        if was_enabled != enabled:
            self._changed(kind)

    def tool(self, name: str) -> ToolEntry | None:
        tool = self.tools.get(name)
        if tool is None or (self.disabled["tools"] and name in self.disabled["tools"]):
            return None
        return tool

    def prompt(self, name: str) -> PromptEntry | None:
        prompt = self.prompts.get(name)
        if prompt is None or name in self.disabled["prompts"]:
            return None
        return prompt

    def add_completer(self, key: CompletionKey, completer: CompleterEntry) -> None:
        self.completers[key] = completer
        self.completers_changed()

    def completion_target(self, kind: str, target: str) -> bool:
        """Whether completions can be asked for this prompt (``ref/prompt``) or resource or
        template (``ref/resource``): it is registered and switched on."""
        if kind == "ref/prompt":
            return self.prompt(target) is not None
        if target in self.disabled["resources"]:
            return False
        return target in self.templates or target in self.resources

    def completion_scopes(self, kind: str, target: str) -> frozenset[str]:
        """The scopes of the prompt or resource/template completions are asked for."""
        found = (
            self.prompts.get(target)
            if kind == "ref/prompt"
            else (self.templates.get(target) or self.resources.get(target))
        )
        return found.scopes if found is not None else frozenset()

    # -- reading ----------------------------------------------------------------------------

    def find_resource(
        self, uri: str
    ) -> tuple[ResourceEntry | TemplateEntry, JSONDict | None] | None:
        """The resource serving ``uri`` and, for a template, the values of its variables: an
        exact URI first, then templates in order."""
        off = self.disabled["resources"]
        resource = self.resources.get(uri)
        if resource is not None and uri not in off:
            return resource, None
        for key, template in self.templates.items():
            if key in off:
                continue
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def entries(
        self,
        kind: Literal["tools", "resources", "templates", "prompts"],
        granted: frozenset[str] | None = None,
    ) -> list[JSONDict]:
        """The wire entries of one list, built once per registry version: all of them, or
        only those whose scopes ``granted`` holds (``None``: no restriction)."""
        cached = self._entries.get(kind)
        if cached is None or cached[0] != self.version:
            cached = self._build_entries(kind)
            self._entries[kind] = cached
        _, built, scoped = cached
        if granted is None or not scoped:
            return built
        return [wire for scopes, wire in scoped if scopes <= granted]

    def scoped(self, kind: Literal["tools", "resources", "templates", "prompts"]) -> bool:
        """Whether any entry of the list needs a scope (so the list depends on the caller)."""
        self.entries(kind)
        return bool(self._entries[kind][2])

    def declared_scopes(self) -> frozenset[str]:
        """Every scope a switched-on tool, resource, template or prompt needs, mounted
        servers' and forwarded entries included (they are in this registry too).

        Built once per registry version: until something is registered, removed or switched,
        the same object comes back, so a caller can tell "unchanged" by identity.
        """
        version, scopes = self._declared
        if version != self.version:
            off = self.disabled
            kinds: list[tuple[Mapping[str, Entry], set[str]]] = [
                (self.tools, off["tools"]),
                (self.resources, off["resources"]),
                (self.templates, off["resources"]),
                (self.prompts, off["prompts"]),
            ]
            found = frozenset(
                scope
                for items, disabled in kinds
                for key, item in items.items()
                if key not in disabled
                for scope in item.scopes
            )
            scopes = found if found != scopes else scopes
            self._declared = (self.version, scopes)
        return scopes

    def _build_entries(self, kind: str) -> _BuiltList:
        sources: dict[str, Mapping[str, Entry]] = {
            "tools": self.tools,
            "resources": self.resources,
            "templates": self.templates,
            "prompts": self.prompts,
        }
        off = self.disabled["resources" if kind in ("resources", "templates") else kind]  # type: ignore[index]
        items = [item for key, item in sources[kind].items() if key not in off]
        built = [item.wire for item in items]
        scoped = (
            [(item.scopes, item.wire) for item in items]
            if any(item.scopes for item in items)
            else []
        )
        return self.version, built, scoped


def is_template(resource: ResourceEntry | TemplateEntry) -> TypeGuard[TemplateEntry]:
    """Whether a resource entry is a template (its list entry says so)."""
    return "uriTemplate" in resource.wire


def _check_new(items: Container[str], key: str, what: str, replace: bool) -> None:
    if key in items and not replace:
        raise ValueError(f"A {what} named {key!r} is already registered (pass replace=True)")


def _pop(items: dict[str, T], key: str, what: str) -> T:
    try:
        return items.pop(key)
    except KeyError:
        raise KeyError(f"No {what} named {key!r} is registered") from None
