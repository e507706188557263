"""What a server offers: its tools, resources, templates, prompts and completers.

Each collection is an insertion-ordered dict, so list results are deterministic and
lookups by name are one dict access. Every change bumps ``version``; listeners registered
with :meth:`Registry.on_change` hear which list changed, so the subscription layer can tell
clients (and caches keyed on ``version`` know to rebuild).

What depends only on the registry is built once per version and kept: each list's wire
entries (:meth:`Registry.entries`) and the scopes the entries declare
(:meth:`Registry.declared_scopes`, which the HTTP endpoint publishes to OAuth clients).

What every caller is shown is decided here too (:mod:`.entries.catalogue`): an entry
switched off by key or hidden by its list's :class:`TagFilter` is missing from the lists
and unknown to calls alike; of a name registered in several versions, the dicts hold the
one served (the highest, or the pinned one) and :attr:`Registry.versions` keeps them all.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import Literal, TypeGuard, TypeVar, cast

from .._types import JSONDict
from .entries.catalogue import (
    Component,
    TagFilter,
    VisibilityRule,
    joined_rule,
    parse_version,
    tags_of,
    version_of,
)
from .entries.kinds import (
    CompleterEntry,
    Entry,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
)

T = TypeVar("T")
E = TypeVar("E", bound=Entry)
ListKind = Literal["tools", "resources", "prompts"]
#: One list's wire entries as built at a registry version: (the version, every entry, and
#: each entry with the scopes it needs, when any needs one).
_BuiltList = tuple[int, list[JSONDict], list[tuple[frozenset[str], JSONDict]]]
CompletionKey = tuple[Literal["ref/prompt", "ref/resource"], str, str]


class Registry:
    def __init__(self, tags: TagFilter | None = None) -> None:
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
        #: Per list, the tags it shows (``include_tags``, ``exclude_tags``, ``enable(tags=)``).
        self.tag_filters: dict[ListKind, TagFilter] = {
            kind: TagFilter(tags.include, tags.exclude) if tags else TagFilter()
            for kind in ("tools", "prompts", "resources")
        }
        #: Of each (list, key) registered in several versions: every version, by version.
        self.versions: dict[tuple[ListKind, str], dict[str, Entry]] = {}
        #: The version pinned for a (list, key), served instead of the highest.
        self.pins: dict[tuple[ListKind, str], str] = {}
        #: ``@server.visibility``: the server's own rule (:attr:`visibility` is what is asked).
        self.own_visibility: VisibilityRule | None = None
        #: The registries of mounted servers: their rules decide their entries here too.
        self.mounted: list[Registry] = []
        #: Resources a mounted server's skills put here (the skills extension serves them,
        #: so no wrapper names their origin): by URI, the child's registry and URI.
        self.copied: dict[str, tuple[Registry, str]] = {}

    @property
    def visibility(self) -> VisibilityRule | None:
        """The rule asked per request which entries a caller sees: the server's own, joined
        by those of the servers mounted in it."""
        if not self.mounted:
            return self.own_visibility
        return joined_rule(self.own_visibility, self.mounted, self._entry_of)

    @visibility.setter
    def visibility(self, rule: VisibilityRule | None) -> None:
        self.own_visibility = rule

    def _entry_of(self, component: Component) -> object:
        if component.kind == "tool":
            return self.tools.get(component.name)
        if component.kind == "prompt":
            return self.prompts.get(component.name)
        found = self.resources if component.kind == "resource" else self.templates
        origin = self.copied.get(component.uri or "") if component.kind == "resource" else None
        if origin is not None:  # asked as the child's own entry, as a Mounted one is
            child, uri = origin
            inner = child.resources.get(uri)
            return None if inner is None else CopiedEntry(child, inner)
        return found.get(component.uri or "")

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
        self.tools[tool.name] = self._versioned("tools", self.tools, tool, "tool", replace)
        self._changed("tools")

    def remove_tool(self, name: str) -> ToolEntry:
        """Unregister the tool ``name``, every version of it."""
        tool = _pop(self.tools, name, "tool")
        self.versions.pop(("tools", name), None)
        self._changed("tools")
        return tool

    def add_resource(
        self, resource: ResourceEntry | TemplateEntry, *, replace: bool = False
    ) -> None:
        if is_template(resource):
            what, key = "resource template", resource.key
            self.templates[key] = self._versioned(
                "resources", self.templates, resource, what, replace
            )
        else:
            plain = cast("ResourceEntry", resource)
            key = plain.key
            self.resources[key] = self._versioned(
                "resources", self.resources, plain, "resource", replace
            )
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
        self.versions.pop(("resources", uri_or_template), None)
        self._changed("resources")
        return removed

    def add_prompt(self, prompt: PromptEntry, *, replace: bool = False) -> None:
        self.prompts[prompt.name] = self._versioned(
            "prompts", self.prompts, prompt, "prompt", replace
        )
        self._changed("prompts")

    def remove_prompt(self, name: str) -> PromptEntry:
        prompt = _pop(self.prompts, name, "prompt")
        self.versions.pop(("prompts", name), None)
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

    def set_tags_enabled(self, kind: ListKind | None, tags: frozenset[str], enabled: bool) -> None:
        """Show or hide, in one list or in every list, the entries with any of ``tags``."""
        for each in (kind,) if kind is not None else ("tools", "prompts", "resources"):
            if self.tag_filters[each].switch(tags, enabled):
                self._changed(each)

    def kinds_of(self, key: str) -> list[ListKind]:
        """The lists that have an entry under ``key``."""
        found: list[ListKind] = []
        if key in self.tools:
            found.append("tools")
        if key in self.prompts:
            found.append("prompts")
        if key in self.resources or key in self.templates:
            found.append("resources")
        return found

    def hidden(self, kind: ListKind, key: str, entry: Entry) -> bool:
        """Whether ``entry`` is switched off, by its key or by its tags, for every caller."""
        if key in self.disabled[kind]:
            return True
        rule = self.tag_filters[kind]
        return rule.active and rule.hides(tags_of(entry.wire))

    def tool(self, name: str) -> ToolEntry | None:
        tool = self.tools.get(name)
        if tool is None:
            return None
        # Every tools/call asks: the common case (nothing switched off) costs two lookups.
        if (self.disabled["tools"] or self.tag_filters["tools"].active) and self.hidden(
            "tools", name, tool
        ):
            return None
        return tool

    def prompt(self, name: str) -> PromptEntry | None:
        prompt = self.prompts.get(name)
        if prompt is None or self.hidden("prompts", name, prompt):
            return None
        return prompt

    def pin(self, key: str, version: str | None, kind: ListKind | None = None) -> None:
        """Serve ``version`` of ``key`` instead of the highest (``None``: the highest again)."""
        kinds: tuple[ListKind, ...] = (kind,) if kind else ("tools", "prompts", "resources")
        found = [each for each in kinds if (each, key) in self.versions]
        if not found:
            raise KeyError(f"{key!r} is not registered in several versions")
        for each in found:
            versions = self.versions[(each, key)]
            if version is not None and version not in versions:
                known = ", ".join(versions)
                raise KeyError(f"{key!r} has no version {version!r} (registered: {known})")
            if version is None:
                self.pins.pop((each, key), None)
            else:
                self.pins[(each, key)] = version
            self._serve(each, key, self._current(each, key))

    def _versioned(
        self, kind: ListKind, items: Mapping[str, E], entry: E, what: str, replace: bool
    ) -> E:
        """What ``items[key]`` becomes when ``entry`` is added: ``entry`` itself, or, when it
        is another version of a versioned entry, the version served of them all."""
        key = entry.key
        old = items.get(key)
        new_version = version_of(entry.wire)
        old_version = version_of(old.wire) if old is not None else None
        if old is None or new_version is None or old_version is None:
            _check_new(items, key, what, replace)
            self.versions.pop((kind, key), None)
            if new_version is not None:
                self.versions[(kind, key)] = {new_version: entry}
            return entry
        versions = self.versions.setdefault((kind, key), {old_version: old})
        if new_version in versions and not replace:
            raise ValueError(
                f"Version {new_version} of the {what} {key!r} is already registered "
                "(pass replace=True)"
            )
        versions[new_version] = entry
        return cast("E", self._current(kind, key))

    def _current(self, kind: ListKind, key: str) -> Entry:
        versions = self.versions[(kind, key)]
        pinned = self.pins.get((kind, key))
        if pinned is not None and pinned in versions:
            return versions[pinned]
        return versions[max(versions, key=parse_version)]

    def _serve(self, kind: ListKind, key: str, entry: Entry) -> None:
        if kind == "tools":
            self.tools[key] = cast("ToolEntry", entry)
        elif kind == "prompts":
            self.prompts[key] = cast("PromptEntry", entry)
        elif key in self.templates:
            self.templates[key] = cast("TemplateEntry", entry)
        else:
            self.resources[key] = cast("ResourceEntry", entry)
        self._changed(kind)

    def add_completer(self, key: CompletionKey, completer: CompleterEntry) -> None:
        self.completers[key] = completer
        self.completers_changed()

    def completion_target(self, kind: str, target: str) -> bool:
        """Whether completions can be asked for this prompt (``ref/prompt``) or resource or
        template (``ref/resource``): it is registered and switched on."""
        if kind == "ref/prompt":
            return self.prompt(target) is not None
        found = self.templates.get(target) or self.resources.get(target)
        return found is not None and not self.hidden("resources", target, found)

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
        resource = self.resources.get(uri)
        if resource is not None and not self.hidden("resources", uri, resource):
            return resource, None
        for key, template in self.templates.items():
            if self.hidden("resources", key, template):
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
            kinds: list[tuple[ListKind, Mapping[str, Entry]]] = [
                ("tools", self.tools),
                ("resources", self.resources),
                ("resources", self.templates),
                ("prompts", self.prompts),
            ]
            found = frozenset(
                scope
                for kind, items in kinds
                for key, item in items.items()
                if not self.hidden(kind, key, item)
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
        listed: ListKind = "resources" if kind in ("resources", "templates") else kind  # type: ignore[assignment]
        items = [item for key, item in sources[kind].items() if not self.hidden(listed, key, item)]
        built = [item.wire for item in items]
        scoped = (
            [(item.scopes, item.wire) for item in items]
            if any(item.scopes for item in items)
            else []
        )
        return self.version, built, scoped


class CopiedEntry:
    """A resource a mounted server's skill put in its parent, as the joined visibility rule
    asks for it: the child's registry, and the child's own entry (``inner``)."""

    __slots__ = ("child_registry", "inner")

    def __init__(self, child_registry: Registry, inner: object) -> None:
        self.child_registry = child_registry
        self.inner = inner


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
