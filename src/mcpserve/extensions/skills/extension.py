"""The skills extension (``io.modelcontextprotocol/skills``): what a server serves of skills.

A :class:`~.skill.Skill`'s files are ordinary resources: each is registered in the registry
at its ``skill://`` URI, so ``resources/read``, ``resources/list``, subscriptions and scopes
work on them as on any resource, for every client of either era. Above that, a server that
has skills declares the extension and answers its three methods (to 2026-07-28 requests;
handshake-era clients see the files only, ``docs/decisions.md``, "Skills in both eras"):

* ``skills/list``: every skill's entry, paged like any list, with the caching hints;
* ``skills/get``: one skill's entry by the URI of its ``SKILL.md``, -32602 for any other;
* ``resources/directory/read`` (declared as ``directoryRead``; on unless switched off): the
  direct children of a directory of the ``skill://`` tree (a skill's root, a folder in it,
  or a prefix above skills), -32602 for anything that is not one.

A caller checked by the server's authentication sees only the skills its scopes allow, and
a skill's files and folders need its scopes (``docs/decisions.md``, "Skills and scopes").
A visibility rule (``@server.visibility``) sees a skill as its ``SKILL.md`` resource: a
skill or folder it hides is left out of lists and unknown to the methods, and while a rule
is set the scopes are checked after it, so a hidden target is unknown whatever they are.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import unquote

from ..._types import JSONDict, Result
from ...protocol.constants import SKILLS_EXTENSION
from ...protocol.core import Handler
from ...protocol.errors import InsufficientScope, InternalError, InvalidParams, MethodNotFound
from ...protocol.pagination import paginate
from ...server.context.context import Context
from ...server.entries.catalogue import TAGS_META, then
from ...server.entries.entry import Pool
from ...server.entries.kinds import ResourceEntry
from ...server.entries.resources import CachePolicy, Resource
from ...server.methods import Method
from ...server.registry import Registry
from ...server.settings import Settings
from .skill import MARKDOWN, SKILL_FILE, InvalidSkill, Skill, as_text, media_type

DIRECTORY = "inode/directory"


class Skills:
    """The skills one server serves, by the URI of their ``SKILL.md``, in the order added.

    ``directory_read`` (default true) says whether ``resources/directory/read`` is offered.
    """

    def __init__(self, registry: Registry, settings: Settings, pool: Pool) -> None:
        self.registry = registry
        self.settings = settings
        self.pool = pool
        self._skills: dict[str, Skill] = {}
        #: The resource URIs registered for each skill.
        self._files: dict[str, list[str]] = {}
        self._directory_read = True
        self._tree: dict[str, _Directory] | None = None

    # -- what is served -------------------------------------------------------------------

    def __iter__(self) -> Iterator[Skill]:
        return iter(list(self._skills.values()))

    def __len__(self) -> int:
        return len(self._skills)

    def get(self, uri: str) -> Skill | None:
        """The skill whose ``SKILL.md`` is at ``uri``."""
        return self._skills.get(uri)

    def file_uris(self) -> set[str]:
        """The resource URI of every file of every skill served."""
        return {uri for files in self._files.values() for uri in files}

    @property
    def directory_read(self) -> bool:
        return self._directory_read

    @directory_read.setter
    def directory_read(self, enabled: bool) -> None:
        self._directory_read = bool(enabled)

    # -- joining a server (the seam of server/extension.py) ---------------------------------

    key = SKILLS_EXTENSION

    def capability(self) -> JSONDict | None:
        """Declared while there are skills, as capabilities follow the registry."""
        if not self._skills:
            return None
        return {"directoryRead": True} if self._directory_read else {}

    def methods(self) -> Mapping[str, Method]:
        """The extension's methods, on the 2026-07-28 wire only ("docs/decisions.md",
        "Skills in both eras")."""
        return {name: Method(handler, "modern") for name, handler in self.handlers().items()}

    async def start(self, stack: AsyncExitStack) -> None:
        return None

    def _require(self, method: str) -> None:
        if not self._skills:
            raise MethodNotFound(f"Method not found: {method}")

    def add(self, skills: Sequence[Skill], *, replace: bool = False, nested: bool = False) -> None:
        """Serve ``skills`` (all or none). ``nested``: they come from one directory, so a
        skill inside another is listed in its files; otherwise skills may not nest."""
        batch = {}
        for skill in skills:
            if skill.uri in batch:
                raise InvalidSkill(f"{skill.uri} is given twice")
            batch[skill.uri] = skill
        kept = {uri: skill for uri, skill in self._skills.items() if uri not in batch}
        if not replace and len(kept) < len(self._skills):
            taken = next(uri for uri in batch if uri in self._skills)
            raise InvalidSkill(f"A skill is already served at {taken} (pass replace=True)")
        _check_nesting(list(kept.values()), list(batch.values()), nested)
        replaced = [uri for old in self._skills if old in batch for uri in self._files[old]]
        resources: dict[str, Resource] = {}
        for skill in batch.values():  # each SKILL.md described by its own skill
            resources[skill.uri] = self._resource(skill, SKILL_FILE)
        files: dict[str, list[str]] = {uri: [uri] for uri in batch}
        for skill in batch.values():
            for file_path in skill.documents:
                uri = skill.file_uri(file_path)
                if uri not in resources:
                    resources[uri] = self._resource(skill, file_path)
                if uri != skill.uri:
                    files[skill.uri].append(uri)
        served = self.registry.resources
        clash = next((uri for uri in resources if uri in served and uri not in replaced), None)
        if clash is not None:
            raise InvalidSkill(f"A resource is already registered at {clash}")
        for uri in replaced:
            served.pop(uri, None)
        served.update(resources)
        for uri in batch:
            self._skills.pop(uri, None)
        self._skills.update(batch)
        self._files.update(files)
        self._tree = None
        self.registry.changed("resources")  # one change for all the files, once they are served

    def remove(self, uri: str) -> Skill:
        """Stop serving the skill whose ``SKILL.md`` is at ``uri``, and its files."""
        skill = self._skills.get(uri)
        if skill is None:
            raise KeyError(f"No skill is served at {uri!r}")
        owned = {
            file
            for other in self._skills.values()
            if other is not skill
            for file in self._files[other.uri]
        }
        for file in self._files[uri]:
            if file not in owned:
                self.registry.resources.pop(file, None)
        del self._skills[uri], self._files[uri]
        self._tree = None
        self.registry.changed("resources")
        return skill

    def _resource(self, skill: Skill, file_path: str) -> Resource:
        uri = skill.file_uri(file_path)
        content = skill.content(file_path)
        mime = MARKDOWN if file_path == SKILL_FILE else media_type(file_path, content)
        if file_path == SKILL_FILE:
            wire: Result = {
                "uri": uri,
                "name": skill.name,
                "description": skill.description,
                "mimeType": mime,
            }
        else:
            wire = {"uri": uri, "name": unquote(uri.rsplit("/", 1)[1]), "mimeType": mime}
        options: dict[str, Any] = {  # keyword arguments of the resource
            "pool": self.pool,
            "mime_type": mime,
            "cache": skill.cache,
            "scopes": skill.scopes,
        }
        resource: Resource
        generate = skill.documents[file_path]
        if content is not None:
            wire["size"] = len(content)
            resource = StoredFile(uri, content, **options)
        elif file_path == SKILL_FILE:
            resource = GeneratedSkillFile(
                uri, generate, header=skill.header, blocking=skill.blocking, **options
            )
        else:
            assert callable(generate)
            resource = Resource(uri, generate, blocking=skill.blocking, **options)
        if resource.arguments.param_names:
            raise InvalidSkill(
                f"{skill.uri}: the function for {file_path} may take only a "
                f"Context, not {', '.join(resource.arguments.param_names)}"
            )
        if skill.tags:
            wire["_meta"] = {TAGS_META: sorted(skill.tags)}
        resource.wire = wire
        return resource

    # -- the methods ------------------------------------------------------------------------

    def handlers(self) -> dict[str, Handler[Context]]:
        """The extension's methods, for the method table."""
        return {
            "skills/list": Handler(self.list_skills, inline=True),
            "skills/get": Handler(
                self.get_skill, inline=True, resolve=self._find_skill, scopes=self._needed
            ),
            "resources/directory/read": Handler(
                self.read_directory,
                inline=True,
                resolve=self._find_directory,
                scopes=self._needed,
            ),
        }

    def list_skills(self, ctx: Context) -> Result | Awaitable[Result]:
        self._require("skills/list")
        auth = ctx.request.auth
        personal = auth.checked and any(skill.scopes for skill in self._skills.values())
        skills = [
            skill
            for skill in self._skills.values()
            if (not personal or skill.scopes <= auth.scopes) and self._shown(skill)
        ]
        if self.registry.visibility is None:
            return self._skills_page([skill.entry for skill in skills], ctx, personal)
        # A list per caller: never shared.
        listed: Result | Awaitable[Result] = then(
            self._visible(ctx, [skill.uri for skill in skills]),
            lambda shown: self._skills_page(
                [skill.entry for skill in skills if skill.uri in shown], ctx, True
            ),
        )
        return listed

    def _skills_page(self, entries: list[Result], ctx: Context, personal: bool) -> Result:
        page, next_cursor = paginate(
            entries, ctx.request.params.get("cursor"), self.settings.page_size
        )
        result: Result = {"skills": list(page)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        policy = self.settings.cache
        if personal and policy.scope == "public":  # the caller's own list: never shared
            policy = CachePolicy(policy.ttl_ms, "private")
        return _cached(result, policy)

    def _visible(self, ctx: Context, uris: list[str]) -> Any:
        """Which of these served files the visibility rule shows the caller (a skill is its
        ``SKILL.md``): a set of URIs, now or awaited."""
        rule = self.registry.visibility
        assert rule is not None
        served = self.registry.resources
        wires = [served[uri].wire for uri in uris if uri in served]
        return then(rule.kept(ctx, "resource", wires), lambda kept: {w["uri"] for w in kept})

    def _shown(self, skill: Skill) -> bool:
        """Whether the skill's SKILL.md is served now (not switched off, by key or tag)."""
        return self.registry.find_resource(skill.uri) is not None

    def _find_skill(self, params: Result) -> Skill | None:
        uri = params.get("uri")
        skill = self._skills.get(uri) if type(uri) is str else None
        return skill if skill is not None and self._shown(skill) else None

    def get_skill(self, ctx: Context) -> Result | Awaitable[Result]:
        self._require("skills/get")
        skill: Skill | None = ctx.request.target
        if skill is None:
            raise _no_skill(_uri(ctx.request.params))
        found = skill

        def answer(shown: object = None) -> Result:
            return _cached({"skill": found.entry}, found.cache or self.settings.cache)

        if self.registry.visibility is None:
            return answer()
        return self._if_shown(ctx, [skill.uri], skill.scopes, _no_skill(skill.uri), answer)

    def _if_shown(
        self,
        ctx: Context,
        uris: list[str],
        needed: frozenset[str],
        unknown: Exception,
        answer: Callable[[set[str]], Result],
    ) -> Result | Awaitable[Result]:
        """``answer(shown)`` when the visibility rule shows the caller some of these files and the
        caller holds the ``needed`` scopes (:meth:`_needed` left them to be checked here), else
        ``unknown`` raised: a hidden target is unknown whatever scopes the caller holds."""

        def checked(shown: set[str]) -> Result:
            if not shown:
                raise unknown
            missing = ctx.request.auth.missing(needed)
            if missing:
                raise InsufficientScope(needed, missing)
            return answer(shown)

        result: Result | Awaitable[Result] = then(self._visible(ctx, uris), checked)
        return result

    def _needed(self, target: Any) -> frozenset[str]:
        """The scopes the dispatcher checks first, or none while a visibility rule is set
        (then :meth:`_if_shown` checks them after the rule)."""
        return frozenset() if self.registry.visibility is not None else _scopes(target)

    def _find_directory(self, params: Result) -> _Directory | None:
        uri = params.get("uri")
        if type(uri) is not str or not self._directory_read:
            return None
        return self._directories().get(uri)

    def read_directory(self, ctx: Context) -> Result | Awaitable[Result]:
        if not self._directory_read:
            raise MethodNotFound("Method not found: resources/directory/read")
        self._require("resources/directory/read")
        directory: _Directory | None = ctx.request.target
        if directory is None:
            uri = _uri(ctx.request.params)
            if uri in self.registry.resources:
                raise InvalidParams(f"{uri[:200]} is not a directory resource", data={"uri": uri})
            raise InvalidParams(f"{uri[:200]} names no directory resource", data={"uri": uri})
        auth = ctx.request.auth
        children = [
            wire
            for seen_by, wire in directory.children
            if not auth.checked or any(scopes <= auth.scopes for scopes in seen_by)
        ]
        if self.registry.visibility is None:
            return self._directory_page(children, ctx)
        # A file the rule hides is left out, and a folder with no file shown below it; a
        # directory with none at all is unknown, as one that does not exist.
        uri = _uri(ctx.request.params)
        below = uri.rstrip("/") + "/"
        files = [f for uris in self._files.values() for f in uris if f.startswith(below)]

        def shown_children(shown: set[str]) -> Result:
            kept = [
                wire
                for wire in children
                if wire["uri"] in shown or any(f.startswith(wire["uri"] + "/") for f in shown)
            ]
            return self._directory_page(kept, ctx)

        unknown = InvalidParams(f"{uri[:200]} names no directory resource", data={"uri": uri})
        return self._if_shown(ctx, files, directory.scopes, unknown, shown_children)

    def _directory_page(self, children: list[Result], ctx: Context) -> Result:
        page, next_cursor = paginate(
            children, ctx.request.params.get("cursor"), self.settings.page_size
        )
        result: Result = {"resources": list(page)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    def _directories(self) -> dict[str, _Directory]:
        """Every directory of the skill:// tree and its children, built once per change."""
        if self._tree is None:
            served = self.registry.resources
            self._tree = _build_tree(
                served[uri] for uris in self._files.values() for uri in uris if uri in served
            )
        return self._tree


class _Directory:
    """A directory resource: its direct children, each with the scope sets that may see it."""

    __slots__ = ("children", "scopes")

    def __init__(self) -> None:
        #: (the scope sets of the skills below or at it, its wire entry), in URI order.
        self.children: list[tuple[list[frozenset[str]], Result]] = []
        #: What every skill below it needs: what reading it needs.
        self.scopes: frozenset[str] = frozenset()


def _build_tree(files: Iterable[ResourceEntry]) -> dict[str, _Directory]:
    children: dict[str, dict[str, tuple[list[frozenset[str]], Result]]] = {}
    for resource in files:
        segments = resource.uri.removeprefix("skill://").split("/")
        for depth in range(1, len(segments)):
            parent = "skill://" + "/".join(segments[:depth])
            child = "skill://" + "/".join(segments[: depth + 1])
            entries = children.setdefault(parent, {})
            if child not in entries:
                wire = (
                    resource.wire
                    if depth + 1 == len(segments)
                    else {"uri": child, "name": unquote(segments[depth]), "mimeType": DIRECTORY}
                )
                entries[child] = ([], wire)
            seen_by = entries[child][0]
            if resource.scopes not in seen_by:
                seen_by.append(resource.scopes)
    tree: dict[str, _Directory] = {}
    for uri, entries in children.items():
        directory = tree[uri] = _Directory()
        directory.children = [entries[child] for child in sorted(entries)]
        every = [scopes for seen_by, _ in directory.children for scopes in seen_by]
        directory.scopes = every[0].intersection(*every[1:])
    return tree


class StoredFile(Resource):
    """A skill file whose bytes were fixed when it was registered: read, never recomputed."""

    __slots__ = ("contents",)

    def __init__(self, uri: str, content: bytes, **options: Any) -> None:
        super().__init__(uri, _nothing, **options)
        text = as_text(content)
        self.contents: Result = {"uri": uri, "mimeType": options["mime_type"]}
        if text is None:
            self.contents["blob"] = base64.b64encode(content).decode("ascii")
        else:
            self.contents["text"] = text

    def shape(self, value: Any, ctx: Context) -> Result:
        return {"contents": [dict(self.contents)]}


class GeneratedSkillFile(Resource):
    """A generated skill's ``SKILL.md``: its fixed frontmatter, then the function's text."""

    __slots__ = ("header",)

    def __init__(self, uri: str, fn: Any, *, header: str, **options: Any) -> None:
        super().__init__(uri, fn, **options)
        self.header = header

    def shape(self, value: Any, ctx: Context) -> Result:
        if not isinstance(value, str):
            raise InternalError(
                f"{self.key}: {getattr(self.fn, '__name__', 'the function')}() "
                "must return the SKILL.md body as text"
            )
        text = self.header + "\n" + value if value else self.header
        return {"contents": [{"uri": self.key, "mimeType": MARKDOWN, "text": text}]}


def _nothing() -> None:
    return None


def _scopes(target: Any) -> frozenset[str]:
    return target.scopes  # type: ignore[no-any-return]


def _no_skill(uri: str) -> InvalidParams:
    return InvalidParams(f"No skill is served at {uri[:200]}", data={"uri": uri})


def _uri(params: Result) -> str:
    uri = params.get("uri")
    if type(uri) is not str:
        raise InvalidParams('Invalid params: "uri" must be a string')
    return uri


def _cached(result: Result, policy: CachePolicy) -> Result:
    result["ttlMs"] = policy.ttl_ms
    result["cacheScope"] = policy.scope
    return result


def _check_nesting(served: list[Skill], new: list[Skill], nested: bool) -> None:
    """Refuse a skill inside another unless both come from one directory, whose scan lists
    the inner skill's files among the outer one's."""
    for skill in new:
        others = served if nested else [*served, *new]
        for other in others:
            if other is skill:
                continue
            if skill.root.startswith(other.root + "/") or other.root.startswith(skill.root + "/"):
                inner, outer = (
                    (skill, other) if len(skill.root) > len(other.root) else (other, skill)
                )
                raise InvalidSkill(
                    f"{inner.uri} lies inside the skill {outer.uri}, whose files would not "
                    "include it; serve nested skills from one directory with add_skills()"
                )
