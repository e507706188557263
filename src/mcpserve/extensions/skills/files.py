"""Skills from a directory: ``server.add_skills("skills")``.

Every directory below the given one that holds a ``SKILL.md`` is a skill, at
``skill://<prefix>/<its path below the directory>/SKILL.md``; every other file below it is
one of its files. A skill inside another (``outer/inner/SKILL.md``) is a skill of its own,
and its files are also files of the enclosing skill, whose manifest must list everything
below it. Names starting with ``.`` (``.git``, ``.DS_Store``) and ``__pycache__`` are
skipped; links are followed.

Everything is checked and read here, once, before anything is served: a skill that breaks a
rule (frontmatter that cannot be read, a name that is not its directory's, a file that is
not UTF-8 where text is needed, more than a host must accept) raises :class:`InvalidSkill`
naming the file and the rule, so a server with a broken skill does not start. The bytes read
are what is served, and what the digests are of: editing a file while the server runs
changes nothing until it restarts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ...protocol.frontmatter import FrontmatterError, parse_frontmatter
from ...server.entries.cache import CachePolicy
from .skill import (
    MAX_TOTAL_BYTES,
    SKILL_FILE,
    InvalidSkill,
    Skill,
    check_frontmatter,
    skill_path,
)

_SKIPPED = frozenset({"__pycache__"})


def load_skills(
    directory: str | os.PathLike[str],
    *,
    prefix: str | None = None,
    scopes: Iterable[str] | str = (),
    cache: CachePolicy | None = None,
    tags: Iterable[str] | None = None,
) -> list[Skill]:
    """Every skill below ``directory``, checked and read, in path order."""
    root = Path(directory)
    if not root.is_dir():
        raise InvalidSkill(f"{root}: not a directory of skills")
    if (root / SKILL_FILE).is_file():
        raise InvalidSkill(
            f"{root / SKILL_FILE}: add_skills() serves the skills in the subdirectories of "
            f"{root}; pass its parent directory, or move the skill into a subdirectory"
        )
    files = _walk(root)
    skill_dirs = sorted({rel.parent for rel in files if rel.name == SKILL_FILE})
    if not skill_dirs:
        raise InvalidSkill(f"{root}: no SKILL.md in any directory below it")
    skills = []
    for skill_dir in skill_dirs:
        members = {rel: path for rel, path in files.items() if skill_dir in rel.parents}
        loaded = _load_skill(root, skill_dir, members, prefix, scopes, cache, tags)
        skills.append(loaded)
    return skills


def _load_skill(
    root: Path,
    skill_dir: PurePosixPath,
    members: dict[PurePosixPath, Path],
    prefix: str | None,
    scopes: Iterable[str] | str,
    cache: CachePolicy | None,
    tags: Iterable[str] | None,
) -> Skill:
    source = root / skill_dir
    manifest = source / SKILL_FILE
    total = sum(_size(path) for path in members.values())
    if total > MAX_TOTAL_BYTES:
        raise InvalidSkill(
            f"{manifest}: {total} bytes in all, more than the 16 MiB every host must accept"
        )
    documents = {
        rel.relative_to(skill_dir).as_posix(): _read(path) for rel, path in members.items()
    }
    # SKILL.md first: its entry opens the manifest.
    documents = {SKILL_FILE: documents.pop(SKILL_FILE), **documents}
    try:
        text = documents[SKILL_FILE].decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidSkill(f"{manifest}: not UTF-8 text") from None
    try:
        fields = parse_frontmatter(text)
        check_frontmatter(fields)
    except (FrontmatterError, InvalidSkill) as exc:
        raise InvalidSkill(f"{manifest}: {exc}") from None
    if fields["name"] != skill_dir.name:
        raise InvalidSkill(
            f"{manifest}: the name {fields['name']!r} must be the name of the "
            f"skill's directory, {skill_dir.name!r}"
        )
    prefixes = [part for part in (prefix or "").strip("/").split("/") if part]
    path = skill_path("/".join([*prefixes, *skill_dir.parts[:-1]]), skill_dir.name, str(manifest))
    return Skill.loaded(
        fields, path, documents, source=source, scopes=scopes, cache=cache, tags=tags
    )


def _walk(root: Path) -> dict[PurePosixPath, Path]:
    """Every file below ``root`` by its relative path, in path order, links followed."""
    found: dict[PurePosixPath, Path] = {}
    seen = {root.resolve()}
    pending = [(root, PurePosixPath())]
    while pending:
        directory, relative = pending.pop()
        for entry in sorted(os.scandir(directory), key=lambda entry: entry.name):
            if entry.name.startswith(".") or entry.name in _SKIPPED:
                continue
            path = Path(entry.path)
            if entry.is_dir():
                resolved = path.resolve()
                if resolved in seen:
                    raise InvalidSkill(
                        f"{path}: a second way to {resolved}, which is already served"
                    )
                seen.add(resolved)
                pending.append((path, relative / entry.name))
            elif entry.is_file():
                found[relative / entry.name] = path
    return dict(sorted(found.items()))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as exc:
        raise InvalidSkill(f"{path}: cannot be read ({exc.strerror})") from None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidSkill(f"{path}: cannot be read ({exc.strerror})") from None
