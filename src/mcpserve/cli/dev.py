"""``mcpserve dev``: serve a target with the browser dev page (:mod:`mcpserve.dev`)."""

from __future__ import annotations

import click

from .serve import require_uvicorn, start_failures_said
from .targets import load_server


@click.command()
@click.argument("target")
@click.option("--host", default="127.0.0.1", show_default=True, help="Bind address.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=int,
    help="Port of the page and the endpoint (0: any free port).",
)
@click.option("--path", default="/mcp", show_default=True, help="MCP endpoint path.")
def dev(target: str, host: str, port: int, path: str) -> None:
    """Serve TARGET with a browser dev page at / and the MCP endpoint at --path."""
    require_uvicorn()  # before the target is imported: say what is missing first
    from ..dev import serve_dev
    from ..transports.serve import check_port

    server = load_server(target)
    if port:  # 0 picks a free one: nothing to check
        with start_failures_said():
            check_port(host, port)
    try:
        serve_dev(server, host=host, port=port, path=path)
    except OSError as exc:  # the port is taken, or the address is not this machine's
        raise click.ClickException(exc.strerror or str(exc)) from None
