"""Tools that take dependencies, for the wire tests (``tests/server/test_dependencies_wire.py``).

``lookup`` depends on ``open_store``, an async generator whose teardown waits (at most
``RELEASE_WAIT`` seconds) for ``$MCPSERVE_TEST_MARKER_DIR/release-<request id>`` and then
writes ``closed-<request id>``: a test sees the response arrive while the teardown still
waits, then releases it. ``broken`` depends on ``unreachable``, which raises. ``hang``
never returns; its dependency ``tracked`` writes ``started-<request id>`` before its
``yield`` and ``ended-<request id>`` (the name of what ended it) after.

Served over HTTP on ``$MCPSERVE_TEST_HTTP_PORT`` (``_serve.py``), stdio otherwise.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

from mcpserve import Context, Depends, Server

RELEASE_WAIT = 5.0

app = Server("dependencies", version="1.0.0")


async def open_store(ctx: Context) -> AsyncIterator[dict[str, str]]:
    yield {"k": "value of k"}
    marks = Path(os.environ["MCPSERVE_TEST_MARKER_DIR"])
    release = marks / f"release-{ctx.request_id}"
    for _ in range(int(RELEASE_WAIT / 0.02)):
        if release.exists():
            break
        await asyncio.sleep(0.02)
    (marks / f"closed-{ctx.request_id}").write_text("closed")


async def tracked(ctx: Context) -> AsyncIterator[None]:
    marks = Path(os.environ["MCPSERVE_TEST_MARKER_DIR"])
    (marks / f"started-{ctx.request_id}").write_text("started")
    try:
        yield
    except BaseException as exc:
        (marks / f"ended-{ctx.request_id}").write_text(type(exc).__name__)
        raise


def unreachable() -> str:
    raise ConnectionError("store.internal:6379 refused the connection")


@app.tool
def lookup(key: str, store: Annotated[dict[str, str], Depends(open_store)]) -> str:
    """The value stored under ``key``."""
    return store[key]


@app.tool
def broken(store: Annotated[str, Depends(unreachable)]) -> str:
    return store


@app.tool
async def hang(watch: Annotated[None, Depends(tracked)]) -> str:
    await asyncio.Event().wait()
    return "never"


if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(app)
