"""Node packages the tests drive, installed from pinned lock files into a cache.

Each user (the TypeScript client, the oidc-provider authorization server, the MCP Apps
host) keeps a ``package.json`` and ``package-lock.json`` under ``tests/``; :func:`npm_ci`
copies them into its cache directory and runs ``npm ci`` there, once: a marker holds the
digest of the files it installed from, so the next run installs again only when they
change or the install went missing. A lock file makes concurrent test processes wait for
one install. Nothing is optional: without node or npm the tests fail, naming what to
install, and every step is bounded.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

import pytest

INSTALL_TIMEOUT = 300.0


def fail(message: str) -> NoReturn:
    pytest.fail(message, pytrace=False)


def node_binary(major: int, needed_by: str) -> str:
    """``node``, at least version ``major``; fails (never skips) otherwise."""
    node = shutil.which("node")
    if node is None:
        fail(f"node is not installed, and {needed_by} need Node {major} or newer with npm")
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.strip()
    found = int(version.lstrip("v").split(".")[0] or 0) if version.startswith("v") else 0
    if found < major:
        fail(f"{node} is {version or 'unknown'}; {needed_by} need Node {major} or newer")
    return node


def run(command: list[str], cwd: Path, what: str) -> str:
    """``command``'s stdout; a failure or a timeout fails the test with its stderr."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        fail(f"{what} in {cwd} took more than {INSTALL_TIMEOUT} s (registry reachable?)")
    if done.returncode != 0:
        fail(f"{what} in {cwd} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def npm_ci(
    source: Path,
    target: Path,
    *,
    needed_by: str,
    installed: Path,
    extra_files: Iterable[str] = (),
    after: Callable[[Path], None] | None = None,
) -> Path:
    """``target``, with the packages pinned in ``source`` installed (``npm ci``, at most once).

    ``installed`` (relative to ``target``) exists only after a complete install; the
    ``extra_files`` are copied along and count in the digest; ``after(target)`` runs once
    an install is done, still under the lock (for files made from the packages).
    """
    npm = shutil.which("npm")
    if npm is None:
        fail(f"npm is not installed; {needed_by} need it (apt-get install npm)")
    files = ("package.json", "package-lock.json", *extra_files)
    target.mkdir(parents=True, exist_ok=True)
    wanted = hashlib.sha256(b"".join((source / name).read_bytes() for name in files)).hexdigest()
    marker = target / ".installed"
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time, across processes
        if marker.exists() and marker.read_text() == wanted and (target / installed).exists():
            return target
        for name in files:
            shutil.copyfile(source / name, target / name)
        run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], target, "npm ci")
        if after is not None:
            after(target)
        marker.write_text(wanted)
    return target
