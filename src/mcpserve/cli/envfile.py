"""``--env-file``: ``KEY=VALUE`` lines read into the environment before a target is imported.

The format is the common subset that shells, Docker and python-dotenv agree on:

* blank lines and lines starting with ``#`` are skipped; ``export KEY=VALUE`` is allowed;
* an unquoted value is trimmed, and `` #`` starts a comment;
* a ``'single-quoted'`` value is taken literally;
* a ``"double-quoted"`` value understands ``\\n``, ``\\t``, ``\\"`` and ``\\\\``;
* a quoted value ends on its own line: multi-line values are not supported.

Nothing is expanded (``$HOME`` stays ``$HOME``). Variables the environment already has are
kept, as uvicorn's ``--env-file`` does: the shell's ``KEY=1 mcpserve run ...`` wins over the
file. A line that is none of the above is an error naming the file and line, rather than a
variable silently missing.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from pathlib import Path

_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


class EnvFileError(ValueError):
    """A line of an env file that is not ``KEY=VALUE``: the message names file and line."""


def parse_env(text: str, source: str = "env file") -> dict[str, str]:
    """The variables ``text`` sets, in order (a later line for a key wins)."""
    variables: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.fullmatch(stripped)
        if match is None:
            raise EnvFileError(f"{source}:{number}: expected KEY=VALUE, got {stripped!r}")
        key, raw = match.groups()
        try:
            variables[key] = _value(raw)
        except ValueError as exc:
            raise EnvFileError(f"{source}:{number}: {exc}") from None
    return variables


def _value(raw: str) -> str:
    if raw[:1] == "'":
        end = raw.find("'", 1)
        if end < 0:
            raise ValueError("the value's closing ' is missing (values end on their line)")
        _only_comment_after(raw[end + 1 :])
        return raw[1:end]
    if raw[:1] == '"':
        value: list[str] = []
        index = 1
        while index < len(raw):
            char = raw[index]
            if char == "\\" and index + 1 < len(raw):
                following = raw[index + 1]
                value.append(_ESCAPES.get(following, "\\" + following))
                index += 2
                continue
            if char == '"':
                _only_comment_after(raw[index + 1 :])
                return "".join(value)
            value.append(char)
            index += 1
        raise ValueError("the value's closing \" is missing (values end on their line)")
    comment = re.search(r"\s#", raw)
    return (raw[: comment.start()] if comment else raw).strip()


def _only_comment_after(rest: str) -> None:
    rest = rest.strip()
    if rest and not rest.startswith("#"):
        raise ValueError(f"unexpected text after the quoted value: {rest!r}")


def load_env_file(path: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set the variables of ``path`` that ``environ`` (``os.environ``) lacks; return all
    the file's variables."""
    environ = os.environ if environ is None else environ
    variables = parse_env(path.read_text(encoding="utf-8"), str(path))
    for key, value in variables.items():
        environ.setdefault(key, value)
    return variables
