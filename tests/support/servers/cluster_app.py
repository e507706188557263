"""One instance of the cluster the cluster tests run (``tests/backends/test_cluster.py``).

``python tests/support/servers/cluster_app.py --port N`` serves HTTP on 127.0.0.1. Three of these
share one Redis through ``MCPSERVE_REDIS_URL`` (the one setting for the subscription bus and
the handshake-era sessions) and one ``MCPSERVE_STATE_KEYS``, and a load balancer spreads
requests over them with no stickiness. Every tool answers with the process id
(``os.getpid()``), so a test can see which instance served each call.

With ``MCPSERVE_TEST_CLUSTER_LOG`` set, every HTTP request is appended to that file (shared
by all instances) as one JSON line when its answer starts: the pid, the HTTP method and
status, the session id and what the body was (a request's method, or an answer to one of
our requests). That is how a test learns where a request it did not route itself landed:
the client's answer to an elicitation, ``logging/setLevel``, or a session's GET stream.

With ``MCPSERVE_TEST_CLUSTER_MIDDLEWARE`` set, the instances also run ``mcpserve.middleware``
on the shared Redis (``tests/middleware/test_across_instances.py``): a ``RateLimit`` of 3
requests, then one every 10 s, per ``X-Test-Caller`` header (requests without one are not
limited), a ``ResponseCache``, a read-only tool ``cached_pid`` and a resource
``cached://doc`` that may be kept for a minute.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

from pydantic import BaseModel

from mcpserve import Context, Server

NAME = "cluster"
VERSION = "1.0.0"
WATCHED = "watched://doc"

server = Server(NAME, version=VERSION, client_logging=True)


class Sum(BaseModel):
    total: int


class Name(BaseModel):
    name: str


@server.tool
def add(a: int, b: int) -> Sum:
    """Add two integers (structured result)."""
    return Sum(total=a + b)


@server.tool
def whoami() -> str:
    """This process's id: which instance served the call."""
    return str(os.getpid())


@server.tool
async def ask_name(ctx: Context) -> str:
    """Ask the user's name; the answer, and the pid of every attempt that ran.

    For a 2026-07-28 client each attempt is one round: the pids ride in ``ctx.state`` (the
    sealed ``requestState``), so the final answer shows whether the retry ran elsewhere.
    A handshake-era client answers a real request, so there is one attempt.
    """
    pids = [*ctx.state.get("pids", []), os.getpid()]
    ctx.state["pids"] = pids
    answer = await ctx.elicit("What is your name?", Name)
    greeting = f"Hello, {answer.data.name}!" if answer.accepted else f"No name ({answer.action})"
    return json.dumps({"greeting": greeting, "pids": pids})


@server.tool
async def chatty(ctx: Context) -> str:
    """Log at four levels; the levels that reached the client, and this pid."""
    sent = [
        level
        for level in ("debug", "info", "warning", "error")
        if await ctx.log(level, f"{level} message", logger="chatty")
    ]
    return json.dumps({"pid": os.getpid(), "sent": sent})


@server.tool
async def touch(uri: str) -> str:
    """Tell every subscriber, on every instance, that ``uri`` changed; answers the pid."""
    await server.notify_resource_updated(uri)
    return str(os.getpid())


@server.tool
def bus_status() -> dict[str, Any]:
    """The bus type and whether it is connected to Redis."""
    bus = server.subscriptions.bus
    connected = getattr(bus, "connected", None)
    return {
        "bus": type(bus).__name__,
        "connected": bool(connected is not None and connected.is_set()),
        "pid": os.getpid(),
    }


@server.resource(WATCHED, mime_type="text/plain")
def watched() -> str:
    """A document that changes."""
    return "watched doc"


@server.resource("watched://other", mime_type="text/plain")
def other() -> str:
    """Another document, which nobody subscribes to."""
    return "other doc"


if os.environ.get("MCPSERVE_TEST_CLUSTER_MIDDLEWARE"):
    import uuid

    from mcpserve import CachePolicy
    from mcpserve.middleware import RateLimit, ResponseCache

    def caller(ctx: Context) -> str:
        given = ctx.http.headers.get("x-test-caller") if ctx.http is not None else None
        return given or f"unlimited-{uuid.uuid4()}"

    server.middleware(RateLimit(rate=0.1, burst=3, key=caller))
    server.middleware(ResponseCache(ttl=60))
    reads = {"count": 0}

    @server.tool(annotations={"readOnlyHint": True})
    def cached_pid(key: str) -> str:
        """The pid of the instance that computed this answer."""
        return f"{key} {os.getpid()}"

    @server.resource("cached://doc", mime_type="text/plain", cache=CachePolicy(60_000))
    def cached_doc() -> str:
        """Which instance read it, and how many times it did."""
        reads["count"] += 1
        return f"{os.getpid()} #{reads['count']}"


class RequestLog:
    """ASGI middleware: one JSON line per HTTP request in a file shared by the instances.

    The body is read whole first (requests here are small) and handed on unchanged; the
    line is written when the answer starts, with one ``write`` on an ``O_APPEND`` file, so
    lines of several processes never interleave.
    """

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                break
        delivered = False

        async def replay() -> Any:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        record = {"pid": os.getpid(), "http": scope["method"], **_describe(bytes(body))}
        for header in ("mcp-session-id", "last-event-id", "mcp-protocol-version"):
            if header in headers:
                record[header] = headers[header]

        async def logged(message: Any) -> None:
            if message["type"] == "http.response.start":
                record["status"] = message["status"]
                os.write(self.fd, (json.dumps(record) + "\n").encode())
            await send(message)

        await self.app(scope, replay, logged)


def _describe(body: bytes) -> dict[str, Any]:
    """What a POST carried: a request or notification's method, or an answer's id."""
    try:
        message = json.loads(body) if body else None
    except ValueError:
        return {"body": "unparsable"}
    if not isinstance(message, dict):
        return {}
    if "method" in message:
        described = {"method": message["method"]}
        if "id" in message:
            described["id"] = message["id"]
        return described
    if "result" in message or "error" in message:
        return {"answer": message.get("id")}
    return {}


# ctx.store: a value kept by one instance, read by another
@server.tool
async def keep(ctx: Context, key: str, value: Any) -> str:
    """Keep ``value`` for the caller; this pid."""
    await ctx.store.set(key, value)
    return str(os.getpid())


@server.tool
async def kept(ctx: Context, key: str) -> dict[str, Any]:
    """The caller's value at ``key`` and this pid."""
    return {"value": await ctx.store.get(key), "pid": os.getpid()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    log_path = os.environ.get("MCPSERVE_TEST_CLUSTER_LOG")
    if not log_path:
        server.run("http", host="127.0.0.1", port=args.port, log_level="warning")
        return
    # As ``server.run("http")`` does, with the request log around the app: the same drain on
    # SIGTERM (MCPSERVE_DRAIN_SECONDS; the tests' default is 0) and the same grace.
    import uvicorn

    from mcpserve.transports.drain import DEFAULT_HTTP_SHUTDOWN_GRACE, drain_on_exit_signals
    from mcpserve.transports.serve import seconds_from_environment

    drain = seconds_from_environment("MCPSERVE_DRAIN_SECONDS") or 0.0

    def load() -> Any:  # uvicorn calls it once it handles the signals itself
        app = server.http_app("/mcp", bind_host="127.0.0.1")
        drain_on_exit_signals(server, app.state, drain)  # type: ignore[attr-defined]
        return RequestLog(app, log_path)

    config = uvicorn.Config(
        load,
        factory=True,
        host="127.0.0.1",
        port=args.port,
        lifespan="on",
        log_level="warning",
        timeout_graceful_shutdown=int(DEFAULT_HTTP_SHUTDOWN_GRACE),
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
