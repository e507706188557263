"""A small async MCP client for the 2026-07-28 wire: for tests, scripts and tools.

::

    async with Client(server) as client:           # in memory, no sockets
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

    async with Client.stdio(["python", "app.py"]) as client:   # a subprocess
        ...

Every request carries the full per-request ``_meta`` (protocol version, client info and
capabilities). Results come back as the wire dicts; JSON-RPC errors raise
:class:`~mcpserve.MCPError` with the server's code, message and data. Give ``on_input``
to answer multi round-trip requests (elicitation, sampling, roots) as a real client does::

    async def answer(method: str, params: dict) -> dict:
        if method == "elicitation/create":
            return {"action": "accept", "content": {"name": "Ada"}}
        ...

    async with Client(server, capabilities={"elicitation": {"form": {}}}, on_input=answer) as c:
        result = await c.call_tool("greet")  # asked, answered and retried: complete
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..protocol import constants as c
from ..protocol.errors import MCPError
from ..protocol.jsonrpc import JSONDict
from .connections import (
    Connection,
    MemoryConnection,
    NotificationHandler,
    StdioConnection,
    next_id,
)

if TYPE_CHECKING:
    from ..server.server import Server

DEFAULT_CLIENT_INFO = {"name": "mcpserve-client", "version": __version__}

#: Answers one input request of an ``input_required`` result: called with its ``method``
#: (``elicitation/create``, ``sampling/createMessage``, ``roots/list``) and ``params``,
#: returns the result the client sends back for it in ``inputResponses``.
InputHandler = Callable[[str, JSONDict], Awaitable[JSONDict]]
_RETRIED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_ROUND_KEYS = frozenset({"inputResponses", "requestState"})


class Client:
    """Talks to one server. Use as an async context manager."""

    def __init__(
        self,
        server: Server | Connection,
        *,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        protocol_version: str = c.LATEST_VERSION,
        log_level: str | None = None,
        on_notification: NotificationHandler | None = None,
        on_input: InputHandler | None = None,
        max_input_rounds: int = 10,
    ) -> None:
        """``on_input`` answers multi round-trip requests: with it, an ``input_required``
        result is answered and the request sent again (new id, ``inputResponses``, the
        echoed ``requestState``) until it completes, at most ``max_input_rounds`` times;
        without it, ``input_required`` results are returned as they are."""
        from ..server.server import Server

        if isinstance(server, Server):
            self.connection: Connection = MemoryConnection(server, on_notification)
        else:
            self.connection = server
        self.capabilities = capabilities if capabilities is not None else {}
        self.client_info = client_info or DEFAULT_CLIENT_INFO
        self.protocol_version = protocol_version
        self.log_level = log_level
        self.on_input = on_input
        self.max_input_rounds = max_input_rounds

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        on_notification: NotificationHandler | None = None,
        **options: Any,
    ) -> Client:
        """A client for a server started as a subprocess speaking stdio."""
        connection = StdioConnection(command, env=env, cwd=cwd, on_notification=on_notification)
        return cls(connection, **options)

    async def __aenter__(self) -> Client:
        await self.connection.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.connection.close()

    # -- the raw request ---------------------------------------------------------------------

    def meta(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
    ) -> JSONDict:
        """The per-request ``_meta`` this client sends."""
        meta: JSONDict = {
            c.META_PROTOCOL_VERSION: self.protocol_version,
            c.META_CLIENT_INFO: self.client_info,
            c.META_CLIENT_CAPABILITIES: (
                capabilities if capabilities is not None else self.capabilities
            ),
        }
        level = log_level or self.log_level
        if level is not None:
            meta[c.META_LOG_LEVEL] = level
        if progress_token is not None:
            meta["progressToken"] = progress_token
        return meta

    async def request(
        self,
        method: str,
        params: JSONDict | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
    ) -> JSONDict:
        """Send one request and return its result; a JSON-RPC error raises ``MCPError``.

        With ``on_input``, ``input_required`` results are answered and retried (see
        :class:`Client`)."""
        full_params = dict(params or {})
        full_params["_meta"] = self.meta(
            capabilities=capabilities, progress_token=progress_token, log_level=log_level
        )
        result = await self._send(method, full_params)
        rounds = 0
        while (
            self.on_input is not None
            and method in _RETRIED_METHODS
            and result.get("resultType") == "input_required"
            and rounds < self.max_input_rounds
        ):
            rounds += 1
            retry = {k: v for k, v in full_params.items() if k not in _ROUND_KEYS}
            retry["inputResponses"] = await self._answer(result.get("inputRequests") or {})
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            result = await self._send(method, retry)
        return result

    async def _send(self, method: str, params: JSONDict) -> JSONDict:
        message = {"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params}
        response = await self.connection.request(message)
        if "error" in response:
            error = response["error"]
            raise MCPError(error.get("message", ""), code=error.get("code"), data=error.get("data"))
        return response["result"]  # type: ignore[no-any-return]

    async def _answer(self, requests: JSONDict) -> JSONDict:
        """The ``inputResponses`` for one round, every question asked at once."""
        assert self.on_input is not None
        keys = list(requests)
        answers = await asyncio.gather(
            *(self.on_input(requests[k]["method"], requests[k].get("params") or {}) for k in keys)
        )
        return dict(zip(keys, answers, strict=True))

    async def notify(self, method: str, params: JSONDict | None = None) -> None:
        message: JSONDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.connection.notify(message)

    # -- conveniences ------------------------------------------------------------------------

    async def discover(self) -> JSONDict:
        return await self.request("server/discover")

    async def _list_all(self, method: str, key: str) -> list[JSONDict]:
        items: list[JSONDict] = []
        cursor: str | None = None
        while True:
            result = await self.request(method, {"cursor": cursor} if cursor else None)
            items.extend(result[key])
            cursor = result.get("nextCursor")
            if cursor is None:
                return items

    async def list_tools(self) -> list[JSONDict]:
        """Every tool, following ``nextCursor`` through all pages."""
        return await self._list_all("tools/list", "tools")

    async def call_tool(
        self, name: str, arguments: JSONDict | None = None, **options: Any
    ) -> JSONDict:
        params: JSONDict = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("tools/call", params, **options)

    async def list_resources(self) -> list[JSONDict]:
        return await self._list_all("resources/list", "resources")

    async def list_resource_templates(self) -> list[JSONDict]:
        return await self._list_all("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str, **options: Any) -> JSONDict:
        return await self.request("resources/read", {"uri": uri}, **options)

    async def list_prompts(self) -> list[JSONDict]:
        return await self._list_all("prompts/list", "prompts")

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, **options: Any
    ) -> JSONDict:
        params: JSONDict = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("prompts/get", params, **options)

    async def complete(
        self,
        ref: JSONDict,
        argument: str,
        value: str,
        context_arguments: dict[str, str] | None = None,
    ) -> JSONDict:
        """Completion values for one argument.

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``.
        """
        params: JSONDict = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context_arguments is not None:
            params["context"] = {"arguments": context_arguments}
        result = await self.request("completion/complete", params)
        return result["completion"]  # type: ignore[no-any-return]
