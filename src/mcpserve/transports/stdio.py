"""stdio: newline-delimited JSON-RPC on stdin and stdout.

Theory of operation:

* One line is one message (the encoder never emits raw newlines). Blank lines are skipped.
* Each line is decoded and classified, then handed to the dispatcher (``protocol/core.py``):
  ``prepare`` checks it, and a request whose handler can never wait (a list, a plain
  function) is answered at once; any other runs in its own task, so a slow tool never holds
  up the next line, and answers may leave out of order (the client correlates by id).
* Whatever a line holds, it gets its answer: a line that is not JSON gets -32700 without an
  id, a malformed message -32600, and even a bug of ours becomes a -32603 for that message.
  Serving goes on. A line longer than ``max_message_bytes`` is discarded and answered -32600.
* ``notifications/cancelled`` cancels the matching task; a cancelled request writes
  nothing more, not even a late result. Unknown or finished ids are ignored.
* The handshake era has one hand-off: a message the era's rules give to it
  (``protocol/handshake_state.py``) goes to :class:`~.stdio_handshake.StdioHandshake` first
  (``initialize``, and everything after it without ``_meta``).
* The server is reached only through its :class:`~.endpoint.Endpoint`.
* At EOF the server stops reading and ends the client's subscriptions (each with its final
  result); requests still running get ``shutdown_grace`` seconds (default 5) to answer,
  then are cancelled, and it returns: a client closing stdin sees the server exit promptly.
* While serving the real stdout, file descriptor 1 points at stderr and ``sys.stdout`` is
  ``sys.stderr``: a stray ``print`` (or a C library writing to fd 1) lands in the log, not
  in the protocol stream. Protocol output goes to a private duplicate of the old fd 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import stat
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from .. import _request_context as request_context
from .._types import JSONDict
from ..protocol.core import Request, refuse_duplicate_id, run_after_response
from ..protocol.errors import InternalError, InvalidRequest, MCPError, new_ref
from ..protocol.handshake_state import Route
from ..protocol.jsonrpc import (
    Kind,
    RequestId,
    classify,
    dumps,
    error_response,
    is_valid_id,
    loads,
    notification,
    readable_id,
)
from .endpoint import Endpoint, Servable, endpoint_of
from .stdio_handshake import StdioHandshake

logger = logging.getLogger("mcpserve.stdio")

DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: Seconds requests still running at EOF get to finish before they are cancelled: clients
#: close stdin to stop a server and escalate to signals if it lingers.
DEFAULT_SHUTDOWN_GRACE = 5.0
#: How often, while draining after EOF, listens that started late are ended too.
_LISTEN_RECHECK = 0.05


class StdioSession:
    """The message loop of one stdio connection, independent of real file descriptors."""

    def __init__(self, server: Endpoint | Servable, write: Callable[[bytes], None]) -> None:
        self.endpoint = endpoint_of(server)
        self._write = write
        self.inflight: dict[RequestId, asyncio.Task[None]] = {}
        #: Client notifications being handled (``@server.notification``, middleware).
        self.notifying: set[asyncio.Task[None]] = set()
        #: The handshake era's side of this connection (None when the server has none).
        front = self.endpoint.handshake
        self.handshake = (
            StdioHandshake(front, self.endpoint.events, self.send, self.endpoint.metrics)
            if front is not None
            else None
        )

    def send(self, message: JSONDict) -> None:
        self._write(dumps(message) + b"\n")

    async def feed(self, line: bytes) -> None:
        """Handle one line read from the client. Whatever the line, it gets its answer (or
        none, for a notification) and the loop goes on."""
        line = line.strip()
        if not line:
            return
        try:
            message = loads(line)
        except MCPError as exc:
            self.send(error_response(None, exc))
            return
        bound = None
        try:
            if request_context.recording and classify(message) is Kind.REQUEST:
                # For the JSON log format; the tasks started below keep it, the reader not.
                bound = request_context.bind(message["id"], None)
            if (
                self.handshake is not None
                and isinstance(message, dict)
                and message.get("method") == "initialize"
                and classify(message) is Kind.REQUEST
                and self.handshake.route(message, Kind.REQUEST) is Route.INITIALIZE
            ):
                await self.handshake.initialize(message)  # awaited: it may pass through middleware
            else:
                self._receive(message)
        except MCPError as exc:
            self.send(error_response(readable_id(message), exc))
        except Exception:  # a bug of ours: logged, and this message answered; serving goes on
            ref = new_ref()
            logger.exception("Failed to handle a message (ref %s)", ref)
            self.send(
                error_response(readable_id(message), InternalError(f"Internal error (ref {ref})"))
            )
        finally:
            if bound is not None:
                request_context.current.reset(bound)

    def oversized(self) -> None:
        self.send(error_response(None, InvalidRequest("Invalid request: message too large")))

    def _receive(self, message: object) -> None:
        kind = classify(message)
        assert isinstance(message, dict)
        session = None
        handshake = self.handshake
        if handshake is not None:
            route = handshake.route(message, kind)
            if route is not Route.MODERN:
                session = handshake.accept(message, route)
                if session is None:
                    return  # answered by the handshake era itself
        if kind is Kind.NOTIFICATION:
            self._notification(message)
            dispatcher = self.endpoint.dispatcher
            if dispatcher.receives(message["method"]):
                handling = asyncio.create_task(dispatcher.notify(message, session=session))
                self.notifying.add(handling)  # held until done: the loop keeps weak references
                handling.add_done_callback(self.notifying.discard)
            return
        if kind is Kind.RESPONSE:
            return  # an answer to nothing we asked: ignored
        request_id = message["id"]
        if request_id in self.inflight:
            raise refuse_duplicate_id()
        dispatcher = self.endpoint.dispatcher
        ask = handshake.ask if session is not None and handshake is not None else None
        request = dispatcher.prepare(message, send=self._send_related, session=session, ask=ask)
        if not request.inline:
            request.after_response = []  # run once the response is written (_serve)
        answer = dispatcher.execute(request)
        if isinstance(answer, dict):
            self.send(answer)
            return
        task = asyncio.create_task(self._serve(answer, request))
        self.inflight[request_id] = task
        task.add_done_callback(lambda _: self.inflight.pop(request_id, None))

    async def _send_related(self, message: JSONDict) -> None:
        """Notifications about a request; nothing more once it is cancelled."""
        if not _cancelling():
            self.send(message)

    async def _serve(self, work: Awaitable[JSONDict], request: Request) -> None:
        try:
            response = await work
            if _cancelling():
                return  # cancelled: not even a late result is written
            self.send(response)
            if request.method == "subscriptions/listen" and "result" in response:
                # The server ended the subscription: after its result, the stdio teardown
                # notification too (docs/decisions.md, "Ending a listen on stdio").
                params = {"requestId": request.id, "reason": "Subscription ended"}
                self.send(notification("notifications/cancelled", params))
        finally:
            if request.after_response:
                await run_after_response(request)

    def _notification(self, message: JSONDict) -> None:
        if message.get("method") != "notifications/cancelled":
            return
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self.inflight.get(request_id) if is_valid_id(request_id) else None  # type: ignore[arg-type]
        if task is not None:
            reason = params.get("reason") if isinstance(params, dict) else None
            logger.info("Request %r cancelled by the client: %s", request_id, str(reason)[:200])
            task.cancel()

    async def finish(self, grace: float | None = DEFAULT_SHUTDOWN_GRACE) -> None:
        """The client is gone. Its handshake-era session goes (questions to it fail), its open
        subscriptions end with their final results, and in-flight requests get ``grace``
        seconds (``None``: as long as they take) before they are cancelled, answering
        nothing more."""
        if self.handshake is not None:
            self.handshake.end()
        loop = asyncio.get_running_loop()
        deadline = None if grace is None else loop.time() + grace
        while self.inflight:
            tasks = set(self.inflight.values())
            # Again on every pass: a listen still starting up registers a moment later.
            self.endpoint.events.end_listens(served_by=tasks)
            timeout = _LISTEN_RECHECK if deadline is None else deadline - loop.time()
            if timeout <= 0:
                break
            await asyncio.wait(tasks, timeout=min(timeout, _LISTEN_RECHECK))
        if self.inflight:
            logger.warning(
                "stdin closed; cancelling %d request(s) still running after %s s",
                len(self.inflight),
                grace,
            )
            for task in self.inflight.values():
                task.cancel()
            while self.inflight:
                await asyncio.gather(*self.inflight.values(), return_exceptions=True)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def serve_stream(
    server: Endpoint | Servable,
    reader: asyncio.StreamReader,
    write: Callable[[bytes], None],
    *,
    drain: Callable[[], Any] | None = None,
    shutdown_grace: float | None = DEFAULT_SHUTDOWN_GRACE,
) -> None:
    """Serve newline-delimited JSON-RPC from ``reader`` until EOF, writing with ``write``.

    After EOF, requests still running get ``shutdown_grace`` seconds, then are cancelled.
    """
    session = StdioSession(server, write)
    async with session.endpoint.running():
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    await session.feed(exc.partial)  # a last line without a newline
                break
            except asyncio.LimitOverrunError as exc:
                await _discard_line(reader, exc.consumed)
                session.oversized()
                continue
            await session.feed(line)
            if drain is not None:
                await drain()
        await session.finish(shutdown_grace)


async def _discard_line(reader: asyncio.StreamReader, buffered: int) -> None:
    """Drop the rest of an oversized line, newline included, without holding it in memory."""
    await reader.readexactly(buffered)
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


@contextlib.contextmanager
def _protocol_stdout() -> Iterator[int]:
    """Keep fd 1 for the protocol alone: point the old fd 1 at stderr while serving."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    saved_stdout = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield protocol_fd
    finally:
        sys.stdout = saved_stdout
        os.dup2(protocol_fd, 1)
        os.close(protocol_fd)


def _is_stream(fd: int) -> bool:
    """Pipes, sockets and terminals work with asyncio's pipe transports; files do not."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def _stdin_reader(limit: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    fd = sys.stdin.fileno()
    if _is_stream(fd):
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), sys.stdin.buffer
        )
        return reader

    def pump() -> None:  # a regular file (``< requests.jsonl``): read it in a thread
        while chunk := os.read(fd, 1 << 16):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="mcpserve-stdin", daemon=True).start()
    return reader


#: Linux's F_SETPIPE_SZ: a pipe as large as unprivileged processes may ask for (1 MiB by
#: default) takes a big answer in one write instead of one per 64 KiB and loop turn.
_F_SETPIPE_SZ = 1031
_PIPE_SIZE = 1 << 20


def _widen_pipe(fd: int) -> None:
    if sys.platform != "linux" or not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return
    import fcntl

    # A lower pipe-max-size, or the user's pipe quota spent: keep the default size.
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def serve_stdio(
    server: Endpoint | Servable,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_grace: float | None = DEFAULT_SHUTDOWN_GRACE,
) -> None:
    """Serve on this process's stdin and stdout until stdin closes.

    ``shutdown_grace``: seconds that requests still running when stdin closes get to finish
    (their answers are still written); then they are cancelled. ``None`` waits for them.
    """
    loop = asyncio.get_running_loop()
    endpoint = endpoint_of(server)
    if endpoint.auth is not None:
        # The spec's authorization is for HTTP; over stdio the process that started this
        # server is the client, and the server takes its own credentials from the environment.
        logger.info(
            "auth= applies to HTTP only: over stdio every request is trusted and "
            "scopes restrict nothing"
        )
    with _protocol_stdout() as protocol_fd:
        _widen_pipe(sys.stdin.fileno())  # big requests arrive in fewer reads too
        reader = await _stdin_reader(max_message_bytes)
        if not _is_stream(protocol_fd):  # stdout is a regular file: plain blocking writes
            write = functools.partial(_write_all, protocol_fd)
            await serve_stream(endpoint, reader, write, shutdown_grace=shutdown_grace)
            return
        _widen_pipe(protocol_fd)
        out = os.fdopen(os.dup(protocol_fd), "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), out
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        try:
            await serve_stream(
                endpoint, reader, writer.write, drain=writer.drain, shutdown_grace=shutdown_grace
            )
        finally:
            writer.close()


def run_stdio(server: Endpoint | Servable, **options: Any) -> None:
    """Serve ``server`` on stdin and stdout until stdin closes (``Server.run("stdio")``)."""
    asyncio.run(serve_stdio(server, **options))
