"""Every console transcript of docs/cli.md, and each other doc's that shows what ``mcpserve``
prints, runs and prints what the doc shows.

Each transcript (``transcripts.py``: ``$ command`` lines, then what it prints) runs in a
fresh folder standing for ``/home/ada/shelf`` (``HOME`` is its parent, so ``install``
writes its config there, not into a real one), with docs/cli.md's ``app.py`` written from
the doc's Python block. Each command runs in ``bash`` on a pseudo-terminal, as typed at a
terminal: prompts are answered with what the transcript shows typed, and ``echo $?`` sees
the previous command's status. A command whose output shows no ``Error:`` must exit 0.

The servers the docs name are stood in for by local ones, their URLs written in place of
the doc's in the command and back in what is printed: ``https://mcp.example.com/mcp`` is
``app.py`` served with OAuth (a real oidc-provider, ``https://auth.example.com``, and a
browser that logs alice in: ``login_browser.py``); ``https://tools.example.com/mcp`` and
``https://billing.example.com/mcp`` are small servers over HTTP; ``legacy_server.py`` is a
server of the official Python SDK, ``old.js`` a handshake-era server in plain Node,
``files.py`` and ``servers.json`` what the proxy section describes.

What a command that serves does, in a safe form: over HTTP it runs (on a free port written
in place of 8000) until it has printed what the doc shows and its endpoint answers
``server/discover``, then gets Ctrl-C; what it prints after that is not compared. Over
stdio this test is its client: it sends ``server/discover``, reads the answer, and closes
stdin, and what the terminal showed meanwhile (stderr) is compared. ``ARRANGEMENTS`` holds
what a transcript takes for granted around a command (a port already in use; a file
edited while the server runs).

Normalised, and only these, since they vary from run to run: the port, the folder (to
``/home/ada``), the Python running ``mcpserve`` (to ``/home/ada/shelf/.venv/bin/python``),
the stand-in servers' URLs, process ids (``process [4120]``) and the random key
``keygen`` prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import select
import shlex
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest
import pytest_asyncio

from docs_stand_ins import StandIns, running_stand_ins, write_servers_json, write_shelf
from transcripts import Command, Terminal, Transcript, shows, transcripts
from wire_helpers import ROOT, encode, free_port, mcp_headers, request

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.subprocess, pytest.mark.node]

DOCS = ROOT / "docs"
SHOWN_PORT = "8000"
SHOWN_HOME = "/home/ada"
SHOWN_PYTHON = "/home/ada/shelf/.venv/bin/python"
COMMAND_TIMEOUT = 45.0
#: How long a server that serves must print nothing new to be taken as done printing.
SETTLED = 5.0

#: What varies by itself, on both sides: process ids and keygen's random key.
VARYING = [
    (r"(process) \[\d+\]", r"\1 [PID]"),
    (r"\b[0-9a-f]{8}:[A-Za-z0-9+/]{43}=", "KEY-ID:KEY"),
]


def collected() -> list[Transcript]:
    """docs/cli.md's transcripts, and those of other docs that show mcpserve's output."""
    found = transcripts(DOCS / "cli.md", ROOT)
    for path in sorted([ROOT / "README.md", *DOCS.glob("*.md")]):
        if path.name != "cli.md":
            found += [
                one
                for one in transcripts(path, ROOT)
                if any("mcpserve" in c.line and c.expected for c in one.commands)
            ]
    return found


def app_source() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "cli.md").read_text(), flags=re.S)
    return str(blocks[0])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stand_ins(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[StandIns]:
    async with running_stand_ins(tmp_path_factory.mktemp("stand-ins"), app_source()) as running:
        yield running


# --------------------------------------------------------------------------- a run


@dataclass
class Shelf:
    """One transcript's folder, environment and what its commands have shown so far."""

    home: Path
    stand_ins: StandIns
    port: int = field(default_factory=free_port)
    status: int = 0

    @property
    def cwd(self) -> Path:
        return self.home / "shelf"

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "LANG": "C.UTF-8",
            "LOGIN_LOG": str(self.home / "logins"),
            "MCPSERVE_TOKEN_FILE": str(self.home / "tokens.json"),
            "PYTHONUNBUFFERED": "1",
            **self.stand_ins.env,
        }

    def replacements(self) -> list[tuple[str, str]]:
        """What is printed -> what the doc shows, in this order."""
        mapped = [(re.escape(local), shown) for shown, local in self.stand_ins.urls.items()]
        return [
            *mapped,
            (re.escape(str(self.home)), SHOWN_HOME),
            (re.escape(sys.executable), SHOWN_PYTHON),
            (rf"(?<=:){self.port}\b", SHOWN_PORT),
            (rf"\bPort {self.port}\b", f"Port {SHOWN_PORT}"),
            *VARYING,
        ]

    def typed(self, line: str) -> str:
        """The command as run here: the stand-ins' URLs, and the free port for 8000."""
        for shown, local in self.stand_ins.urls.items():
            line = line.replace(shown, local)
        return re.sub(r"--port 8000\b", f"--port {self.port}", line)


def words_of(line: str) -> list[str]:
    """The command's words after any ``NAME=value`` assignments before it."""
    words = shlex.split(line, comments=True)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words.pop(0)
    return words


def serves(words: list[str]) -> str | None:
    """``"http"`` or ``"stdio"`` for a command that serves until stopped, else None."""
    if words[:1] != ["mcpserve"] or len(words) < 2:
        return None
    if words[1] == "dev" or (words[1] in ("run", "proxy") and "--http" in words):
        return "http"
    return "stdio" if words[1] in ("run", "proxy") else None


def answers(url: str) -> bool:
    """Whether the MCP endpoint at ``url`` answers ``server/discover``."""
    try:
        reply = httpx2.post(url, content=encode(request(1, "server/discover")),
                            headers=mcp_headers("server/discover"), timeout=5)  # fmt: skip
    except httpx2.TransportError:
        return False
    return reply.status_code == 200


# --------------------------------------------------------------------------- arrangements


@contextlib.contextmanager
def port_in_use(shelf: Shelf) -> Iterator[None]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", shelf.port))
        taken.listen()
        yield


def edit_app(shelf: Shelf) -> None:
    with (shelf.cwd / "app.py").open("a") as app:
        app.write("\n# edited while it serves\n")


@dataclass(frozen=True)
class Arrangement:
    """What a transcript takes for granted around one command."""

    around: Callable[[Shelf], contextlib.AbstractContextManager[None]] | None = None
    once_serving: Callable[[Shelf], None] | None = None


#: (command, the first line the doc shows it print) -> what the test arranges.
ARRANGEMENTS = {
    ("mcpserve run app.py --http --port 8000",
     "Error: Port 8000 is in use on 127.0.0.1: stop what holds it or pass --port"):
        Arrangement(around=port_in_use),
    ("mcpserve run app.py --http --reload",
     "Serving app.py at http://127.0.0.1:8000/mcp, restarting when a .py file in "
     "/home/ada/shelf changes"):
        Arrangement(once_serving=edit_app),
}  # fmt: skip


def run_command(shelf: Shelf, command: Command) -> str:
    """Run one command of a transcript; what the terminal showed, normalised."""
    typed = shelf.typed(command.line)
    words = words_of(typed)
    kind = serves(words)
    if kind == "http" and "--port" not in words:
        typed = typed.replace(f"mcpserve {words[1]}", f"mcpserve {words[1]} --port {shelf.port}",
                              1)  # fmt: skip
    first = command.expected[0] if command.expected else ""
    arrangement = ARRANGEMENTS.get((command.line, first), Arrangement())
    expected = [_varying(line) for line in command.expected]
    with arrangement.around(shelf) if arrangement.around else contextlib.nullcontext():
        terminal = Terminal(f"(exit {shelf.status}); {typed}", shelf.env(), shelf.cwd,
                            shelf.replacements(), pipes=kind == "stdio")  # fmt: skip
        stopped = False  # by the test, as by a person: its status is not its own
        try:
            if kind == "http":
                shown, stopped = serve_http(terminal, expected, shelf, arrangement)
            else:
                if kind == "stdio":
                    ask_over_stdio(terminal)
                terminal.run(expected, timeout=COMMAND_TIMEOUT)
                shown = terminal.lines()
        finally:
            terminal.close()
    shelf.status = 0 if stopped else terminal.process.returncode
    return shown


def _varying(line: str) -> str:
    for regex, replacement in VARYING:
        line = re.sub(regex, replacement, line)
    return line


def serve_http(terminal: Terminal, expected: list[str], shelf: Shelf,
               arrangement: Arrangement) -> tuple[str, bool]:  # fmt: skip
    """Run a server until it shows what the doc shows and answers, then Ctrl-C: what it
    had shown, and whether it was stopped (rather than exiting by itself)."""
    url = f"http://127.0.0.1:{shelf.port}/mcp"
    arranged = False
    shown = ""
    changed = time.monotonic()

    def ready(terminal: Terminal) -> bool:
        """Serving, and showing what the doc shows (or, settled, never going to)."""
        nonlocal arranged, shown, changed
        if terminal.lines() != shown:
            shown, changed = terminal.lines(), time.monotonic()
        if terminal.process.poll() is not None or not answers(url):
            return False
        if not arranged and arrangement.once_serving is not None:
            arranged = True
            arrangement.once_serving(shelf)
            return False
        return shows(expected, shown) or time.monotonic() - changed > SETTLED

    terminal.run(expected, until=ready, timeout=COMMAND_TIMEOUT)
    if terminal.process.poll() is not None:  # it exited by itself: all it printed counts
        return terminal.lines(), False
    terminal.interrupt()
    return shown, True


def ask_over_stdio(terminal: Terminal) -> None:
    """Be a stdio server's client for one request: ``server/discover``, then end of input."""
    stdin, stdout = terminal.process.stdin, terminal.process.stdout
    assert stdin is not None
    assert stdout is not None
    stdin.write(encode(request(1, "server/discover")) + b"\n")
    stdin.flush()
    deadline = time.monotonic() + COMMAND_TIMEOUT
    answer = b""
    while not answer.endswith(b"\n"):
        assert time.monotonic() < deadline, f"no answer over stdio:\n{terminal.printed}"
        terminal.read(0.05)
        if select.select([stdout], [], [], 0.05)[0]:
            chunk = stdout.read1(65536)  # type: ignore[attr-defined]
            assert chunk, f"stdout closed before an answer:\n{terminal.printed}"
            answer += chunk
    assert "result" in json.loads(answer.splitlines()[0]), answer
    stdin.close()


# --------------------------------------------------------------------------- the test


@pytest.mark.parametrize("transcript", collected(), ids=lambda transcript: transcript.name)
async def test_the_transcript_prints_what_the_doc_shows(
    transcript: Transcript, stand_ins: StandIns, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    write_shelf(home, app_source())
    shelf = Shelf(home, stand_ins)
    write_servers_json(shelf.cwd, stand_ins.urls["https://billing.example.com/mcp"])
    commands = transcript.commands
    for index, command in enumerate(commands):
        shown = await asyncio.to_thread(run_command, shelf, command)
        expected = [_varying(line) for line in command.expected]
        assert shows(expected, shown), (
            f"{transcript.name}: `$ {command.line}` printed\n{shown}\n"
            f"where the doc shows\n" + "\n".join(command.expected)
        )
        checked_next = index + 1 < len(commands) and commands[index + 1].line == "echo $?"
        said_error = any(line.startswith("Error: ") for line in command.expected)
        if not checked_next and not said_error:
            assert shelf.status == 0, f"`$ {command.line}` exited {shelf.status}:\n{shown}"
