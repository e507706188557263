"""The official TypeScript MCP client for the cluster tests: installed once, driven by line.

:func:`install` puts the versions pinned in ``tests/support/ts/package.json`` (and its lock file)
into a cache, ``$MCPSERVE_TS_HOME`` or ``~/.cache/mcpserve/ts-client``, with ``npm ci``; it
installs again only when those files change. The client needs Node 20 or newer (its
``engines``), which this machine's ``node`` is. Nothing here is optional: without npm or
a recent enough node the tests fail, naming what to install.

:class:`TSClient` runs ``tests/support/ts/driver.mjs`` (copied next to the installed packages, where
ESM resolves them) and sends it one JSON command per line; each answer is one line back.
Every wait is bounded, and the process is killed on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import npm_cache
from wire_helpers import SUPPORT

SOURCE = SUPPORT / "ts"
COMMAND_TIMEOUT = 30.0
NODE_MAJOR = 20


def home() -> Path:
    return Path(os.environ.get("MCPSERVE_TS_HOME") or Path.home() / ".cache/mcpserve/ts-client")


def node_binary() -> str:
    """``node``, version 20 or newer; fails (never skips) otherwise."""
    return npm_cache.node_binary(NODE_MAJOR, "the TypeScript client tests")


def install() -> Path:
    """The cache directory with the pinned client installed (``npm ci``, at most once)."""
    installed = Path("node_modules/@modelcontextprotocol/client/package.json")
    return npm_cache.npm_ci(SOURCE, home(), needed_by="the TypeScript client tests",
                            installed=installed)  # fmt: skip


@dataclass
class TSClient:
    """One driver process: :meth:`send` a command, get its result (or an error raised)."""

    process: asyncio.subprocess.Process
    stderr: bytearray = field(default_factory=bytearray)
    _drain: asyncio.Task[None] | None = None

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr.extend(chunk)

    async def ask(self, op: str, within: float = COMMAND_TIMEOUT, **arguments: Any) -> Any:
        """The command's answer: ``{"ok": ..., "result" | "error": ...}``."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}).encode() + b"\n")
        await self.process.stdin.drain()
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), within)
        except TimeoutError:
            raise AssertionError(
                f"the TypeScript client did not answer {op!r} within {within} s; stderr:\n"
                + self.stderr.decode(errors="replace")[-3000:]
            ) from None
        assert line, (
            "the TypeScript client exited; stderr:\n" + self.stderr.decode(errors="replace")[-3000:]
        )
        return json.loads(line)

    async def send(self, op: str, within: float = COMMAND_TIMEOUT, **arguments: Any) -> Any:
        """The command's result; an error answer fails the test, with the client's stderr."""
        answer = await self.ask(op, within, **arguments)
        assert answer["ok"], (
            f"the TypeScript client failed {op!r}: {answer['error']}\nstderr:\n"
            + self.stderr.decode(errors="replace")[-3000:]
        )
        return answer["result"]

    async def stop(self) -> None:
        if self.process.returncode is None:
            if self.process.stdin is not None:
                with contextlib.suppress(Exception):
                    self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await asyncio.wait_for(self.process.wait(), 10)
        if self._drain is not None:
            try:
                await asyncio.wait_for(self._drain, 5)
            except TimeoutError:
                self._drain.cancel()


@contextlib.asynccontextmanager
async def ts_client(node: str, installed: Path) -> AsyncIterator[TSClient]:
    """A running driver (see ``tests/support/ts/driver.mjs``); always stopped on the way out."""
    driver = installed / "driver.mjs"
    shutil.copyfile(SOURCE / "driver.mjs", driver)
    env = {key: value for key, value in os.environ.items() if not key.startswith("NODE_")}
    process = await asyncio.create_subprocess_exec(
        node,
        str(driver),
        cwd=str(installed),
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    client = TSClient(process)
    client._drain = asyncio.create_task(client._drain_stderr())
    try:
        yield client
    finally:
        await client.stop()
