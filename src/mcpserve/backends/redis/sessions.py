"""Handshake-era sessions kept in Redis, so that any process on any machine serves any of
their requests.

A 2025-era client keeps a session: what ``initialize`` agreed (version, client
capabilities and info), then a log level and resource subscriptions that its later
requests change. Behind a load balancer its consecutive requests land on different
processes, so :class:`SharedSessions` keeps those facts in Redis, where every process finds
them:

* ``<ns>:session:<id>``, a hash: ``agreed`` (JSON) and ``level``;
* ``<ns>:session:<id>:subs``, a set: the subscribed URIs;
* ``<ns>:sessions``, a sorted set of live ids scored by when each expires, which bounds how
  many sessions exist at once across all processes.

Every key expires after ``idle_seconds`` without use; each request renews it (one round
trip: a script reads the facts and renews the lease), and :meth:`SharedSessions.keep_alive` renews
the sessions a process is still busy with. A change is written as a change (``HSET``,
``SADD``, ``SREM``), so two processes changing one session at once lose nothing.

What lives only while it runs (the request tasks, SSE streams and questions to the client
of a session) stays in the process that holds it; ``transports/sessions/directory.py``
routes what reaches another process over the subscription bus. A Redis error raises
:class:`StoreUnavailable`, which the caller answers as a clear JSON-RPC error; redis-py
reconnects by itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from typing import Any

import orjson

from ...protocol.handshake import Session
from .link import RedisLink

logger = logging.getLogger("mcpserve.http")

# Removes expired ids, then adds the new session if there is room (1) or refuses it (0).
_CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[5])
redis.call('HSET', KEYS[2], 'agreed', ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""

# The session's facts, its lease renewed; nil when the session does not exist.
_LOAD = """
local agreed = redis.call('HGET', KEYS[2], 'agreed')
if not agreed then return false end
redis.call('EXPIRE', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[3])
return {agreed, redis.call('HGET', KEYS[2], 'level') or '', redis.call('SMEMBERS', KEYS[3])}
"""


class StoreUnavailable(Exception):
    """The shared Redis did not answer; the request that needs it cannot be served now."""


class SharedSessions:
    """The facts of every handshake-era session, in the Redis at ``url``."""

    def __init__(self, url: str, *, namespace: str, max_sessions: int, idle_seconds: float) -> None:
        self.url = url
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        # One hash slot for all keys ({...}), so the create script also runs on Redis Cluster.
        self._prefix = f"mcpserve:{{{namespace}}}:"
        self._index = self._prefix + "sessions"
        self._link = RedisLink(
            url,
            logger=logger,
            name="Shared sessions",
            consequence="handshake-era requests get errors until it is back",
            error=StoreUnavailable,
        )
        self._create: Any = None
        self._load: Any = None

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}session:{session_id}"

    @property
    def available(self) -> bool:
        return self._link.available

    def _client(self) -> Any:
        if not self._link.connected:
            client = self._link.client()
            self._create = client.register_script(_CREATE)
            self._load = client.register_script(_LOAD)
        return self._link.client()

    async def _run(self, what: str, operation: Any) -> Any:
        return await self._link.run(what, operation)

    async def create(self, session_id: str, session: Session) -> bool:
        """Record a new session; False when ``max_sessions`` are live already."""
        self._client()
        now = time.time()
        created = await self._run(
            "create a session",
            self._create(
                keys=[self._index, self._key(session_id)],
                args=[
                    now,
                    now + self.idle_seconds,
                    self.max_sessions,
                    self._ttl(),
                    session_id,
                    orjson.dumps(session.agreed()),
                ],
            ),
        )
        return bool(created)

    async def load(self, session_id: str) -> Session | None:
        """The session's current facts (renewing its lease), or None if it does not exist."""
        self._client()
        key = self._key(session_id)
        found = await self._run(
            "read a session",
            self._load(
                keys=[self._index, key, key + ":subs"],
                args=[self._ttl(), time.time() + self.idle_seconds, session_id],
            ),
        )
        if found is None:
            return None
        agreed, level, subscriptions = found
        session = Session.from_agreed(orjson.loads(agreed))
        session.log_level = level.decode() or None
        session.resource_subscriptions = {uri.decode() for uri in subscriptions}
        return session

    async def change(
        self,
        session_id: str,
        *,
        level: str | None,
        subscribed: Collection[str],
        unsubscribed: Collection[str],
    ) -> None:
        """Apply what one request changed: a new log level, URIs (un)subscribed."""
        key = self._key(session_id)
        pipe = self._client().pipeline(transaction=True)
        if level is not None:
            pipe.hset(key, "level", level)
        if subscribed:
            pipe.sadd(key + ":subs", *subscribed)
            pipe.expire(key + ":subs", self._ttl())
        if unsubscribed:
            pipe.srem(key + ":subs", *unsubscribed)
        await self._run("change a session", pipe.execute())

    async def delete(self, session_id: str) -> None:
        key = self._key(session_id)
        pipe = self._client().pipeline(transaction=True)
        pipe.delete(key, key + ":subs")
        pipe.zrem(self._index, session_id)
        await self._run("end a session", pipe.execute())

    async def keep_alive(self, session_ids: Collection[str]) -> None:
        """Renew the leases of sessions this process is busy with (a long request, an open
        stream), which no request renews meanwhile."""
        if not session_ids:
            return
        ttl = self._ttl()
        expires = time.time() + self.idle_seconds
        pipe = self._client().pipeline(transaction=False)
        for session_id in session_ids:
            key = self._key(session_id)
            pipe.expire(key, ttl)
            pipe.expire(key + ":subs", ttl)
            pipe.zadd(self._index, {session_id: expires}, xx=True)
        await self._run("renew sessions", pipe.execute())

    async def close(self) -> None:
        await self._link.close()

    def _ttl(self) -> int:
        return max(1, round(self.idle_seconds))
