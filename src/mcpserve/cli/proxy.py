"""``mcpserve proxy``: serve another MCP server (or several) over stdio or HTTP.

One upstream is given as the argument: a URL, or a command after ``--``::

    mcpserve proxy https://example.com/mcp --http --port 8000
    mcpserve proxy -- python other.py

Several make a gateway, each under its name as a namespace: ``--upstream NAME=TARGET``
(TARGET a URL or a command, split as a shell would), or ``--config FILE``, a JSON file in
the shape MCP clients use (``{"mcpServers": {"name": {"command": ..., "args": [...]}}}``,
or ``{"url": ..., "headers": {...}}``). Like ``mcpserve run``, it serves stdio unless
``--http`` is given.

What goes to the upstream is set here and nowhere else: ``--header`` for a URL (an API key
of the proxy's own), ``--env`` for a command. A client's own credentials never reach the
upstream.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .._types import JSONDict
from ..transports.stdio import DEFAULT_SHUTDOWN_GRACE
from .errors import Mistake
from .serve import require_uvicorn, start_failures_said
from .terminal import say
from .use import read_env_file


def _pairs(values: tuple[str, ...], separator: str, what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, found, rest = value.partition(separator)
        key = key.strip()
        if not found or not key:
            raise Mistake(f"{what} {value!r} is not NAME{separator}VALUE")
        if key in pairs:
            raise Mistake(f"{what} {key!r} is given twice")
        pairs[key] = rest.strip() if separator == ":" else rest
    return pairs


def _config_upstreams(path: Path) -> JSONDict:
    from ..proxy import upstream_from_config

    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise Mistake(f"{path}: not a readable JSON file ({exc})") from None
    servers = (
        document.get("mcpServers", document.get("upstreams"))
        if isinstance(document, dict)
        else None
    )
    if not isinstance(servers, dict) or not servers:
        raise Mistake(f'{path}: expected {{"mcpServers": {{"name": {{...}}}}}}')
    try:
        return {name: upstream_from_config(name, entry) for name, entry in servers.items()}
    except ValueError as exc:
        raise Mistake(f"{path}: {exc}") from None


@click.command()
@click.argument("upstream", nargs=-1)
@click.option(
    "--upstream",
    "named",
    multiple=True,
    metavar="NAME=TARGET",
    help="A gateway member: a URL or a command, served under NAME (repeatable).",
)
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='Gateway members from a JSON file: {"mcpServers": {...}}.',
)
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", default=8000, show_default=True, type=int, help="HTTP port.")
@click.option("--path", default="/mcp", show_default=True, help="HTTP endpoint path.")
@click.option("--name", default=None, help="The name the proxy gives itself.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="NAME:VALUE",
    help="A header sent to the upstream URL (repeatable).",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="KEY=VALUE",
    help="An environment variable for the upstream command (repeatable).",
)
@click.option(
    "--env-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read KEY=VALUE lines into the environment first.",
)
@click.option(
    "--protocol-version",
    default=None,
    help="Speak this version to the upstream instead of negotiating.",
)
@click.option("--access-log", is_flag=True, help="HTTP: log every request.")
@click.option(
    "--shutdown-grace",
    default=DEFAULT_SHUTDOWN_GRACE,
    show_default=True,
    type=click.FloatRange(0),
    help="stdio: seconds requests in flight get when stdin closes.",
)
def proxy(
    upstream: tuple[str, ...],
    named: tuple[str, ...],
    config: Path | None,
    use_http: bool,
    host: str,
    port: int,
    path: str,
    name: str | None,
    headers: tuple[str, ...],
    env: tuple[str, ...],
    env_file: Path | None,
    protocol_version: str | None,
    access_log: bool,
    shutdown_grace: float,
) -> None:
    """Serve UPSTREAM (a URL, or a command after --) to clients of either protocol era.

    With --upstream NAME=TARGET (repeatable) or --config FILE, serve several upstreams as
    one gateway, each server's names under its NAME.
    """
    if use_http:
        require_uvicorn()
    read_env_file(env_file)
    server = _build(
        upstream,
        named,
        config,
        name=name,
        headers=_pairs(headers, ":", "Header"),
        env=_pairs(env, "=", "--env"),
        protocol_version=protocol_version,
    )
    from ..proxy import UpstreamUnavailable

    try:
        if not use_http:
            server.run("stdio", shutdown_grace=shutdown_grace)
            return
        from ..transports.serve import check_port

        with start_failures_said():
            check_port(host, port)  # before "Serving", which would not be true
            say(f"Serving {server.name} at http://{host}:{port}{path}")
            server.run("http", host=host, port=port, path=path, access_log=access_log)
    except UpstreamUnavailable as exc:  # raised at start: the upstream cannot be reached
        raise click.ClickException(exc.message) from None


def _build(
    upstream: tuple[str, ...],
    named: tuple[str, ...],
    config: Path | None,
    *,
    name: str | None,
    headers: dict[str, str],
    env: dict[str, str],
    protocol_version: str | None,
) -> Any:
    from ..proxy import Upstream, gateway_server, proxy_server
    from ..server.server import Server

    if upstream and (named or config):
        raise Mistake("Give one UPSTREAM, or --upstream/--config for a gateway")
    if upstream:
        target: Any = upstream[0] if len(upstream) == 1 else list(upstream)
        try:
            return proxy_server(
                target,
                server_class=Server,
                name=name or "proxy",
                headers=headers or None,
                env=env or None,
                protocol_version=protocol_version,
            )
        except ValueError as exc:
            raise Mistake(str(exc)) from None
    members: JSONDict = _config_upstreams(config) if config is not None else {}
    for member, target in _pairs(named, "=", "--upstream").items():
        if member in members:
            raise Mistake(f"--upstream {member!r} is given twice (in --config too)")
        try:
            members[member] = Upstream(
                target, headers=headers or None, env=env or None, protocol_version=protocol_version
            )
        except ValueError as exc:
            raise Mistake(f"Upstream {member!r}: {exc}") from None
    if not members:
        raise Mistake(
            "Give an UPSTREAM (a URL, or a command after --), or "
            "--upstream NAME=TARGET, or --config FILE"
        )
    try:
        return gateway_server(members, server_class=Server, name=name or "gateway")
    except ValueError as exc:  # a NAME that cannot be a namespace
        raise Mistake(str(exc)) from None
