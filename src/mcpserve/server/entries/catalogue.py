"""Tags, versions and visibility: who sees which part of a server's catalogue.

Three rules decide whether a tool, prompt, resource or template is offered, all on the one
path that lists and calls share, so a caller can call exactly what it can list:

1. **Tags** (``tags={"billing", "beta"}`` on a registration) are published in the entry's
   ``_meta["io.mcpserve/tags"]`` as a sorted list, and read back from there: a mounted,
   transformed or forwarded entry keeps the tags of what it wraps. A :class:`TagFilter`
   per list (``Server(include_tags=..., exclude_tags=...)``, ``server.enable(tags=...)``,
   ``server.disable(tags=...)``) hides entries for every caller: an entry matches a set
   when it has any of its tags; excluded wins; with an include set, untagged entries are
   hidden. The registry applies it when it builds a list and when it finds a target.
2. **Versions** (``version="2"``) are PEP 440 versions, published in
   ``_meta["io.mcpserve/version"]``; the registry serves the highest of a name's versions
   unless one is pinned.
3. **Visibility** (``@server.visibility``) is a function of the caller and the component,
   asked per request: for each entry of a list and for the target of a call. It reads only
   the request (:class:`Caller`) and the entry (:class:`Component`), never anything an
   instance keeps, so every instance behind a balancer answers alike.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from ..._invoking import is_synchronous, make_invoker
from ..._types import JSONDict, UserFunction

if TYPE_CHECKING:
    from ..context.context import Context
    from .entry import Pool

TAGS_META = "io.mcpserve/tags"
VERSION_META = "io.mcpserve/version"
ComponentKind = Literal["tool", "resource", "template", "prompt"]


def catalogue_meta(
    meta: JSONDict | None, tags: Iterable[str] | None, version: str | None, what: str
) -> JSONDict | None:
    """An entry's ``_meta`` with its tags and version added (``meta`` itself when neither is
    given). ``what`` names the registration in the one-line errors."""
    if not tags and version is None:
        return meta
    published: JSONDict = dict(meta or {})
    if tags:
        published[TAGS_META] = sorted(tag_set(tags, what))
    if version is not None:
        check_version(version, what)
        published[VERSION_META] = version
    return published


def tag_set(tags: Iterable[str], what: str) -> frozenset[str]:
    """``tags`` as a set of non-empty strings; one string is one tag, not its letters."""
    if isinstance(tags, str):
        tags = (tags,)
    chosen = frozenset(tags)
    if not all(isinstance(tag, str) and tag for tag in chosen):
        raise TypeError(f"{what}: tags must be non-empty strings, e.g. tags={{'billing'}}")
    return chosen


def check_version(version: object, what: str) -> None:
    """A ``ValueError`` naming ``what`` unless ``version`` is a PEP 440 version."""
    if not isinstance(version, str) or parse_version(version) is None:
        raise ValueError(f"{what}: version={version!r} is not a PEP 440 version, e.g. '2.1'")


def parse_version(version: str) -> Any:
    """The comparable PEP 440 version, or None when ``version`` is not one. ``packaging``
    loads with the first versioned registration."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version)
    except InvalidVersion:
        return None


def tags_of(wire: JSONDict) -> frozenset[str]:
    """The tags an entry publishes (none when it publishes none)."""
    meta = wire.get("_meta")
    tags = meta.get(TAGS_META) if isinstance(meta, dict) else None
    if not isinstance(tags, list):
        return frozenset()
    return frozenset(tag for tag in tags if isinstance(tag, str))


def version_of(wire: JSONDict) -> str | None:
    """The version an entry publishes, or None."""
    meta = wire.get("_meta")
    version = meta.get(VERSION_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


class TagFilter:
    """Which tags a list shows: ``include`` (None: every entry) minus ``exclude``."""

    __slots__ = ("active", "exclude", "include")

    def __init__(self, include: Iterable[str] | None = None, exclude: Iterable[str] = ()):
        self.include = None if include is None else set(tag_set(include, "include_tags"))
        self.exclude = set(tag_set(exclude, "exclude_tags"))
        #: Whether it hides anything: read on every lookup, so kept, not computed.
        self.active = self.include is not None or bool(self.exclude)

    def hides(self, tags: frozenset[str]) -> bool:
        if not tags.isdisjoint(self.exclude):
            return True
        return self.include is not None and tags.isdisjoint(self.include)

    def switch(self, tags: frozenset[str], on: bool) -> bool:
        """Show (``on``) or hide entries with any of ``tags``; whether anything changed."""
        before = (None if self.include is None else set(self.include), set(self.exclude))
        if on:
            self.exclude -= tags
            if self.include is not None:
                self.include |= tags
        else:
            self.exclude |= tags
        self.active = self.include is not None or bool(self.exclude)
        return before != (self.include, self.exclude)


class Caller(NamedTuple):
    """What a visibility rule knows of who asks: from the request alone."""

    principal: str | None
    scopes: frozenset[str]
    client_info: JSONDict | None
    #: The HTTP request's headers, lower-case names (empty over stdio).
    headers: Mapping[str, str]

    @classmethod
    def of(cls, ctx: Context) -> Caller:
        http = ctx.http
        headers: Mapping[str, str] = http.headers if http is not None else {}
        auth = ctx.request.auth
        return cls(auth.principal, auth.scopes, ctx.client_info, headers)


class Component(NamedTuple):
    """What a visibility rule knows of an entry: its kind, its name or URI, tags, version."""

    kind: ComponentKind
    name: str
    uri: str | None
    tags: frozenset[str]
    version: str | None

    @classmethod
    def of(cls, kind: ComponentKind, wire: JSONDict) -> Component:
        uri = wire.get("uri") or wire.get("uriTemplate")
        return cls(kind, wire.get("name", ""), uri, tags_of(wire), version_of(wire))


class VisibilityRule:
    """``@server.visibility``: ``rule(ctx, component) -> bool``, plain, ``async`` or
    blocking (in the thread pool), like any function a server calls."""

    __slots__ = ("fn", "invoke", "names", "synchronous")

    def __init__(self, fn: UserFunction, *, pool: Pool, blocking: bool | None = None):
        names = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if len(names) != 2:
            name = getattr(fn, "__name__", repr(fn))
            raise TypeError(f"visibility rule {name}() must take (ctx, component)")
        self.fn = fn
        self.names = names
        self.invoke = make_invoker(fn, blocking=blocking, pool=pool)
        self.synchronous = is_synchronous(self.invoke)

    def shows(
        self, caller: Caller, components: list[Component]
    ) -> list[bool] | Awaitable[list[bool]]:
        """Whether the caller sees each component: now for a plain rule, else awaited."""
        if self.synchronous:
            return [bool(self.fn(caller, component)) for component in components]
        return self._shown_later(caller, components)

    async def _shown_later(self, caller: Caller, components: list[Component]) -> list[bool]:
        first, second = self.names
        return [bool(await self.invoke({first: caller, second: c})) for c in components]

    def allows(self, ctx: Context, kind: ComponentKind, wire: JSONDict) -> Any:
        """Whether the caller is shown this one entry: a bool, or an awaitable of one."""
        return then(self.shows(Caller.of(ctx), [Component.of(kind, wire)]), _first)

    def kept(self, ctx: Context, kind: ComponentKind, entries: list[JSONDict]) -> Any:
        """The list ``entries`` the caller is shown, now or awaited."""
        components = [Component.of(kind, entry) for entry in entries]

        def keep(flags: list[bool]) -> list[JSONDict]:
            return [entry for entry, show in zip(entries, flags, strict=True) if show]

        return then(self.shows(Caller.of(ctx), components), keep)

    def guarded(
        self,
        ctx: Context,
        kind: ComponentKind,
        wire: JSONDict,
        unknown: Exception,
        answer: Callable[[], Any],
    ) -> Any:
        """``answer()`` when the caller is shown this entry, else ``unknown`` raised, before
        anything of the entry runs: a result, or an awaitable of one."""
        allowed = self.allows(ctx, kind, wire)
        if allowed is True:
            return answer()
        if allowed is False:
            raise unknown

        async def later() -> Any:
            if not await allowed:
                raise unknown
            value = answer()
            return await value if hasattr(type(value), "__await__") else value

        return later()


class MountedRules(VisibilityRule):
    """The rule of a server with mounted servers that have rules of their own: an entry a
    child serves through the parent is shown when the parent's rule (if any) shows it and
    the child's rule shows the child's own entry (its name, URI and tags as the child has
    them). A parent's entry that came from a child has ``child_registry`` (the child's
    registry) and ``inner`` (the child's entry), or wraps such an entry in its ``inner`` (a
    transformed tool); nested mounts recurse through the child's own rule of this kind."""

    __slots__ = ("find", "own")

    def __init__(self, own: VisibilityRule | None, find: Callable[[Component], Any]) -> None:
        self.own = own
        #: The parent's entry a component stands for (None when it has none).
        self.find = find
        self.synchronous = False

    def shows(
        self, caller: Caller, components: list[Component]
    ) -> list[bool] | Awaitable[list[bool]]:
        own = self.own.shows(caller, components) if self.own is not None else None
        return self._joined(caller, components, own)

    async def _joined(self, caller: Caller, components: list[Component], own: Any) -> list[bool]:
        flags: list[bool] = [True] * len(components) if own is None else await _settled(own)
        for index, component in enumerate(components):
            if not flags[index]:
                continue
            entry = self.find(component)
            # A transformation of a mounted tool wraps the copy: the copy knows the child.
            while entry is not None and not hasattr(entry, "child_registry"):
                entry = getattr(entry, "inner", None)
            child = getattr(entry, "child_registry", None)
            rule = child.visibility if child is not None else None
            if rule is not None:
                inner = Component.of(component.kind, entry.inner.wire)
                flags[index] = (await _settled(rule.shows(caller, [inner])))[0]
        return flags


def joined_rule(
    own: VisibilityRule | None, children: Iterable[Any], find: Callable[[Component], Any]
) -> VisibilityRule | None:
    """The rule a registry asks: its own, or a :class:`MountedRules` while one of the
    registries mounted in it (``children``) has a rule."""
    if any(child.visibility is not None for child in children):
        return MountedRules(own, find)
    return own


async def _settled(value: Any) -> Any:
    return await value if hasattr(type(value), "__await__") else value


def _first(flags: list[bool]) -> bool:
    return flags[0]


def then(value: Any, finish: Callable[[Any], Any]) -> Any:
    """``finish(value)``, now or once an awaitable ``value`` is ready."""
    if not hasattr(type(value), "__await__"):
        return finish(value)

    async def later() -> Any:
        return finish(await value)

    return later()


#: What ``tags=`` takes: a set (or any iterable) of strings, or one string.
Tags = Iterable[str]


class Switchable(Protocol):
    """What :func:`switch` needs of a registry."""

    def set_enabled(self, kind: Any, key: str, enabled: bool) -> None: ...
    def set_tags_enabled(self, kind: Any, tags: frozenset[str], enabled: bool) -> None: ...
    def kinds_of(self, key: str) -> list[Any]: ...


def switch(
    registry: Switchable, kind: Any, key: str | None, tags: Tags | None, *, on: bool
) -> None:
    """``server.enable`` and ``server.disable``: one entry by key (in ``kind``'s list, or
    the one list that has it), or every entry with any of ``tags``, in one list or all."""
    if (key is None) == (tags is None):
        verb = "enable" if on else "disable"
        raise TypeError(f"{verb}() takes a key or tags=, e.g. {verb}('tools', 'add')")
    if tags is not None:
        registry.set_tags_enabled(kind, tag_set(tags, "tags"), on)
        return
    assert key is not None
    kinds = [kind] if kind is not None else registry.kinds_of(key)
    if not kinds:
        raise KeyError(f"Nothing named {key!r} is registered")
    for each in kinds:
        registry.set_enabled(each, key, on)


class RuleHolder(Protocol):
    visibility: VisibilityRule | None


def visibility_rule(
    registry: RuleHolder, fn: UserFunction | None, *, pool: Pool, blocking: bool | None
) -> Any:
    """``@server.visibility`` (bare, or with ``blocking=``): the function becomes the
    registry's rule (one per server; a second replaces the first)."""

    def register(fn: UserFunction) -> UserFunction:
        registry.visibility = VisibilityRule(fn, pool=pool, blocking=blocking)
        return fn

    return register(fn) if fn is not None else register
