"""The proxy's one connection to the server behind it: opened once, shared by every call.

An :class:`Upstream` wraps one :class:`~mcpserve.Client`, whatever the target: a URL
(Streamable HTTP), a command (stdio) or a :class:`~mcpserve.Server` in this process. The
era is settled when it connects (``server/discover``, else ``initialize``), as any client
settles it, unless ``protocol_version`` pins one. Every forwarded request goes out on that
one connection, concurrently: no client and no handshake per call.

The same target also gives each handshake-era client of the proxy a session of its own
when the upstream serves that era (:meth:`Upstream.open_session`, used by :mod:`.sessions`).

What the client asks of the proxy's own caller goes through two callbacks the proxy sets:
``on_question(method, params)`` answers the handshake era's server-to-client requests, and
``on_notification(message)`` hears every notification. The connection is opened in a
context of its own, so the tasks it starts (a stdio reader, a standalone stream) belong to
no downstream request.

When the link breaks (the process exited, the HTTP server went away, a handshake-era
session expired), the request that found out fails with :class:`UpstreamUnavailable`, a
clear -32603 naming the upstream, and the next request connects again; ``on_connected``
runs after every connection, so the proxy reloads its lists. A stdio upstream found dead
before anything was sent to it is reconnected first, so that request is served.

The client's own token never leaves the proxy (``docs/decisions.md``, "No token
passthrough"): the upstream sees only what is configured here, ``headers`` and an httpx2
``auth`` (or an ``http_client`` of your own), and for stdio ``env``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import shlex
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._types import JSONDict, JSONValue
from .._version import __version__
from ..client.connections import next_id
from ..extensions.tasks.records import TASKS_EXTENSION
from ..protocol import constants as c
from ..protocol.errors import MCPError
from .wire import UpstreamError

if TYPE_CHECKING:  # loaded only for an upstream that needs them (_new_client, _http)
    import httpx2

    from ..client.client import Client

logger = logging.getLogger("mcpserve.proxy")
T = TypeVar("T")

#: What the proxy's client declares to a handshake-era upstream: every kind of question it
#: can relay. Whether this request's client can answer is checked when one is asked.
RELAYED_CAPABILITIES: JSONDict = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {"tools": {}},
    "roots": {},
}
CLIENT_INFO: JSONDict = {"name": "mcpserve-proxy", "version": __version__}
#: The level a handshake-era upstream is asked to log at: every message comes to the proxy,
#: which passes each on to the clients that asked for its level.
SESSION_LOG_LEVEL = "debug"

UpstreamTarget = Any  # str (a URL or a command) | Sequence[str] (a command) | Server
QuestionHandler = Callable[[str, JSONDict], Awaitable[JSONDict]]
NotificationHandler = Callable[[JSONDict], Awaitable[None]]
ProgressHandler = Callable[[Any, Any, Any], Awaitable[None]]


class UpstreamUnavailable(UpstreamError):
    """The upstream server cannot be reached (-32603, naming it)."""


def is_url(target: object) -> bool:
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def describe(target: UpstreamTarget) -> str:
    """How messages name the upstream: its URL, its command, or its server's name."""
    if isinstance(target, str):
        return target
    if isinstance(target, Sequence):
        return shlex.join(str(part) for part in target)
    return repr(getattr(target, "name", target))


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text[:300]


async def _isolated(work: Coroutine[Any, Any, T]) -> T:
    """``work`` in a task with an empty context: nothing it starts inherits the caller's."""
    return await asyncio.create_task(work, context=contextvars.Context())


async def _opened(client: Client) -> JSONDict | None:
    """Connect ``client``; the ``server/discover`` result, when it had to be asked."""
    await client.__aenter__()
    if client.legacy or client.server_info or client.server_capabilities:
        return None  # the era negotiation learnt what it offers
    # Not negotiated (in memory, the lean link, a pinned version): still to learn.
    try:
        return await client.discover()
    except BaseException:
        await client.__aexit__(None, None, None)
        raise


def upstream_error(error: JSONValue) -> MCPError:
    """An upstream's JSON-RPC error object as :class:`MCPError`, as the upstream sent it."""
    if not isinstance(error, dict):
        error = {"message": "The upstream answered with an invalid error"}
    code = error.get("code")
    return MCPError(
        str(error.get("message", ""))[:1000],
        data=error.get("data"),
        code=code if type(code) is int else c.INTERNAL_ERROR,
    )


def refused_by_status(exc: BaseException) -> bool:
    """Whether an HTTP server answered with a 4xx that carried no JSON-RPC: a refusal of
    what was asked (a server without sessions refusing ``initialize``), not an outage."""
    status = getattr(exc, "status", None)
    return isinstance(status, int) and 400 <= status < 500


class Upstream:
    """One upstream server, and the client connected to it."""

    def __init__(
        self,
        target: UpstreamTarget,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx2.Auth | None = None,
        http_client: httpx2.AsyncClient | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        protocol_version: str | None = None,
        connect_timeout: float = 30.0,
        fast_http: bool = True,
        max_sessions: int = 32,
    ) -> None:
        if isinstance(target, str) and not is_url(target):
            target = shlex.split(target)
            if not target:
                raise ValueError("An upstream command cannot be empty")
        self.target = target
        #: The upstream as error messages and logs name it.
        self.label = describe(target)
        self.headers = dict(headers or {})
        self.auth = auth
        self.env = env
        self.cwd = cwd
        self.protocol_version = protocol_version
        self.connect_timeout = connect_timeout
        #: Reach a 2026-07-28 URL over the lean link (:mod:`.link`) rather than httpx2.
        self.fast_http = fast_http
        if max_sessions < 0:
            raise ValueError("max_sessions cannot be negative")
        #: Handshake-era sessions opened for the proxy's handshake-era clients, at most
        #: (:mod:`.sessions`; over stdio each is a process); 0: none.
        self.max_sessions = max_sessions
        self._http_client = http_client
        self._owned_http: httpx2.AsyncClient | None = None
        self.on_question: QuestionHandler | None = None
        self.on_notification: NotificationHandler | None = None
        self.on_connected: Callable[[], Awaitable[None]] | None = None
        self.client: Client | None = None
        #: What the upstream said about itself when it last connected.
        self.legacy = False
        self.version = ""
        self.info: JSONDict = {}
        self.capabilities: JSONDict = {}
        self.instructions: str | None = None
        #: How many times a connection was made (1 while the first one lasts).
        self.connects = 0
        self._lock = asyncio.Lock()
        self._closing: set[asyncio.Task[None]] = set()

    # -- connecting ---------------------------------------------------------------------------

    def _lean(self) -> bool:
        """Whether to try the lean link first: a URL, reached with nothing of httpx2's own
        (no client, no auth given, no HTTP proxy from the environment for it), not pinned
        to the handshake era."""
        if not (self.fast_http and is_url(self.target)) or self._http_client or self.auth:
            return False
        if self.protocol_version is not None and self.protocol_version not in c.MODERN_VERSIONS:
            return False
        try:
            import httptools  # noqa: F401  (the http extra's C parser)
        except ImportError:
            return False
        import urllib.request
        from urllib.parse import urlsplit

        # httpx2 goes through an HTTP proxy the environment names for the URL; the link cannot.
        parts = urlsplit(self.target)
        proxied = urllib.request.getproxies().get(parts.scheme)
        return not proxied or bool(urllib.request.proxy_bypass(parts.hostname or ""))

    def _new_client(self, *, lean: bool = False, **overrides: Any) -> Client:
        from ..client.client import Client
        from ..client.connections import is_in_process_server

        options: dict[str, Any] = {  # keyword arguments of Client
            "capabilities": RELAYED_CAPABILITIES,
            "client_info": CLIENT_INFO,
            "protocol_version": self.protocol_version,
            "log_level": SESSION_LOG_LEVEL,
            "on_input": self._question,
            "on_notification": self._notification,
            **overrides,
        }
        target = self.target
        if is_in_process_server(target):
            return Client(target, **options)
        if lean:
            from .link import LeanHTTPConnection

            link = LeanHTTPConnection(
                target, headers=self.headers, connect_timeout=self.connect_timeout
            )
            return Client(link, **options)
        if is_url(target):
            return Client.http(target, headers=self.headers, http_client=self._http(), **options)
        return Client.stdio(list(target), env=self.env, cwd=self.cwd, negotiate=True, **options)

    def _http(self) -> httpx2.AsyncClient | None:
        """The httpx2 client every connection to a URL shares: yours, or one made for
        ``auth`` (None: the connection makes its own)."""
        if self._http_client is not None or self.auth is None:
            return self._http_client
        if self._owned_http is None:
            import httpx2

            timeout = httpx2.Timeout(30.0, connect=self.connect_timeout, read=None, pool=None)
            self._owned_http = httpx2.AsyncClient(auth=self.auth, timeout=timeout)
        return self._owned_http

    async def connect(self) -> Client:
        """The connected client: this one, or a new one if there is none (raises
        :class:`UpstreamUnavailable`)."""
        client = self.client
        if client is not None and not getattr(client.connection, "closed", False):
            return client  # every request asks: no lock when there is nothing to do
        async with self._lock:
            client = self.client
            if client is not None and not getattr(client.connection, "closed", False):
                return client
            if client is not None:  # a stdio server that exited: nothing was sent to it yet
                self._discard(client)
            try:
                async with asyncio.timeout(self.connect_timeout):
                    client = await _isolated(self._open())
            except (ConnectionError, OSError, TimeoutError, MCPError) as exc:
                await self._close_owned_http()
                raise UpstreamUnavailable(
                    f"Could not connect to the upstream server {self.label}: {_reason(exc)}"
                ) from None
            self.client = client
            self.connects += 1
            self.legacy = client.legacy
            self.version = client.protocol_version
            self.info = dict(client.server_info)
            self.capabilities = dict(client.server_capabilities)
            self.instructions = client.instructions
            logger.info("Connected to the upstream server %s (%s)", self.label, self.version)
        if self.on_connected is not None:
            await self.on_connected()
        return client

    async def _open(self) -> Client:
        """A connected client: on the lean link when the upstream turns out to speak
        2026-07-28 there, else on the ordinary connection, which settles the era."""
        if self._lean():
            lean = self._new_client(lean=True)
            try:
                discovered = await _opened(lean) or {}
            except ConnectionError as exc:
                if not isinstance(getattr(exc, "status", None), int):
                    raise  # unreachable: the ordinary connection would not fare better
            except MCPError:
                pass  # not a 2026-07-28 server: the ordinary connection settles the era
            else:
                versions = discovered.get("supportedVersions")
                if isinstance(versions, list) and lean.protocol_version in versions:
                    return lean
                await lean.__aexit__(None, None, None)
        client = self._new_client()
        await _opened(client)
        return client

    @property
    def opens_sessions(self) -> bool:
        """Whether handshake-era sessions of their own may be opened for handshake-era
        clients: the upstream is a URL or a command, its era was not pinned, and
        ``max_sessions`` allows some."""
        from ..client.connections import is_in_process_server

        return (
            self.protocol_version is None
            and self.max_sessions > 0
            and not is_in_process_server(self.target)
        )

    async def open_session(
        self,
        version: str,
        capabilities: JSONDict,
        on_input: QuestionHandler,
        on_notification: NotificationHandler,
    ) -> Client:
        """A new handshake-era session with the upstream (over stdio, a new process), at
        ``version``, declaring ``capabilities``; its questions go to ``on_input`` and its
        notifications to ``on_notification``. Raises :class:`MCPError` when the upstream
        refuses the handshake, :class:`UpstreamUnavailable` when it cannot be reached."""
        client = self._new_client(
            protocol_version=version,
            capabilities=capabilities,
            on_input=on_input,
            on_notification=on_notification,
        )
        try:
            async with asyncio.timeout(self.connect_timeout):
                await _isolated(client.__aenter__())
        except (ConnectionError, OSError, TimeoutError) as exc:
            if refused_by_status(exc):
                raise MCPError(_reason(exc)) from None
            raise UpstreamUnavailable(
                f"Could not open a session with the upstream server {self.label}: {_reason(exc)}"
            ) from None
        return client

    async def close(self) -> None:
        """Close the connection (and wait for connections being closed)."""
        async with self._lock:
            client, self.client = self.client, None
            if client is not None:
                self._discard(client)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        await self._close_owned_http()

    async def _close_owned_http(self) -> None:
        owned, self._owned_http = self._owned_http, None
        if owned is not None:
            await owned.aclose()

    def _discard(self, client: Client) -> None:
        """Close ``client`` on the side: its requests in flight fail, nobody waits for it."""

        async def close() -> None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    await client.__aexit__(None, None, None)

        task = asyncio.create_task(close(), context=contextvars.Context())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def broken(self, client: Client, exc: BaseException) -> UpstreamUnavailable:
        """Forget ``client`` after its link failed with ``exc``; the error to answer with."""
        if self.client is client:
            self.client = None
            self._discard(client)
            logger.warning("Lost the upstream server %s: %s", self.label, _reason(exc))
        return UpstreamUnavailable(
            f"The upstream server {self.label} is unreachable "
            f"({_reason(exc)}); the proxy connects again on the next "
            "request"
        )

    # -- using it -----------------------------------------------------------------------------

    async def request(
        self, method: str, params: JSONDict, *, on_progress: ProgressHandler | None = None
    ) -> Any:
        """Send one request; its raw result. Without ``_meta`` in ``params``, the proxy's
        own goes (its name and the capabilities it relays). ``on_progress(progress, total,
        message)`` hears its progress (under a token of the proxy's own). An upstream
        JSON-RPC error raises :class:`MCPError` as the upstream sent it; a broken link,
        :class:`UpstreamUnavailable`.

        Every forwarded call comes here, so it goes to the client's connection directly:
        the era is settled, there is no version to retry with and no timeout to keep (the
        downstream request's own cancellation ends it)."""
        client = self.client
        if client is None or getattr(client.connection, "closed", False):
            client = await self.connect()
        if "_meta" not in params and (meta := client.meta()):
            params = {**params, "_meta": meta}
        token = None
        if on_progress is not None:
            token = client.router.track_progress(on_progress, None)
            params = {**params, "_meta": {**params.get("_meta", {}), "progressToken": token}}
        message = {"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params}
        try:
            response = await client.connection.request(message)
        except (ConnectionError, OSError) as exc:
            raise self.broken(client, exc) from None
        finally:
            if token is not None:
                client.router.forget_progress(token)
        if response.get("error") is not None:
            raise upstream_error(response["error"])
        return response.get("result")

    @property
    def offers_tasks(self) -> bool:
        """Whether the upstream speaks 2026-07-28 and declares the tasks extension."""
        extensions = self.capabilities.get("extensions")
        return not self.legacy and isinstance(extensions, dict) and TASKS_EXTENSION in extensions

    @property
    def connected(self) -> bool:
        """Whether a client is connected (as far as can be told without asking)."""
        client = self.client
        return client is not None and not getattr(client.connection, "closed", False)

    async def _question(self, method: str, params: JSONDict) -> JSONDict:
        if self.on_question is None:
            raise MCPError(f"This client does not answer {method}", code=-32601)
        return await self.on_question(method, params)

    async def _notification(self, message: JSONDict) -> None:
        if self.on_notification is not None:
            await self.on_notification(message)
