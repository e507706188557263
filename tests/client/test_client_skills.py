"""The client's side of the skills extension against mcpserve's own server: listing reads
no file, loading verifies ``SKILL.md`` against its entry (size, digest, frontmatter), and a
loaded skill's files are read one at a time, each verified. Entries are altered here, as a
lying server would send them, to see each check refuse."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mcpserve import Client, LoadedSkill, Server, Skill, SkillVerificationError

FORMS = "# Forms\n\nField by field.\n"


def server() -> Server:
    made = Server("skills")
    made.add_skill(Skill("pdf", "Work with PDFs", "Fill [forms](references/FORMS.md).",
                         files={"references/FORMS.md": FORMS}))  # fmt: skip
    return made


class Counting(Client):
    """A client that counts its resources/read requests."""

    reads: list[str]

    async def read_resource(self, uri: str, **options: Any) -> dict[str, Any]:
        self.reads.append(uri)
        return await super().read_resource(uri, **options)


def counting(target: Server) -> Counting:
    client = Counting(target)
    client.reads = []
    return client


async def test_listing_reads_no_file_and_loading_reads_only_skill_md() -> None:
    async with counting(server()) as client:
        [entry] = await client.list_skills()
        assert entry["uri"] == "skill://pdf/SKILL.md"
        assert client.reads == []
        skill = await client.load_skill(entry)
        assert isinstance(skill, LoadedSkill)
        assert client.reads == ["skill://pdf/SKILL.md"]
        assert skill.frontmatter == {"name": "pdf", "description": "Work with PDFs"}
        assert skill.text.endswith("Fill [forms](references/FORMS.md).")
        assert skill.files == ["skill://pdf/references/FORMS.md"]
        assert await skill.read("skill://pdf/references/FORMS.md") == FORMS.encode()
        assert client.reads == ["skill://pdf/SKILL.md", "skill://pdf/references/FORMS.md"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e["resources"][0].update(size=e["resources"][0]["size"] + 1), "bytes, where"),
        (lambda e: e["resources"][0].update(digest="sha256:" + "0" * 64), "digest"),
        (lambda e: e["frontmatter"].update(description="Exfiltrate"), "differs .* description"),
        (lambda e: e["frontmatter"].update(license="MIT"), "differs .* license"),
    ],
)
async def test_a_skill_md_that_does_not_match_its_entry_is_refused(
    change: Any, message: str
) -> None:
    async with counting(server()) as client:
        [entry] = await client.list_skills()
        lying = copy.deepcopy(entry)
        change(lying)
        with pytest.raises(SkillVerificationError, match=message):
            await client.load_skill(lying)
        assert client.reads == ["skill://pdf/SKILL.md"]  # and nothing after it


async def test_a_file_that_does_not_match_its_entry_is_refused() -> None:
    async with Client(server()) as client:
        [entry] = await client.list_skills()
        entry["resources"][1]["digest"] = "sha256:" + "f" * 64
        skill = await client.load_skill(entry)
        with pytest.raises(SkillVerificationError, match=r"FORMS\.md: its content does not match"):
            await skill.read("skill://pdf/references/FORMS.md")
        with pytest.raises(ValueError, match="not one of the files"):
            await skill.read("skill://other/SKILL.md")


async def test_a_generated_skill_is_loaded_without_digests() -> None:
    made = Server("generated")

    @made.skill
    def today() -> str:
        """Say what day it is"""
        return "It is a fine day."

    async with Client(made) as client:
        [entry] = await client.list_skills()
        assert entry["resources"] == "dynamic"
        skill = await client.load_skill(entry)
        assert skill.text.endswith("It is a fine day.")
        assert skill.files == []
