"""``mcpserve run`` in a subprocess, with its stderr kept apart for the test to read.

:func:`served_command` starts the command in a folder of the test's choosing (where a
project file may be), waits (bounded) until the port answers, and stops the process by
its id on the way out.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from wire_helpers import child_env

#: The command, as a user's shell runs it (with this interpreter).
MCPSERVE = [sys.executable, "-m", "mcpserve.cli"]


@dataclass
class ServedCommand:
    process: subprocess.Popen[bytes]
    url: str
    stderr: Path

    def stop(self) -> str:
        """Stop the process (SIGTERM, bounded) and return everything it wrote on stderr."""
        stop(self.process)
        return self.stderr.read_text()


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@contextlib.contextmanager
def served_command(
    args: Sequence[str],
    *,
    cwd: Path,
    port: int,
    env: dict[str, str] | None = None,
    command: Sequence[str] = MCPSERVE,
) -> Iterator[ServedCommand]:
    """``mcpserve ARGS`` (``command``: how mcpserve is started) serving HTTP on ``port``
    from ``cwd``; stdout is discarded."""
    stderr = cwd / f"stderr-{port}.log"
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            [*command, *args],
            cwd=str(cwd),
            env=child_env(**(env or {})),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"mcpserve exited early:\n{stderr.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no server on {port}:\n{stderr.read_text()}") from None
                time.sleep(0.05)
        yield ServedCommand(process, f"http://127.0.0.1:{port}/mcp", stderr)
    finally:
        stop(process)
