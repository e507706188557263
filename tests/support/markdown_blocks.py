"""The fenced blocks of the project's Markdown documents, in order, for the docs tests.

A document is read top to bottom. Each fenced block (a line of three or more backticks,
an info string, the code, the same backticks again) becomes a :class:`Block` whose
``language`` is the info string's first word and ``options`` the words after it
(```` ```python signature ````). Hidden test directives are HTML comments, which renderers
do not show, and come in the same stream at their place:

* ``<!-- test-setup ... -->``: Python run in the document's namespace at that point, for
  what a reader has but the page does not (a file beside the app, an environment variable);
* ``<!-- test-output: EXPRESSION -->``: the next ``json`` block is what ``EXPRESSION``
  evaluates to (see ``tests/docs/test_docs.py``).

``Block.source`` pads the code with blank lines so that a traceback names the line of the
document itself.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Every document whose blocks the tests check: the README, the tutorial and the guides.
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(`{3,})(.*)$")
_DIRECTIVE = re.compile(r"^<!-- (test-setup|test-output)\b:?(.*)$")
#: A block whose first line names a file (``# asgi.py``) shows that file.
_FILE_LINE = re.compile(r"^# ([\w.-]+\.py)\s*$")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # the line of the opening fence (or directive), counted from 1
    language: str
    options: tuple[str, ...]
    code: str

    @property
    def where(self) -> str:
        shown = (
            self.document.relative_to(ROOT) if self.document.is_relative_to(ROOT) else self.document
        )
        return f"{shown}:{self.line}"

    @property
    def source(self) -> str:
        """The code, at the document's own line numbers."""
        return "\n" * self.line + self.code

    @property
    def file_name(self) -> str | None:
        """The file the block shows, when its first line is a comment naming one."""
        first = self.code.split("\n", 1)[0]
        match = _FILE_LINE.match(first)
        return match.group(1) if match else None


def blocks(document: Path) -> list[Block]:
    """The document's fenced blocks and test directives, in order."""
    found: list[Block] = []
    lines = document.read_text().split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        fence, directive = _FENCE.match(line), _DIRECTIVE.match(line)
        if fence:
            ticks, info = fence.group(1), fence.group(2).split()
            end = index + 1
            while end < len(lines) and lines[end].rstrip() != ticks:
                end += 1
            if end == len(lines):
                raise ValueError(f"{document.name}:{index + 1}: a fence that never closes")
            language, options = (info[0], tuple(info[1:])) if info else ("", ())
            code = "\n".join(lines[index + 1 : end]) + "\n"
            found.append(Block(document, index + 1, language, options, code))
            index = end + 1
        elif directive:
            end = index
            while "-->" not in lines[end]:
                end += 1
            text = "\n".join([directive.group(2), *lines[index + 1 : end + 1]])
            code = text[: text.rindex("-->")].strip() + "\n"
            found.append(Block(document, index + 1, directive.group(1), (), code))
            index = end + 1
        else:
            index += 1
    return found


def python_source(document: Path) -> str:
    """The document's plain Python blocks as one source, in order (not signature blocks nor
    blocks that show a file of their own): for tests that use what a guide defines."""
    return "".join(
        block.code
        for block in blocks(document)
        if block.language == "python" and not block.options and block.file_name is None
    )


@dataclass(frozen=True)
class Command:
    words: list[str]
    heredoc: str | None  # the lines a ``<<'END'`` feeds it


def console_commands(block: Block) -> list[Command]:
    """The commands of a ``console`` or ``bash`` block: ``$ `` lines when it has any (the
    others are output), else every line; continuations joined, comments dropped."""
    lines = block.code.rstrip("\n").split("\n")
    if any(line.startswith("$ ") for line in lines):
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    commands: list[Command] = []
    pending = ""
    lines.reverse()
    while lines:
        line = lines.pop()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        command, pending = pending + line, ""
        heredoc = None
        marker = re.search(r"<<-?'?(\w+)'?", command)
        if marker:
            body = []
            while lines and lines[-1].strip() != marker.group(1):
                body.append(lines.pop())
            lines.pop()
            heredoc = "\n".join(body) + "\n"
            command = command[: marker.start()]
        try:
            words = shlex.split(command, comments=True)
        except ValueError as exc:
            raise ValueError(f"{block.where}: {command!r}: {exc}") from None
        if words:
            commands.append(Command(words, heredoc))
    return commands
