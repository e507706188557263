"""The ``mcpserve`` command line: serve a server, use it from a terminal, install it.

One click group, ``main``; each command lives in the module for its concern and is added
here, so a new command is a new module and one ``add_command`` line:

* :mod:`.serve`: ``run`` (stdio or HTTP, ``--reload``, ``--env-file``) and ``keygen``;
* :mod:`.use`: ``inspect``, ``call``, ``read`` and ``prompt``, which drive a server as a
  client does, in this process or over stdio;
* :mod:`.install`: ``install``, which writes a client application's config entry;
* :mod:`.proxy`: ``proxy``, which serves another server (or a gateway of several);
* :mod:`.dev`: ``dev``, the server with a browser dev page (:mod:`mcpserve.dev`).

Every target is ``file.py[:server]`` or ``module[:server]`` (:mod:`.targets`). Progress and
prompts go to stderr, so stdout carries only results and can be piped.
"""

from __future__ import annotations

#: What the command says instead of a traceback when an optional dependency is missing.
NEEDS_CLI = (
    'The mcpserve command needs click, which the cli extra installs: pip install "mcpserve[cli]"'
)

try:
    import click
except ModuleNotFoundError as exc:  # mcpserve installed without the cli extra
    if exc.name != "click":
        raise
    raise SystemExit(NEEDS_CLI) from None

# After the check above: every command module imports click.
from .dev import dev  # noqa: E402
from .install import install  # noqa: E402
from .proxy import proxy  # noqa: E402
from .serve import NEEDS_HTTP, keygen, require_uvicorn, run, worker_app  # noqa: E402
from .targets import load_server  # noqa: E402
from .use import call, inspect, prompt, read  # noqa: E402

__all__ = ["NEEDS_CLI", "NEEDS_HTTP", "load_server", "main", "require_uvicorn", "worker_app"]


@click.group()
@click.version_option(package_name="mcpserve")
def main() -> None:
    """Run, inspect, call and install mcpserve servers."""


main.add_command(run)
main.add_command(keygen)
main.add_command(inspect)
main.add_command(call)
main.add_command(read)
main.add_command(prompt)
main.add_command(install)
main.add_command(dev)
main.add_command(proxy)
