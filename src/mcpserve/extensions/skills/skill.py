"""A skill: a ``SKILL.md`` and the files beside it, as one record.

A skill is a directory whose ``SKILL.md`` begins with YAML frontmatter (``name`` and
``description`` at least) and whose other files (references, scripts, templates) it points
to by relative path. A server serves each file as a resource at
``skill://<skill-path>/<file-path>``, where the skill path is an optional prefix and then
the skill's name (``skill://acme/billing/refunds/SKILL.md`` is the skill ``refunds``).

A :class:`Skill` is built in one of three ways, and checked when it is built:

* from a directory, by ``server.add_skills(directory)`` (:mod:`.skill_files`): the files'
  bytes are read once and served as they are;
* in code, ``Skill(name, description, body, files={...})``: the frontmatter is written from
  the fields (:func:`~.frontmatter.render_frontmatter`), and the files are the given text or
  bytes;
* generated, when ``body`` or a file is a function (``@server.skill``): it runs on every
  read, so the skill's entry says ``"resources": "dynamic"`` instead of digests.

Its :attr:`~Skill.entry` (what ``skills/list`` and ``skills/get`` answer) is built once: the
frontmatter, and for fixed content the SHA-256 digest and size of every file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import quote

from ..._types import JSONDict, UserFunction
from ...protocol.frontmatter import render_frontmatter
from ...server.entries.cache import CachePolicy
from ...server.entries.catalogue import tag_set
from ...server.entries.entry import scope_set
from ...server.schema.docstrings import parse_docstring

SKILL_FILE = "SKILL.md"
#: What every host must accept of one skill; a server should not serve more.
MAX_FILES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MARKDOWN = "text/markdown"
#: What a file's text or bytes may be, or a function that returns them on each read.
FileContent = str | bytes | UserFunction

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
_RESERVED_METADATA = "io.modelcontextprotocol/"
#: Media types by file suffix: a fixed table, so a skill is served alike on every machine
#: (the ``mimetypes`` module reads the system's own tables).
_MEDIA_TYPES = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": "text/plain",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
    ".css": "text/css",
    ".xml": "application/xml",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".ts": "text/x-typescript",
    ".sql": "application/sql",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
    ".zip": "application/zip",
}


class InvalidSkill(ValueError):
    """A skill that cannot be served: which one (or which file), and the rule it breaks."""


class SkillOptions(TypedDict, total=False):
    """What ``@server.skill`` takes besides the function (see :class:`Skill`)."""

    name: str
    description: str
    files: Mapping[str, FileContent]
    frontmatter: Mapping[str, Any]
    prefix: str
    scopes: Iterable[str] | str
    cache: CachePolicy
    blocking: bool
    #: Labels for the catalogue, on the skill's files (``docs/catalogue.md``).
    tags: Iterable[str]


class Skill:
    """A skill: its frontmatter, its ``SKILL.md`` body and its other files.

    ::

        Skill(
            "git-workflow",
            "Follow this team's Git conventions for branches and commits",
            "# Git workflow\\n\\nName branches after the ticket ...",
            files={"references/commits.md": "..."},
            frontmatter={"license": "MIT", "metadata": {"version": "1.2"}},
        )

    ``body`` and each of ``files`` are text or bytes, or a function returning them (it may
    take a :class:`~mcpserve.Context`), called on every read. ``frontmatter`` holds fields
    other than ``name`` and ``description``. ``prefix`` puts the skill below a path
    (``prefix="acme/billing"``: ``skill://acme/billing/git-workflow/SKILL.md``); ``scopes``
    are what an authenticated caller needs to see and read it; ``cache`` the caching hints of
    its reads and of ``skills/get`` (default: the server's).
    """

    __slots__ = (
        "blocking",
        "cache",
        "documents",
        "entry",
        "frontmatter",
        "header",
        "name",
        "path",
        "scopes",
        "source",
        "tags",
        "uri",
    )

    def __init__(
        self,
        name: str,
        description: str,
        body: str | UserFunction = "",
        *,
        files: Mapping[str, FileContent] | None = None,
        frontmatter: Mapping[str, Any] | None = None,
        prefix: str | None = None,
        scopes: Iterable[str] | str = (),
        cache: CachePolicy | None = None,
        blocking: bool | None = None,
        tags: Iterable[str] | None = None,
    ) -> None:
        extra = dict(frontmatter or {})
        if "name" in extra or "description" in extra:
            raise InvalidSkill(
                f"skill {name!r}: pass name and description as arguments, not in frontmatter="
            )
        fields: JSONDict = {"name": name, "description": description, **extra}
        label = f"skill {name!r}"
        _check(label, check_frontmatter, fields)
        try:
            header = f"---\n{render_frontmatter(fields)}---\n"
        except ValueError as exc:
            raise InvalidSkill(f"{label}: {exc}") from None
        if not (isinstance(body, str) or callable(body)):
            raise InvalidSkill(f"{label}: body must be text or a function returning text")
        documents: dict[str, FileContent] = {
            SKILL_FILE: body if callable(body) else (header + ("\n" + body if body else ""))
        }
        for path, content in (files or {}).items():
            _check(label, check_file_path, path)
            if not isinstance(content, str | bytes) and not callable(content):
                raise InvalidSkill(f"{label}: file {path!r} must be text, bytes or a function")
            documents[path] = content
        _check(label, check_tree, documents)
        self._fill(
            fields,
            skill_path(prefix, name, label),
            documents,
            header=header,
            scopes=scopes,
            cache=cache,
            blocking=blocking,
            source=None,
            tags=tags,
        )

    @classmethod
    def loaded(
        cls,
        fields: JSONDict,
        path: str,
        documents: dict[str, bytes],
        *,
        source: Path,
        scopes: Iterable[str] | str = (),
        cache: CachePolicy | None = None,
        tags: Iterable[str] | None = None,
    ) -> Skill:
        """A skill read from its directory (``source``), its files' bytes served as read."""
        skill = cls.__new__(cls)
        skill._fill(
            fields,
            path,
            dict(documents),
            header="",
            scopes=scopes,
            cache=cache,
            blocking=None,
            source=source,
            tags=tags,
        )
        return skill

    def _fill(
        self,
        fields: JSONDict,
        path: str,
        documents: dict[str, FileContent],
        *,
        header: str,
        scopes: Iterable[str] | str,
        cache: CachePolicy | None,
        blocking: bool | None,
        source: Path | None,
        tags: Iterable[str] | None,
    ) -> None:
        self.name: str = fields["name"]
        #: The SKILL.md frontmatter, as every host reads it.
        self.frontmatter = fields
        #: ``prefix/name``: where the skill's files are, below ``skill://``.
        self.path = path
        self.uri = f"skill://{path}/{SKILL_FILE}"
        #: Every file, ``SKILL.md`` first, by its path in the skill: bytes, text or a function.
        self.documents = documents
        #: What a generated SKILL.md begins with, before the function's text.
        self.header = header
        self.scopes = scope_set(scopes)
        self.cache = cache
        self.blocking = blocking
        #: The directory the skill was read from, if it was.
        self.source = source
        label = str(source / SKILL_FILE) if source is not None else f"skill {self.name!r}"
        #: Labels of the catalogue, on each of its files' list entries (``docs/catalogue.md``).
        self.tags = tag_set(tags, label) if tags else frozenset()
        if len(documents) > MAX_FILES:
            raise InvalidSkill(
                f"{label}: {len(documents)} files, more than the {MAX_FILES} every host must accept"
            )
        resources: Any = "dynamic"
        if not self.dynamic:
            resources = [self._manifest_entry(name) for name in documents]
            total = sum(entry["size"] for entry in resources)
            if total > MAX_TOTAL_BYTES:
                raise InvalidSkill(
                    f"{label}: {total} bytes in all, more than the 16 MiB every host must accept"
                )
        #: What ``skills/list`` and ``skills/get`` answer for it.
        self.entry: JSONDict = {
            "uri": self.uri,
            "frontmatter": fields,
            "resources": resources,
        }

    @property
    def description(self) -> str:
        return self.frontmatter["description"]  # type: ignore[no-any-return]

    @property
    def dynamic(self) -> bool:
        """Whether any file is generated on read, so no digests can be published."""
        return any(callable(content) for content in self.documents.values())

    @property
    def root(self) -> str:
        """The skill's directory resource: ``skill://<skill-path>``."""
        return f"skill://{self.path}"

    def file_uri(self, file_path: str) -> str:
        """The resource URI of one of the skill's files (its path percent-encoded)."""
        return f"{self.root}/{encode_path(file_path)}"

    def content(self, file_path: str) -> bytes | None:
        """The fixed bytes of a file, or ``None`` when a function makes it on each read."""
        content = self.documents[file_path]
        if isinstance(content, str):
            return content.encode()
        return content if isinstance(content, bytes) else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call a generated skill's function directly, as if it were not registered."""
        body = self.documents[SKILL_FILE]
        if not callable(body):
            raise TypeError(f"{self!r} is not generated by a function")
        return body(*args, **kwargs)

    def _manifest_entry(self, file_path: str) -> JSONDict:
        data = self.content(file_path)
        assert data is not None
        return {
            "uri": self.file_uri(file_path),
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
            "size": len(data),
        }

    def under(self, prefix: str) -> Skill:
        """This skill below ``prefix`` (a mounting parent's namespace): the same frontmatter
        and files, at ``skill://<prefix>/<path>``."""
        moved = Skill.__new__(Skill)
        moved._fill(
            self.frontmatter,
            f"{prefix}/{self.path}",
            self.documents,
            header=self.header,
            scopes=self.scopes,
            cache=self.cache,
            blocking=self.blocking,
            source=self.source,
            tags=self.tags,
        )
        return moved

    def __repr__(self) -> str:
        return f"Skill({self.uri!r})"


def generated_skill(fn: UserFunction, **options: Any) -> Skill:
    """The skill ``@server.skill`` makes of ``fn``: named after it (``_`` as ``-``),
    described by its docstring, unless ``name=`` and ``description=`` say otherwise."""
    name = options.pop("name", None) or fn.__name__.replace("_", "-")
    description = options.pop("description", None) or parse_docstring(fn)[0]
    if not description:
        raise InvalidSkill(
            f"skill {name!r}: give {fn.__name__}() a docstring, or pass description="
        )
    return Skill(name, description, fn, **options)


def skill_maker(
    add: Callable[[Skill], Skill], options: Mapping[str, Any]
) -> Callable[[UserFunction], Skill]:
    """What ``@server.skill(**options)`` applies: make a generated skill of the function and
    serve it with ``add``."""

    def make(fn: UserFunction) -> Skill:
        return add(generated_skill(fn, **options))

    return make


def check_frontmatter(fields: Mapping[str, Any]) -> None:
    """The rules the Agent Skills format sets on the fields mcpserve knows; others pass."""
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidSkill("the frontmatter has no name")
    if len(name) > 64 or not _NAME.fullmatch(name):
        raise InvalidSkill(
            f"the name {name!r} breaks the naming rules: 1 to 64 lowercase "
            "letters, digits and hyphens, with no hyphen at either end and "
            "no two in a row"
        )
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise InvalidSkill(
            "the frontmatter has no description (say what the skill does and when to use it)"
        )
    if len(description) > 1024:
        raise InvalidSkill(f"the description is {len(description)} characters; at most 1024")
    for field in ("license", "compatibility", "allowed-tools"):
        if field in fields and not isinstance(fields[field], str):
            raise InvalidSkill(f"{field} must be text")
    if len(fields.get("compatibility", "")) > 500:
        raise InvalidSkill("compatibility must be at most 500 characters")
    metadata = fields.get("metadata")
    if metadata is None and "metadata" not in fields:
        return
    if not isinstance(metadata, Mapping):
        raise InvalidSkill("metadata must be a mapping of keys to text")
    for key, value in metadata.items():
        if not isinstance(value, str):
            raise InvalidSkill(f"metadata {key!r} must be text; quote it")
        if key.startswith(_RESERVED_METADATA):
            raise InvalidSkill(
                f"metadata {key!r}: keys under {_RESERVED_METADATA} are reserved for MCP extensions"
            )


def check_file_path(path: str) -> None:
    """A file's path within its skill: relative, ``/``-separated, nothing hidden above it."""
    parts = path.split("/") if isinstance(path, str) else [""]
    if any(part in ("", ".", "..") for part in parts) or "\\" in path:
        raise InvalidSkill(
            f"file path {path!r} must be relative, '/'-separated, without '.' or '..'"
        )
    if path == SKILL_FILE:
        raise InvalidSkill("SKILL.md is the skill's body: pass it as body=")


def check_tree(documents: Mapping[str, Any]) -> None:
    """No path is both a file and a directory (``notes`` and ``notes/a.md``)."""
    directories = {path.rsplit("/", 1)[0] for path in documents if "/" in path}
    directories |= {d.rsplit("/", i)[0] for d in directories for i in range(d.count("/") + 1)}
    clashes = sorted(directories & set(documents))
    if clashes:
        raise InvalidSkill(f"{clashes[0]!r} is both a file and a directory")


def skill_path(prefix: str | None, name: str, label: str) -> str:
    """``prefix/name``, each prefix segment a valid URI authority and path segment."""
    segments = [*prefix.strip("/").split("/"), name] if prefix else [name]
    for segment in segments[:-1]:
        if not _SEGMENT.fullmatch(segment) or segment in (".", ".."):
            raise InvalidSkill(
                f"{label}: the prefix segment {segment!r} cannot be part of a "
                "skill:// URI (use letters, digits, '-', '_', '.' and '~')"
            )
    return "/".join(segments)


def encode_path(file_path: str) -> str:
    """A file path as a URI path: each segment percent-encoded where a URI needs it."""
    return "/".join(quote(part, safe="!$&'()*+,;=:@~") for part in file_path.split("/"))


def media_type(file_path: str, content: bytes | None) -> str:
    """A file's media type: by its suffix, else text or bytes by what it holds."""
    suffix = file_path[file_path.rfind(".") :].lower() if "." in file_path else ""
    known = _MEDIA_TYPES.get(suffix)
    if known is not None:
        return known
    if content is not None and as_text(content) is None:
        return "application/octet-stream"
    return "text/plain"


def as_text(content: bytes) -> str | None:
    """The content as text when it is UTF-8 without NUL bytes (so the bytes round-trip)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def _check(label: str, check: Callable[[Any], None], value: Any) -> None:
    try:
        check(value)
    except InvalidSkill as exc:
        raise InvalidSkill(f"{label}: {exc}") from None
