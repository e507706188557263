"""A small async MCP client for the 2026-07-28 wire (over HTTP, the handshake era too):
for tests, scripts and tools.

::

    async with Client(server) as client:           # in memory, no sockets
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

    async with Client(handle) as client:           # a bare async handle function
        ...

    async with Client.stdio(["python", "app.py"]) as client:   # a subprocess
        ...

    async with Client("http://127.0.0.1:8000/mcp") as client:   # Streamable HTTP
        ...

On 2026-07-28 every request carries the full per-request ``_meta`` (protocol version,
client info and capabilities). Results come back as the wire dicts; JSON-RPC errors raise
:class:`~mcpserve.MCPError` with the server's code, message and data. Unless pinned to a
``protocol_version``, a client whose request is refused with ``UnsupportedProtocolVersion``
naming a version it speaks sends it once more at that version.

Over HTTP the client settles the era when it connects (:mod:`.eras`): ``server/discover``
first, the ``initialize`` handshake if the server turns out to predate 2026-07-28 (pinned
to a handshake-era version, straight to ``initialize``; to another, no probe). In that
era requests carry no per-request ``_meta`` and the server's own requests (elicitation,
sampling, roots) are answered by the same input handlers as ``input_required`` rounds.
HTTP needs ``httpx2``, imported only then.

Give handlers to answer multi round-trip requests (elicitation, sampling, roots) as a real
client does: one per kind, or ``on_input`` for every kind (a per-kind one wins for its
kind). Each may be an ``async def``, a plain ``def`` (run on the event loop) or a ``def``
marked :func:`~mcpserve.blocking` (run in a thread); :mod:`.handlers` has the rules::

    def name(params: dict) -> dict:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with Client(server, on_elicit=name) as c:   # declares elicitation.form
        result = await c.call_tool("greet")  # asked, answered and retried: complete

``call_tool(..., task=True)`` lets the server run the call as a task and returns a
:class:`~mcpserve.TaskHandle` to wait for, watch or cancel it (:mod:`.tasks`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from .._extras import needs_extra
from .._types import JSONDict
from .._version import __version__
from ..protocol import constants as c
from ..protocol.errors import MCPError
from .connections import (
    Connection,
    HandleFunction,
    InProcessServer,
    NotificationHandler,
    StdioConnection,
    connection_to,
    next_id,
)
from .eras import answer_request, modern_retry, negotiate, record
from .handlers import ElicitHandler, Handlers, InputHandler, RootsHandler, SampleHandler
from .listen import Subscription, notification_filter
from .notifications import LogHandler, ProgressHandler, Router

if TYPE_CHECKING:  # httpx2, OAuth, skills and tasks load only for a client that uses them
    import httpx2

    from .oauth.flow import OAuthFlow
    from .skills import LoadedSkill
    from .tasks import TaskHandle

DEFAULT_CLIENT_INFO = {"name": "mcpserve-client", "version": __version__}

__all__ = ["Client", "ElicitHandler", "InputHandler", "RootsHandler", "SampleHandler"]

_RETRIED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_ROUND_KEYS = frozenset({"inputResponses", "requestState"})


class Client:
    """Talks to one server. Use as an async context manager."""

    def __init__(
        self,
        server: InProcessServer | HandleFunction | Connection | str,
        *,
        capabilities: JSONDict | None = None,
        client_info: JSONDict | None = None,
        protocol_version: str | None = None,
        log_level: str | None = None,
        on_notification: NotificationHandler | None = None,
        on_input: InputHandler | None = None,
        on_elicit: ElicitHandler | None = None,
        on_sample: SampleHandler | None = None,
        on_list_roots: RootsHandler | None = None,
        on_log: LogHandler | None = None,
        max_input_rounds: int = 10,
        timeout: float | None = None,
        auth: OAuthFlow | None = None,
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
        ``Server`` in memory, with :meth:`stdio` or over HTTP (a ``Connection`` you pass
        delivers its own). Every handler may be ``async def``, plain ``def`` or
        ``@blocking`` ``def`` (:mod:`.handlers`). ``on_log(level, data, logger)`` hears the
        server's log messages.

        ``server`` is a ``Server`` (in memory, its lifespan running while the client is
        open), an async handle function ``handle(message, *, send)`` that answers one
        JSON-RPC message in memory (:class:`~mcpserve.client.connections.HandleFunction`),
        a ``Connection``, or the URL of a Streamable HTTP endpoint (:meth:`http` takes more
        options). ``timeout`` bounds
        every request, in seconds (``None``: no bound); ``request`` takes one per call.
        A request that runs out raises ``TimeoutError`` and is cancelled on the server.

        ``auth`` (a URL only): an :class:`~mcpserve.OAuth` or
        :class:`~mcpserve.ClientCredentials` that gets and sends the OAuth tokens the server
        asks for (``docs/auth.md``, "The client side")."""
        self.handlers = Handlers(
            on_input=on_input,
            on_elicit=on_elicit,
            on_sample=on_sample,
            on_list_roots=on_list_roots,
            on_notification=on_notification,
        )
        self.router = Router(self.handlers, on_log)
        if isinstance(server, str):
            server = _http_connection(server, auth=auth)
        elif auth is not None:
            raise TypeError(
                "auth= is for a server URL (or Client.http); a Connection brings its own"
            )
        self.connection = connection_to(server, self.router)
        attach = getattr(server, "attach", None)  # an HTTPConnection
        if attach is not None:
            # Shaped by the client, so the connection gets them only now (unless given).
            attach(self.router, partial(answer_request, self.handlers))
        self.capabilities = (
            capabilities if capabilities is not None else self.handlers.capabilities()
        )
        self.client_info = client_info or DEFAULT_CLIENT_INFO
        self.protocol_version = protocol_version or c.LATEST_VERSION
        #: Given a version: speak that one only (no probe, no fallback, no retry).
        self.pinned = protocol_version is not None
        self.log_level = log_level
        self.max_input_rounds = max_input_rounds
        self.timeout = timeout
        #: The handshake era (``initialize``) was agreed, rather than 2026-07-28.
        self.legacy = False
        #: What the server said about itself (discover, or the ``initialize`` result).
        self.server_info: JSONDict = {}
        self.server_capabilities: JSONDict = {}
        self.instructions: str | None = None
        self.subscriptions: set[Subscription] = set()

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        auth: OAuthFlow | None = None,
        **options: Any,
    ) -> Client:
        """A client for a Streamable HTTP endpoint: ``headers`` go on every HTTP request;
        an ``http_client`` of yours (proxies, TLS, event hooks) is used and left open, for
        the OAuth requests of ``auth`` too."""
        connection = _http_connection(url, headers=headers, http_client=http_client, auth=auth)
        return cls(connection, **options)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        on_notification: NotificationHandler | None = None,
        negotiate: bool = False,
        **options: Any,
    ) -> Client:
        """A client for a server started as a subprocess speaking stdio.

        It speaks 2026-07-28 unless pinned to a handshake-era ``protocol_version`` (then it
        sends ``initialize``); ``negotiate=True`` settles the era as over HTTP:
        ``server/discover`` first, ``initialize`` when the server predates 2026-07-28."""
        negotiate = negotiate or options.get("protocol_version") in c.HANDSHAKE_VERSIONS
        connection = StdioConnection(
            command, env=env, cwd=cwd, on_notification=None, negotiate=negotiate
        )
        client = cls(connection, on_notification=on_notification, **options)
        # Shaped by the client (it owns the threads a blocking handler runs in), so the
        # connection gets it only now.
        connection.on_notification = client.router
        return client

    async def __aenter__(self) -> Client:
        await self.connection.open()
        if getattr(self.connection, "negotiates", False):
            try:
                await negotiate(self)
            except BaseException:
                await self.connection.close()
                self.handlers.pool.shutdown()
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            for subscription in list(self.subscriptions):
                await subscription.aclose()
            await self.connection.close()
        finally:
            self.handlers.pool.shutdown()

    def discovered(self, result: JSONDict) -> None:
        """Keep what a discover or ``initialize`` result says about the server in
        ``server_info``, ``server_capabilities`` and ``instructions`` (done by connecting
        over HTTP, and by :meth:`discover`)."""
        record(self, result)

    # -- the raw request ---------------------------------------------------------------------

    def meta(
        self,
        *,
        capabilities: JSONDict | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
    ) -> JSONDict:
        """The per-request ``_meta`` this client sends (in the handshake era, only a
        progress token: the session holds the rest)."""
        if self.legacy:
            return {} if progress_token is None else {"progressToken": progress_token}
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
        capabilities: JSONDict | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        on_progress: ProgressHandler | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the per-request bound SDKs offer
    ) -> JSONDict:
        """Send one request and return its result; a JSON-RPC error raises ``MCPError``.

        With an input handler, ``input_required`` results are answered and retried (see
        :class:`Client`). ``on_progress(progress, total, message)`` hears the request's
        progress (under ``progress_token``, or one made up). ``timeout`` (seconds) bounds
        each round, instead of the client's."""
        if on_progress is not None:
            progress_token = self.router.track_progress(on_progress, progress_token)
        limit = self.timeout if timeout is None else timeout
        full_params = dict(params or {})
        if meta := self.meta(
            capabilities=capabilities, progress_token=progress_token, log_level=log_level
        ):
            full_params["_meta"] = meta
        try:
            result = await self._send(method, full_params, limit)
            rounds = 0
            while (
                self.handlers.answers_input
                and method in _RETRIED_METHODS
                and result.get("resultType") == "input_required"
                and rounds < self.max_input_rounds
            ):
                rounds += 1
                retry = {k: v for k, v in full_params.items() if k not in _ROUND_KEYS}
                requests = result.get("inputRequests") or {}
                retry["inputResponses"] = await self.handlers.answer(requests)
                if "requestState" in result:
                    retry["requestState"] = result["requestState"]
                result = await self._send(method, retry, limit)
            return result
        finally:
            if on_progress is not None and progress_token is not None:
                self.router.forget_progress(progress_token)

    async def send_raw(self, method: str, params: JSONDict) -> JSONDict:
        """Send ``params`` exactly as given (no ``_meta`` added, no rounds answered)."""
        return await self._send(method, params, self.timeout)

    async def _send(self, method: str, params: JSONDict, limit: float | None) -> JSONDict:
        try:
            return await self._exchange(method, params, limit)
        except MCPError as exc:
            # Asked for a version the server does not speak: once more at one it names.
            version = None if self.legacy or self.pinned else modern_retry(exc)
            meta = params.get("_meta")
            if version is None or not isinstance(meta, dict):
                raise
            self.protocol_version = meta[c.META_PROTOCOL_VERSION] = version
            return await self._exchange(method, params, limit)

    async def _exchange(self, method: str, params: JSONDict, limit: float | None) -> JSONDict:
        message = {"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params}
        if limit is None:  # no bound: no timeout scope to enter and leave on every call
            response = await self.connection.request(message)
        else:
            try:
                async with asyncio.timeout(limit):
                    response = await self.connection.request(message)
            except TimeoutError:
                raise TimeoutError(f"{method} got no answer within {limit} s") from None
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
        """``server/discover``; in the handshake era, the ``initialize`` result instead."""
        if self.legacy:
            return {
                "supportedVersions": [self.protocol_version],
                "serverInfo": self.server_info,
                "capabilities": self.server_capabilities,
            }
        result = await self.request("server/discover")
        record(self, result)
        return result

    def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resources: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> Subscription:
        """A ``subscriptions/listen`` stream: ``async with`` it and ``async for`` its
        notifications (:mod:`.listen`). ``task_ids`` asks for ``notifications/tasks`` about
        those tasks, declaring the tasks extension as their calls did."""
        wanted = notification_filter(
            tools_list_changed=tools_list_changed,
            prompts_list_changed=prompts_list_changed,
            resources_list_changed=resources_list_changed,
            resources=resources,
            task_ids=task_ids,
        )
        return Subscription(self, wanted)

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

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: JSONDict | None = None,
        *,
        task: Literal[False] = False,
        **options: Any,
    ) -> JSONDict: ...
    @overload
    async def call_tool(
        self, name: str, arguments: JSONDict | None = None, *, task: Literal[True], **options: Any
    ) -> TaskHandle: ...
    async def call_tool(
        self, name: str, arguments: JSONDict | None = None, *, task: bool = False, **options: Any
    ) -> JSONDict | TaskHandle:
        """Call a tool; ``options`` are :meth:`request`'s. With ``task=True`` the server may
        run it as a task: a :class:`~mcpserve.TaskHandle` comes back instead of the result
        (:mod:`.tasks`), already finished when the server answers at once."""
        params: JSONDict = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if task:
            from .tasks import start  # loaded by the first call that takes a task

            return await start(self, params, options)
        return await self.request("tools/call", params, **options)

    async def list_resources(self) -> list[JSONDict]:
        return await self._list_all("resources/list", "resources")

    async def list_resource_templates(self) -> list[JSONDict]:
        return await self._list_all("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str, **options: Any) -> JSONDict:
        return await self.request("resources/read", {"uri": uri}, **options)

    async def list_skills(self) -> list[JSONDict]:
        """Every skill entry the server lists (``skills/list``); no file is read."""
        from .skills import list_skills

        return await list_skills(self)

    async def load_skill(self, entry: JSONDict) -> LoadedSkill:
        """Read a listed skill's ``SKILL.md`` and verify it against ``entry`` (size, digest,
        frontmatter); raises :class:`~mcpserve.client.skills.SkillVerificationError`."""
        from .skills import load_skill

        return await load_skill(self, entry)

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


def _http_connection(url: str, **options: Any) -> Connection:
    with needs_extra("A Client over HTTP"):  # httpx2 is not a dependency of the server side
        from .http import HTTPConnection
    return HTTPConnection(url, **options)
