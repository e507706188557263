"""``inspect``, ``call``, ``read`` and ``prompt``: a server used from the terminal.

Each command connects a :class:`~mcpserve.Client` to the target and makes one or a few
requests. By default the target is imported into this process and driven in memory
(``Client(server)``: every message still passes through the JSON encoder). With
``--stdio`` it is started as a subprocess (``python -m mcpserve.cli run TARGET``) and
spoken to over its pipes, exactly as a desktop client would. A target that is a URL
(``http://127.0.0.1:8000/mcp``) is a running server, reached over Streamable HTTP in
whichever era it speaks.

The client answers what the server asks mid-call through :mod:`.terminal` (the person at
the terminal fills in forms and types model replies; roots are the current directory), and
shows a tool's progress notifications on stderr. With ``--log-level LEVEL`` it asks for the
server's log messages of that level and above (the client sends the level in each request's
``_meta`` on 2026-07-28, and ``logging/setLevel`` after ``initialize`` in the handshake era)
and shows them on stderr too. Output is :mod:`.output`'s; ``--json`` prints each raw result
instead. A tool result with ``isError`` and a JSON-RPC error both exit with status 1, the
message on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .._types import JSONDict
from . import output, terminal
from .access import HTTPAccess, access_options
from .arguments import ArgumentError, prompt_arguments, split_pairs, tool_arguments
from .envfile import EnvFileError, load_env_file
from .errors import Mistake
from .targets import display_name, load_server, target_file

if TYPE_CHECKING:
    from ..client.client import Client

#: A click command's callback, handed back decorated.
F = TypeVar("F", bound=Callable[..., Any])


def client_options(fn: F) -> F:
    """The options every client command takes, and its TARGET argument."""
    from ..protocol.constants import LOG_LEVELS

    fn = click.option("--json", "as_json", is_flag=True, help="Print the raw JSON result.")(fn)
    fn = click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS),
        help="Show the server's log messages of this level and above (on stderr).",
    )(fn)
    fn = click.option(
        "--stdio",
        "over_stdio",
        is_flag=True,
        help="Start TARGET as a subprocess; talk to it over stdio.",
    )(fn)
    fn = click.option(
        "--env-file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Read KEY=VALUE lines into the environment first.",
    )(fn)
    fn = access_options(fn)
    return click.argument("target")(fn)


def read_env_file(path: Path | None) -> None:
    """Load ``--env-file``, turning a malformed line into a usage error."""
    if path is None:
        return
    try:
        load_env_file(path)
    except EnvFileError as exc:
        raise Mistake(f"{exc}; fix that line of the env file") from None


@contextlib.asynccontextmanager
async def connect(
    target: str,
    over_stdio: bool,
    access: HTTPAccess | None = None,
    log_level: str | None = None,
) -> AsyncIterator[Client]:
    """A client of ``target`` (in memory, over stdio, or at a URL with ``access``'s headers
    and OAuth) that asks the terminal for input, and shows the server's log messages of
    ``log_level`` and above."""
    async with _connected(target, over_stdio, access, log_level) as client:
        if log_level is not None:
            await _check_logging(client, target)
        yield client


async def _check_logging(client: Client, target: str) -> None:
    """Say so when the server sends no log messages at all, rather than showing none."""
    if not client.server_capabilities:  # over HTTP, connecting found them out already
        client.discovered(await client.discover())
    if "logging" not in client.server_capabilities:
        terminal.say(
            f"{display_name(target)} sends no log messages (it declares no logging "
            "capability: Server(client_logging=True) turns them on)"
        )


@contextlib.asynccontextmanager
async def _connected(
    target: str, over_stdio: bool, access: HTTPAccess | None, log_level: str | None
) -> AsyncIterator[Client]:
    from ..client.client import Client

    handlers: dict[str, Any] = {  # keyword arguments of Client
        "capabilities": terminal.CAPABILITIES,
        "on_elicit": terminal.elicit,
        "on_sample": terminal.sample,
        "on_list_roots": terminal.list_roots,
        "log_level": log_level,
        "on_log": output.show_log,
    }
    if target.startswith(("http://", "https://")):
        if over_stdio:
            raise Mistake("--stdio starts a server from a file; a URL is already running")
        terminal.say(f"Connecting to {target}...")
        access = access or HTTPAccess()
        auth = access.auth()
        refused: tuple[type[Exception], ...] = ()
        if auth is not None:
            from ..client.oauth import OAuthError

            refused = (OAuthError,)
        client = Client.http(target, headers=access.headers, auth=auth, **handlers)
        try:
            async with client:
                yield client
        except (OSError, ConnectionError) as exc:
            raise click.ClickException(
                f"Cannot reach {target} ({exc}); is the server running there?"
            ) from None
        except refused as exc:
            raise click.ClickException(f"Authorization failed: {exc}") from None
        return
    if access is not None and access.given:
        raise Mistake(
            "--header, --oauth and --client-id are for a server at a URL; a file runs here"
        )
    name = display_name(target)
    if over_stdio:
        target_file(target)  # a missing file is said here, not by a child that exits
        terminal.say(f"Starting {name} over stdio...")
        command = [sys.executable, "-m", "mcpserve.cli", "run", target]
        client = Client.stdio(command, **handlers)
    else:
        target_file(target)  # a missing file is said before "Loading"
        terminal.say(f"Loading {name}...")
        client = Client(load_server(target), **handlers)
    try:
        async with client:
            yield client
    except ConnectionError:
        raise click.ClickException(
            f"{name} stopped before it answered; its error is printed above "
            f"(try: mcpserve run {target})"
        ) from None


def run_async(coroutine: Coroutine[Any, Any, int]) -> int:
    """Run a command's body, turning a JSON-RPC error into an exit with status 1."""
    from ..protocol.errors import MCPError

    try:
        return asyncio.run(coroutine)
    except MCPError as exc:
        detail = f" (data: {json.dumps(exc.data)})" if exc.data is not None else ""
        raise click.ClickException(f"The server answered error {exc.code}: {exc}{detail}") from None
    except ArgumentError as exc:
        raise Mistake(str(exc)) from None


def command_body(fn: Callable[..., Coroutine[Any, Any, int]]) -> Callable[..., None]:
    """A click command's callback made of an ``async def`` that returns the exit status:
    the env file read first, errors turned into messages."""

    @wraps(fn)
    def body(
        env_file: Path | None,
        headers: tuple[str, ...],
        oauth: bool,
        client_id: str | None,
        client_secret: str | None,
        **kwargs: Any,
    ) -> None:
        read_env_file(env_file)
        access = HTTPAccess.from_options(headers, oauth, client_id, client_secret)
        status = run_async(fn(access=access, **kwargs))
        if status:
            sys.exit(status)

    return body


async def listed(
    client: Client,
    kind: str,
    name: str,
    listing: Callable[[], Awaitable[list[JSONDict]]],
) -> dict[str, JSONDict]:
    """What ``listing()`` lists, by name. A server that wants OAuth leaves out of its lists
    what the token's scopes do not cover: when ``name`` is not there, the client authorizes
    again for every scope the server names (a step-up), and lists once more."""
    entries = {entry["name"]: entry for entry in await listing()}
    step_up = getattr(client.connection, "step_up", None)  # an HTTP connection's
    if name in entries or step_up is None:
        return entries

    def before(scopes: tuple[str, ...]) -> None:
        terminal.say(
            f"No {kind} {name!r} is listed for this token: authorizing again for "
            f"scope {' '.join(scopes)}..."
        )

    if await step_up(before):
        entries = {entry["name"]: entry for entry in await listing()}
    return entries


def _progress(progress: float, total: float | None, message: str | None) -> None:
    done = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    terminal.say(f"  progress {done}" + (f": {message}" if message else ""))


@click.command()
@client_options
@command_body
async def inspect(
    target: str, over_stdio: bool, as_json: bool, log_level: str | None, access: HTTPAccess
) -> int:
    """Show TARGET's tools, resources and prompts.

    Every tool with its arguments (type, required, default) and options, then resources,
    resource templates and prompts; --json prints them as the server listed them.
    TARGET is file.py[:server] or module[:server].
    """
    async with connect(target, over_stdio, access, log_level) as client:
        discovered = await client.discover()
        client.discovered(discovered)
        found: JSONDict = {
            "server": client.server_info,
            "capabilities": client.server_capabilities,
        }
        offered = client.server_capabilities
        if "tools" in offered:
            found["tools"] = await client.list_tools()
            if not as_json:  # --json prints the lists as the server sent them
                found["tools"] = with_task_support(found["tools"], client)
        if "resources" in offered:
            found["resources"] = await client.list_resources()
            found["resourceTemplates"] = await client.list_resource_templates()
        if "prompts" in offered:
            found["prompts"] = await client.list_prompts()
    if as_json:
        output.show_json(found)
    else:
        click.echo(output.inspection_text(found))
    return 0


def with_task_support(tools: list[JSONDict], client: Client) -> list[JSONDict]:
    """``tools``, each marked with the ``execution.taskSupport`` its registration gives it
    when the server runs in this process: the 2026-07-28 wire does not list it."""
    server = getattr(client.connection, "server", None)  # a MemoryConnection's
    registered = getattr(getattr(server, "registry", None), "tools", None) or {}
    marked = []
    for tool in tools:
        mode = getattr(registered.get(tool.get("name")), "task_mode", None)
        if mode is not None and "execution" not in tool:
            tool = {**tool, "execution": {"taskSupport": mode}}
        marked.append(tool)
    return marked


@click.command()
@client_options
@click.argument("tool")
@click.argument("arguments", nargs=-1, metavar="[KEY=VALUE]...")
@command_body
async def call(
    target: str,
    tool: str,
    arguments: tuple[str, ...],
    over_stdio: bool,
    as_json: bool,
    log_level: str | None,
    access: HTTPAccess,
) -> int:
    """Call TOOL with KEY=VALUE arguments.

    Each value is read as the tool's input schema says: isbn=9780441013593 stays a string
    for a string argument, count=3 is an integer for an integer one; write arrays and
    objects as JSON (tags='["a","b"]'), booleans as true or false.

    \b
    mcpserve call app.py add_book title=Dune year=1965
    mcpserve call app.py add_book title=Dune --stdio --json
    """
    split_pairs(arguments)  # a word that is not KEY=VALUE is said before anything starts
    async with connect(target, over_stdio, access, log_level) as client:
        tools = await listed(client, "tool", tool, client.list_tools)
        if tool not in tools:
            names = ", ".join(tools) or "none"
            raise Mistake(
                f"{display_name(target)} has no tool {tool!r} (its "
                f"tools: {names}); see them with: mcpserve inspect "
                f"{target}"
            )
        sent = tool_arguments(arguments, tools[tool].get("inputSchema") or {}, f"Tool {tool!r}")
        terminal.say(f"Calling {tool}...")
        result = await client.call_tool(tool, sent, on_progress=_progress)
    if as_json:
        output.show_json(result)
    elif result.get("resultType") == "input_required":
        raise click.ClickException("The tool kept asking for input; gave up after 10 rounds")
    else:
        output.show_tool_result(result)
    return 1 if result.get("isError") else 0


@click.command()
@client_options
@click.argument("uri")
@command_body
async def read(
    target: str,
    uri: str,
    over_stdio: bool,
    as_json: bool,
    log_level: str | None,
    access: HTTPAccess,
) -> int:
    """Read the resource at URI.

    \b
    mcpserve read app.py notes://1
    """
    async with connect(target, over_stdio, access, log_level) as client:
        result = await client.read_resource(uri)
    if as_json:
        output.show_json(result)
    else:
        output.show_resource(result)
    return 0


@click.command()
@client_options
@click.argument("name")
@click.argument("arguments", nargs=-1, metavar="[KEY=VALUE]...")
@command_body
async def prompt(
    target: str,
    name: str,
    arguments: tuple[str, ...],
    over_stdio: bool,
    as_json: bool,
    log_level: str | None,
    access: HTTPAccess,
) -> int:
    """Get prompt NAME with KEY=VALUE arguments.

    \b
    mcpserve prompt app.py summarize topic=tea
    """
    split_pairs(arguments)
    async with connect(target, over_stdio, access, log_level) as client:
        prompts = await listed(client, "prompt", name, client.list_prompts)
        if name not in prompts:
            names = ", ".join(prompts) or "none"
            raise Mistake(
                f"{display_name(target)} has no prompt {name!r} (its "
                f"prompts: {names}); see them with: mcpserve inspect "
                f"{target}"
            )
        sent = prompt_arguments(arguments, prompts[name].get("arguments") or [], f"Prompt {name!r}")
        result = await client.get_prompt(name, sent)
    if as_json:
        output.show_json(result)
    else:
        output.show_prompt(result)
    return 0
