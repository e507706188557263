"""The ``mcpserve`` command line: serve a server, use it from a terminal, install it.

One click group, ``main``; each command lives in the module for its concern and is added
here, so a new command is a new module and one ``add_command`` line:

* :mod:`.serve`: ``run`` (stdio or HTTP, ``--reload``, ``--env-file``) and ``keygen``;
* :mod:`.use`: ``inspect``, ``call``, ``read`` and ``prompt``, which drive a server as a
  client does, in this process or over stdio;
* :mod:`.install`: ``install``, which writes a client application's config entry;
* :mod:`.proxy`: ``proxy``, which serves another server (or a gateway of several);
* :mod:`.dev`: ``dev``, the server with a browser dev page (:mod:`mcpserve.dev`);
* :mod:`.worker`: ``worker``, which runs the task tools a server's front-ends queue.

Every target is ``file.py[:server]`` or ``module[:server]`` (:mod:`.targets`). Progress and
prompts go to stderr, so stdout carries only results and can be piped.
"""

from __future__ import annotations

from typing import Any

from .._extras import MissingExtra, missing_extra

#: What the command says instead of a traceback when click is missing.
NEEDS_CLI = str(missing_extra("The mcpserve command", "click"))

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
from .worker import worker  # noqa: E402

__all__ = ["NEEDS_CLI", "NEEDS_HTTP", "load_server", "main", "require_uvicorn", "worker_app"]


class Commands(click.Group):
    """The command group. What mcpserve already explains in one line is said in that line,
    with exit status 1, as any other error the command reports: an optional dependency
    found missing while a command runs (the user's server importing ``mcpserve.auth``
    without PyJWT, say), or a function of the user's server that cannot be registered as
    written (a type with no JSON Schema, an elicitation form no client can fill). Anything
    else in the user's code keeps its traceback: it is how they find the line."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MissingExtra as exc:
            raise click.ClickException(str(exc)) from None
        except TypeError as exc:
            from ..server.context.forms import FormSchemaError
            from ..server.schema.errors import RegistrationError

            if not isinstance(exc, RegistrationError | FormSchemaError):
                raise
            raise click.ClickException(str(exc)) from None


@click.group(cls=Commands)
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
main.add_command(worker)
