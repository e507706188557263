"""A read-only file server: one directory's files as resources, and a tool to list them.

The root is ``$FILES_ROOT``, or the current directory. Every file below it can be read as
``file:///<path relative to the root>`` (the template ``file:///{+path}``, whose ``+`` lets the
path hold slashes); ``list_files`` walks a directory and ``path`` completes to the entries
that start with what was typed. Nothing outside the root can be read or listed: a path with
``..``, an absolute path (``file:///%2Fetc%2Fpasswd``) or a symbolic link that leads out is
refused as if it did not exist. Nothing is ever written.

Run it over stdio, or over HTTP::

    FILES_ROOT=~/Documents python examples/files.py
    FILES_ROOT=~/Documents mcpserve run examples/files.py --http --port 8000
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

from pydantic import BaseModel, Field

from mcpserve import Contents, Context, InvalidParams, ResourceNotFound, Server, ToolError

#: Larger files are refused rather than sent whole in one message.
MAX_READ_BYTES = 1024 * 1024


class Entry(BaseModel):
    path: str  # relative to the root, with forward slashes
    uri: str  # what resources/read takes
    kind: str  # "file" or "directory"
    size: int | None = None  # bytes, for files


class Root:
    """The directory served, and the one check every path goes through."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory).expanduser().resolve(strict=True)
        if not self.directory.is_dir():
            raise NotADirectoryError(f"FILES_ROOT is not a directory: {self.directory}")

    def inside(self, relative: str | Path) -> Path | None:
        """The real path of ``relative`` below the root, or None when it would leave it.

        Resolving first follows ``..`` and symbolic links, so what is checked is where the
        path really leads (an absolute path is checked as it is, and so must lie below).
        """
        candidate = (self.directory / relative).resolve()
        return candidate if candidate.is_relative_to(self.directory) else None

    def entry(self, path: Path) -> Entry:
        relative = path.relative_to(self.directory).as_posix()
        uri = "file:///" + quote(relative)
        if path.is_dir():
            return Entry(path=relative, uri=uri, kind="directory")
        return Entry(path=relative, uri=uri, kind="file", size=path.stat().st_size)


@asynccontextmanager
async def open_root(server: Server) -> AsyncIterator[Root]:
    # Resolving touches the disk: off the event loop, like every handler here.
    yield await asyncio.to_thread(Root, os.environ.get("FILES_ROOT") or ".")


server = Server(
    "files",
    version="1.0.0",
    instructions="Read-only access to one directory. List it with list_files, then read "
    "the files you need as resources.",
    lifespan=open_root,
)


def root_of(ctx: Context) -> Root:
    root: Root = ctx.lifespan_state
    return root


@server.tool(blocking=True, annotations={"readOnlyHint": True})
def list_files(
    ctx: Context,
    directory: str = "",
    recursive: bool = False,
    limit: Annotated[int, Field(ge=1, le=1000)] = 200,
) -> list[Entry]:
    """List the files and directories in a directory below the root, sorted by path.

    Args:
        directory: Relative to the root; empty for the root itself.
        recursive: Also list everything below the subdirectories.
        limit: The most entries to return.
    """
    root = root_of(ctx)
    found = root.inside(directory)
    if found is None or not found.is_dir():
        raise ToolError(f"No directory {directory!r} below the root; list '' to start.")
    children = found.rglob("*") if recursive else found.iterdir()
    entries: list[Entry] = []
    for child in sorted(children):
        if root.inside(child) is None:  # a link that leads out: not shown, not readable
            continue
        entries.append(root.entry(child))
        if len(entries) == limit:
            break
    return entries


@server.resource("file:///{+path}", blocking=True)
def read_file(path: str, ctx: Context) -> Contents:
    """A file below the root: text when it is UTF-8, otherwise its bytes."""
    uri = ctx.request.params["uri"]
    found = root_of(ctx).inside(path)
    if found is None or not found.is_file():
        raise ResourceNotFound(uri)  # outside the root looks exactly like missing
    size = found.stat().st_size
    if size > MAX_READ_BYTES:
        raise InvalidParams(
            f"{path} is {size} bytes; this server reads files of at most {MAX_READ_BYTES}",
            data={"uri": uri, "size": size},
        )
    data = found.read_bytes()
    mime_type = mimetypes.guess_type(found.name)[0]
    try:
        return Contents(text=data.decode("utf-8"), mime_type=mime_type or "text/plain")
    except UnicodeDecodeError:
        return Contents(blob=data, mime_type=mime_type or "application/octet-stream")


@server.completion(resource="file:///{+path}", argument="path", blocking=True)
def complete_path(value: str, ctx: Context) -> list[str]:
    """The entries of the directory being typed whose names start with its last part."""
    root = root_of(ctx)
    parent, _, start = value.rpartition("/")
    directory = root.inside(parent)
    if directory is None or not directory.is_dir():
        return []
    values = []
    for child in sorted(directory.iterdir()):
        if child.name.startswith(start) and root.inside(child) is not None:
            relative = child.relative_to(root.directory).as_posix()
            values.append(relative + "/" if child.is_dir() else relative)
    return values


if __name__ == "__main__":
    server.run()
