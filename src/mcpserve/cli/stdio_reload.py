"""``mcpserve run app.py --reload`` over stdio: the client keeps its pipes, the server restarts.

A stdio server's pipes belong to the client that started it, so a restarted server cannot
get them back. Here they stay with this process, which runs the real server as a child
(``python -m mcpserve.cli run TARGET``) and relays newline-delimited JSON-RPC both ways:
each line from our stdin to the child's, each line from the child's stdout to ours. When a
``.py`` file under the target's directory changes (watchfiles), the child is stopped and a
new one started from the changed source.

What a restart means for the client:

* on the 2026-07-28 wire nothing: every request stands alone, and the next one reaches the
  new child;
* a request still in flight when the child stops is answered here with a JSON-RPC error
  (-32603, "The server restarted ... send the request again"), so the client never waits
  for an answer that cannot come;
* a handshake-era session goes on: the client's ``initialize`` and
  ``notifications/initialized`` are sent to the new child again (its answer to that
  ``initialize`` is not relayed: the client has one). What the old child kept of the
  session (subscriptions, the log level) is gone, as is a question it was asking.

The child's stderr is this process's, so its logs and tracebacks show as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from .._extras import needs_extra
from .._types import JSONDict, JSONValue
from ..protocol import constants as c
from ..protocol.jsonrpc import dumps
from .terminal import say

#: How long a child gets to stop on SIGTERM before it is killed.
STOP_TIMEOUT = 5.0
_REPLAYED = "mcpserve-reload-initialize"  # the id of the initialize sent to a new child


class Relay:
    """One client's stdio, relayed to the current child server."""

    def __init__(self, command: list[str], write: Callable[[bytes], object]) -> None:
        self.command = command
        self.write = write  # writes bytes to our stdout
        self.child: asyncio.subprocess.Process | None = None
        self.pumping: asyncio.Task[None] | None = None
        #: Requests sent to the current child and not yet answered: id -> the JSON id.
        self.in_flight: dict[str, object] = {}
        self.initialize: JSONDict | None = None
        self.initialized = False
        #: Held while a child is replaced: the client's lines wait for the new one.
        self.lock = asyncio.Lock()

    async def start(self, *, replay: bool = False) -> None:
        self.child = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        self.pumping = asyncio.create_task(self._pump(self.child))
        if replay and self.initialize is not None:
            await self._send({**self.initialize, "id": _REPLAYED})
            if self.initialized:
                await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def restart(self) -> None:
        async with self.lock:
            await self.stop()
            for raw_id in list(self.in_flight.values()):
                self._refuse(
                    raw_id, "The server restarted (its source changed); send the request again"
                )
            self.in_flight.clear()
            await self.start(replay=True)

    def _refuse(self, raw_id: JSONValue, message: str) -> None:
        error = {"code": c.INTERNAL_ERROR, "message": message}
        self.write(dumps({"jsonrpc": "2.0", "id": raw_id, "error": error}) + b"\n")

    async def stop(self) -> None:
        child, self.child = self.child, None
        if child is None:
            return
        if child.stdin is not None:
            child.stdin.close()
        if child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                child.terminate()
            try:
                await asyncio.wait_for(child.wait(), STOP_TIMEOUT)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
                await child.wait()
        if self.pumping is not None:
            await asyncio.wait_for(self.pumping, STOP_TIMEOUT)

    async def from_client(self, line: bytes) -> None:
        """One line from the client: noted (requests in flight, the session), then relayed."""
        async with self.lock:
            message = _decoded(line)
            request_id: JSONValue = None
            is_request = False
            if isinstance(message, dict):
                method = message.get("method")
                is_request = "id" in message and isinstance(method, str)
                if is_request:
                    request_id = message["id"]
                    if method == "initialize":
                        self.initialize, self.initialized = message, False
                elif method == "notifications/initialized":
                    self.initialized = True
            child = self.child
            if child is None or child.returncode is not None or child.stdin is None:
                if is_request:  # never leave the client waiting on a server that is not there
                    self._refuse(
                        request_id, _not_running(None if child is None else child.returncode)
                    )
                return
            if is_request:
                self.in_flight[_key(request_id)] = request_id
            child.stdin.write(line if line.endswith(b"\n") else line + b"\n")
            with contextlib.suppress(ConnectionError):
                await child.stdin.drain()

    async def _send(self, message: JSONDict) -> None:
        assert self.child is not None
        assert self.child.stdin is not None
        self.child.stdin.write(dumps(message) + b"\n")
        await self.child.stdin.drain()

    async def _pump(self, child: asyncio.subprocess.Process) -> None:
        """The child's lines to the client, minus the answer to a replayed initialize."""
        assert child.stdout is not None
        while line := await child.stdout.readline():
            message = _decoded(line)
            if isinstance(message, dict) and "method" not in message and "id" in message:
                if message["id"] == _REPLAYED:
                    continue
                self.in_flight.pop(_key(message["id"]), None)
            self.write(line)
        code = await child.wait()
        if self.child is child:  # it exited by itself (the new source does not import...)
            for raw_id in list(self.in_flight.values()):
                self._refuse(raw_id, _not_running(code))
            self.in_flight.clear()


def _not_running(code: int | None) -> str:
    return f"The server is not running (it exited with code {code}); fix what it printed, and save"


def _decoded(line: bytes) -> JSONValue:
    try:
        return json.loads(line)
    except ValueError:
        return None  # not ours to judge: the server answers a malformed line itself


def _key(request_id: object) -> str:
    return json.dumps(request_id, sort_keys=True)


async def relay_stdio(target: str, watched: Path) -> None:
    """Serve ``target`` over this process's stdio, restarting it when ``watched`` changes."""
    with needs_extra("mcpserve run --reload over stdio"):
        from watchfiles import PythonFilter, awatch

    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    relay = Relay([sys.executable, "-m", "mcpserve.cli", "run", target], write)
    await relay.start()
    stop = asyncio.Event()

    async def watch() -> None:
        async for changes in awatch(watched, watch_filter=PythonFilter(), stop_event=stop):
            names = ", ".join(sorted({Path(path).name for _, path in changes}))
            say(f"{names} changed: restarting the server")
            await relay.restart()

    watching = asyncio.create_task(watch())
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024, loop=loop)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader),
        os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0),
    )
    try:
        while line := await reader.readline():
            await relay.from_client(line)
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await relay.stop()
