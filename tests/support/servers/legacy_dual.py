"""A dual-era server for the legacy tests: 2026-07-28 and the handshake era on one endpoint.

:func:`build` makes a fresh server (in-process tests call it); run as a script it serves
stdio, or HTTP with uvicorn on 127.0.0.1 when ``MCPSERVE_TEST_HTTP_PORT`` is set.
Environment knobs for the script:

* ``MCPSERVE_TEST_LEGACY=0`` serves the 2026-07-28 wire only (``Server(legacy=False)``);
* ``MCPSERVE_TEST_LEGACY_TIMEOUT`` sets ``legacy_client_timeout_seconds``;
* ``MCPSERVE_TEST_MAX_SESSIONS`` and ``MCPSERVE_TEST_SESSION_IDLE`` bound HTTP sessions;
* ``MCPSERVE_TEST_WIRE_LOG`` (HTTP): record every exchange there (:class:`WireRecorder`);
* ``MCPSERVE_TEST_MARKER_DIR``: tools that wait record ``<tag>.started`` and
  ``<tag>.finally`` there, and ``gated`` tools wait for ``<tag>.release``.

The same handler code serves both eras: ``ask_*`` tools use ``ctx.elicit``/``ctx.sample``/
``ctx.list_roots``, which become ``input_required`` rounds for a modern client and real
requests to the client for a legacy one.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mcpserve import Completion, Context, Elicit, ListRoots, Sample, Server, ToolError

NAME = "legacy-dual"
VERSION = "3.1.4"
INSTRUCTIONS = "A dual-era server for the legacy tests."


class Sum(BaseModel):
    total: int


class Name(BaseModel):
    name: str


def _marker_dir() -> Path | None:
    directory = os.environ.get("MCPSERVE_TEST_MARKER_DIR")
    return Path(directory) if directory else None


def _marker(tag: str, event: str, text: str = "") -> None:
    directory = _marker_dir()
    if directory is not None:
        with (directory / f"{tag}.{event}").open("a") as file:
            file.write(text or event)


async def _released(tag: str) -> bool:
    directory = _marker_dir()
    if directory is None:
        return True
    release = directory / f"{tag}.release"
    for _ in range(3000):  # at most ~30 s
        if release.exists():
            return True
        await asyncio.sleep(0.01)
    return False


def build(**options: Any) -> Server:
    """A fresh dual-era server; ``options`` go to :class:`Server`."""
    options.setdefault("client_logging", True)
    server = Server(NAME, version=VERSION, instructions=INSTRUCTIONS, **options)

    @server.tool
    def add(a: int, b: int) -> Sum:
        """Add two integers (structured result)."""
        return Sum(total=a + b)

    @server.tool
    def count(n: int) -> int:
        """Return the number: a non-object structured value."""
        return n

    @server.tool
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool
    def fail(reason: str) -> str:
        """Always fails with a tool error."""
        raise ToolError(f"failed: {reason}")

    @server.tool
    async def progressive(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times, then answer."""
        for step in range(1, steps + 1):
            await ctx.progress(step, total=steps, message=f"step {step}")
        return f"done after {steps}"

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Log at four levels; answers with the levels that reached the client."""
        sent = [
            level
            for level in ("debug", "info", "warning", "error")
            if await ctx.log(level, f"{level} message", logger="chatty")
        ]
        return ",".join(sent) or "none"

    @server.tool
    async def ask_name(ctx: Context) -> str:
        """Ask the user's name."""
        answer = await ctx.elicit("What is your name?", Name)
        return f"Hello, {answer.data.name}!" if answer.accepted else f"No name ({answer.action})"

    @server.tool
    async def ask_and_record(tag: str, ctx: Context) -> str:
        """Ask the user's name; ``<tag>.outcome`` records how the question ended."""
        try:
            answer = await ctx.elicit("What is your name?", Name)
        except ToolError as exc:
            _marker(tag, "outcome", f"error: {exc}")
            raise
        except asyncio.CancelledError:
            _marker(tag, "outcome", "cancelled")
            raise
        _marker(tag, "outcome", f"answered: {answer.action}")
        return answer.action

    @server.tool
    async def ask_url(ctx: Context) -> str:
        """Send the user to a web page (URL-mode elicitation)."""
        answer = await ctx.elicit("Please sign in", url="https://example.com/sign-in")
        return f"URL elicitation: {answer.action}"

    @server.tool
    async def ask_llm(question: str, ctx: Context) -> str:
        """Ask the client's model."""
        reply = await ctx.sample(question, max_tokens=50)
        return f"LLM said: {reply.text} ({reply.model})"

    @server.tool
    async def ask_roots(ctx: Context) -> str:
        """List the client's roots."""
        roots = await ctx.list_roots()
        return "Roots: " + ", ".join(root.uri for root in roots)

    @server.tool
    async def ask_all(ctx: Context) -> str:
        """Ask three things at once."""
        answers = await ctx.ask(
            who=Elicit("Who are you?", Name),
            llm=Sample("Say hi", max_tokens=10),
            roots=ListRoots(),
        )
        who = answers["who"].data.name if answers["who"].accepted else "nobody"
        return f"{who}|{answers['llm'].text}|{len(answers['roots'])} roots"

    @server.tool
    async def touch(uri: str) -> str:
        """Tell subscribers that ``uri`` changed."""
        await server.notify_resource_updated(uri)
        return f"touched {uri}"

    @server.tool
    def add_tool(name: str) -> str:
        """Register a new tool, so the tool list changes."""

        def dynamic() -> str:
            return f"I am {name}"

        server.add_tool(dynamic, name=name, description="Added at run time.")
        return f"added {name}"

    @server.tool
    async def gated(tag: str, ctx: Context) -> str:
        """Send progress (when asked), then answer once ``<tag>.release`` exists."""
        _marker(tag, "started")
        try:
            await ctx.progress(1, message="started")
            released = await _released(tag)
            return f"released {tag}" if released else f"gave up {tag}"
        finally:
            _marker(tag, "finally", f"cancelled={ctx.cancelled}")

    @server.tool
    async def reconnect(tag: str, ctx: Context) -> str:
        """Log, close the HTTP stream early, then answer once ``<tag>.release`` exists."""
        await ctx.log("info", "before the break")
        closed = ctx.close_stream(retry_ms=100)
        _marker(tag, "started", f"closed={closed}")
        released = await _released(tag)
        await ctx.log("info", "after the break")
        return f"reconnected {tag}" if released else f"gave up {tag}"

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

    @server.resource("file:///a.txt", mime_type="text/plain")
    def a_txt() -> str:
        """A text file."""
        return "hello from a.txt"

    @server.resource("watched://doc", mime_type="text/plain")
    def watched() -> str:
        """A document that changes."""
        return "watched doc"

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

    return server


def _from_env() -> Server:
    env = os.environ
    options: dict[str, Any] = {"legacy": env.get("MCPSERVE_TEST_LEGACY", "1") != "0"}
    if "MCPSERVE_TEST_LEGACY_TIMEOUT" in env:
        options["legacy_client_timeout_seconds"] = float(env["MCPSERVE_TEST_LEGACY_TIMEOUT"])
    return build(**options)


def _http_options() -> dict[str, Any]:
    """Options of the HTTP app (sessions are an HTTP matter), from the environment."""
    env = os.environ
    options: dict[str, Any] = {}
    if "MCPSERVE_TEST_MAX_SESSIONS" in env:
        options["max_sessions"] = int(env["MCPSERVE_TEST_MAX_SESSIONS"])
    if "MCPSERVE_TEST_SESSION_IDLE" in env:
        options["session_idle_seconds"] = float(env["MCPSERVE_TEST_SESSION_IDLE"])
    return options


class WireRecorder:
    """ASGI middleware appending each HTTP exchange to a JSON-lines file.

    A ``start`` line when a request arrives and an ``end`` line (request body, status,
    headers and the whole response body) when its answer is over, so a test can wait for
    every exchange to end and then validate everything the server sent.
    """

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.path = path
        self._count = 0

    def _write(self, record: dict[str, Any]) -> None:
        with open(self.path, "a") as file:
            file.write(json.dumps(record) + "\n")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self._count += 1
        number = self._count
        self._write({"event": "start", "n": number})
        body = bytearray()
        answer = bytearray()
        record: dict[str, Any] = {
            "event": "end",
            "n": number,
            "method": scope["method"],
            "request_headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
        }

        async def recv() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        async def snd(message: Any) -> None:
            if message["type"] == "http.response.start":
                record["status"] = message["status"]
                record["response_headers"] = {
                    k.decode().lower(): v.decode() for k, v in message.get("headers", [])
                }
            elif message["type"] == "http.response.body":
                answer.extend(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, recv, snd)
        finally:
            record["body"] = body.decode("utf-8", "replace")
            record["response_body"] = answer.decode("utf-8", "replace")
            self._write(record)


def serve_http(server: Server, port: int, wire_log: str | None) -> None:
    if not wire_log:
        server.run("http", host="127.0.0.1", port=port, log_level="warning", **_http_options())
        return
    import uvicorn

    app = WireRecorder(server.http_app("/mcp", bind_host="127.0.0.1", **_http_options()), wire_log)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="on", log_level="warning")
    uvicorn.Server(config).run()


def main() -> None:
    server = _from_env()
    port = os.environ.get("MCPSERVE_TEST_HTTP_PORT")
    if port:
        serve_http(server, int(port), os.environ.get("MCPSERVE_TEST_WIRE_LOG"))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
