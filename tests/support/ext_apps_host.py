"""The MCP Apps browser tests' world: the pinned npm packages and the server that serves them.

:func:`install` puts the versions pinned in ``tests/support/ext_apps/package.json`` (and its lock)
into a cache, ``$MCPSERVE_EXT_APPS_HOME`` or ``~/.cache/mcpserve/ext-apps``, with ``npm ci``
(again only when those files change), then writes ``importmap.json`` there: the import map
that lets the host page load the packages' ES modules as they ship, and the list of files
that map reaches (``tests/support/ext_apps/importmap.mjs``). No bundler: the browser resolves the
bare specifiers itself. The tree must be flat (no package with a ``node_modules`` of its
own), which the map assumes; a lock that breaks that fails here, saying so.

:func:`apps_server` runs ``tests/support/servers/apps.py`` on a free port: the dev page, the MCP
endpoint, the official host page and those npm files, one origin; :func:`serving` runs any
such command (``mcpserve dev``, say). Every wait is bounded and the process is stopped on the
way out, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import npm_cache
from ts_client import node_binary
from wire_helpers import ROOT, SERVERS, SUPPORT, child_env, free_port

SOURCE = SUPPORT / "ext_apps"
#: What the host page imports (importmap.mjs follows everything they import).
ENTRY_POINTS = (
    "@modelcontextprotocol/client",
    "@modelcontextprotocol/ext-apps/app-bridge",
    "@modelcontextprotocol/ext-apps/app-with-deps",
)
STARTUP = 30.0


def home() -> Path:
    return Path(
        os.environ.get("MCPSERVE_EXT_APPS_HOME") or Path.home() / ".cache/mcpserve/ext-apps"
    )


def install() -> Path:
    """The cache directory with the pinned packages and ``importmap.json`` (npm ci once)."""
    node = node_binary()

    def map_imports(target: Path) -> None:
        nested = sorted(
            str(path.relative_to(target))
            for path in (target / "node_modules").glob("**/node_modules")
            if path.is_dir()
        )
        if nested:
            npm_cache.fail(
                f"The pinned tree is not flat ({', '.join(nested)}): one import map cannot "
                "serve two copies of a package; pin versions that share one"
            )
        listing = npm_cache.run([node, "--conditions=browser", "importmap.mjs", *ENTRY_POINTS],
                                target, "importmap.mjs")  # fmt: skip
        (target / "importmap.json").write_text(listing)

    return npm_cache.npm_ci(SOURCE, home(), needed_by="the MCP Apps browser tests",
                            installed=Path("importmap.json"), extra_files=["importmap.mjs"],
                            after=map_imports)  # fmt: skip


@contextlib.contextmanager
def apps_server(installed: Path | None, serve: str | None = None) -> Iterator[str]:
    """``tests/support/servers/apps.py`` served on 127.0.0.1; yields its base URL (``http://.../``).

    Without ``installed`` it serves no npm files (the dev page alone); ``serve`` names
    another server to serve in its place (``examples/apps.py``)."""
    port = free_port()
    extra = {"MCPSERVE_TEST_HTTP_PORT": str(port)}
    if installed is not None:
        extra["MCPSERVE_TEST_NPM"] = str(installed)
    if serve is not None:
        extra["MCPSERVE_TEST_SERVE"] = serve
    with serving([sys.executable, str(SERVERS / "apps.py")], port, extra) as url:
        yield url


@contextlib.contextmanager
def serving(command: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """``command``, which serves on 127.0.0.1:``port``, running; yields its base URL.
    Stopped with SIGINT (as Ctrl-C stops ``serve_dev``), killed if it lingers."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command,
            cwd=str(ROOT),
            env=child_env(**(env or {})),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def output() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")[-5000:]

        try:
            deadline = time.monotonic() + STARTUP
            while True:
                if process.poll() is not None:
                    raise AssertionError(f"the server exited early:\n{output()}")
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise AssertionError(f"the server did not listen:\n{output()}") from None
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/"
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # as Ctrl-C stops serve_dev
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
