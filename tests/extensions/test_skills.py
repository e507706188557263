"""The skills extension: skills from a directory or from code, served as ``skill://``
resources with ``skills/list``, ``skills/get`` and ``resources/directory/read``.

Digests and sizes are computed here from the bytes the test wrote, never taken from the
server; entries are checked against a JSON Schema written from the extension's types. Most
tests go through the schema-checked in-memory client; the wire tests run the server under
uvicorn and talk raw HTTP, and the official ``mcp`` client reads the skills as resources in
both eras.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest
from mcp import Client as OfficialClient

from legacy_schema import initialize_message
from mcpserve import Auth, CachePolicy, Client, Context, MCPError, Server, Skill
from mcpserve.protocol.frontmatter import parse_frontmatter
from wire_helpers import SERVERS, TIMEOUT, http_server_process, post, request

SKILLS = "io.modelcontextprotocol/skills"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
PDF_SKILL = b"""---
name: pdf-processing
description: >-
  Extract, fill, and assemble PDF documents.
  Use when the user mentions PDFs or forms.
license: Apache-2.0
metadata:
  version: "2.1.0"
---

# PDF processing

Fill forms with [the form guide](references/FORMS.md).
"""
TREE: dict[str, bytes] = {
    "pdf-processing/SKILL.md": PDF_SKILL,
    "pdf-processing/references/FORMS.md": b"# Forms\n\nField by field.\n",
    "pdf-processing/scripts/extract.py": b"print('extract')\n",
    "pdf-processing/templates/invoice.md": b"# Invoice\r\n",  # CRLF is served as written
    "pdf-processing/templates/logo.png": PNG,
    "pdf-processing/templates/regional/eu-invoice.md": "# Facture \u20ac\n".encode(),
    "acme/billing/refunds/SKILL.md": b"---\nname: refunds\ndescription: Process refunds\n---\n",
    "acme/billing/refunds/examples/email.md": b"Dear customer,\n",
    "git-workflow/SKILL.md": b"---\nname: git-workflow\ndescription: Our Git rules\n---\nRebase.\n",
}
HIDDEN = {".git/config": b"[core]\n", "pdf-processing/.DS_Store": b"\0", "README.md": b"top\n"}

ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["uri", "frontmatter", "resources"],
    "additionalProperties": False,
    "properties": {
        "uri": {"type": "string", "pattern": "^skill://.+/SKILL\\.md$"},
        "frontmatter": {
            "type": "object",
            "required": ["name", "description"],
            "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
        },
        "resources": {
            "oneOf": [
                {"const": "dynamic"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["uri", "digest", "size"],
                        "additionalProperties": False,
                        "properties": {
                            "uri": {"type": "string"},
                            "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
                            "size": {"type": "integer", "minimum": 0},
                        },
                    },
                },
            ]
        },
    },
}
CACHEABLE = {
    "ttlMs": {"type": "integer", "minimum": 0},
    "cacheScope": {"enum": ["public", "private"]},
}
LIST_SCHEMA = {
    "type": "object",
    "required": ["skills", "ttlMs", "cacheScope", "resultType"],
    "properties": {
        "skills": {"type": "array", "items": ENTRY_SCHEMA},
        "nextCursor": {"type": "string"},
        "resultType": {"const": "complete"},
        **CACHEABLE,
    },
}
GET_SCHEMA = {
    "type": "object",
    "required": ["skill", "ttlMs", "cacheScope", "resultType"],
    "not": {"required": ["nextCursor"]},
    "properties": {"skill": ENTRY_SCHEMA, "resultType": {"const": "complete"}, **CACHEABLE},
}


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write(root: Path, files: dict[str, bytes]) -> Path:
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write(tmp_path / "skills", {**TREE, **HIDDEN})


def served_bytes(read: dict[str, Any]) -> bytes:
    (content,) = read["contents"]
    if "blob" in content:
        return base64.b64decode(content["blob"])
    return content["text"].encode()  # type: ignore[no-any-return]


async def all_skills(client: Client) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    cursor = None
    for _ in range(50):
        page = await client.request("skills/list", {"cursor": cursor} if cursor else {})
        jsonschema.validate(page, LIST_SCHEMA)
        entries += page["skills"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return entries
    raise AssertionError("skills/list never ended")


def by_uri(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {entry["uri"]: entry for entry in entries}


# -- declaring and listing ------------------------------------------------------------------------


async def test_a_server_with_skills_declares_the_extension_with_directory_read(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        capabilities = (await client.discover())["capabilities"]
    assert capabilities["extensions"] == {SKILLS: {"directoryRead": True}}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}


async def test_a_server_without_skills_has_no_extension_and_no_skills_methods(
    connect: Callable[..., Client],
) -> None:
    server = Server("s")
    server.add_tool(lambda: "x", name="x")
    async with connect(server) as client:
        assert "extensions" not in (await client.discover())["capabilities"]
        for method in ("skills/list", "skills/get", "resources/directory/read"):
            with pytest.raises(MCPError) as raised:
                await client.request(method, {"uri": "skill://a/SKILL.md"})
            assert raised.value.code == -32601


async def test_skills_list_gives_every_skill_its_frontmatter_and_each_file_digest_and_size(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        entries = await all_skills(client)
    assert [entry["uri"] for entry in entries] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://git-workflow/SKILL.md",
        "skill://pdf-processing/SKILL.md",
    ]
    pdf = by_uri(entries)["skill://pdf-processing/SKILL.md"]
    assert pdf["frontmatter"] == {
        "name": "pdf-processing",
        "description": "Extract, fill, and assemble PDF documents. Use when the user mentions "
        "PDFs or forms.",
        "license": "Apache-2.0",
        "metadata": {"version": "2.1.0"},
    }
    files = [path for path in TREE if path.startswith("pdf-processing/")]
    expected = [
        {"uri": f"skill://{path}", "digest": digest(TREE[path]), "size": len(TREE[path])}
        for path in files
    ]
    assert pdf["resources"] == expected  # SKILL.md first, then by path; hidden files skipped


async def test_every_listed_file_reads_back_as_the_bytes_its_digest_and_size_describe(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        for entry in await all_skills(client):
            for file in entry["resources"]:
                data = served_bytes(await client.read_resource(file["uri"]))
                assert digest(data) == file["digest"]
                assert len(data) == file["size"]
                assert data == TREE[file["uri"].removeprefix("skill://")]
        logo = await client.read_resource("skill://pdf-processing/templates/logo.png")
        invoice = await client.read_resource("skill://pdf-processing/templates/invoice.md")
    assert logo["contents"][0]["mimeType"] == "image/png"
    assert "blob" in logo["contents"][0]
    assert invoice["contents"][0] == {
        "uri": "skill://pdf-processing/templates/invoice.md",
        "mimeType": "text/markdown",
        "text": "# Invoice\r\n",
    }


async def test_the_entry_frontmatter_is_what_the_served_skill_md_says(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        for entry in await all_skills(client):
            text = (await client.read_resource(entry["uri"]))["contents"][0]["text"]
            assert parse_frontmatter(text) == entry["frontmatter"]


async def test_skill_md_files_are_listed_as_resources_named_and_described_by_their_frontmatter(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        listed = by_uri(await client.list_resources())
    assert sorted(listed) == sorted(f"skill://{path}" for path in TREE)
    assert listed["skill://pdf-processing/SKILL.md"] == {
        "uri": "skill://pdf-processing/SKILL.md",
        "name": "pdf-processing",
        "description": "Extract, fill, and assemble PDF documents. Use when the user mentions "
        "PDFs or forms.",
        "mimeType": "text/markdown",
        "size": len(PDF_SKILL),
    }
    assert listed["skill://pdf-processing/scripts/extract.py"] == {
        "uri": "skill://pdf-processing/scripts/extract.py",
        "name": "extract.py",
        "mimeType": "text/x-python",
        "size": len(TREE["pdf-processing/scripts/extract.py"]),
    }


async def test_skills_list_pages_at_the_page_size_and_never_splits_an_entry(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s", page_size=2)
    server.add_skills(tree)
    async with connect(server) as client:
        first = await client.request("skills/list")
        second = await client.request("skills/list", {"cursor": first["nextCursor"]})
        with pytest.raises(MCPError) as raised:
            await client.request("skills/list", {"cursor": "not-ours"})
    assert [len(first["skills"]), len(second["skills"])] == [2, 1]
    assert "nextCursor" not in second
    assert all(isinstance(e["resources"], list) for e in first["skills"] + second["skills"])
    assert raised.value.code == -32602


async def test_skills_list_and_get_carry_the_caching_hints(
    tmp_path: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s", cache=CachePolicy(300_000, "public"))
    server.add_skills(
        write(tmp_path / "a", {"git-workflow/SKILL.md": TREE["git-workflow/SKILL.md"]})
    )
    server.add_skill(Skill("live", "Changes often", "# Live", cache=CachePolicy(1_000, "private")))
    async with connect(server) as client:
        listed = await client.request("skills/list")
        got = await client.request("skills/get", {"uri": "skill://git-workflow/SKILL.md"})
        live = await client.request("skills/get", {"uri": "skill://live/SKILL.md"})
        read = await client.read_resource("skill://live/SKILL.md")
    assert (listed["ttlMs"], listed["cacheScope"]) == (300_000, "public")
    assert (got["ttlMs"], got["cacheScope"]) == (300_000, "public")
    assert (live["ttlMs"], live["cacheScope"]) == (1_000, "private")
    assert (read["ttlMs"], read["cacheScope"]) == (1_000, "private")


# -- skills/get -----------------------------------------------------------------------------------


async def test_skills_get_answers_the_entry_the_list_gives(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        listed = by_uri(await all_skills(client))
        for uri, entry in listed.items():
            got = await client.request("skills/get", {"uri": uri})
            jsonschema.validate(got, GET_SCHEMA)
            assert got["skill"] == entry


@pytest.mark.parametrize(
    "uri",
    [
        "skill://nope/SKILL.md",
        "skill://pdf-processing",
        "skill://pdf-processing/references/FORMS.md",
    ],
)
async def test_skills_get_of_anything_but_a_served_skill_md_is_invalid_params(
    tree: Path, connect: Callable[..., Client], uri: str
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.request("skills/get", {"uri": uri})
    assert raised.value.code == -32602
    assert raised.value.message == f"No skill is served at {uri}"
    assert raised.value.data == {"uri": uri}


async def test_skills_get_without_a_string_uri_is_invalid_params(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.request("skills/get", {"uri": 7})
    assert (raised.value.code, raised.value.message) == (
        -32602,
        'Invalid params: "uri" must be a string',
    )


async def test_a_resource_read_of_an_unserved_skill_file_is_invalid_params(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("skill://pdf-processing/references/MISSING.md")
    assert raised.value.code == -32602


# -- directories ----------------------------------------------------------------------------------


def directory(uri: str, name: str) -> dict[str, Any]:
    return {"uri": uri, "name": name, "mimeType": "inode/directory"}


async def test_directory_read_lists_direct_children_with_folders_as_directory_resources(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        root = await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
        templates = await client.request(
            "resources/directory/read", {"uri": "skill://pdf-processing/templates"}
        )
        prefix = await client.request("resources/directory/read", {"uri": "skill://acme"})
        listed = by_uri(await client.list_resources())
    assert [child["uri"] for child in root["resources"]] == [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/references",
        "skill://pdf-processing/scripts",
        "skill://pdf-processing/templates",
    ]
    assert root["resources"][1] == directory("skill://pdf-processing/references", "references")
    assert templates["resources"] == [
        listed["skill://pdf-processing/templates/invoice.md"],  # files: their resources/list entry
        listed["skill://pdf-processing/templates/logo.png"],
        directory("skill://pdf-processing/templates/regional", "regional"),
    ]
    assert prefix["resources"] == [directory("skill://acme/billing", "billing")]
    assert "nextCursor" not in root


async def test_directory_read_pages_at_the_page_size(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s", page_size=3)
    server.add_skills(tree)
    async with connect(server) as client:
        params = {"uri": "skill://pdf-processing"}
        first = await client.request("resources/directory/read", params)
        rest = await client.request(
            "resources/directory/read", {**params, "cursor": first["nextCursor"]}
        )
    assert len(first["resources"]) == 3
    assert [child["uri"] for child in rest["resources"]] == ["skill://pdf-processing/templates"]
    assert "nextCursor" not in rest


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        (
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/SKILL.md is not a directory resource",
        ),
        (
            "skill://pdf-processing/nowhere",
            "skill://pdf-processing/nowhere names no directory resource",
        ),
        ("skill://pdf-processing/", "skill://pdf-processing/ names no directory resource"),
    ],
)
async def test_directory_read_of_a_file_or_an_unknown_uri_is_invalid_params(
    tree: Path, connect: Callable[..., Client], uri: str, message: str
) -> None:
    server = Server("s")
    server.add_skills(tree)
    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.request("resources/directory/read", {"uri": uri})
    assert (raised.value.code, raised.value.message, raised.value.data) == (
        -32602,
        message,
        {"uri": uri},
    )


async def test_directory_read_switched_off_is_not_declared_and_not_answered(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    server.add_skills(tree)
    server.skills.directory_read = False
    async with connect(server) as client:
        capabilities = (await client.discover())["capabilities"]
        with pytest.raises(MCPError) as raised:
            await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
        assert len(await all_skills(client)) == 3
    assert capabilities["extensions"] == {SKILLS: {}}
    assert raised.value.code == -32601


# -- where skills are -----------------------------------------------------------------------------


async def test_a_nested_skill_is_a_skill_of_its_own_and_a_set_of_files_of_the_enclosing_one(
    tmp_path: Path, connect: Callable[..., Client]
) -> None:
    files = {
        "outer/SKILL.md": b"---\nname: outer\ndescription: The outer one\n---\n",
        "outer/inner/SKILL.md": b"---\nname: inner\ndescription: The inner one\n---\n",
        "outer/inner/notes.md": b"notes\n",
    }
    server = Server("s")
    server.add_skills(write(tmp_path / "skills", files))
    async with connect(server) as client:
        entries = by_uri(await all_skills(client))
        listed = by_uri(await client.list_resources())
    outer = [file["uri"] for file in entries["skill://outer/SKILL.md"]["resources"]]
    inner = [file["uri"] for file in entries["skill://outer/inner/SKILL.md"]["resources"]]
    assert outer == [
        "skill://outer/SKILL.md",
        "skill://outer/inner/SKILL.md",
        "skill://outer/inner/notes.md",
    ]
    assert inner == ["skill://outer/inner/SKILL.md", "skill://outer/inner/notes.md"]
    assert listed["skill://outer/inner/SKILL.md"]["name"] == "inner"


async def test_a_prefix_puts_every_skill_below_it(
    tree: Path, connect: Callable[..., Client]
) -> None:
    server = Server("s")
    skills = server.add_skills(tree, prefix="team/docs")
    async with connect(server) as client:
        entries = await all_skills(client)
        children = await client.request("resources/directory/read", {"uri": "skill://team"})
    assert [skill.uri for skill in skills] == [entry["uri"] for entry in entries]
    assert entries[2]["uri"] == "skill://team/docs/pdf-processing/SKILL.md"
    assert children["resources"] == [directory("skill://team/docs", "docs")]


async def test_file_names_a_uri_cannot_hold_are_percent_encoded(
    tmp_path: Path, connect: Callable[..., Client]
) -> None:
    files = {
        "notes/SKILL.md": b"---\nname: notes\ndescription: Notes\n---\n",
        "notes/my notes/50%.md": b"half\n",
    }
    server = Server("s")
    server.add_skills(write(tmp_path / "skills", files))
    uri = "skill://notes/my%20notes/50%25.md"
    async with connect(server) as client:
        (entry,) = await all_skills(client)
        read = await client.read_resource(uri)
        folder = await client.request(
            "resources/directory/read", {"uri": "skill://notes/my%20notes"}
        )
    assert entry["resources"][1] == {"uri": uri, "digest": digest(b"half\n"), "size": 5}
    assert read["contents"][0]["text"] == "half\n"
    assert folder["resources"][0]["name"] == "50%.md"


# -- skills in code -------------------------------------------------------------------------------


async def test_a_skill_in_code_serves_its_frontmatter_body_and_files_with_digests(
    connect: Callable[..., Client],
) -> None:
    skill = Skill(
        "release-notes",
        "Write release notes: use when preparing a release",
        "# Release notes\n\nFollow [the template](templates/notes.md).\n",
        files={"templates/notes.md": "## {version}\n", "assets/icon.png": PNG},
        frontmatter={"license": "MIT", "metadata": {"version": "1.0", "stable": "yes"}},
    )
    server = Server("s")
    assert server.add_skill(skill) is skill
    async with connect(server) as client:
        (entry,) = await all_skills(client)
        manifest = await client.read_resource("skill://release-notes/SKILL.md")
        files = {
            f["uri"]: served_bytes(await client.read_resource(f["uri"])) for f in entry["resources"]
        }
    text = manifest["contents"][0]["text"]
    assert text == (
        '---\nname: release-notes\ndescription: "Write release notes: use when preparing a '
        'release"\nlicense: MIT\nmetadata:\n  version: "1.0"\n  stable: "yes"\n---\n\n'
        "# Release notes\n\nFollow [the template](templates/notes.md).\n"
    )
    assert parse_frontmatter(text) == entry["frontmatter"] == skill.frontmatter
    assert entry["resources"] == [
        {"uri": uri, "digest": digest(data), "size": len(data)} for uri, data in files.items()
    ]
    assert files["skill://release-notes/assets/icon.png"] == PNG
    assert files["skill://release-notes/templates/notes.md"] == b"## {version}\n"


async def test_a_generated_skill_is_dynamic_and_its_function_runs_on_every_read(
    connect: Callable[..., Client],
) -> None:
    server = Server("s")
    reads: list[str] = []

    @server.skill(files={"data/today.json": lambda: json.dumps({"reads": len(reads)})})
    def daily_report(ctx: Context) -> str:
        """Assemble today's report from live data."""
        reads.append(ctx.request.method)
        return f"# Daily report\n\nRead {len(reads)}.\n"

    assert isinstance(daily_report, Skill)
    async with connect(server) as client:
        entry = (await client.request("skills/get", {"uri": "skill://daily-report/SKILL.md"}))[
            "skill"
        ]
        first = await client.read_resource("skill://daily-report/SKILL.md")
        second = await client.read_resource("skill://daily-report/SKILL.md")
        data = await client.read_resource("skill://daily-report/data/today.json")
        folder = await client.request(
            "resources/directory/read", {"uri": "skill://daily-report/data"}
        )
    assert entry == {
        "uri": "skill://daily-report/SKILL.md",
        "resources": "dynamic",
        "frontmatter": {
            "name": "daily-report",
            "description": "Assemble today's report from live data.",
        },
    }
    header = (
        "---\nname: daily-report\ndescription: Assemble today's report from live data.\n---\n\n"
    )
    assert first["contents"][0]["text"] == header + "# Daily report\n\nRead 1.\n"
    assert second["contents"][0]["text"] == header + "# Daily report\n\nRead 2.\n"
    assert parse_frontmatter(first["contents"][0]["text"]) == entry["frontmatter"]
    assert data["contents"][0] == {
        "uri": "skill://daily-report/data/today.json",
        "mimeType": "application/json",
        "text": '{"reads": 2}',
    }
    assert folder["resources"] == [
        {
            "uri": "skill://daily-report/data/today.json",
            "name": "today.json",
            "mimeType": "application/json",
        }
    ]


async def test_a_generated_skill_that_returns_no_text_is_an_internal_error(
    connect: Callable[..., Client],
) -> None:
    server = Server("s")

    @server.skill(description="Broken on purpose")
    def broken() -> Any:
        return 42

    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("skill://broken/SKILL.md")
    assert raised.value.code == -32603
    assert raised.value.message == (
        "skill://broken/SKILL.md: broken() must return the SKILL.md body as text"
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Skill("Bad_Name", "x"),
            "skill 'Bad_Name': the name 'Bad_Name' breaks the "
            "naming rules: 1 to 64 lowercase letters, digits and "
            "hyphens, with no hyphen at either end and no two in "
            "a row",
        ),
        (lambda: Skill("a--b", "x"), "skill 'a--b': the name 'a--b' breaks the naming rules"),
        (lambda: Skill("x" * 65, "x"), f"skill '{'x' * 65}': the name '{'x' * 65}' breaks"),
        (lambda: Skill("ok", " "), "skill 'ok': the frontmatter has no description"),
        (
            lambda: Skill("ok", "d" * 1025),
            "skill 'ok': the description is 1025 characters; at most 1024",
        ),
        (
            lambda: Skill("ok", "d", files={"../up.md": "x"}),
            "skill 'ok': file path '../up.md' must be relative",
        ),
        (
            lambda: Skill("ok", "d", files={"SKILL.md": "x"}),
            "skill 'ok': SKILL.md is the skill's body: pass it as body=",
        ),
        (
            lambda: Skill("ok", "d", files={"a": "x", "a/b": "y"}),
            "skill 'ok': 'a' is both a file and a directory",
        ),
        (
            lambda: Skill("ok", "d", frontmatter={"name": "other"}),
            "skill 'ok': pass name and description as arguments",
        ),
        (
            lambda: Skill("ok", "d", frontmatter={"metadata": {"v": 1}}),
            "skill 'ok': metadata 'v' must be text; quote it",
        ),
        (
            lambda: Skill("ok", "d", prefix="a b"),
            "skill 'ok': the prefix segment 'a b' cannot be part of a skill:// URI",
        ),
        (
            lambda: Skill("ok", "d", files={"big.bin": b"x"} | {f"f{i}": "" for i in range(512)}),
            "skill 'ok': 514 files, more than the 512 every host must accept",
        ),
    ],
)
def test_a_skill_in_code_that_breaks_a_rule_is_refused_when_built(
    build: Callable[[], Skill], message: str
) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        build()


def test_a_generated_skill_needs_a_description() -> None:
    def quiet() -> str:
        return "x"

    with pytest.raises(ValueError, match=re.escape("skill 'quiet': give quiet() a docstring")):
        Server("s").skill(quiet)


# -- adding, replacing and removing ---------------------------------------------------------------


async def test_a_skill_is_replaced_only_when_asked_and_removing_one_stops_serving_its_files(
    connect: Callable[..., Client],
) -> None:
    server = Server("s")
    server.add_skill(Skill("notes", "Old notes", "old", files={"old.md": "old"}))
    with pytest.raises(ValueError, match=re.escape("A skill is already served at skill://notes/")):
        server.add_skill(Skill("notes", "New notes", "new"))
    server.add_skill(Skill("notes", "New notes", "new", files={"new.md": "new"}), replace=True)
    async with connect(server) as client:
        (entry,) = await all_skills(client)
        uris = [resource["uri"] for resource in await client.list_resources()]
        server.remove_skill("skill://notes/SKILL.md")
        # Nothing left: no extension, no resources, and their methods are gone with them.
        assert "extensions" not in (await client.discover())["capabilities"]
        for method in ("skills/list", "resources/list"):
            with pytest.raises(MCPError) as raised:
                await client.request(method)
            assert raised.value.code == -32601
    assert entry["frontmatter"]["description"] == "New notes"
    assert uris == ["skill://notes/SKILL.md", "skill://notes/new.md"]
    with pytest.raises(KeyError, match=re.escape("No skill is served at 'skill://notes/SKILL.md'")):
        server.remove_skill("skill://notes/SKILL.md")


def test_skills_added_apart_may_not_nest_and_may_not_take_a_registered_uri() -> None:
    server = Server("s")
    server.add_skill(Skill("outer", "Outer"))
    with pytest.raises(ValueError, match="lies inside the skill") as nested:
        server.add_skill(Skill("inner", "Inner", prefix="outer"))
    assert str(nested.value) == (
        "skill://outer/inner/SKILL.md lies inside the skill skill://outer/SKILL.md, whose files "
        "would not include it; serve nested skills from one directory with add_skills()"
    )
    server.resource("skill://taken/SKILL.md")(lambda: "mine")
    with pytest.raises(
        ValueError, match=re.escape("A resource is already registered at skill://taken/SKILL.md")
    ):
        server.add_skill(Skill("taken", "Taken"))
    assert [skill.uri for skill in server.skills] == ["skill://outer/SKILL.md"]


def test_custom_methods_cannot_take_the_extensions_names() -> None:
    server = Server("s")
    for name in ("skills/list", "skills/other", "resources/directory/read"):
        with pytest.raises(ValueError, match="is reserved by the protocol"):
            server.method(name)


# -- skills from a directory that break a rule ----------------------------------------------------


def manifest(yaml: str, body: str = "# Body\n") -> bytes:
    return f"---\n{yaml}---\n{body}".encode()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"pdf/SKILL.md": b"# No frontmatter\n"},
            "{root}/pdf/SKILL.md: line 1: a SKILL.md must "
            "begin with a '---' line, then the YAML frontmatter, then another '---' line",
        ),
        (
            {"pdf/SKILL.md": b"---\nname: pdf\n"},
            "{root}/pdf/SKILL.md: line 1: the frontmatter has no closing '---' line",
        ),
        (
            {"pdf/SKILL.md": manifest("name: pdf\ndescription: a: b\n")},
            "{root}/pdf/SKILL.md: line 3: a value with ': ' in it must be quoted",
        ),
        (
            {"pdf/SKILL.md": manifest("name: pdf\ndescription: x\nmetadata:\n  stable: yes\n")},
            "{root}/pdf/SKILL.md: line 5: YAML parsers disagree on what 'yes' is; quote it",
        ),
        (
            {"pdf/SKILL.md": manifest("description: x\n")},
            "{root}/pdf/SKILL.md: the frontmatter has no name",
        ),
        (
            {"pdf/SKILL.md": manifest("name: pdf\n")},
            "{root}/pdf/SKILL.md: the frontmatter has no "
            "description (say what the skill does and when to use it)",
        ),
        (
            {"pdf/SKILL.md": manifest("name: pdf-tools\ndescription: x\n")},
            "{root}/pdf/SKILL.md: "
            "the name 'pdf-tools' must be the name of the skill's directory, 'pdf'",
        ),
        (
            {"PDF/SKILL.md": manifest("name: PDF\ndescription: x\n")},
            "{root}/PDF/SKILL.md: the name 'PDF' breaks the naming rules",
        ),
        (
            {"pdf/SKILL.md": manifest("name: pdf\ndescription: x\nmetadata:\n  version: 1.0\n")},
            "{root}/pdf/SKILL.md: metadata 'version' must be text; quote it",
        ),
        (
            {
                "pdf/SKILL.md": manifest(
                    "name: pdf\ndescription: x\nmetadata:\n  io.modelcontextprotocol/x: y\n"
                )
            },
            "{root}/pdf/SKILL.md: metadata 'io.modelcontextprotocol/x': keys under "
            "io.modelcontextprotocol/ are reserved for MCP extensions",
        ),
        (
            {"pdf/SKILL.md": manifest("name: pdf\ndescription: x\nlicense: [MIT]\n")},
            "{root}/pdf/SKILL.md: license must be text",
        ),
        (
            {"pdf/SKILL.md": b"---\nname: pdf\ndescription: caf\xe9\n---\n"},
            "{root}/pdf/SKILL.md: not UTF-8 text",
        ),
        (
            {"a b/pdf/SKILL.md": manifest("name: pdf\ndescription: x\n")},
            "{root}/a b/pdf/SKILL.md: the prefix segment 'a b' cannot be part of a skill:// URI",
        ),
        ({"notes.md": b"x"}, "{root}: no SKILL.md in any directory below it"),
        (
            {"SKILL.md": manifest("name: x\ndescription: x\n")},
            "{root}/SKILL.md: add_skills() "
            "serves the skills in the subdirectories of {root}; pass its parent directory, or move "
            "the skill into a subdirectory",
        ),
        (
            {
                "pdf/SKILL.md": manifest("name: pdf\ndescription: x\n"),
                **{f"pdf/refs/{i}.md": b"" for i in range(512)},
            },
            "{root}/pdf/SKILL.md: 513 files, more than the 512 every host must accept",
        ),
    ],
)
def test_a_skill_that_breaks_a_rule_stops_the_server_naming_the_file_and_the_rule(
    tmp_path: Path, files: dict[str, bytes], message: str
) -> None:
    root = write(tmp_path / "skills", files)
    server = Server("s")
    with pytest.raises(ValueError, match="^" + re.escape(message.format(root=root))):
        server.add_skills(root)
    assert server.skills is None  # nothing was served: the extension never joined
    assert server.registry.resources == {}


def test_a_skill_larger_than_a_host_must_accept_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    root = write(tmp_path / "skills", {"big/SKILL.md": manifest("name: big\ndescription: x\n")})
    with (root / "big" / "data.bin").open("wb") as sparse:
        sparse.truncate(16 * 1024 * 1024)  # with the SKILL.md, just over 16 MiB
    total = 16 * 1024 * 1024 + len(manifest("name: big\ndescription: x\n"))
    expected = f"{root}/big/SKILL.md: {total} bytes in all, more than the 16 MiB every host must"
    with pytest.raises(ValueError, match="^" + re.escape(expected)):
        Server("s").add_skills(root)


async def test_links_are_followed_and_a_link_back_up_is_refused(
    tmp_path: Path, connect: Callable[..., Client]
) -> None:
    elsewhere = write(tmp_path / "elsewhere", {"shared/SKILL.md": TREE["git-workflow/SKILL.md"]})
    root = tmp_path / "skills"
    root.mkdir()
    (root / "git-workflow").symlink_to(elsewhere / "shared", target_is_directory=True)
    server = Server("s")
    server.add_skills(root)
    async with connect(server) as client:
        read = await client.read_resource("skill://git-workflow/SKILL.md")
    assert served_bytes(read) == TREE["git-workflow/SKILL.md"]
    (elsewhere / "shared" / "loop").symlink_to(root, target_is_directory=True)
    expected = f"{root}/git-workflow/loop: a second way to {root.resolve()}, which is already"
    with pytest.raises(ValueError, match="^" + re.escape(expected)):
        Server("s").add_skills(root)


def test_add_skills_of_a_missing_directory_says_so(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=re.escape(f"{tmp_path / 'nope'}: not a directory of skills")
    ):
        Server("s").add_skills(tmp_path / "nope")


# -- scopes ---------------------------------------------------------------------------------------


@pytest.fixture
def scoped(tmp_path: Path) -> Server:
    server = Server("s", server_info_in_results=False, cache=CachePolicy(60_000, "public"))
    server.add_skills(
        write(
            tmp_path / "public",
            {"acme/open/SKILL.md": manifest("name: open\ndescription: For everyone\n")},
        )
    )
    server.add_skills(
        write(
            tmp_path / "billing",
            {"acme/billing/SKILL.md": manifest("name: billing\ndescription: For billing staff\n")},
        ),
        scopes=["billing"],
    )
    return server


async def send(server: Server, method: str, params: dict[str, Any], scopes: set[str]) -> Any:
    auth = Auth("alice", frozenset(scopes))
    return await server.handle(request(1, method, params), auth=auth)


async def test_a_checked_caller_sees_and_reads_only_the_skills_its_scopes_allow(
    scoped: Server,
) -> None:
    listed = (await send(scoped, "skills/list", {}, set()))["result"]
    assert [entry["uri"] for entry in listed["skills"]] == ["skill://acme/open/SKILL.md"]
    assert listed["cacheScope"] == "private"  # the caller's own list
    folder = await send(scoped, "resources/directory/read", {"uri": "skill://acme"}, set())
    assert [child["uri"] for child in folder["result"]["resources"]] == ["skill://acme/open"]
    for method in ("skills/get", "resources/read"):
        refused = await send(scoped, method, {"uri": "skill://acme/billing/SKILL.md"}, set())
        assert refused["error"]["code"] == -32010
        assert refused["error"]["data"] == {"requiredScopes": ["billing"]}
    refused = await send(scoped, "resources/directory/read", {"uri": "skill://acme/billing"}, set())
    assert refused["error"]["code"] == -32010

    staff = (await send(scoped, "skills/list", {}, {"billing"}))["result"]
    assert [entry["uri"] for entry in staff["skills"]] == [
        "skill://acme/open/SKILL.md",
        "skill://acme/billing/SKILL.md",
    ]
    got = await send(scoped, "skills/get", {"uri": "skill://acme/billing/SKILL.md"}, {"billing"})
    assert got["result"]["skill"]["frontmatter"]["name"] == "billing"


def billing_for_boss(ctx: Any, component: Any) -> bool:
    return "/billing" not in (component.uri or "") or ctx.principal == "boss"


async def billing_for_boss_later(ctx: Any, component: Any) -> bool:
    return billing_for_boss(ctx, component)


BILLING = "skill://acme/billing/SKILL.md"


@pytest.mark.parametrize("rule", [billing_for_boss, billing_for_boss_later])
async def test_a_skill_the_visibility_rule_hides_is_absent_and_unknown_whatever_the_scopes(
    scoped: Server, rule: Callable[..., Any]
) -> None:
    scoped.visibility(rule)
    listed = (await send(scoped, "skills/list", {}, {"billing"}))["result"]
    assert [entry["uri"] for entry in listed["skills"]] == ["skill://acme/open/SKILL.md"]
    assert listed["cacheScope"] == "private"  # a list per caller
    # Hidden: unknown, with or without its scope (never the 403 that tells it exists).
    for scopes in ({"billing"}, set()):
        got = await send(scoped, "skills/get", {"uri": BILLING}, scopes)
        assert got["error"] == {
            "code": -32602,
            "message": f"No skill is served at {BILLING}",
            "data": {"uri": BILLING},
        }
    lacking = await scoped.handle(request(1, "skills/get", {"uri": BILLING}), auth=Auth("boss"))
    assert lacking["error"]["code"] == -32010  # shown but lacking its scope: the 403's error
    boss = Auth("boss", frozenset({"billing"}))
    shown = await scoped.handle(request(1, "skills/get", {"uri": BILLING}), auth=boss)
    assert shown["result"]["skill"]["uri"] == BILLING


@pytest.mark.parametrize("rule", [billing_for_boss, billing_for_boss_later])
async def test_directory_read_leaves_out_what_the_visibility_rule_hides(
    scoped: Server, rule: Callable[..., Any]
) -> None:
    scoped.visibility(rule)
    folder = await send(scoped, "resources/directory/read", {"uri": "skill://acme"}, {"billing"})
    assert [child["uri"] for child in folder["result"]["resources"]] == ["skill://acme/open"]
    uri = "skill://acme/billing"
    for scopes in ({"billing"}, set()):
        read = await send(scoped, "resources/directory/read", {"uri": uri}, scopes)
        assert read["error"] == {
            "code": -32602,
            "message": f"{uri} names no directory resource",
            "data": {"uri": uri},
        }
    boss = Auth("boss", frozenset({"billing"}))
    folder = await scoped.handle(
        request(1, "resources/directory/read", {"uri": "skill://acme"}), auth=boss
    )
    assert [child["uri"] for child in folder["result"]["resources"]] == [
        "skill://acme/billing",
        "skill://acme/open",
    ]
    inside = await scoped.handle(request(1, "resources/directory/read", {"uri": uri}), auth=boss)
    assert [child["uri"] for child in inside["result"]["resources"]] == [BILLING]


async def test_an_unchecked_caller_of_a_server_without_authentication_sees_every_skill(
    scoped: Server,
) -> None:
    listed = (await scoped.handle(request(1, "skills/list")))["result"]
    assert len(listed["skills"]) == 2
    assert listed["cacheScope"] == "public"


# -- over real HTTP, both eras --------------------------------------------------------------------


@pytest.fixture
def http_skills(tree: Path, tmp_path: Path) -> Iterator[str]:
    env = {"MCPSERVE_TEST_SKILLS": str(tree)}
    with http_server_process(
        tmp_path, args=[sys.executable, str(SERVERS / "skills.py")], env=env
    ) as served:
        yield f"http://127.0.0.1:{served.port}"


@pytest.mark.subprocess
async def test_over_http_skills_list_get_read_and_directory_read_answer_as_in_memory(
    http_skills: str,
) -> None:
    async with httpx2.AsyncClient(base_url=http_skills, timeout=TIMEOUT, trust_env=False) as http:
        listed = (await post(http, request(1, "skills/list"))).result
        jsonschema.validate(listed, LIST_SCHEMA)
        entries = by_uri(listed["skills"])
        assert entries["skill://clock/SKILL.md"]["resources"] == "dynamic"
        for file in entries["skill://pdf-processing/SKILL.md"]["resources"]:
            read = await post(http, request(2, "resources/read", {"uri": file["uri"]}))
            data = served_bytes(read.result)
            assert (digest(data), len(data)) == (file["digest"], file["size"])
        got = await post(http, request(3, "skills/get", {"uri": "skill://git-workflow/SKILL.md"}))
        jsonschema.validate(got.result, GET_SCHEMA)
        assert got.result["skill"] == entries["skill://git-workflow/SKILL.md"]
        assert (got.result["ttlMs"], got.result["cacheScope"]) == (60_000, "public")
        unknown = await post(http, request(4, "skills/get", {"uri": "skill://x/SKILL.md"}))
        assert (unknown.status, unknown.error["code"]) == (200, -32602)
        folder = await post(
            http,
            request(5, "resources/directory/read", {"uri": "skill://pdf-processing/templates"}),
        )
        assert [child["name"] for child in folder.result["resources"]] == [
            "invoice.md",
            "logo.png",
            "regional",
        ]
        clock = [
            await post(http, request(6, "resources/read", {"uri": "skill://clock/SKILL.md"}))
            for _ in range(2)
        ]
        header = (
            "---\nname: clock\ndescription: Read the server's clock; generated on every "
            "read.\n---\n\n"
        )
        assert [r.result["contents"][0]["text"] for r in clock] == [
            header + "# Clock\n\nRead number 1.\n",
            header + "# Clock\n\nRead number 2.\n",
        ]


@pytest.mark.subprocess
async def test_a_handshake_era_session_reads_skill_files_but_has_no_skills_methods(
    http_skills: str,
) -> None:
    async with httpx2.AsyncClient(base_url=http_skills, timeout=TIMEOUT, trust_env=False) as http:
        started = await http.post(
            "/mcp", json=initialize_message(0, "2025-11-25"), headers={"accept": "application/json"}
        )
        assert "extensions" not in started.json()["result"]["capabilities"]
        session = {
            "mcp-session-id": started.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
            "accept": "application/json",
        }

        async def send_legacy(request_id: int, method: str, params: dict[str, Any]) -> Any:
            body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            return (await http.post("/mcp", json=body, headers=session)).json()

        listed = await send_legacy(1, "resources/list", {})
        assert "skill://pdf-processing/SKILL.md" in [
            r["uri"] for r in listed["result"]["resources"]
        ]
        read = await send_legacy(2, "resources/read", {"uri": "skill://git-workflow/SKILL.md"})
        assert served_bytes(read["result"]) == TREE["git-workflow/SKILL.md"]
        for number, method in enumerate(("skills/list", "skills/get", "resources/directory/read")):
            answer = await send_legacy(10 + number, method, {"uri": "skill://pdf-processing"})
            assert answer["error"]["code"] == -32601


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_reads_a_skill_as_resources_in_both_eras(
    http_skills: str, mode: str
) -> None:
    async with OfficialClient(
        f"{http_skills}/mcp", mode=mode, read_timeout_seconds=TIMEOUT
    ) as client:
        listed = {resource.uri: resource for resource in (await client.list_resources()).resources}
        skill_md = listed["skill://pdf-processing/SKILL.md"]
        read = await client.read_resource("skill://pdf-processing/SKILL.md")
    assert (skill_md.name, skill_md.mime_type, skill_md.size) == (
        "pdf-processing",
        "text/markdown",
        len(PDF_SKILL),
    )
    assert read.contents[0].text.encode() == PDF_SKILL  # type: ignore[union-attr]
