"""How the command says that something is wrong: one line on stderr, and an exit status.

Click's own ``UsageError`` prints the command's usage line and a ``--help`` hint above the
message. That helps when the command line itself does not parse (a missing TARGET, an
unknown option: click reports those, and keeps its format). For everything the command finds
afterwards (a tool argument that does not fit, a file that is not there, two options that do
not go together) the usage line says nothing useful, so those are :class:`Mistake`: the one
line ``Error: ...`` that says what is wrong and what to do, with exit status 2.

Exit statuses (``docs/cli.md``, "Exit status"): 0 success; 1 something that happened
(a tool error, a JSON-RPC error, a server that stopped, a port in use); 2 a mistake in
what was typed.
"""

from __future__ import annotations

import click

#: A mistake in what was typed.
USAGE_STATUS = 2


class Mistake(click.ClickException):
    """A usage error found after parsing: ``Error: <message>`` on one line, exit status 2."""

    exit_code = USAGE_STATUS
