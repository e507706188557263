"""The shipped examples work, driven as a client would: in memory, and over a real wire
(a stdio subprocess, or uvicorn for the FastAPI app)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import importlib.util
import signal
import sys
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import httpx2
import pytest

from mcpserve import Client, MCPError
from wire_helpers import ROOT, call, child_env, http_server_process, post, request

EXAMPLES = ROOT / "examples"
T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float = 15) -> T:
    return await asyncio.wait_for(awaitable, seconds)


def stdio_client(example: str, **env: str) -> Client:
    """A client of ``examples/<example>`` started as a subprocess speaking stdio."""
    command = [sys.executable, str(EXAMPLES / example)]
    return Client.stdio(command, cwd=str(ROOT), env=child_env(**env))


def load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("NOTES_DB", str(tmp_path / "notes.sqlite3"))
    return load("notes_example", EXAMPLES / "notes.py")


async def test_notes_demo_adds_searches_reads_and_deletes(notes: ModuleType, connect: Any) -> None:
    async with connect(notes.server) as client:
        added = await client.call_tool(
            "add_note", {"title": "Tea", "body": "Green tea at 80C.", "tags": ["drinks"]}
        )
        note_id = added["structuredContent"]["id"]
        found = await client.call_tool("search_notes", {"text": "tea"})
        assert [n["title"] for n in found["structuredContent"]] == ["Tea"]

        page = await client.read_resource(f"notes://{note_id}")
        assert page["contents"][0]["text"].startswith("# Tea")
        assert page["contents"][0]["mimeType"] == "text/markdown"

        prompt = await client.get_prompt("summarize", {"topic": "tea"})
        assert "Green tea" in prompt["messages"][0]["content"]["text"]
        completion = await client.complete(
            {"type": "ref/prompt", "name": "summarize"}, "topic", "dr"
        )
        assert completion["values"] == ["drinks"]

        deleted = await client.call_tool("delete_note", {"note_id": note_id})
        assert deleted["content"][0]["text"] == f"Deleted note {note_id}."
        again = await client.call_tool("delete_note", {"note_id": note_id})
        assert again["isError"] is True


async def test_notes_demo_reports_a_missing_note_as_resource_not_found(
    notes: ModuleType, connect: Any
) -> None:
    async with connect(notes.server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("notes://999")
    assert caught.value.code == -32602
    assert caught.value.data == {"uri": "notes://999"}


async def test_notes_demo_validates_arguments_before_touching_the_database(
    notes: ModuleType, connect: Any
) -> None:
    async with connect(notes.server) as client:
        result = await client.call_tool("add_note", {"title": "", "body": "x"})
    assert result["isError"] is True
    assert "title" in result["content"][0]["text"]


@pytest.mark.subprocess
@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=["2026-07-28", "2025-11-25"])
async def test_notes_summarize_completes_the_topics_it_finds_notes_about(
    tmp_path: Path, version: str | None
) -> None:
    command = [sys.executable, str(EXAMPLES / "notes.py")]
    env = child_env(NOTES_DB=str(tmp_path / "notes.sqlite3"))
    async with Client.stdio(command, cwd=str(ROOT), env=env, protocol_version=version) as client:
        assert client.legacy is (version is not None)
        for title, body, tags in [
            ("Sencha", "Steep it at 70 degrees.", ["tea", "green"]),
            ("Espresso", "Nine bars, 25 seconds.", ["coffee"]),
            ("Oolong", "Rinse the leaves first.", ["taiwan", "tea"]),
        ]:
            note = {"title": title, "body": body, "tags": tags}
            await within(client.call_tool("add_note", note))
        summarize = {"type": "ref/prompt", "name": "summarize"}
        completed = await within(client.complete(summarize, "topic", "T"))
        assert completed["values"] == ["taiwan", "tea"]  # every tag, once, sorted; any case
        assert (await within(client.complete(summarize, "topic", "cof")))["values"] == ["coffee"]
        assert (await within(client.complete(summarize, "topic", "x")))["values"] == []
        # A completed topic is one the prompt finds notes about, by their tags.
        prompt = await within(client.get_prompt("summarize", {"topic": "taiwan"}))
        text = prompt["messages"][0]["content"]["text"]
        assert text.endswith("about taiwan:\n\n- Oolong: Rinse the leaves first.")


# --------------------------------------------------------------------------- sqlite_notes.py


@pytest.fixture
def sqlite_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("SQLITE_NOTES_DB", str(tmp_path / "notes.db"))
    return load("sqlite_notes_example", EXAMPLES / "sqlite_notes.py")


async def test_sqlite_notes_adds_finds_retags_and_deletes(
    sqlite_notes: ModuleType, connect: Any, tmp_path: Path
) -> None:
    async with connect(sqlite_notes.server) as client:
        tea = await client.call_tool(
            "add_note", {"title": "Tea", "body": "Green, 80C.", "tags": ["drinks", "hot"]}
        )
        await client.call_tool("add_note", {"title": "Soup", "body": "Lentils.", "tags": ["hot"]})
        tea_id = tea["structuredContent"]["id"]
        assert tea["structuredContent"]["tags"] == ["drinks", "hot"]

        found = await client.call_tool("find_notes", {"text": "green"})
        assert [n["title"] for n in found["structuredContent"]] == ["Tea"]
        hot = await client.call_tool("find_notes", {"tag": "hot"})
        assert [n["title"] for n in hot["structuredContent"]] == ["Tea", "Soup"]

        retagged = await client.call_tool("retag_note", {"note_id": tea_id, "tags": ["cold"]})
        assert retagged["structuredContent"]["tags"] == ["cold"]
        assert (await client.call_tool("find_notes", {"tag": "drinks"}))["structuredContent"] == []

        deleted = await client.call_tool("delete_note", {"note_id": tea_id})
        assert deleted["content"][0]["text"] == f"Deleted note {tea_id}."
        again = await client.call_tool("delete_note", {"note_id": tea_id})
        assert again["isError"] is True
        bad_tag = await client.call_tool("add_note", {"title": "x", "body": "", "tags": ["A B"]})
        assert bad_tag["isError"] is True
    assert (tmp_path / "notes.db").exists()  # the file $SQLITE_NOTES_DB names


async def test_sqlite_notes_serves_templates_and_completes_tags(
    sqlite_notes: ModuleType, connect: Any
) -> None:
    async with connect(sqlite_notes.server) as client:
        templates = [t["uriTemplate"] for t in await client.list_resource_templates()]
        assert templates == ["note://{note_id}", "notes://tag/{tag}"]
        added = await client.call_tool(
            "add_note", {"title": "Tea", "body": "Green.", "tags": ["drinks", "daily"]}
        )
        note_id = added["structuredContent"]["id"]

        page = await client.read_resource(f"note://{note_id}")
        assert page["contents"][0] == {
            "uri": f"note://{note_id}",
            "mimeType": "text/markdown",
            "text": "# Tea\n\nGreen.\n\nTags: daily, drinks",
        }
        listing = await client.read_resource("notes://tag/drinks")
        assert listing["contents"][0]["text"] == f"- [Tea](note://{note_id})"
        completion = await client.complete(
            {"type": "ref/resource", "uri": "notes://tag/{tag}"}, "tag", "d"
        )
        assert completion == {"values": ["daily", "drinks"]}

        for missing in ("note://999", "note://abc", "notes://tag/none"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(missing)
            assert caught.value.code == -32602
            assert caught.value.data == {"uri": missing}


def test_sqlite_notes_defaults_to_a_file_in_the_temporary_directory(
    sqlite_notes: ModuleType,
) -> None:
    assert sqlite_notes.DEFAULT_PATH.parent == Path(tempfile.gettempdir())


@pytest.mark.subprocess
async def test_sqlite_notes_over_stdio_keeps_notes_across_processes(tmp_path: Path) -> None:
    db = str(tmp_path / "notes.db")
    async with stdio_client("sqlite_notes.py", SQLITE_NOTES_DB=db) as client:
        added = await within(
            client.call_tool("add_note", {"title": "Wire", "body": "Over stdio.", "tags": ["io"]})
        )
        assert added["structuredContent"]["tags"] == ["io"]
    async with stdio_client("sqlite_notes.py", SQLITE_NOTES_DB=db) as client:
        found = await within(client.call_tool("find_notes", {"text": "stdio"}))
        assert [n["title"] for n in found["structuredContent"]] == ["Wire"]
        note_id = found["structuredContent"][0]["id"]
        page = await within(client.read_resource(f"note://{note_id}"))
        assert page["contents"][0]["text"].startswith("# Wire")
        completion = await within(
            client.complete({"type": "ref/resource", "uri": "notes://tag/{tag}"}, "tag", "")
        )
        assert completion == {"values": ["io"]}
    assert client.connection.process.returncode == 0  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- files.py


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A root to serve, and beside it what must stay out of reach (also through links)."""
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# Hello\n")
    (root / "docs" / "guide.txt").write_text("Step one.")
    (root / "logo.bin").write_bytes(b"\x89PNG\xff\x00")
    (root / "big.log").write_bytes(b"x" * (1024 * 1024 + 1))
    (tmp_path / "secret.txt").write_text("password")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "more.txt").write_text("also secret")
    (root / "escape.txt").symlink_to(tmp_path / "secret.txt")
    (root / "elsewhere").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "docs" / "readme-link.md").symlink_to(root / "README.md")  # inside: fine
    return root


@pytest.fixture
def files(tree: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("FILES_ROOT", str(tree))
    return load("files_example", EXAMPLES / "files.py")


def file_ref() -> dict[str, str]:
    return {"type": "ref/resource", "uri": "file:///{+path}"}


async def test_files_lists_reads_and_completes_below_the_root(
    files: ModuleType, connect: Any
) -> None:
    async with connect(files.server) as client:
        listed = await client.call_tool("list_files", {})
        assert [(e["path"], e["kind"]) for e in listed["structuredContent"]] == [
            ("README.md", "file"),
            ("big.log", "file"),
            ("docs", "directory"),
            ("logo.bin", "file"),
        ]
        assert listed["structuredContent"][0]["uri"] == "file:///README.md"
        everything = await client.call_tool("list_files", {"recursive": True})
        assert "docs/guide.txt" in [e["path"] for e in everything["structuredContent"]]
        assert "docs/readme-link.md" in [e["path"] for e in everything["structuredContent"]]

        readme = await client.read_resource("file:///README.md")
        assert readme["contents"][0] == {
            "uri": "file:///README.md",
            "mimeType": "text/markdown",
            "text": "# Hello\n",
        }
        guide = await client.read_resource("file:///docs/guide.txt")
        assert guide["contents"][0]["text"] == "Step one."
        linked = await client.read_resource("file:///docs/readme-link.md")
        assert linked["contents"][0]["text"] == "# Hello\n"
        logo = await client.read_resource("file:///logo.bin")
        assert base64.b64decode(logo["contents"][0]["blob"]) == b"\x89PNG\xff\x00"
        with pytest.raises(MCPError) as too_big:
            await client.read_resource("file:///big.log")
        assert too_big.value.code == -32602
        assert too_big.value.data["size"] == 1024 * 1024 + 1

        assert await client.complete(file_ref(), "path", "d") == {"values": ["docs/"]}
        assert await client.complete(file_ref(), "path", "docs/g") == {"values": ["docs/guide.txt"]}
        assert await client.complete(file_ref(), "path", "e") == {"values": []}  # links out


@pytest.mark.parametrize(
    "uri",
    [
        "file:///../secret.txt",
        "file:///%2E%2E/secret.txt",
        "file:///docs/../../secret.txt",
        "file:///escape.txt",  # a link to a file outside
        "file:///elsewhere/more.txt",  # through a link to a directory outside
        "file:///nope.txt",  # and what is refused looks exactly like this
    ],
)
async def test_files_refuses_paths_that_escape_the_root(
    files: ModuleType, connect: Any, uri: str
) -> None:
    async with connect(files.server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.code == -32602
    assert caught.value.data == {"uri": uri}
    assert "password" not in str(caught.value.message)


async def test_files_refuses_an_absolute_path_and_listing_outside(
    files: ModuleType, connect: Any, tree: Path
) -> None:
    secret = tree.parent / "secret.txt"
    absolute = "file:///" + str(secret).replace("/", "%2F")
    async with connect(files.server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(absolute)
        assert caught.value.code == -32602
        for directory in ("..", "elsewhere", str(tree.parent), "README.md"):
            result = await client.call_tool("list_files", {"directory": directory})
            assert result["isError"] is True, directory
        assert await client.complete(file_ref(), "path", "../") == {"values": []}


@pytest.mark.subprocess
async def test_files_over_stdio(tree: Path) -> None:
    async with stdio_client("files.py", FILES_ROOT=str(tree)) as client:
        listed = await within(client.call_tool("list_files", {"directory": "docs"}))
        assert [e["path"] for e in listed["structuredContent"]] == [
            "docs/guide.txt",
            "docs/readme-link.md",
        ]
        guide = await within(client.read_resource("file:///docs/guide.txt"))
        assert guide["contents"][0]["text"] == "Step one."
        with pytest.raises(MCPError) as caught:
            await within(client.read_resource("file:///../secret.txt"))
        assert caught.value.code == -32602


# --------------------------------------------------------------------------- confirm.py

ELICITATION = {"elicitation": {"form": {}}}


@pytest.fixture
def confirm() -> ModuleType:
    return load("confirm_example", EXAMPLES / "confirm.py")


def answering(answer: dict[str, Any], asked: list[dict[str, Any]] | None = None) -> Any:
    async def on_input(method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert method == "elicitation/create"
        if asked is not None:
            asked.append(params)
        return answer

    return on_input


async def test_confirm_moves_money_only_after_the_user_confirms(
    confirm: ModuleType, connect: Any
) -> None:
    asked: list[dict[str, Any]] = []
    yes = answering({"action": "accept", "content": {"confirm": True, "memo": "rent"}}, asked)
    async with connect(confirm.server, capabilities=ELICITATION, on_input=yes) as client:
        done = await client.call_tool(
            "transfer", {"source": "savings", "target": "checking", "amount": "250.50"}
        )
        balances = await client.call_tool("balances", {})
    assert done["structuredContent"]["moved"] is True
    assert done["structuredContent"]["message"] == "Moved 250.50 from savings to checking (rent)."
    assert balances["structuredContent"] == {"checking": "1450.50", "savings": "4749.50"}
    [question] = asked
    assert question["message"] == "Move 250.50 from savings to checking?"
    assert set(question["requestedSchema"]["properties"]) == {"confirm", "memo"}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"action": "decline"}, "The user declined; nothing moved."),
        ({"action": "cancel"}, "The user cancelled; nothing moved."),
        ({"action": "accept", "content": {"confirm": False}}, "Not confirmed; nothing moved."),
    ],
)
async def test_confirm_moves_nothing_without_a_yes(
    confirm: ModuleType, connect: Any, answer: dict[str, Any], message: str
) -> None:
    async with connect(confirm.server, capabilities=ELICITATION, on_input=answering(answer)) as c:
        result = await c.call_tool(
            "transfer", {"source": "checking", "target": "savings", "amount": 10}
        )
    assert result["structuredContent"]["moved"] is False
    assert result["structuredContent"]["message"] == message
    assert result["structuredContent"]["balances"] == {"checking": "1200.00", "savings": "5000.00"}


async def test_confirm_carries_out_a_replayed_confirmation_once(
    confirm: ModuleType, connect: Any
) -> None:
    arguments = {"source": "checking", "target": "savings", "amount": 100}
    async with connect(confirm.server, capabilities=ELICITATION) as client:
        first = await client.call_tool("transfer", arguments)
        assert first["resultType"] == "input_required"
        [key] = first["inputRequests"]
        retry = {
            "name": "transfer",
            "arguments": arguments,
            "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
            "requestState": first["requestState"],
        }
        done = await client.request("tools/call", retry)
        replayed = await client.request("tools/call", retry)
        balances = await client.call_tool("balances", {})
    assert done["structuredContent"]["moved"] is True
    assert replayed["structuredContent"]["moved"] is False
    assert replayed["structuredContent"]["message"] == done["structuredContent"]["message"]
    assert replayed["structuredContent"]["transfer_id"] == done["structuredContent"]["transfer_id"]
    assert balances["structuredContent"] == {"checking": "1100.00", "savings": "5100.00"}


async def test_confirm_refuses_what_it_cannot_or_should_not_do(
    confirm: ModuleType, connect: Any
) -> None:
    async with connect(confirm.server) as client:  # a client that cannot ask its user
        with pytest.raises(MCPError) as caught:
            await client.call_tool(
                "transfer", {"source": "checking", "target": "savings", "amount": 1}
            )
        assert caught.value.code == -32021
    yes = answering({"action": "accept", "content": {"confirm": True}})
    async with connect(confirm.server, capabilities=ELICITATION, on_input=yes) as client:
        for arguments in (
            {"source": "checking", "target": "savings", "amount": 999_999},  # too much
            {"source": "checking", "target": "checking", "amount": 1},
            {"source": "checking", "target": "savings", "amount": "1.005"},  # 3 decimals
            {"source": "checking", "target": "savings", "amount": -5},
            {"source": "brokerage", "target": "savings", "amount": 1},
        ):
            result = await client.call_tool("transfer", arguments)
            assert result["isError"] is True, arguments
        balances = await client.call_tool("balances", {})
    assert balances["structuredContent"] == {"checking": "1200.00", "savings": "5000.00"}


@pytest.mark.subprocess
async def test_confirm_over_stdio() -> None:
    yes = answering({"action": "accept", "content": {"confirm": True}})
    client = Client.stdio(
        [sys.executable, str(EXAMPLES / "confirm.py")],
        cwd=str(ROOT),
        env=child_env(),
        capabilities=ELICITATION,
        on_input=yes,
    )
    async with client:
        done = await within(
            client.call_tool("transfer", {"source": "savings", "target": "checking", "amount": 5})
        )
        assert done["structuredContent"]["message"] == "Moved 5.00 from savings to checking."
        balances = await within(client.call_tool("balances", {}))
        assert balances["structuredContent"] == {"checking": "1205.00", "savings": "4995.00"}


# --------------------------------------------------------------------------- fastapi_app.py


@pytest.fixture
def fastapi_app() -> ModuleType:
    return load("fastapi_app_example", EXAMPLES / "fastapi_app.py")


async def test_fastapi_app_server_reaches_its_lifespan_state_in_memory(
    fastapi_app: ModuleType, connect: Any
) -> None:
    async with connect(fastapi_app.server) as client:
        defined = await client.call_tool("define", {"term": "ASGI"})
        unknown = await client.call_tool("define", {"term": "wsgi"})
        terms = await client.call_tool("list_terms", {})
    assert defined["structuredContent"]["term"] == "asgi"
    assert defined["structuredContent"]["loaded_at"] > 0
    assert unknown["isError"] is True
    assert terms["structuredContent"] == ["asgi", "lifespan", "mcp"]


def test_fastapi_app_mounts_the_server_beside_its_routes(fastapi_app: ModuleType) -> None:
    paths = [getattr(route, "path", None) for route in fastapi_app.app.routes]
    assert "/health" in paths
    assert "/mcp-app" in paths


@pytest.mark.subprocess
async def test_fastapi_app_under_uvicorn_serves_health_and_mcp(tmp_path: Path) -> None:
    # The command the example's docstring gives, run from the repository root.
    command = [sys.executable, "-m", "uvicorn", "fastapi_app:app", "--app-dir", "examples",
               "--host", "127.0.0.1", "--port", "{port}"]  # fmt: skip
    with http_server_process(tmp_path, args=command) as served:
        base = f"http://127.0.0.1:{served.port}"
        async with httpx2.AsyncClient(base_url=base, timeout=15) as http:
            health = await http.get("/health")
            assert health.status_code == 200
            assert health.json() == {"status": "ok"}

            discovered = await post(http, request(1, "server/discover"), path="/mcp-app/mcp")
            assert discovered.result["capabilities"] == {"tools": {"listChanged": True}}
            server_info = discovered.result["_meta"]["io.modelcontextprotocol/serverInfo"]
            assert server_info["name"] == "glossary"
            defined = await post(http, call(2, "define", {"term": "MCP"}), path="/mcp-app/mcp")
            # The tool found the glossary the server's lifespan opened, entered by FastAPI's.
            assert defined.result["structuredContent"]["term"] == "mcp"
            assert defined.result["structuredContent"]["loaded_at"] > 0
            outside = await http.post("/mcp", json={})
            assert outside.status_code == 404
        served.process.terminate()
        # uvicorn shuts down cleanly, then raises the SIGTERM it handled once more: the exit
        # a process that honours SIGTERM gives (as in tests/transports/test_serving.py).
        assert served.process.wait(15) == -signal.SIGTERM
    log = served.log.read_text()
    assert "Application startup complete" in log
    assert "Application shutdown complete" in log
    assert "WARNING" not in log  # nor did the mounted app have to start a lifespan itself


# --------------------------------------------------------------------------- openapi_inventory.py


@pytest.mark.subprocess
async def test_openapi_inventory_serves_the_apis_operations_as_tools_over_stdio() -> None:
    async with stdio_client("openapi_inventory.py") as client:
        tools = {tool["name"]: tool for tool in await within(client.list_tools())}
        found = await within(client.call_tool("find_parts", {"text": "bolt"}))
        put = await within(client.call_tool("put_part", {"sku": "W-10", "name": "washer M10",
                                                         "count": 500}))  # fmt: skip
        got = await within(client.call_tool("get_part", {"sku": "W-10"}))
        missing = await within(client.call_tool("get_part", {"sku": "X-1"}))
    assert list(tools) == ["find_parts", "get_part", "put_part"]
    assert tools["put_part"]["annotations"]["idempotentHint"] is True
    assert found["structuredContent"] == [{"name": "hex bolt M10", "count": 120, "sku": "B-10"}]
    assert put["structuredContent"]["sku"] == got["structuredContent"]["sku"] == "W-10"
    assert missing["isError"] is True
    assert missing["content"][0]["text"] == (
        'GET /parts/X-1 answered HTTP 404 Not Found: {"detail":"No part with SKU X-1"}'
    )


# --------------------------------------------------------------------------- skills.py


@pytest.fixture
def handbook() -> ModuleType:
    return load("skills_example", EXAMPLES / "skills.py")


async def test_skills_example_lists_its_skills_and_serves_each_file_as_its_digest_says(
    handbook: ModuleType, connect: Any
) -> None:
    async with connect(handbook.server) as client:
        capabilities = (await client.discover())["capabilities"]
        listed = await client.request("skills/list")
        entries = {entry["uri"]: entry for entry in listed["skills"]}
        for entry in entries.values():
            if entry["resources"] == "dynamic":
                continue
            for file in entry["resources"]:
                text = (await client.read_resource(file["uri"]))["contents"][0]["text"]
                on_disk = (EXAMPLES / "skills" / file["uri"].removeprefix("skill://")).read_bytes()
                assert text.encode() == on_disk
                assert file["digest"] == "sha256:" + hashlib.sha256(on_disk).hexdigest()
                assert file["size"] == len(on_disk)
        on_call = await client.read_resource("skill://on-call/SKILL.md")
        templates = await client.request(
            "resources/directory/read", {"uri": "skill://release-notes/templates"}
        )
    assert capabilities["extensions"] == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
    assert list(entries) == [
        "skill://git-workflow/SKILL.md",
        "skill://release-notes/SKILL.md",
        "skill://on-call/SKILL.md",
    ]
    assert entries["skill://git-workflow/SKILL.md"]["frontmatter"]["metadata"] == {
        "owner": "platform-team",
        "version": "1.2",
    }
    assert entries["skill://on-call/SKILL.md"]["resources"] == "dynamic"
    assert "is on call: page them with `/page " in on_call["contents"][0]["text"]
    assert [child["name"] for child in templates["resources"]] == ["release-notes.md"]


@pytest.mark.subprocess
async def test_skills_example_over_stdio() -> None:
    async with stdio_client("skills.py") as client:
        listed = await within(client.request("skills/list"))
        got = await within(client.request("skills/get", {"uri": "skill://git-workflow/SKILL.md"}))
        guide_uri = "skill://git-workflow/references/commit-messages.md"
        guide = await within(client.read_resource(guide_uri))
    names = [entry["frontmatter"]["name"] for entry in listed["skills"]]
    assert names == ["git-workflow", "release-notes", "on-call"]
    assert got["skill"] == listed["skills"][0]
    assert (listed["ttlMs"], listed["cacheScope"]) == (600_000, "public")
    assert guide["contents"][0]["text"].startswith("# Commit messages\n")


# --------------------------------------------------------------------------- apps.py

APPS_CAPABILITIES = {
    "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
}


@pytest.fixture
def dice() -> ModuleType:
    return load("apps_example", EXAMPLES / "apps.py")


async def test_apps_links_roll_to_its_view_and_keeps_reroll_for_the_app(
    dice: ModuleType, connect: Any
) -> None:
    async with connect(dice.server) as client:
        capabilities = (await client.discover())["capabilities"]
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        view = await client.read_resource("ui://dice/view")
    assert capabilities["extensions"] == {"io.modelcontextprotocol/ui": {}}
    assert tools["roll"]["_meta"]["ui"] == {"resourceUri": "ui://dice/view"}
    assert tools["reroll"]["_meta"]["ui"] == {
        "resourceUri": "ui://dice/view",
        "visibility": ["app"],
    }
    [content] = view["contents"]
    assert content["mimeType"] == "text/html;profile=mcp-app"
    assert content["_meta"] == {"ui": {"prefersBorder": True}}
    assert content["text"] == (EXAMPLES / "dice.html").read_text()


async def test_apps_rolls_and_spells_the_dice_out_only_for_clients_without_apps(
    dice: ModuleType, connect: Any
) -> None:
    async with connect(dice.server, capabilities=APPS_CAPABILITIES) as client:
        shown = await client.call_tool("roll", {"dice": 3, "sides": 4})
        again = await client.call_tool("reroll", {"dice": 3, "sides": 4})
    async with connect(dice.server) as client:
        plain = await client.call_tool("roll", {"dice": 1, "sides": 20})
        refused = await client.call_tool("roll", {"dice": 13})
    rolls = shown["structuredContent"]
    assert len(rolls["rolls"]) == 3
    assert all(1 <= value <= 4 for value in rolls["rolls"])
    assert rolls["total"] == sum(rolls["rolls"])
    assert shown["content"][0]["text"] == f"Rolled 3d4: {rolls['total']}."
    assert len(again["structuredContent"]["rolls"]) == 3
    [value] = plain["structuredContent"]["rolls"]
    assert plain["content"][0]["text"] == f"Rolled 1d20: {value}. ({value})"
    assert refused["isError"] is True


@pytest.mark.subprocess
async def test_apps_over_stdio() -> None:
    async with stdio_client("apps.py") as client:
        listed = await within(client.list_resources())
        rolled = await within(client.call_tool("roll", {}))
    assert [(item["uri"], item["mimeType"]) for item in listed] == [
        ("ui://dice/view", "text/html;profile=mcp-app")
    ]
    assert len(rolled["structuredContent"]["rolls"]) == 2


# --------------------------------------------------------------------------- tasks.py

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_CAPABILITIES = {"elicitation": {"form": {}}, "extensions": {TASKS_EXTENSION: {}}}


@pytest.fixture
def reports(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("REPORTS_STEP_SECONDS", "0.01")
    return load("tasks_example", EXAMPLES / "tasks.py")


async def until_status(client: Client, task_id: str, status: str) -> dict[str, Any]:
    async def poll() -> dict[str, Any]:
        while (task := await client.request("tasks/get", {"taskId": task_id}))["status"] != status:
            assert task["status"] in ("working", "input_required"), task
            await asyncio.sleep(0.01)
        return task

    return await within(poll())


async def test_tasks_export_runs_as_a_task_that_stops_to_ask(reports: ModuleType) -> None:
    async with Client(reports.server, capabilities=TASK_CAPABILITIES) as client:
        created = await client.request(
            "tools/call", {"name": "export_report", "arguments": {"report": "q2"}}
        )
        assert (created["resultType"], created["status"]) == ("task", "working")
        task_id = created["taskId"]
        parked = await until_status(client, task_id, "input_required")
        [(key, question)] = parked["inputRequests"].items()
        assert question["params"]["message"] == "Include archived rows too?"
        yes = {key: {"action": "accept", "content": {"include": True}}}
        await client.request("tasks/update", {"taskId": task_id, "inputResponses": yes})
        done = await until_status(client, task_id, "completed")
    assert done["result"]["structuredContent"] == {"report": "q2", "rows": 1450, "file": "q2.csv"}


async def test_tasks_export_is_an_ordinary_call_for_a_client_without_tasks(
    reports: ModuleType,
) -> None:
    async def no(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"include": False}}

    capabilities = {"elicitation": {"form": {}}}
    async with Client(reports.server, capabilities=capabilities, on_input=no) as client:
        done = await within(client.call_tool("export_report", {"report": "q1", "steps": 2}))
        unknown = await client.call_tool("export_report", {"report": "q9"})
    assert done["structuredContent"] == {"report": "q1", "rows": 1200, "file": "q1.csv"}
    assert unknown["isError"] is True
    assert unknown["content"][0]["text"] == "No report 'q9'; there are q1, q2, q3"


@pytest.mark.parametrize(("confirm", "outcome"), [(True, "q3 deleted"), (False, "q3 kept")])
async def test_tasks_purge_asks_before_it_becomes_a_task(
    reports: ModuleType, confirm: bool, outcome: str
) -> None:
    asked: list[str] = []

    async def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"confirm": confirm}}

    async with Client(reports.server, capabilities=TASK_CAPABILITIES, on_input=answer) as client:
        started = await within(client.call_tool("purge", {"report": "q3"}))
        if confirm:
            assert started["resultType"] == "task"
            done = await until_status(client, started["taskId"], "completed")
            result = done["result"]
        else:
            assert started["resultType"] == "complete"  # nothing to do: no task is made
            result = started
    assert asked == ["Delete q3 for good?"]
    assert result["content"] == [{"type": "text", "text": outcome}]
    assert ("q3" in reports.REPORTS) is not confirm


async def test_tasks_purge_is_refused_to_a_client_without_tasks(reports: ModuleType) -> None:
    async with Client(reports.server) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("purge", {"report": "q1"})
    assert refused.value.code == -32021
    assert "q1" in reports.REPORTS
