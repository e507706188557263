"""``/healthz`` and ``/readyz``: what a load balancer or an orchestrator asks an instance.

Two questions, two paths, both answered before the endpoint's authentication (a probe
carries no token) and after its ``Host`` check (a probe is a request like any other, and
DNS rebinding must not reach it either):

* ``/healthz`` (liveness): the process answers HTTP. It reads nothing and touches no Redis,
  so a Redis outage never makes an orchestrator restart instances that would come back
  just as unable to reach it.
* ``/readyz`` (readiness): send this instance traffic. Three checks, in this order, the
  first that fails answers 503 and is named in the body:

  ==========  ================================================================
  lifespan    the server's lifespan has completed its start
  draining    no SIGTERM has arrived (``drain.py``: the instance is leaving)
  redis       where the server shares a Redis, it answered a PING within 1 s
  ==========  ================================================================

The body is small JSON (``{"ready": false, "failed": "redis"}``), never the Redis URL (it
may carry a password) nor an exception's text. Both paths answer GET and HEAD, 405 otherwise.

A probe every second costs no new connection: the PING goes over one client made at the
first probe that needs it and kept, whose pool keeps its connection between probes.
:class:`ServingState` is what the app, the readiness check and the drain share.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._types import JSONDict, Send
from .origin import OriginPolicy
from .responses import send_json, send_plain

logger = logging.getLogger("mcpserve.http")

#: The longest a readiness probe waits for Redis to answer its PING.
REDIS_PING_TIMEOUT = 1.0
_NO_STORE = [(b"cache-control", b"no-store")]


@dataclass
class ServingState:
    """Where one HTTP app is in its life: what ``/readyz`` reports and the drain sets."""

    #: The server's lifespan has started (the ASGI lifespan, or the first request's late start).
    started: bool = False
    #: A SIGTERM arrived: the instance answers, but asks the balancer to send no more.
    draining: bool = False
    #: The drain window is over and shutdown began: streams end with a ``retry`` hint.
    stopping: bool = False
    #: The reconnect delay, in milliseconds, that ending streams tell clients.
    retry_ms: int = 1000


class HealthRoutes:
    """The two probe paths of one app (either may be None: not served)."""

    def __init__(
        self,
        state: ServingState,
        origin_policy: OriginPolicy,
        *,
        health_path: str | None,
        ready_path: str | None,
        redis_url: str | None,
        running: Callable[[], bool] = lambda: False,
    ) -> None:
        self.state = state
        self.origin_policy = origin_policy
        self.redis_url = redis_url
        #: Whether someone else entered the server's lifespan (a host running it itself).
        self._running = running
        self._redis: Any = None
        self.paths: dict[str, bool] = {}  # path -> is the readiness probe
        if health_path is not None:
            self.paths["/" + health_path.strip("/")] = False
        if ready_path is not None:
            self.paths["/" + ready_path.strip("/")] = True

    async def answer(self, path: str, method: str, host: str | None, send: Send) -> None:
        """Answer the probe at ``path`` (one of :attr:`paths`)."""
        problem = self.origin_policy.check_host(host)
        if problem is not None:
            await send_plain(send, 421, f"Misdirected: {problem}".encode())
            return
        if method not in ("GET", "HEAD"):
            await send_plain(send, 405, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        if not self.paths[path]:
            await _send(send, method, 200, {"status": "ok"})
            return
        failed = await self.failed_check()
        if failed is None:
            await _send(send, method, 200, {"ready": True})
        else:
            await _send(send, method, 503, {"ready": False, "failed": failed})

    async def failed_check(self) -> str | None:
        """The first readiness check that fails, or None when the instance is ready."""
        if not (self.state.started or self._running()):
            return "lifespan"
        if self.state.draining:
            return "draining"
        if self.redis_url is not None and not await self._redis_answers():
            return "redis"
        return None

    async def _redis_answers(self) -> bool:
        if self._redis is None:
            import redis.asyncio as redis

            # No retry and short timeouts: a probe wants the answer of now, within its
            # second; the pool keeps the connection from one probe to the next.
            self._redis = redis.Redis.from_url(
                self.redis_url or "",
                socket_connect_timeout=REDIS_PING_TIMEOUT,
                socket_timeout=REDIS_PING_TIMEOUT,
                retry_on_timeout=False,
            )
        try:
            async with asyncio.timeout(REDIS_PING_TIMEOUT):
                await self._redis.ping()
        except Exception as exc:  # redis-py's ConnectionError, TimeoutError, an auth error...
            logger.debug("Readiness: Redis did not answer a PING (%s)", type(exc).__name__)
            return False
        return True

    async def aclose(self) -> None:
        if self._redis is not None:
            client, self._redis = self._redis, None
            await client.aclose()


async def _send(send: Send, method: str, status: int, payload: JSONDict) -> None:
    if method == "GET":
        await send_json(send, status, payload, _NO_STORE)
        return
    # HEAD: the GET's status and headers, no body (its length is the GET's, as RFC 9110 allows
    # leaving out; a probe reads the status alone).
    headers = [(b"content-type", b"application/json"), *_NO_STORE]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
