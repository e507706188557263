"""Console transcripts in the docs, read and replayed in a real terminal.

A transcript is a ``console`` block whose commands start with ``$ ``; the lines after a
command, up to the next one, are what the doc says it prints (stdout and stderr as one
terminal shows them). A command may go on over lines ending in ``\\``. In what a command
prints, the doc may elide: a line that is exactly ``...`` stands for any number of lines,
and ``…`` inside a line for any text on that line. Nothing else is loose.

:class:`Terminal` runs one command as a person at a terminal does: ``bash -c`` on a
pseudo-terminal (so prompts, echo and line buffering are a terminal's), in a process group
of its own. A prompt (a line the command leaves unfinished while it waits) that begins a
line of the doc is answered with the rest of that line, typed, as the transcript shows it
typed. :func:`normalise` turns what a terminal shows into plain lines: carriage returns and
colour codes go, and the caller's replacements map what must vary (ports, paths, process
ids) to what the doc shows.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ELIDED_LINES = "..."
ELIDED_TEXT = "…"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: How long a command's unfinished line must stay unchanged to count as a prompt.
PROMPT_QUIET = 0.3


@dataclass(frozen=True)
class Command:
    line: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class Transcript:
    doc: str
    line: int
    commands: tuple[Command, ...]

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"


def transcripts(path: Path, root: Path) -> list[Transcript]:
    """Every ``console`` block of ``path`` that is a transcript (its first line a ``$``)."""
    text = path.read_text()
    found = []
    for block in re.finditer(r"^```console\n(.*?)^```", text, flags=re.S | re.M):
        lines = block.group(1).splitlines()
        if not lines or not lines[0].startswith("$ "):
            continue
        commands: list[Command] = []
        command: list[str] = []
        expected: list[str] = []
        for line in lines:
            if command and command[-1].endswith("\\"):
                command[-1] = command[-1][:-1].rstrip()
                command.append(line.strip())
            elif line.startswith("$ "):
                if command:
                    commands.append(Command(" ".join(command), tuple(expected)))
                command, expected = [line[2:]], []
            else:
                expected.append(line)
        commands.append(Command(" ".join(command), tuple(expected)))
        number = text[: block.start()].count("\n") + 1
        found.append(Transcript(str(path.relative_to(root)), number, tuple(commands)))
    return found


def pattern(expected: Sequence[str]) -> re.Pattern[str]:
    """What ``expected`` (a doc's lines, with its elisions) matches, as one regex."""
    parts = []
    for line in expected:
        if line.strip() == ELIDED_LINES:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            text = ".*?".join(re.escape(piece) for piece in line.rstrip().split(ELIDED_TEXT))
            parts.append(text + r"\n")
    return re.compile("".join(parts))


def shows(expected: Sequence[str], printed: str) -> bool:
    """Whether ``printed`` (normalised, whole lines) is what ``expected`` shows."""
    return pattern(expected).fullmatch(printed) is not None


def normalise(raw: str, replacements: Sequence[tuple[str, str]]) -> str:
    """What a terminal showed, as the doc writes it: plain lines without trailing spaces
    (the last one unfinished, if it is), each ``(regex, replacement)`` applied in order."""
    text = _ANSI.sub("", raw.replace("\r\n", "\n").replace("\r", ""))
    for regex, replacement in replacements:
        text = re.sub(regex, replacement, text)
    return "\n".join(line.rstrip() for line in text.split("\n"))


@dataclass
class Terminal:
    """One command on a pseudo-terminal: what it printed so far, and the typing."""

    command: str
    env: dict[str, str]
    cwd: Path
    replacements: Sequence[tuple[str, str]]
    #: stdin and stdout are pipes (the test is a stdio server's client); stderr is still
    #: the terminal, which is what a person sees of such a server.
    pipes: bool = False
    raw: bytes = b""
    process: subprocess.Popen[bytes] = field(init=False)
    _master: int = field(init=False)

    def __post_init__(self) -> None:
        self._master, slave = pty.openpty()
        pipe = subprocess.PIPE if self.pipes else slave
        self.process = subprocess.Popen(
            ["bash", "-c", self.command],
            stdin=pipe,
            stdout=pipe,
            stderr=slave,
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,  # its own group: Ctrl-C (SIGINT) reaches all of it
        )
        os.close(slave)

    @property
    def printed(self) -> str:
        return normalise(self.raw.decode("utf-8", "replace"), self.replacements)

    def lines(self) -> str:
        """What it printed, its whole lines only."""
        printed = self.printed
        return printed[: printed.rfind("\n") + 1]

    def read(self, timeout: float) -> bool | None:
        """Take in what it prints within ``timeout``: True if it printed, None if nothing
        came, False once the terminal is closed (everyone holding it has exited)."""
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return None
        try:
            chunk = os.read(self._master, 65536)
        except OSError:  # EIO: the other end is closed
            return False
        self.raw += chunk
        return bool(chunk)

    def drain(self) -> None:
        """Take in what is left once it has exited."""
        while self.read(0.2):
            pass

    def type(self, text: str) -> None:
        os.write(self._master, text.encode() + b"\r")

    def run(
        self,
        expected: Sequence[str],
        *,
        until: Callable[[Terminal], bool] | None = None,
        timeout: float = 60.0,
    ) -> None:
        """Let it run, answering its prompts from ``expected``, until it exits, or (given
        ``until``) until ``until(self)`` holds; ``until`` may act on it meanwhile."""
        deadline = time.monotonic() + timeout
        answered = -1
        quiet_since = time.monotonic()
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"`{self.command}` still ran after {timeout} s:\n"
                                     f"{self.printed}")  # fmt: skip
            came = self.read(0.05)
            if came:
                quiet_since = time.monotonic()
            if until is not None and until(self):
                return
            if came is False or self.process.poll() is not None:
                self.drain()
                self.process.wait(timeout)
                return
            unfinished = self.printed[len(self.lines()) :]
            if unfinished and time.monotonic() - quiet_since > PROMPT_QUIET:
                for index in range(answered + 1, len(expected)):
                    if expected[index].startswith(unfinished):
                        self.type(expected[index][len(unfinished) :].strip())
                        answered = index
                        quiet_since = time.monotonic()
                        break

    def interrupt(self, timeout: float = 30.0) -> None:
        """Ctrl-C, as at a terminal: SIGINT to its process group, then wait for it to end."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            self.interrupt()
        self.drain()
        os.close(self._master)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
