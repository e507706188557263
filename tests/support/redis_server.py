"""A throwaway ``redis-server`` for the subscription-bus tests.

:class:`RedisServer` runs ``redis-server`` on a free 127.0.0.1 port with persistence off
(``--save "" --appendonly no``), waits (bounded) until it answers ``PING``, and stops it on
the way out. It can be stopped (or killed) and started again on the same port and folder, to
simulate an outage; ``options`` given to it come after those defaults and so override them
(``("--appendonly", "yes")`` for a server that keeps its data in an append-only file).

redis-server is required, never optional: when it is missing the tests fail, naming the
Debian package to install.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from wire_helpers import free_port

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0

#: The parameter value ``"redis"`` of a fixture that picks a store, marked: it needs the
#: ``redis`` fixture, which such a fixture asks for only when given this value.
REDIS_PARAM = pytest.param("redis", marks=pytest.mark.redis)


def redis_server_binary() -> str:
    """The path of ``redis-server``; fails the test (never skips) when it is not installed."""
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if found is None:
        pytest.fail(
            "redis-server is not installed, and the Redis subscription-bus tests need it: "
            "install the Debian package with `apt-get install redis-server` "
            "(.ci/run does this in CI)",
            pytrace=False,
        )
    return found


def ping(port: int, timeout: float = 1.0) -> bool:
    """Whether a Redis server on 127.0.0.1:``port`` answers ``PING`` with ``+PONG``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; :meth:`start` again reuses the port."""

    def __init__(
        self, directory: Path, port: int | None = None, options: Sequence[str] = ()
    ) -> None:
        self.binary = redis_server_binary()
        self.options = tuple(options)
        self.port = port if port is not None else free_port()
        self.directory = directory
        self.log = directory / f"redis-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.process is None, "already running"
        command = [
            self.binary,
            "--save", "",
            "--appendonly", "no",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--daemonize", "no",
            *self.options,
        ]  # fmt: skip
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT
        while not ping(self.port):
            if self.process.poll() is not None:
                self.process = None
                raise AssertionError(f"redis-server exited early:\n{self.log.read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(
                    f"redis-server did not answer PING within {START_TIMEOUT} s:\n"
                    f"{self.log.read_text()}"
                )
            time.sleep(0.02)

    def stop(self) -> None:
        """Terminate (then kill) the server and reap it; a no-op when it is not running."""
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def kill(self) -> None:
        """SIGKILL the server, as a crash would (nothing saved on the way out), and reap it."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def command(self, *words: str) -> bytes:
        """One command (``SAVE``, ``DBSIZE``), its first reply line, raw (``b"+OK"``)."""
        line = b"".join(b'"' + word.encode() + b'" ' for word in words).rstrip() + b"\r\n"
        with socket.create_connection(("127.0.0.1", self.port), timeout=START_TIMEOUT) as sock:
            sock.sendall(line)
            return sock.recv(256).split(b"\r\n")[0]

    def flush(self) -> None:
        """Empty every database (``FLUSHALL``), so a test starts with nothing shared."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=START_TIMEOUT) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            assert sock.recv(64).startswith(b"+OK")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@contextlib.contextmanager
def redis_server(directory: Path) -> Iterator[RedisServer]:
    """A started :class:`RedisServer`, always stopped on the way out."""
    server = RedisServer(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()
