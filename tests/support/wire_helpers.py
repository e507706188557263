"""Helpers for the wire tests: raw stdio and HTTP drivers that check every message they see.

Everything here is bounded: reads take a timeout, subprocesses are killed on the way out,
and servers bind to 127.0.0.1 on a port found by binding port 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from wire_schema import check_notification, check_response

SUPPORT = Path(__file__).resolve().parent
ROOT = SUPPORT.parents[1]
SERVERS = SUPPORT / "servers"
BASIC = SERVERS / "basic.py"
VERSION = "2026-07-28"
TIMEOUT = 15.0

CLIENT_INFO = {"name": "wire-test-client", "version": "1.0.0"}
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def meta(**extra: Any) -> dict[str, Any]:
    """The full per-request ``_meta``, plus ``extra`` keys (e.g. ``progressToken``)."""
    return {**META, **extra}


def request(
    request_id: Any, method: str, params: dict[str, Any] | None = None, **meta_extra: Any
) -> dict[str, Any]:
    """A 2026-07-28 request with the full ``_meta``."""
    full = dict(params or {})
    full["_meta"] = meta(**meta_extra)
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": full}


def call(
    request_id: Any, tool: str, arguments: dict[str, Any], **meta_extra: Any
) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": tool, "arguments": arguments}, **meta_extra)


def encode(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MCPSERVE_ALLOWED_HOSTS", None)
    env.pop("MCPSERVE_ALLOWED_ORIGINS", None)
    env.pop("MCPSERVE_PUBLIC_URL", None)
    env["PYTHONUNBUFFERED"] = "1"
    # A served process stops at once on SIGTERM, as the tests that stop one expect; the drain
    # tests (tests/transports/test_drain.py) set the window they test.
    env["MCPSERVE_DRAIN_SECONDS"] = "0"
    env.update(extra)
    return env


def _read_if_present(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


async def wait_for_file(path: Path, within: float = TIMEOUT) -> str:
    """Poll until ``path`` exists and is not empty; return its text."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = _read_if_present(path)
        if text:
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path.name} did not appear within {within} s")


# --------------------------------------------------------------------------- stdio


def check_line(line: bytes) -> dict[str, Any]:
    """One stdout line: exactly one compact JSON object, newline-terminated."""
    assert line.endswith(b"\n"), f"line not newline-terminated: {line[:200]!r}"
    body = line[:-1]
    assert b"\n" not in body, line[:200]
    assert b"\r" not in body, line[:200]
    message = json.loads(body)  # raises on anything that is not exactly one JSON text
    assert isinstance(message, dict), f"not a JSON object: {line[:200]!r}"
    assert message.get("jsonrpc") == "2.0", message
    return message


@dataclass
class StdioProcess:
    """A server subprocess driven with raw bytes on stdin, read line by line on stdout.

    Every line read is checked to be one JSON message and validated against the official
    schema: notifications by type, responses against the method of the request with that id.
    """

    process: asyncio.subprocess.Process
    methods: dict[Any, str] = field(default_factory=dict)
    seen: list[dict[str, Any]] = field(default_factory=list)
    stderr: bytearray = field(default_factory=bytearray)
    _stderr_task: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls, args: Sequence[str] | None = None, *, env: dict[str, str] | None = None
    ) -> StdioProcess:
        command = list(args) if args is not None else [sys.executable, str(BASIC)]
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(ROOT),
            env=child_env(**(env or {})),
            limit=64 * 1024 * 1024,
        )
        self = cls(process)
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        return self

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr.extend(chunk)

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, *messages: Any) -> None:
        """Write each message as one line (remembering request methods for validation)."""
        for message in messages:
            if isinstance(message, dict) and "method" in message and "id" in message:
                self.methods[message["id"]] = message["method"]
        await self.write(b"".join(encode(message) + b"\n" for message in messages))

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        if not self.process.stdin.is_closing():
            self.process.stdin.close()

    async def read_line(self, within: float = TIMEOUT) -> bytes:
        assert self.process.stdout is not None
        return await asyncio.wait_for(self.process.stdout.readline(), within)

    async def read(self, within: float = TIMEOUT) -> dict[str, Any]:
        """The next message; fails on EOF, on a bad line or after ``within``."""
        line = await self.read_line(within)
        assert line, f"server closed stdout; stderr: {self.stderr.decode(errors='replace')}"
        return self.validate(line)

    def validate(self, line: bytes) -> dict[str, Any]:
        message = check_line(line)
        if "method" in message:
            assert "id" not in message, f"the server sent a request: {message}"
            check_notification(message)
        else:
            check_response(self.methods.get(message.get("id"), None), message)
        self.seen.append(message)
        return message

    async def read_until(
        self, request_id: Any, within: float = TIMEOUT
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Read until the response whose id equals ``request_id`` (same JSON type).

        Returns it and every other message read before it.
        """
        others: list[dict[str, Any]] = []
        deadline = time.monotonic() + within
        while True:
            message = await self.read(max(0.01, deadline - time.monotonic()))
            if "method" not in message and same_id(message.get("id"), request_id):
                return message, others
            others.append(message)

    async def read_rest(self, within: float = TIMEOUT) -> list[dict[str, Any]]:
        """Every message until EOF on stdout."""
        messages = []
        deadline = time.monotonic() + within
        while True:
            line = await self.read_line(max(0.01, deadline - time.monotonic()))
            if not line:
                return messages
            messages.append(self.validate(line))

    async def wait(self, within: float = TIMEOUT) -> int:
        code = await asyncio.wait_for(self.process.wait(), within)
        if self._stderr_task is not None:
            await asyncio.wait_for(self._stderr_task, within)
        return code

    async def stop(self) -> None:
        """Close stdin, give the process a moment, then kill it; always reaps it."""
        with contextlib.suppress(Exception):
            self.close_stdin()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await asyncio.wait_for(self.process.wait(), 10)
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(self._stderr_task, 5)
            except TimeoutError:
                self._stderr_task.cancel()
        transport = getattr(self.process, "_transport", None)
        if transport is not None:
            transport.close()


def same_id(a: Any, b: Any) -> bool:
    """JSON-RPC id equality, keeping JSON types apart (0 is not "0", 1 is not true)."""
    return type(a) is type(b) and a == b


@contextlib.asynccontextmanager
async def stdio_server(
    args: Sequence[str] | None = None, *, env: dict[str, str] | None = None
) -> AsyncIterator[StdioProcess]:
    proc = await StdioProcess.start(args, env=env)
    try:
        yield proc
    finally:
        await proc.stop()


# --------------------------------------------------------------------------- HTTP


def mcp_headers(
    method: str,
    name: str | None = None,
    *,
    version: str = VERSION,
    accept: str | None = "application/json, text/event-stream",
    **extra: str,
) -> dict[str, str]:
    """The headers a conforming client sends for ``method`` (``extra``: more headers)."""
    headers = {
        "content-type": "application/json",
        "mcp-protocol-version": version,
        "mcp-method": method,
    }
    if accept is not None:
        headers["accept"] = accept
    if name is not None:
        headers["mcp-name"] = name
    headers.update({key.replace("_", "-"): value for key, value in extra.items()})
    return headers


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The JSON messages of an SSE body: one ``data:`` line per event, comments skipped."""
    messages = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not data:
            continue
        assert len(data) == 1, f"an event must be exactly one data line: {block!r}"
        assert data[0].startswith("data: "), block
        messages.append(json.loads(data[0][len("data: ") :]))
    return messages


@dataclass
class Reply:
    """An HTTP answer to one POST, decoded and schema-checked."""

    status: int
    headers: httpx2.Headers
    body: bytes
    messages: list[dict[str, Any]]  # JSON: the one message; SSE: every event

    @property
    def message(self) -> dict[str, Any]:
        """The JSON-RPC response (the last SSE event, or the JSON body)."""
        assert self.messages, f"no JSON-RPC message in {self.status} {self.body[:300]!r}"
        return self.messages[-1]

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.message, self.message
        return self.message["error"]  # type: ignore[no-any-return]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.message, self.message
        return self.message["result"]  # type: ignore[no-any-return]

    @property
    def notifications(self) -> list[dict[str, Any]]:
        return self.messages[:-1]

    @property
    def is_sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")


def decode_reply(method: str | None, response: httpx2.Response) -> Reply:
    """Decode and validate: JSON bodies as responses, SSE events as notifications+response."""
    content_type = response.headers.get("content-type", "")
    body = response.content
    messages: list[dict[str, Any]] = []
    if content_type.startswith("text/event-stream"):
        assert response.status_code == 200
        messages = parse_sse(body.decode())
        assert messages, "an SSE response must end with the JSON-RPC response"
        for notification in messages[:-1]:
            assert "method" in notification, notification
            assert "id" not in notification, notification
            check_notification(notification)
        assert "method" not in messages[-1], messages[-1]
        check_response(method, messages[-1])
    elif content_type.startswith("application/json"):
        message = json.loads(body)
        assert isinstance(message, dict), message
        check_response(method, message)
        messages = [message]
    return Reply(response.status_code, response.headers, body, messages)


async def post(
    client: httpx2.AsyncClient,
    message: Any,
    headers: dict[str, str] | None = None,
    *,
    path: str = "/mcp",
    content: bytes | None = None,
) -> Reply:
    """POST ``message`` (or raw ``content``) and decode the answer.

    Default headers are derived from the message (method, and ``Mcp-Name`` from the name or
    uri the body carries); pass ``headers`` to replace them entirely.
    """
    method = message.get("method") if isinstance(message, dict) else None
    if headers is None:
        headers = default_headers(message)
    data = content if content is not None else encode(message)
    response = await asyncio.wait_for(client.post(path, content=data, headers=headers), TIMEOUT)
    return decode_reply(method, response)


def default_headers(message: Any) -> dict[str, str]:
    method = message.get("method", "") if isinstance(message, dict) else ""
    params = (message.get("params") or {}) if isinstance(message, dict) else {}
    name = None
    if method in ("tools/call", "prompts/get"):
        name = params.get("name")
    elif method == "resources/read":
        name = params.get("uri")
    elif method in ("tasks/get", "tasks/update", "tasks/cancel"):
        name = params.get("taskId")
    if isinstance(name, str) and not (name.isascii() and name.isprintable()):
        import base64

        name = "=?base64?" + base64.b64encode(name.encode()).decode() + "?="
    return mcp_headers(method, name if isinstance(name, str) else None)


@contextlib.asynccontextmanager
async def asgi_client(app: Any, host: str = "127.0.0.1") -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(
        transport=transport, base_url=f"http://{host}", timeout=TIMEOUT
    ) as client:
        yield client


async def asgi_raw(
    app: Any,
    *,
    method: str = "POST",
    path: str = "/mcp",
    headers: Sequence[tuple[bytes, bytes]] = (),
    body: bytes = b"",
) -> tuple[int, dict[str, str], bytes]:
    """Call the ASGI app directly with exactly these header bytes (no client rewriting)."""
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": list(headers),
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    await asyncio.wait_for(app(scope, receive, send), TIMEOUT)
    start = next(m for m in sent if m["type"] == "http.response.start")
    response_headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in start["headers"]}
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], response_headers, data


# --------------------------------------------------------------------------- real servers


@dataclass
class HTTPServerProcess:
    url: str
    port: int
    marker_dir: Path
    process: subprocess.Popen[bytes]
    log: Path


@contextlib.contextmanager
def http_server_process(
    marker_dir: Path, *, args: Sequence[str] | None = None, env: dict[str, str] | None = None
) -> Iterator[HTTPServerProcess]:
    """Run tests/support/servers/basic.py over HTTP with uvicorn in a subprocess on 127.0.0.1.

    ``args`` replaces the command; ``{port}`` in it is replaced by the chosen port.
    """
    port = free_port()
    log = marker_dir / f"server-{port}.log"
    command = (
        [arg.replace("{port}", str(port)) for arg in args]
        if args is not None
        else [sys.executable, str(BASIC)]
    )
    extra = {"MCPSERVE_TEST_HTTP_PORT": str(port), "MCPSERVE_TEST_MARKER_DIR": str(marker_dir)}
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            cwd=str(ROOT),
            env=child_env(**extra, **(env or {})),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_listening(process, port, log)
        yield HTTPServerProcess(f"http://127.0.0.1:{port}/mcp", port, marker_dir, process, log)
    finally:
        stop_process(process)


def wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until ``process`` listens on ``port`` (bounded: 30 s); its ``log`` in the failure
    when it exits first or never listens."""
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the process exited early:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on {port}:\n{log.read_text()}") from None
            time.sleep(0.05)


def stop_process(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, and SIGKILL if it has not exited within 10 s; reaped either way."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
