"""Mounting: one server's tools, resources, templates, prompts and completions served by
another, under a namespace.

::

    billing = Server("billing")
    ...
    app = Server("app")
    app.mount(billing, namespace="billing")   # billing's pay is app's billing_pay

A :class:`Mount` keeps copies of the child's entries in the parent's registry
(:mod:`.mounted` says what a copy shares and what it changes), and keeps them current: it
listens to the child's registry, so whatever the child registers, removes, switches on or
off later (a proxy refreshing from its upstream, say) changes the parent's lists the same
way, and the parent's listeners hear ``list_changed`` as for its own changes. A resource
update the child publishes (``child.notify_resource_updated(uri)``) reaches the parent's
subscribers under the rewritten URI. The child runs inside the parent: ``parent.running()``
starts each mounted server (its lifespan, its subscription bus) after the parent's own
lifespan, in mount order, and stops them before it.

A child entry whose parent name is taken is refused at mount time (``ValueError`` naming
each clash); one the child adds later whose name is taken is left out, with an error
logged, and the parent keeps its own.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING, Any, Protocol

from ..._types import Event, JSONDict
from ...server.bus import resource_updated
from ...server.entries.kinds import TOOL_NAME, Entry
from ...server.entries.tools import Tool
from ...server.middleware import Middleware
from ...server.registry import CompletionKey, ListKind, Registry
from ...server.runtime import Runtime
from ...server.subscriptions import Subscriptions
from .entries import Copier, Namespace
from .listers import Listers

if TYPE_CHECKING:  # the thread pool, skills, tasks and transformations load on first use
    from concurrent.futures import ThreadPoolExecutor

    from ...extensions.skills.extension import Skills
    from ...extensions.skills.skill import Skill
    from ...extensions.tasks.runner import Tasks
    from ..transform import ToolTransform

logger = logging.getLogger("mcpserve.mounting")


class Mountable(Protocol):
    """What mounting reads of a server, parent or child (``mcpserve.Server`` is one)."""

    name: str
    registry: Registry
    runtime: Runtime
    subscriptions: Subscriptions

    @property
    def mounts(self) -> tuple[Mount, ...]: ...

    @property
    def running_count(self) -> int: ...

    @property
    def skills(self) -> Skills | None: ...

    def running(self) -> AbstractAsyncContextManager[Any]: ...

    def thread_pool(self) -> ThreadPoolExecutor: ...

    def use_skills(self) -> Skills: ...

    def use_tasks(self) -> Tasks: ...


_KINDS = ("tools", "prompts", "resources", "templates", "completers")


class Mount:
    """One server mounted in another: what ``parent.mount(child, namespace=...)`` returns."""

    def __init__(
        self,
        parent: Mountable,
        server: Mountable,
        namespace: str | None,
        *,
        middleware: list[Middleware],
        listers: Listers,
    ) -> None:
        self.parent = parent
        #: The mounted server.
        self.server = server
        self.namespace = Namespace(namespace)
        self._listers = listers
        self._copier = Copier(
            self.namespace, server.registry, server.runtime, middleware, tasks=parent.use_tasks
        )
        #: Per kind, what this mount put in the parent's registry, by the parent's key.
        self._mine: dict[str, dict[Any, Any]] = {kind: {} for kind in _KINDS}
        #: Per kind, by the child's key: (the child's entry, its transforms, the copy).
        self._made: dict[str, dict[Any, tuple[Any, int, Any]]] = {kind: {} for kind in _KINDS}
        #: The child's name of each tool this mount installed, by its name in the parent.
        self._tool_names: dict[str, str] = {}
        #: Transformations of the child's tools, by the child's name, applied in order.
        self._transforms: dict[str, list[ToolTransform]] = {}
        #: The parent's copy of the child's resource lister, when it has one.
        self.lister: Entry | None = None
        self._lister_source: Entry | None = None
        #: The child's skills the parent serves, by the child's URI: (the child's, the copy).
        self._skills: dict[str, tuple[Skill, Skill]] = {}
        #: Whether the child served resources when its tools were last copied.
        self._links = False

    def __repr__(self) -> str:
        return f"Mount({self.server.name!r}, namespace={self.namespace.prefix!r})"

    def name(self, name: str) -> str:
        """A child's tool or prompt name, as the parent serves it."""
        return self.namespace.name(name)

    def uri(self, uri: str) -> str:
        """A child's resource URI or template, as the parent serves it."""
        return self.namespace.uri(uri)

    # -- attaching ----------------------------------------------------------------------------

    def attach(self) -> None:
        """Check that every name the child has is free, copy its entries, and follow it."""
        clashes = self._clashes()
        if clashes:
            where = f" under namespace {self.namespace.prefix!r}" if self.namespace.prefix else ""
            more = f" (and {len(clashes) - 10} more)" if len(clashes) > 10 else ""
            raise ValueError(
                f"Cannot mount server {self.server.name!r}{where}: {'; '.join(clashes[:10])}{more}"
            )
        self._sync_tools()
        self._sync_prompts()
        self._sync_resources()
        self._sync_skills()
        self._sync_completers()
        child = self.server
        self.parent.registry.mounted.append(child.registry)
        child.registry.on_change(self._child_changed)
        child.registry.on_completers_change(self._sync_completers)
        child.subscriptions.sinks.add(self._child_event)

    def _clashes(self) -> list[str]:
        """Why the child's names (switched off or not) do not fit in the parent."""
        ours, theirs = self.parent.registry, self.server.registry
        clashes: list[str] = []
        for name in theirs.tools:
            key = self.name(name)
            if not TOOL_NAME.fullmatch(key):
                clashes.append(f"tool name {key!r} is longer than 128 characters")
            elif key in ours.tools:
                clashes.append(f"a tool named {key!r} is already registered")
        clashes.extend(
            f"a prompt named {self.name(name)!r} is already registered"
            for name in theirs.prompts
            if self.name(name) in ours.prompts
        )
        clashes.extend(
            f"a resource {self.uri(uri)!r} is already registered"
            for uri in theirs.resources
            if self.uri(uri) in ours.resources
        )
        clashes.extend(
            f"a resource template {self.uri(key)!r} is already registered"
            for key in theirs.templates
            if self.uri(key) in ours.templates
        )
        for completion in theirs.completers:
            _, target, argument = self._completion_key(completion)
            if (completion[0], target, argument) in ours.completers:
                clashes.append(
                    f"a completer for {target!r} argument {argument!r} is already registered"
                )
        return clashes

    # -- following the child ------------------------------------------------------------------

    def _child_changed(self, kind: ListKind) -> None:
        if kind == "tools":
            self._sync_tools()
            return
        if kind == "prompts":
            self._sync_prompts()
        else:
            self._sync_resources()
            self._sync_skills()
            if self.server.registry.offers_resources != self._links:
                # Tools and prompts rewrite the URIs they link to only while the child
                # has resources (mounted.py): copy them again.
                self._made["tools"].clear()
                self._made["prompts"].clear()
                self._sync_tools()
                self._sync_prompts()
        self._sync_completers()

    def _child_event(self, event: Event) -> None:
        """The child's bus carried ``event``: a resource update goes to the parent's
        listeners here (the child's bus reached every process it reaches; publishing it on
        the parent's too would deliver it twice)."""
        uri = event.get("uri")
        if event.get("type") == "updated" and isinstance(uri, str):
            self.parent.subscriptions.deliver(resource_updated(self.uri(uri)))

    def _copy(self, kind: str, key: Any, entry: Any, make: Any) -> Any:
        """The copy of ``entry`` made last time, if the child still has that very entry."""
        transforms = self._transforms.get(key, []) if kind == "tools" else []
        made = self._made[kind].get(key)
        if made is not None and made[0] is entry and made[1] == len(transforms):
            return made[2]
        copied = make()
        for transform in transforms:
            copied = transform.apply(copied)
        self._made[kind][key] = (entry, len(transforms), copied)
        return copied

    def _sync_tools(self) -> None:
        child = self.server.registry
        self._links = child.offers_resources
        off = child.disabled["tools"]
        wanted: dict[str, Tool] = {}
        names: dict[str, str] = {}
        for name, tool in child.tools.items():
            if name in off:
                continue
            key = self.name(name)
            if not TOOL_NAME.fullmatch(key):
                logger.error(
                    "Mounted server %r: tool %r is left out: %r is longer than 128 characters",
                    self.server.name,
                    name,
                    key,
                )
                continue
            try:
                copied = self._copy(
                    "tools", name, tool, lambda tool=tool, key=key: self._copier.tool(tool, key)
                )
            except (TypeError, ValueError) as exc:  # the child's new tool lacks what it fixes
                logger.error(
                    "Mounted server %r: tool %r is left out: its transformation no "
                    "longer fits it: %s",
                    self.server.name,
                    name,
                    exc,
                )
                continue
            wanted[copied.name] = copied
            names[copied.name] = name
        self._forget("tools", child.tools)
        self._tool_names = names
        if self._install("tools", self.parent.registry.tools, wanted):
            self.parent.registry.changed("tools")

    def _sync_prompts(self) -> None:
        child = self.server.registry
        off = child.disabled["prompts"]
        wanted = {
            self.name(name): self._copy(
                "prompts",
                name,
                prompt,
                lambda prompt=prompt, name=name: self._copier.prompt(prompt, self.name(name)),
            )
            for name, prompt in child.prompts.items()
            if name not in off
        }
        self._forget("prompts", child.prompts)
        if self._install("prompts", self.parent.registry.prompts, wanted):
            self.parent.registry.changed("prompts")

    def _sync_resources(self) -> None:
        child, parent = self.server.registry, self.parent.registry
        off = child.disabled["resources"]
        skill_files = self._child_skill_files()  # the parent's skills serve those
        wanted: dict[str, JSONDict] = {"resources": {}, "templates": {}}
        for kind, source in (("resources", child.resources), ("templates", child.templates)):
            for key, entry in source.items():
                if key in off or (kind == "resources" and key in skill_files):
                    continue
                wanted[kind][self.uri(key)] = self._copy(
                    kind,
                    key,
                    entry,
                    lambda entry=entry, key=key: self._copier.resource(entry, self.uri(key)),
                )
            self._forget(kind, source)
        changed = self._install("resources", parent.resources, wanted["resources"])
        changed = self._install("templates", parent.templates, wanted["templates"]) or changed
        lister = child.resource_lister
        if lister is not self._lister_source:
            self._lister_source = lister
            self.lister = None if lister is None else self._copier.other(lister, lister.key)
            changed = True
        changed = self._listers.changed() or changed
        if changed:
            parent.changed("resources")

    def _child_skill_files(self) -> set[str]:
        skills = self.server.skills
        return skills.file_uris() if skills is not None else set()

    def _sync_skills(self) -> None:
        """The child's skills, served by the parent's skills extension below the namespace
        (``skill://billing/refunds/SKILL.md``): listed by its ``skills/list``, read and
        browsed as its own."""
        skills = self.server.skills
        theirs = {skill.uri: skill for skill in skills} if skills is not None else {}
        if not theirs and not self._skills:
            return
        parent = self.parent.use_skills()
        copied = self.parent.registry.copied
        for uri, (skill, copy) in list(self._skills.items()):
            if theirs.get(uri) is not skill:
                del self._skills[uri]
                for path in copy.documents:
                    copied.pop(copy.file_uri(path), None)
                if parent.get(copy.uri) is copy:
                    parent.remove(copy.uri)
        from ...extensions.skills.skill import InvalidSkill

        prefix = self.namespace.prefix
        for uri, skill in theirs.items():
            if uri in self._skills:
                continue
            copy = skill if prefix is None else skill.under(prefix)
            try:
                parent.add([copy])
            except InvalidSkill as exc:
                logger.error(
                    "Mounted server %r: skill %r is left out: %s", self.server.name, uri, exc
                )
                continue
            self._skills[uri] = (skill, copy)
            # The child's rule decides its files here too (the joined rule finds them).
            child = self.server.registry
            for path in skill.documents:
                copied[copy.file_uri(path)] = (child, skill.file_uri(path))

    def _completion_key(self, key: CompletionKey) -> CompletionKey:
        kind, target, argument = key
        return (kind, self.name(target) if kind == "ref/prompt" else self.uri(target), argument)

    def _sync_completers(self) -> None:
        child = self.server.registry
        wanted: dict[Any, Any] = {}
        for key, completer in child.completers.items():
            kind, target, _ = key
            if not child.completion_target(kind, target):
                continue
            parent_key = self._completion_key(key)
            wanted[parent_key] = self._copy(
                "completers",
                key,
                completer,
                lambda completer=completer, parent_key=parent_key: self._copier.other(
                    completer, f"{parent_key[1]}:{parent_key[2]}"
                ),
            )
        self._forget("completers", child.completers)
        if self._install("completers", self.parent.registry.completers, wanted):
            self.parent.registry.completers_changed()

    def _forget(self, kind: str, source: Container[object]) -> None:
        made = self._made[kind]
        for key in [key for key in made if key not in source]:
            del made[key]

    def _install(self, kind: str, target: dict[Any, Any], wanted: dict[Any, Any]) -> bool:
        """Make this mount's share of ``target`` be ``wanted``; whether anything changed."""
        mine = self._mine[kind]
        changed = False
        for key in [key for key in mine if key not in wanted]:
            if target.get(key) is mine.pop(key):
                del target[key]
                changed = True
        for key, entry in wanted.items():
            current = mine.get(key)
            if current is entry and target.get(key) is entry:
                continue
            if key in target and target[key] is not current:
                mine.pop(key, None)
                logger.error(
                    "Mounted server %r: %s %r is left out: the parent already has one",
                    self.server.name,
                    kind.rstrip("s"),
                    key,
                )
                continue
            target[key] = entry  # a replaced entry keeps its place in the list
            mine[key] = entry
            changed = True
        return changed

    def middleware_changed(self) -> None:
        """The child registered middleware: copy every entry again, to run inside it."""
        for made in self._made.values():
            made.clear()
        self._lister_source = None
        self._sync_tools()
        self._sync_prompts()
        self._sync_resources()
        self._sync_completers()

    # -- transforming a mounted tool ----------------------------------------------------------

    def owns_tool(self, name: str) -> bool:
        return name in self._mine["tools"]

    def transform_tool(self, name: str, transform: ToolTransform) -> Tool:
        """Transform the mounted tool the parent calls ``name``; the transformation stays,
        applied again whenever the child's tool list changes."""
        parent = self.parent.registry
        made = transform.apply(self._mine["tools"][name])  # a bad transformation fails here
        if made.name != name and made.name in parent.tools:
            raise ValueError(f"A tool named {made.name!r} is already registered")
        self._transforms.setdefault(self._tool_names[name], []).append(transform)
        if name in parent.disabled["tools"]:
            parent.disabled["tools"].add(made.name)
        self._sync_tools()
        tool: Tool = self._mine["tools"][made.name]
        return tool


class Mounts:
    """The servers mounted in one server, in mount order."""

    def __init__(self, parent: Mountable) -> None:
        self.parent = parent
        self.mounts: list[Mount] = []
        self.listers = Listers(parent, self.mounts)

    def add(
        self, server: Mountable, namespace: str | None, *, middleware: list[Middleware]
    ) -> Mount:
        parent = self.parent
        if server is parent or any(below is parent for below in _below(server)):
            raise ValueError(
                f"Cannot mount server {server.name!r} in {parent.name!r}: it would contain itself"
            )
        if parent.running_count:
            raise RuntimeError(
                f"Cannot mount server {server.name!r}: {parent.name!r} is "
                "already serving; mount before it starts"
            )
        mount = Mount(parent, server, namespace, middleware=middleware, listers=self.listers)
        self.mounts.append(mount)
        try:
            mount.attach()
        except BaseException:
            self.mounts.remove(mount)
            raise
        return mount

    def owner_of_tool(self, name: str) -> Mount | None:
        return next((mount for mount in self.mounts if mount.owns_tool(name)), None)

    async def start(self, stack: AsyncExitStack) -> None:
        """Run each mounted server inside the parent (in ``stack``, so it stops first). One
        that fails to start stops what ``stack`` started, the parent's lifespan too, and
        the error propagates."""
        try:
            for mount in self.mounts:
                await stack.enter_async_context(mount.server.running())
        except BaseException:
            try:
                await stack.aclose()
            finally:
                self.parent.runtime.lifespan_state = None
            raise


def _below(server: Mountable) -> Iterator[Mountable]:
    for mount in server.mounts:
        yield mount.server
        yield from _below(mount.server)
