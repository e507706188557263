"""A small async MCP client for the 2026-07-28 wire: for tests, scripts and tools.

::

    async with Client(server) as client:           # in memory, no sockets
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

    async with Client.stdio(["python", "app.py"]) as client:   # a subprocess
        ...

Every request carries the full per-request ``_meta`` (protocol version, client info and
capabilities). Results come back as the wire dicts; JSON-RPC errors raise
:class:`~mcpserve.MCPError` with the server's code, message and data.

Give handlers to answer multi round-trip requests (elicitation, sampling, roots) as a real
client does: one per kind, or ``on_input`` for every kind (a per-kind one wins for its
kind). Each may be an ``async def``, a plain ``def`` (run on the event loop) or a ``def``
marked :func:`~mcpserve.blocking` (run in a thread); :mod:`.handlers` has the rules::

    def name(params: dict) -> dict:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with Client(server, on_elicit=name) as c:   # declares elicitation.form
        result = await c.call_tool("greet")  # asked, answered and retried: complete
"""

from __future__ import annotations

from collections.abc import Sequence
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
from .handlers import ElicitHandler, Handlers, InputHandler, RootsHandler, SampleHandler

if TYPE_CHECKING:
    from ..server.server import Server

DEFAULT_CLIENT_INFO = {"name": "mcpserve-client", "version": __version__}

__all__ = ["Client", "ElicitHandler", "InputHandler", "RootsHandler", "SampleHandler"]

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
        on_elicit: ElicitHandler | None = None,
        on_sample: SampleHandler | None = None,
        on_list_roots: RootsHandler | None = None,
        max_input_rounds: int = 10,
    ) -> None:
        """With input handlers (``on_elicit``, ``on_sample``, ``on_list_roots`` for their
        kind, ``on_input(method, params)`` for the rest), an ``input_required`` result is
        answered and the request sent again (new id, ``inputResponses``, the echoed
        ``requestState``) until it completes, at most ``max_input_rounds`` times; without
        any, ``input_required`` results are returned as they are. A question of a kind none
        of them answers fails the call with ``MethodNotFound`` (-32601).

        ``capabilities`` not given: the per-kind handlers declare theirs
        (``elicitation: {form: {}}``, ``sampling: {}``, ``roots: {}``) and ``on_input``
        nothing; given, they are sent exactly as they are.

        ``on_notification(message)`` hears every notification the server sends, for a
        ``Server`` in memory or with :meth:`stdio` (a ``Connection`` you pass delivers its
        own). Every handler may be ``async def``, plain ``def`` or ``@blocking`` ``def``
        (:mod:`.handlers`)."""
        from ..server.server import Server

        self.handlers = Handlers(
            on_input=on_input,
            on_elicit=on_elicit,
            on_sample=on_sample,
            on_list_roots=on_list_roots,
            on_notification=on_notification,
        )
        if isinstance(server, Server):
            self.connection: Connection = MemoryConnection(server, self.handlers.on_notification)
        else:
            self.connection = server
        self.capabilities = (
            capabilities if capabilities is not None else self.handlers.capabilities()
        )
        self.client_info = client_info or DEFAULT_CLIENT_INFO
        self.protocol_version = protocol_version
        self.log_level = log_level
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
        connection = StdioConnection(command, env=env, cwd=cwd, on_notification=None)
        client = cls(connection, on_notification=on_notification, **options)
        # Shaped by the client (it owns the threads a blocking handler runs in), so the
        # connection gets it only now.
        connection.on_notification = client.handlers.on_notification
        return client

    async def __aenter__(self) -> Client:
        await self.connection.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.connection.close()
        finally:
            self.handlers.pool.shutdown()

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

        With an input handler, ``input_required`` results are answered and retried (see
        :class:`Client`)."""
        full_params = dict(params or {})
        full_params["_meta"] = self.meta(
            capabilities=capabilities, progress_token=progress_token, log_level=log_level
        )
        result = await self._send(method, full_params)
        rounds = 0
        while (
            self.handlers.answers_input
            and method in _RETRIED_METHODS
            and result.get("resultType") == "input_required"
            and rounds < self.max_input_rounds
        ):
            rounds += 1
            retry = {k: v for k, v in full_params.items() if k not in _ROUND_KEYS}
            retry["inputResponses"] = await self.handlers.answer(result.get("inputRequests") or {})
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
