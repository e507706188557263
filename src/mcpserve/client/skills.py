"""Skills on the client side (the ``io.modelcontextprotocol/skills`` extension): listing a
server's skills, and loading one with every file checked against its entry.

:meth:`~mcpserve.Client.list_skills` reads every page of ``skills/list`` and reads no file:
a host must not fetch a skill's files ahead of need, not on connection, not on listing.
:meth:`~mcpserve.Client.load_skill` is that need. It reads the skill's ``SKILL.md`` and
checks it against the entry it was listed with, before anything of it is used:

* its size and SHA-256 digest, when the entry lists them (not for ``"resources":
  "dynamic"``): a byte count that differs is a failure whether or not the digest would be;
* its YAML frontmatter, parsed and compared field by field with the entry's frontmatter.

Any discrepancy raises :class:`SkillVerificationError` and nothing of the skill is
returned. A :class:`LoadedSkill` then reads the skill's other files one at a time, when
asked (:meth:`LoadedSkill.read`), each checked against its listed size and digest the same
way.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Protocol

from .._types import JSONDict
from ..protocol.errors import MCPError


class SkillClient(Protocol):
    """What reading skills needs of a :class:`~mcpserve.Client`, which has it all."""

    async def request(self, method: str, params: JSONDict | None = None) -> JSONDict: ...

    async def read_resource(self, uri: str) -> JSONDict: ...


class SkillVerificationError(MCPError):
    """A skill file that does not match its entry: not to be used."""


class LoadedSkill:
    """A skill whose ``SKILL.md`` matched its entry: its text, and its other files to read."""

    def __init__(self, client: SkillClient, entry: JSONDict, text: str) -> None:
        self.client = client
        #: The entry ``skills/list`` gave (``uri``, ``frontmatter``, ``resources``).
        self.entry = entry
        #: The ``SKILL.md``, frontmatter included, as verified.
        self.text = text

    @property
    def uri(self) -> str:
        return str(self.entry["uri"])

    @property
    def frontmatter(self) -> JSONDict:
        return dict(self.entry["frontmatter"])

    @property
    def files(self) -> list[str]:
        """The URIs of the skill's other files, as its entry lists them (none when dynamic)."""
        listed = self.entry.get("resources")
        if not isinstance(listed, list):
            return []
        return [str(item["uri"]) for item in listed if item.get("uri") != self.uri]

    async def read(self, uri: str) -> bytes:
        """One of the skill's files, verified against its entry."""
        return await _verified(self.client, self.entry, uri)


async def list_skills(client: SkillClient) -> list[JSONDict]:
    """Every skill entry of every page of ``skills/list``."""
    entries: list[JSONDict] = []
    cursor: str | None = None
    for _ in range(1000):  # a cursor that never ends is the server's bug
        result = await client.request("skills/list", {"cursor": cursor} if cursor else {})
        page = result.get("skills")
        if not isinstance(page, list):
            raise MCPError("skills/list answered without a list of skills")
        entries.extend(entry for entry in page if _is_entry(entry))
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
    return entries


async def load_skill(client: SkillClient, entry: JSONDict) -> LoadedSkill:
    """Read and verify ``entry``'s ``SKILL.md`` (raises :class:`SkillVerificationError`)."""
    from ..protocol.frontmatter import FrontmatterError, parse_frontmatter

    if not _is_entry(entry):
        raise ValueError("Not a skill entry: give one from list_skills()")
    uri = str(entry["uri"])
    data = await _verified(client, entry, uri)
    try:
        text = data.decode("utf-8")
        found = parse_frontmatter(text)
    except (UnicodeDecodeError, FrontmatterError) as exc:
        raise SkillVerificationError(f"{uri}: its frontmatter cannot be read: {exc}") from None
    listed = entry["frontmatter"]
    differing = sorted(key for key in {*found, *listed} if found.get(key) != listed.get(key))
    if differing:
        raise SkillVerificationError(
            f"{uri}: its frontmatter differs from the entry's in {', '.join(differing[:10])}"
        )
    return LoadedSkill(client, entry, text)


async def _verified(client: SkillClient, entry: JSONDict, uri: str) -> bytes:
    """The bytes of ``uri``, checked against the size and digest ``entry`` lists for it."""
    listed = entry.get("resources")
    expected: JSONDict | None = None
    if isinstance(listed, list):
        expected = next((item for item in listed if item.get("uri") == uri), None)
        if expected is None:
            raise ValueError(f"{uri} is not one of the files of the skill {entry['uri']}")
    result = await client.read_resource(uri)
    data = _content_bytes(result, uri)
    if expected is None:  # "resources": "dynamic": nothing to check against
        return data
    size, digest = expected.get("size"), expected.get("digest")
    if isinstance(size, int) and len(data) != size:
        raise SkillVerificationError(f"{uri}: {len(data)} bytes, where its entry lists {size}")
    if isinstance(digest, str):
        algorithm, _, value = digest.partition(":")
        if algorithm != "sha256":
            raise SkillVerificationError(f"{uri}: digest algorithm {algorithm!r} is not sha256")
        if hashlib.sha256(data).hexdigest() != value.lower():
            raise SkillVerificationError(f"{uri}: its content does not match its entry's digest")
    return data


def _content_bytes(result: JSONDict, uri: str) -> bytes:
    contents = result.get("contents")
    if not isinstance(contents, list) or len(contents) != 1 or not isinstance(contents[0], dict):
        raise SkillVerificationError(f"{uri}: the read did not answer exactly one content")
    content = contents[0]
    if isinstance(content.get("text"), str):
        return str(content["text"]).encode("utf-8")
    if isinstance(content.get("blob"), str):
        try:
            return base64.b64decode(content["blob"], validate=True)
        except ValueError:
            raise SkillVerificationError(f"{uri}: its blob is not base64") from None
    raise SkillVerificationError(f"{uri}: the read answered neither text nor blob")


def _is_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("uri"), str)
        and isinstance(entry.get("frontmatter"), dict)
    )
