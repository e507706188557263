"""The shipped examples work: the demo notes server, driven as a client would."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


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
    from mcpserve import MCPError

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
