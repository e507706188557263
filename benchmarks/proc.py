"""Processes: start a server pinned to a core, read its CPU time and memory from /proc, stop it.

CPU per request comes from the kernel's accounting, not from wall time: utime + stime of
the server process and every descendant (a uvicorn worker, a helper process), read from
``/proc/<pid>/stat`` before and after each measured window. That figure is what the
server itself spent, whatever the load generator or the rest of the machine was doing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

TICKS = os.sysconf("SC_CLK_TCK")
#: Where a child may run: one core, a set of cores, or ``None`` for every core this machine
#: has (the orchestrator pins itself to the load core, and children inherit that otherwise).
Cores = int | Collection[int] | None


def _cpu_set(core: Cores) -> set[int]:
    if core is None:
        return set(range(os.cpu_count() or 1))
    return {core} if isinstance(core, int) else set(core)


def pin(core: Cores) -> Any:
    """A ``preexec_fn`` that pins the child (and what it spawns) to ``core``."""
    cores = _cpu_set(core)

    def pin_child() -> None:
        os.sched_setaffinity(0, cores)

    return pin_child


def cpu_list(core: Cores) -> str:
    """``core`` as ``taskset -c`` reads it: ``1``, ``0,1``."""
    return ",".join(str(cpu) for cpu in sorted(_cpu_set(core)))


class Measured(Protocol):
    """Anything whose CPU time a load run reads: a :class:`Server`, a :class:`Group`."""

    def cpu(self) -> float: ...


def _stat_fields(pid: int) -> list[str]:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw.rsplit(")", 1)[1].split()  # fields from 3 (state) on


def descendants(pid: int) -> list[int]:
    """``pid`` and every live descendant."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            parent = int(_stat_fields(int(entry))[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def cpu_seconds(pids: Sequence[int]) -> float:
    """user + system CPU time of these processes (all their threads), in seconds."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = _stat_fields(pid)
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def rss_mib(pids: Sequence[int]) -> float:
    """Resident set size (VmRSS) of these processes together, in MiB."""
    total_kib = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
    return total_kib / 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """One server process pinned to ``core``; always stopped by ``stop()`` (or ``with``)."""

    def __init__(
        self,
        command: Sequence[str],
        core: Cores,
        *,
        log: Path,
        stdio: bool = False,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.command = list(command)
        self._log: IO[bytes] = log.open("ab")
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdio else self._log,
            stderr=self._log,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            preexec_fn=pin(core),
            start_new_session=True,
        )
        self.pid = self.process.pid

    def pids(self) -> list[int]:
        return descendants(self.pid)

    def cpu(self) -> float:
        return cpu_seconds(self.pids())

    def rss(self) -> float:
        return rss_mib(self.pids())

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_http(self, port: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.command} exited with {self.process.returncode}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                return
            time.sleep(0.05)
        raise RuntimeError(f"{self.command} did not listen on {port} within {timeout} s")

    def stop(self) -> None:
        """SIGTERM the whole process group, SIGKILL after 5 s."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
                self.process.wait(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Group:
    """Several servers measured as one (the processes behind a load balancer)."""

    def __init__(self, members: Sequence[Server]) -> None:
        self.members = list(members)

    def cpu(self) -> float:
        return sum(member.cpu() for member in self.members)


@contextlib.contextmanager
def servers() -> Iterator[list[Server]]:
    """A list that collects servers and stops every one of them on the way out."""
    started: list[Server] = []
    try:
        yield started
    finally:
        for server in started:
            with contextlib.suppress(Exception):
                server.stop()
