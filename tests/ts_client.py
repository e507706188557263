"""The official TypeScript MCP client for the cluster tests: installed once, driven by line.

:func:`install` puts the versions pinned in ``tests/ts/package.json`` (and its lock file)
into a cache, ``$MCPSERVE_TS_HOME`` or ``~/.cache/mcpserve/ts-client``, with ``npm ci``; it
installs again only when those files change. The client needs Node 20 or newer (its
``engines``), which this machine's ``node`` is. Nothing here is optional: without npm or
a recent enough node the tests fail, naming what to install.

:class:`TSClient` runs ``tests/ts/driver.mjs`` (copied next to the installed packages, where
ESM resolves them) and sends it one JSON command per line; each answer is one line back.
Every wait is bounded, and the process is killed on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from wire_helpers import ROOT

SOURCE = ROOT / "tests" / "ts"
PINNED = ("package.json", "package-lock.json")
INSTALL_TIMEOUT = 300.0
COMMAND_TIMEOUT = 30.0
NODE_MAJOR = 20


def home() -> Path:
    return Path(os.environ.get("MCPSERVE_TS_HOME") or Path.home() / ".cache/mcpserve/ts-client")


def _fail(message: str) -> None:
    pytest.fail(message, pytrace=False)


def node_binary() -> str:
    """``node``, version 20 or newer; fails (never skips) otherwise."""
    node = shutil.which("node")
    if node is None:
        _fail(
            "node is not installed, and the TypeScript client tests need Node 20 or newer "
            "with npm (Debian's packages `nodejs npm` are too old on bookworm: install "
            "Node 20+ and npm)"
        )
    assert node is not None
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.strip()
    major = int(version.lstrip("v").split(".")[0] or 0) if version.startswith("v") else 0
    if major < NODE_MAJOR:
        _fail(f"{node} is {version or 'unknown'}; the TypeScript client needs Node 20 or newer")
    return node


def install() -> Path:
    """The cache directory with the pinned client installed (``npm ci``, at most once)."""
    npm = shutil.which("npm")
    if npm is None:
        _fail("npm is not installed; the TypeScript client tests need it (apt-get install npm)")
    assert npm is not None
    target = home()
    target.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(b"".join((SOURCE / name).read_bytes() for name in PINNED))
    wanted = digest.hexdigest()
    marker = target / ".installed"
    package = target / "node_modules" / "@modelcontextprotocol" / "client" / "package.json"
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time, across processes
        if marker.exists() and marker.read_text() == wanted and package.exists():
            return target
        for name in PINNED:
            shutil.copyfile(SOURCE / name, target / name)
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=target,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            _fail(f"npm ci in {target} took more than {INSTALL_TIMEOUT} s (registry reachable?)")
        if done.returncode != 0:
            _fail(f"npm ci in {target} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        marker.write_text(wanted)
    return target


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
    """A running driver (see ``tests/ts/driver.mjs``); always stopped on the way out."""
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
