"""A notes server: the mcpserve demo.

Notes live in SQLite (standard library only). The database file is ``$NOTES_DB``, or
``notes.sqlite3`` in the current directory.

Run it with ``./scripts/demo`` or ``mcpserve run examples/notes.py``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from mcpserve import Context, ResourceNotFound, Server, ToolError


@dataclass
class Note:
    id: int
    title: str
    body: str
    tags: list[str]


class NoteStore:
    """A tiny repository; SQLite calls are quick but blocking, so tools run them in threads."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS notes ("
                "id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, "
                "tags TEXT NOT NULL DEFAULT '')"
            )

    def add(self, title: str, body: str, tags: list[str]) -> Note:
        with self._lock, self._db:
            cursor = self._db.execute(
                "INSERT INTO notes (title, body, tags) VALUES (?, ?, ?)",
                (title, body, ",".join(tags)),
            )
        return Note(int(cursor.lastrowid or 0), title, body, tags)

    def get(self, note_id: int) -> Note | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, title, body, tags FROM notes WHERE id = ?", (note_id,)
            ).fetchone()
        return _note(row) if row else None

    def search(self, text: str, limit: int) -> list[Note]:
        pattern = f"%{text}%"
        with self._lock:
            rows = self._db.execute(
                "SELECT id, title, body, tags FROM notes WHERE title LIKE ? OR body LIKE ? "
                "ORDER BY id LIMIT ?",
                (pattern, pattern, limit),
            ).fetchall()
        return [_note(row) for row in rows]

    def about(self, topic: str, limit: int) -> list[Note]:
        """Notes tagged with the topic, or whose title or body mentions it."""
        pattern = f"%{_escape_like(topic)}%"
        tag = f"%,{_escape_like(topic)},%"
        with self._lock:
            rows = self._db.execute(
                "SELECT id, title, body, tags FROM notes WHERE ',' || tags || ',' LIKE ? "
                "ESCAPE '\\' OR title LIKE ? ESCAPE '\\' OR body LIKE ? ESCAPE '\\' "
                "ORDER BY id LIMIT ?",
                (tag, pattern, pattern, limit),
            ).fetchall()
        return [_note(row) for row in rows]

    def topics(self, prefix: str) -> list[str]:
        """Every tag of every note that starts with ``prefix`` (ignoring case), sorted."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT tags FROM notes").fetchall()
        found = {tag for (tags,) in rows for tag in tags.split(",") if tag}
        return sorted(tag for tag in found if tag.casefold().startswith(prefix.casefold()))

    def delete(self, note_id: int) -> bool:
        with self._lock, self._db:
            return self._db.execute("DELETE FROM notes WHERE id = ?", (note_id,)).rowcount > 0

    def close(self) -> None:
        self._db.close()


def _escape_like(text: str) -> str:
    """``text`` matched literally by LIKE: its own ``%`` and ``_`` are not wildcards."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _note(row: tuple[int, str, str, str]) -> Note:
    return Note(row[0], row[1], row[2], [t for t in row[3].split(",") if t])


@asynccontextmanager
async def open_store(server: Server) -> AsyncIterator[NoteStore]:
    store = NoteStore(os.environ.get("NOTES_DB", "notes.sqlite3"))
    try:
        yield store
    finally:
        store.close()


server = Server(
    "notes",
    version="1.0.0",
    instructions="Keeps short notes. Search before adding, to avoid duplicates.",
    lifespan=open_store,
)


def store_of(ctx: Context) -> NoteStore:
    store: NoteStore = ctx.lifespan_state
    return store


@server.tool(blocking=True, annotations={"idempotentHint": False})
def add_note(
    title: Annotated[str, Field(min_length=1, max_length=200)],
    body: str,
    ctx: Context,
    tags: list[str] | None = None,
) -> Note:
    """Save a new note.

    Args:
        title: A short title.
        body: The note itself, in Markdown.
        tags: Optional labels to find the note by.
    """
    return store_of(ctx).add(title, body, tags or [])


@server.tool(blocking=True, annotations={"readOnlyHint": True})
def search_notes(
    text: str, ctx: Context, limit: Annotated[int, Field(ge=1, le=100)] = 10
) -> list[Note]:
    """Find notes whose title or body contains the text.

    Args:
        text: What to look for (case-insensitive).
        limit: The most notes to return.
    """
    return store_of(ctx).search(text, limit)


@server.tool(blocking=True, annotations={"destructiveHint": True})
def delete_note(note_id: int, ctx: Context) -> str:
    """Delete a note by its id.

    Args:
        note_id: The id returned by add_note or search_notes.
    """
    if not store_of(ctx).delete(note_id):
        raise ToolError(f"There is no note {note_id}; use search_notes to find ids.")
    return f"Deleted note {note_id}."


@server.resource("notes://{note_id}", mime_type="text/markdown", blocking=True)
def note(note_id: int, ctx: Context) -> str:
    """One note as Markdown."""
    found = store_of(ctx).get(note_id)
    if found is None:
        raise ResourceNotFound(f"notes://{note_id}")
    tags = f"\n\nTags: {', '.join(found.tags)}" if found.tags else ""
    return f"# {found.title}\n\n{found.body}{tags}"


@server.prompt(blocking=True)
def summarize(topic: str, ctx: Context) -> str:
    """Ask the model to summarize every note about a topic.

    Args:
        topic: The subject to summarize: a tag, or words the notes contain.
    """
    notes = store_of(ctx).about(topic, 50)
    listing = "\n".join(f"- {n.title}: {n.body}" for n in notes) or "(no notes yet)"
    return f"Summarize what my notes say about {topic}:\n\n{listing}"


@server.completion(prompt="summarize", argument="topic", blocking=True)
def topics(value: str, ctx: Context) -> list[str]:
    """The topics the notes have, their tags, that start with what was typed; each one is
    a topic ``summarize`` finds notes about."""
    return store_of(ctx).topics(value)


if __name__ == "__main__":
    server.run()
