"""``mcpserve run`` in a subprocess, with its stderr kept apart for the test to read.

:func:`served_command` starts the command in a folder of the test's choosing (where a
project file may be), waits (bounded) until the port answers, and stops the process by
its id on the way out.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from wire_helpers import child_env, stop_process, wait_listening

#: The command, as a user's shell runs it (with this interpreter).
MCPSERVE = [sys.executable, "-m", "mcpserve.cli"]


@dataclass
class ServedCommand:
    process: subprocess.Popen[bytes]
    url: str
    stderr: Path

    def stop(self) -> str:
        """Stop the process (SIGTERM, bounded) and return everything it wrote on stderr."""
        stop_process(self.process)
        return self.stderr.read_text()


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
        wait_listening(process, port, stderr)
        yield ServedCommand(process, f"http://127.0.0.1:{port}/mcp", stderr)
    finally:
        stop_process(process)
