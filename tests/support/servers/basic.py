"""A small server used by the wire tests, over stdio (as a subprocess) and HTTP (in process).

Run as a script it serves stdio; ``MCPSERVE_TEST_MAX_MESSAGE_BYTES`` lowers the stdio line
limit, and ``MCPSERVE_TEST_HTTP_PORT`` serves HTTP on 127.0.0.1 instead (SSE keep-alive period
``MCPSERVE_TEST_KEEPALIVE`` seconds). Tools that wait
record their life in files under ``MCPSERVE_TEST_MARKER_DIR`` (``<tag>.started``,
``<tag>.finally``), so a test can tell that a cancelled handler's ``finally`` ran.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel

from mcpserve import Completion, Context, Header, Server, ToolError, ToolResult, blocking

server = Server("wire-test", version="1.2.3", instructions="A server for wire tests.")
other = Server("other-server", version="9.9.9")


def _marker(tag: str, event: str, text: str = "") -> None:
    directory = os.environ.get("MCPSERVE_TEST_MARKER_DIR")
    if directory:
        with (Path(directory) / f"{tag}.{event}").open("a") as file:
            file.write(text or event)


class Sum(BaseModel):
    total: int


@server.tool
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b)


@server.tool
def power(base: int, exponent: int) -> ToolResult:
    """``base ** exponent`` as text and as structured content (ints have no size limit)."""
    value = base**exponent
    return ToolResult(content=[str(value)], structured={"value": value})


@server.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool
async def sleepy(seconds: float, tag: str) -> str:
    """Sleep for a while, then answer with the tag."""
    await asyncio.sleep(seconds)
    return f"slept {tag}"


@server.tool
async def gated(tag: str) -> str:
    """Answer only once the test creates ``<tag>.release`` in the marker directory."""
    release = Path(os.environ["MCPSERVE_TEST_MARKER_DIR"]) / f"{tag}.release"
    _marker(tag, "started")
    for _ in range(3000):
        if release.exists():
            return f"released {tag}"
        await asyncio.sleep(0.01)
    return f"gave up {tag}"


@server.tool
async def wait_forever(tag: str, ctx: Context) -> str:
    """Wait until cancelled; records started/finally markers."""
    _marker(tag, "started")
    try:
        await ctx.progress(1, message="waiting")
        await asyncio.sleep(3600)
        return "woke up"
    finally:
        _marker(tag, "finally", f"cancelled={ctx.cancelled}")


@server.tool
def noisy(text: str) -> str:
    """Write stray output to stdout (print, sys.stdout and fd 1) before answering."""
    print(f"print noise {text}")
    sys.stdout.write(f"sys.stdout noise {text}\n")
    sys.stdout.flush()
    os.write(1, f"fd1 noise {text}\n".encode())
    return f"quiet {text}"


@server.tool
@blocking
def noisy_thread(text: str) -> str:
    """Like ``noisy``, from a worker thread."""
    print(f"thread print noise {text}")
    os.write(1, f"thread fd1 noise {text}\n".encode())
    return f"quiet thread {text}"


@server.tool
async def progressive(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times, then answer."""
    for step in range(1, steps + 1):
        await ctx.progress(step, total=steps, message=f"step {step}")
    return f"done after {steps}"


@server.tool
def fail(reason: str) -> str:
    """Always fails with a tool error."""
    raise ToolError(f"failed: {reason}")


@server.tool
def execute_sql(region: Annotated[str, Header("Region")], query: str) -> str:
    """Run a query in a region."""
    return f"{region}: {query}"


@server.tool
def shard(n: Annotated[int, Header("Shard")], flag: Annotated[bool, Header("Flag")]) -> str:
    """Pick a shard."""
    return f"shard {n} {flag}"


@server.tool
def principal(ctx: Context) -> str:
    """Who the transport says is calling."""
    return f"{ctx.principal or 'anonymous'} {' '.join(sorted(ctx.scopes))}".strip()


@server.tool(requires={"elicitation": {"form": {}}})
def deploy(env: str) -> str:
    """Needs form elicitation."""
    return f"deployed {env}"


@server.resource("file:///a.txt", mime_type="text/plain")
def a_txt() -> str:
    """A text file."""
    return "hello from a.txt"


@server.resource("notes://{note_id}", mime_type="text/plain")
def note(note_id: str) -> str:
    """A note by id."""
    return f"note {note_id}"


@server.prompt
def greet(who: str) -> str:
    """Greet someone."""
    return f"Hello, {who}!"


@server.completion(prompt="greet", argument="who")
def complete_who(value: str) -> list[str]:
    return [name for name in ("alice", "albert", "bob") if name.startswith(value)]


@server.completion(resource="notes://{note_id}", argument="note_id")
def complete_note(value: str) -> Completion:
    return Completion(values=[n for n in ("n1", "n2", "x9") if n.startswith(value)], total=3)


@other.tool
def whoami() -> str:
    """Names this server."""
    return "other"


def main() -> None:
    port = os.environ.get("MCPSERVE_TEST_HTTP_PORT")
    if port:
        keepalive = float(os.environ.get("MCPSERVE_TEST_KEEPALIVE", "15"))
        server.run(
            "http",
            host="127.0.0.1",
            port=int(port),
            log_level="warning",
            keepalive_seconds=keepalive,
        )
        return
    limit = os.environ.get("MCPSERVE_TEST_MAX_MESSAGE_BYTES")
    if limit:
        from mcpserve.transports.stdio import serve_stdio

        asyncio.run(serve_stdio(server, max_message_bytes=int(limit)))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
