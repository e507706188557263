"""Notes kept in SQLite, with tags, served as tools and as resource templates.

The database is the file named by ``$SQLITE_NOTES_DB``, or ``mcpserve-sqlite-notes.db`` in
the system's temporary directory, so trying it out leaves nothing in your working tree.
Every database call is a ``blocking`` handler: it runs in the server's thread pool, opening
its own short-lived connection, so a slow disk never stalls the event loop and no
connection is shared between threads.

Run it over stdio (for clients that spawn servers), or over HTTP::

    python examples/sqlite_notes.py
    SQLITE_NOTES_DB=~/notes.db mcpserve run examples/sqlite_notes.py --http --port 8000

Tools: ``add_note``, ``find_notes``, ``retag_note``, ``delete_note``. Resources:
``note://{note_id}`` (one note as Markdown) and ``notes://tag/{tag}`` (the notes with a
tag), whose ``tag`` completes from the tags in use.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from mcpserve import Context, ResourceNotFound, Server, ToolError

DEFAULT_PATH = Path(tempfile.gettempdir()) / "mcpserve-sqlite-notes.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tags (
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (note_id, tag)
);
CREATE INDEX IF NOT EXISTS tags_by_tag ON tags(tag);
"""


class Note(BaseModel):
    id: int
    title: str
    body: str
    tags: list[str]


class NotesDB:
    """The notes table. Each method opens its own connection: cheap for SQLite, and safe in
    whichever pool thread runs it."""

    def __init__(self, path: str) -> None:
        self.path = Path(path).expanduser()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")  # readers do not wait for a writer
            db.executescript(SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=5.0)) as db:
            db.execute("PRAGMA foreign_keys=ON")
            with db:  # one transaction: committed on success, rolled back on error
                yield db

    def add(self, title: str, body: str, tags: list[str]) -> Note:
        with self._connect() as db:
            cursor = db.execute("INSERT INTO notes (title, body) VALUES (?, ?)", (title, body))
            note_id = int(cursor.lastrowid or 0)
            unique = sorted(set(tags))
            db.executemany(
                "INSERT INTO tags (note_id, tag) VALUES (?, ?)", [(note_id, t) for t in unique]
            )
        return Note(id=note_id, title=title, body=body, tags=unique)

    def get(self, note_id: int) -> Note | None:
        with self._connect() as db:
            row = db.execute(
                "SELECT id, title, body FROM notes WHERE id = ?", (note_id,)
            ).fetchone()
            return self._note(db, row) if row else None

    def find(self, text: str, tag: str | None, limit: int) -> list[Note]:
        pattern = f"%{text}%"
        query = "SELECT id, title, body FROM notes WHERE (title LIKE ? OR body LIKE ?)"
        params: list[object] = [pattern, pattern]
        if tag is not None:
            query += " AND id IN (SELECT note_id FROM tags WHERE tag = ?)"
            params.append(tag)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY id LIMIT ?", [*params, limit]).fetchall()
            return [self._note(db, row) for row in rows]

    def retag(self, note_id: int, tags: list[str]) -> Note | None:
        with self._connect() as db:
            if db.execute("SELECT 1 FROM notes WHERE id = ?", (note_id,)).fetchone() is None:
                return None
            db.execute("DELETE FROM tags WHERE note_id = ?", (note_id,))
            db.executemany(
                "INSERT INTO tags (note_id, tag) VALUES (?, ?)",
                [(note_id, tag) for tag in sorted(set(tags))],
            )
        return self.get(note_id)

    def delete(self, note_id: int) -> bool:
        with self._connect() as db:
            return db.execute("DELETE FROM notes WHERE id = ?", (note_id,)).rowcount > 0

    def tags(self, prefix: str) -> list[str]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT DISTINCT tag FROM tags WHERE substr(tag, 1, ?) = ? ORDER BY tag",
                (len(prefix), prefix),
            ).fetchall()
        return [row[0] for row in rows]

    @staticmethod
    def _note(db: sqlite3.Connection, row: tuple[int, str, str]) -> Note:
        tags = db.execute(
            "SELECT tag FROM tags WHERE note_id = ? ORDER BY tag", (row[0],)
        ).fetchall()
        return Note(id=row[0], title=row[1], body=row[2], tags=[tag for (tag,) in tags])


@asynccontextmanager
async def open_db(server: Server) -> AsyncIterator[NotesDB]:
    path = os.environ.get("SQLITE_NOTES_DB") or str(DEFAULT_PATH)
    # Creating the tables touches the disk: off the event loop, like every handler here.
    yield await asyncio.to_thread(NotesDB, path)


server = Server(
    "sqlite-notes",
    version="1.0.0",
    instructions="Short notes with tags, kept in SQLite. Use find_notes before add_note.",
    lifespan=open_db,
)


def db_of(ctx: Context) -> NotesDB:
    db: NotesDB = ctx.lifespan_state
    return db


Tag = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z0-9-]+$")]


@server.tool(blocking=True)
def add_note(
    title: Annotated[str, Field(min_length=1, max_length=200)],
    body: str,
    ctx: Context,
    tags: list[Tag] | None = None,
) -> Note:
    """Save a new note.

    Args:
        title: A short title.
        body: The note itself, in Markdown.
        tags: Lower-case labels (letters, digits, dashes) to find it by.
    """
    return db_of(ctx).add(title, body, tags or [])


@server.tool(blocking=True, annotations={"readOnlyHint": True})
def find_notes(
    ctx: Context,
    text: str = "",
    tag: Tag | None = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
) -> list[Note]:
    """Find notes whose title or body contains the text, optionally only those with a tag.

    Args:
        text: What to look for (case-insensitive for ASCII); empty matches every note.
        tag: Only notes with this tag.
        limit: The most notes to return.
    """
    return db_of(ctx).find(text, tag, limit)


@server.tool(blocking=True, annotations={"idempotentHint": True})
def retag_note(note_id: int, tags: list[Tag], ctx: Context) -> Note:
    """Replace a note's tags.

    Args:
        note_id: The id add_note or find_notes returned.
        tags: The new tags (an empty list removes them all).
    """
    note = db_of(ctx).retag(note_id, tags)
    if note is None:
        raise ToolError(f"There is no note {note_id}; use find_notes to look ids up.")
    return note


@server.tool(blocking=True, annotations={"destructiveHint": True})
def delete_note(note_id: int, ctx: Context) -> str:
    """Delete a note and its tags.

    Args:
        note_id: The id add_note or find_notes returned.
    """
    if not db_of(ctx).delete(note_id):
        raise ToolError(f"There is no note {note_id}; use find_notes to look ids up.")
    return f"Deleted note {note_id}."


@server.resource("note://{note_id}", mime_type="text/markdown", blocking=True)
def note(note_id: int, ctx: Context) -> str:
    """One note as Markdown."""
    found = db_of(ctx).get(note_id)
    if found is None:
        raise ResourceNotFound(f"note://{note_id}")
    tags = f"\n\nTags: {', '.join(found.tags)}" if found.tags else ""
    return f"# {found.title}\n\n{found.body}{tags}"


@server.resource("notes://tag/{tag}", mime_type="text/markdown", blocking=True)
def tagged(tag: str, ctx: Context) -> str:
    """The notes with one tag, as a Markdown list of links."""
    notes = db_of(ctx).find("", tag, 100)
    if not notes:
        raise ResourceNotFound(f"notes://tag/{tag}")
    return "\n".join(f"- [{n.title}](note://{n.id})" for n in notes)


@server.completion(resource="notes://tag/{tag}", argument="tag", blocking=True)
def tags_in_use(value: str, ctx: Context) -> list[str]:
    return db_of(ctx).tags(value)


if __name__ == "__main__":
    server.run()
