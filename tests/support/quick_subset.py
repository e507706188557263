"""The kinds of slow test, and ``pytest --quick``: every test that needs none of them.

A test that needs more than this process is marked with the kind of thing it needs (the
markers are registered in ``pyproject.toml``): ``subprocess`` (a server over stdio or HTTP
in a process of its own, the ``mcpserve`` command, a fresh interpreter), ``redis``, ``node``
(the official TypeScript SDK, oidc-provider, the MCP Apps host packages), ``browser``
(headless chromium), ``balancer`` (haproxy or nginx) and ``network`` (the internet); and
``slow``, a test that takes tens of seconds in this process. A module marks itself
(``pytestmark``) when all its tests need it, a test or a parameter
(``pytest.param(..., marks=...)``) otherwise, and a test that uses a fixture of
:data:`FIXTURE_KINDS` is marked by that use, here.

``pytest --quick`` deselects every marked test, and keeps the markers honest: in a quick
run a test that starts a process anyway (seen through the interpreter's audit events, so
``subprocess``, ``asyncio``'s subprocesses and ``os.fork`` alike) fails, naming the command
and the marker it lacks. Sockets on 127.0.0.1 in this process (uvicorn in a thread) are
not slow kinds: they stay in the quick run.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest

SLOW_KINDS = ("subprocess", "redis", "node", "browser", "balancer", "network", "slow")

#: Fixtures whose use marks a test (they are in ``tests/conftest.py``).
FIXTURE_KINDS = {"redis": "redis", "own_redis": "redis", "ts_install": "node"}

_PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.system",
    }
)


class _ProcessWatch:
    """Records the processes started while a quick test runs (armed only then)."""

    def __init__(self) -> None:
        self.installed = False
        self.armed = False
        self.started: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.armed or event not in _PROCESS_EVENTS:
            return
        command = " ".join(str(arg) for arg in args[1]) if event == "subprocess.Popen" else event
        self.started.append(command)
        raise RuntimeError(f"a --quick run starts no process, and this test started {command}")


_watch = _ProcessWatch()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="run only the tests that need no process, Redis, Node, browser, load balancer "
        "or network, and are not slow (" + ", ".join(SLOW_KINDS) + " deselected); "
        "fail one that starts a process",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("quick") and not _watch.installed:
        # An audit hook stays for the life of the process (a run inside a run, with
        # pytester, must not add a second one); it is idle unless a quick test runs.
        sys.addaudithook(_watch)
        _watch.installed = True


@pytest.hookimpl(tryfirst=True)  # before ``-m`` reads the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in getattr(item, "fixturenames", ()):
            if name in FIXTURE_KINDS:
                item.add_marker(FIXTURE_KINDS[name])
    if not config.getoption("quick"):
        return
    slow = {item for item in items if any(map(item.get_closest_marker, SLOW_KINDS))}
    if slow:
        config.hook.pytest_deselected(items=[item for item in items if item in slow])
        items[:] = [item for item in items if item not in slow]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    _watch.armed = item.config.getoption("quick")
    try:
        return (yield)
    finally:
        _watch.armed = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    started, _watch.started[:] = list(_watch.started), []
    if started:
        # Whatever the test made of the refusal, the report says what to mark.
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started {len(started)} process(es) in a --quick run: "
            f"{'; '.join(started)}. Mark it with the kind it needs "
            f"({', '.join(SLOW_KINDS)}), or keep it in this process."
        )
    return report
