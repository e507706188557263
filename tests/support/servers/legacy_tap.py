"""A stdio tap: run a server command, pass stdin/stdout through, and log every line.

Usage: ``legacy_tap.py LOG_FILE COMMAND...``. Each line the client sends is logged as
``{"dir": ">", "line": ...}`` and each line the server writes as ``{"dir": "<", ...}``,
one JSON object per line, so a test can validate the whole conversation afterwards
(the official client's own traffic included). stderr passes through untouched. The tap
exits with the server's exit code once the server's stdout ends; SIGTERM is passed on.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import IO


async def _pump(
    reader: asyncio.StreamReader, write: IO[bytes], log: IO[str], direction: str
) -> None:
    while line := await reader.readline():
        log.write(json.dumps({"dir": direction, "line": line.decode("utf-8", "replace")}) + "\n")
        log.flush()
        write.write(line)
        write.flush()


async def _stdin_to(child: asyncio.subprocess.Process, log: IO[str]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    assert child.stdin is not None
    while line := await reader.readline():
        log.write(json.dumps({"dir": ">", "line": line.decode("utf-8", "replace")}) + "\n")
        log.flush()
        child.stdin.write(line)
        await child.stdin.drain()
    child.stdin.close()


async def main(log: IO[str], command: list[str]) -> int:
    child = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )
    assert child.stdout is not None
    # Killed (the client's last resort)? Take the server down too, never orphan it.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, child.terminate)
    feeding = asyncio.create_task(_stdin_to(child, log))
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    try:
        await _pump(child.stdout, out, log, "<")
    finally:
        feeding.cancel()
        out.close()
    return await child.wait()


if __name__ == "__main__":
    with open(sys.argv[1], "a") as log_file:
        sys.exit(asyncio.run(main(log_file, sys.argv[2:])))
