"""The servers docs/cli.md's transcripts name, stood in for by local ones, and the files
those transcripts use (``tests/docs/test_docs_cli.py``).

``https://mcp.example.com/mcp`` is the doc's own ``app.py`` served with OAuth (tokens from
a real oidc-provider standing for ``https://auth.example.com``); ``https://tools.example.com/mcp``
and ``https://billing.example.com/mcp`` are small servers over HTTP; ``legacy_server.py``
is written with the official Python SDK, ``old.js`` is a handshake-era server in plain Node
(no packages), and ``files.py`` and ``servers.json`` are what the proxy section describes.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import types
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from http_serving import serve_asgi
from oidc_server import authorization_server
from wire_helpers import SUPPORT, free_port, http_server_process

TOOLS = """
from mcpserve import Server

server = Server("tools")


@server.tool
def ping() -> str:
    return "pong"
"""

FILES = """
from pathlib import Path

from mcpserve import Server

server = Server("files")


@server.tool
def read(path: str) -> str:
    \"\"\"A file's text.\"\"\"
    return Path(path).read_text()


server.run()
"""

LEGACY_SERVER = """
import argparse

from mcp.server.mcpserver import MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--its-own-flag", action="store_true")
parser.parse_args()
server = MCPServer("legacy", log_level="WARNING")


@server.tool()
def shout(text: str) -> str:
    return text.upper()


server.run()
"""

OLD_JS = """
// A handshake-era MCP server over stdio, in plain Node: initialize, then one tool.
const readline = require("readline");
const tools = [{name: "hello", inputSchema: {type: "object", properties: {}}}];
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
readline.createInterface({input: process.stdin}).on("line", (line) => {
  const {id, method, params} = JSON.parse(line);
  if (id === undefined) return;
  if (method === "initialize") {
    send({jsonrpc: "2.0", id, result: {protocolVersion: params.protocolVersion,
      capabilities: {tools: {}}, serverInfo: {name: "old", version: "0.1.0"}}});
  } else if (method === "tools/list") {
    send({jsonrpc: "2.0", id, result: {tools}});
  } else if (method === "tools/call") {
    send({jsonrpc: "2.0", id, result: {content: [{type: "text", text: "hello"}]}});
  } else if (method === "ping") {
    send({jsonrpc: "2.0", id, result: {}});
  } else {
    send({jsonrpc: "2.0", id, error: {code: -32601, message: "Method not found"}});
  }
});
"""


@dataclass
class StandIns:
    """The local servers in place of the docs' remote ones."""

    #: The doc's URL -> the local one.
    urls: dict[str, str]
    #: Environment every command gets (the browser for --oauth, $KEY).
    env: dict[str, str]


@contextlib.asynccontextmanager
async def running_stand_ins(folder: Path, app_source: str) -> AsyncIterator[StandIns]:
    """Every stand-in server, running until the block ends; ``app_source`` is ``app.py``."""
    from mcpserve.auth import JWTVerifier, ResourceServer

    (folder / "tools.py").write_text(TOOLS)
    module = types.ModuleType("docs_cli_app")
    sys.modules[module.__name__] = module  # pydantic resolves the app's models through it
    exec(compile(app_source, "docs/cli.md", "exec"), vars(module))
    issuer_port = free_port()
    issuer = f"http://127.0.0.1:{issuer_port}"
    (folder / "tools").mkdir()
    (folder / "billing").mkdir()
    with socket.socket() as sock, contextlib.ExitStack() as stack:
        sock.bind(("127.0.0.1", 0))
        protected = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        verifier = JWTVerifier(issuer=issuer, audience=protected)
        app = module.server.http_app(auth=ResourceServer(verifier, scopes_supported=["shelf"]))
        stack.enter_context(serve_asgi(app, sock=sock))
        command = [sys.executable, "-m", "mcpserve.cli", "run", str(folder / "tools.py"),
                   "--http", "--port", "{port}"]  # fmt: skip
        tools = stack.enter_context(http_server_process(folder / "tools", args=command))
        billing = stack.enter_context(http_server_process(folder / "billing", args=command))
        async with authorization_server([protected], ["shelf"], port=issuer_port):
            browser = SUPPORT / "login_browser.py"
            yield StandIns(
                urls={
                    "https://mcp.example.com/mcp": protected,
                    "https://auth.example.com": issuer,
                    "https://tools.example.com/mcp": tools.url,
                    "https://billing.example.com/mcp": billing.url,
                },
                env={
                    "BROWSER": f"{sys.executable} {browser} %s",
                    "PYTHONPATH": str(SUPPORT),
                    "KEY": "the-api-key",
                },
            )
    del sys.modules[module.__name__]


def write_shelf(home: Path, app_source: str) -> None:
    shelf = home / "shelf"
    shelf.mkdir(parents=True)
    (shelf / "app.py").write_text(app_source)
    (shelf / "files.py").write_text(FILES)
    (shelf / "legacy_server.py").write_text(LEGACY_SERVER)
    (shelf / "old.js").write_text(OLD_JS)


def write_servers_json(folder: Path, billing: str) -> None:
    """The gateway config the proxy section shows the shape of."""
    config = {"mcpServers": {
        "files": {"command": "python", "args": ["files.py"], "env": {"FILES_ROOT": "."}},
        "billing": {"url": billing,
                    "headers": {"X-Api-Key": "the-api-key"}},
    }}  # fmt: skip
    (folder / "servers.json").write_text(json.dumps(config, indent=2))
