"""The key-value store in Redis, so that every instance of a server, on every machine,
shares its records.

Each record is one Redis string, ``mcpserve:{<namespace>}:kv:<key>``, whose value is the
record's bytes as given and whose expiry is the record's life in milliseconds (``PX``, at
least 1), so Redis forgets an expired record by itself and nothing needs sweeping. A
record put without a life is a plain ``SET``, which also drops any expiry the key had. The
namespace is the server's name: tasks and shared sessions live beside these keys under the
same ``mcpserve:{<namespace>}:`` (on Redis Cluster, one hash slot), and stores of two
namespaces never see each other's keys.

Every operation is one atomic step on the server, so instances racing on one key agree:

* ``get_many`` is ``MGET``: one round trip for several records;
* ``put`` is ``SET PX``, ``add`` is ``SET NX PX`` (set only when absent: Redis has
  already dropped an expired key, so an expired record counts as absent);
* ``take`` is ``GETDEL`` (Redis 6.2 and later): of any number of concurrent takes, one
  gets the value;
* ``incr`` is one script that creates the counter with its expiry (``SET NX PX``) or
  else ``INCR``s it, which keeps the expiry it has: a counter never exists without one,
  as it could if ``INCR`` and ``PEXPIRE`` were sent apart and a crash fell between them;
* ``take_token`` is one script that reads the bucket, refills it by the time passed on
  Redis's own clock (``TIME``: every instance reads the same one), takes a token when there
  is one and writes the bucket back, living until it would be full again.

A Redis error raises :class:`StoreUnavailable` (``link.py`` logs it once per outage, and
again when Redis answers); redis-py reconnects by itself.
"""

from __future__ import annotations

import logging
import math
from typing import Any
from urllib.parse import urlsplit

from ..keyvalue_rules import (
    StoreUnavailable,
    check_bucket,
    check_life,
    check_ttl,
    check_value,
    not_a_bucket,
    not_a_counter,
)
from .bus import redact
from .link import RedisLink

logger = logging.getLogger("mcpserve.keyvalue")

# A new counter at 1 with its expiry; else the old one plus one (INCR keeps the expiry);
# false when the key holds something INCR refuses (not an integer, or out of range).
_INCR = """
if redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX') then return 1 end
local count = redis.pcall('INCR', KEYS[1])
if type(count) == 'table' then return false end
return count
"""

# ARGV: rate (tokens a second), burst. The bucket is "<tokens> <seconds>" (keyvalue_rules);
# the answer is the seconds to wait as a string ("0": a token was taken), since Redis
# would cut a Lua number to an integer; false when the key holds no bucket.
_TAKE_TOKEN = """
local function finite(x) return x and x == x and x ~= math.huge and x ~= -math.huge end
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local tokens = burst
local held = redis.call('GET', KEYS[1])
if held then
  local left, counted = string.match(held, '^(%S+) (%S+)$')
  left, counted = tonumber(left), tonumber(counted)
  if not (finite(left) and finite(counted)) then return false end
  tokens = math.min(burst, left + math.max(0, now - counted) * rate)
end
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
local life = math.max(1, math.ceil((burst - tokens) / rate * 1000))
redis.call('SET', KEYS[1], string.format('%.17g %.17g', tokens, now), 'PX', life)
return string.format('%.17g', wait)
"""


class RedisKeyValue:
    """Records in the Redis at ``url`` (``redis://host:port/db``, ``rediss://`` or
    ``unix://``), shared by every store of the same ``namespace``."""

    def __init__(self, url: str, *, namespace: str) -> None:
        self.url = url
        self.namespace = namespace
        self._prefix = f"mcpserve:{{{namespace}}}:kv:"
        self._link = RedisLink(
            url,
            logger=logger,
            name="Key-value store",
            consequence="its records cannot be read or written until it is back",
            error=StoreUnavailable,
        )
        self._incr: Any = None
        self._take_token: Any = None
        _check_database(url)
        try:
            self._client()  # redis-py reads the URL here (it connects on first use)
        except ValueError as exc:
            raise ValueError(
                f"Malformed Redis URL {redact(url)!r} ({exc}): use redis://host:port/db"
            ) from None

    @property
    def available(self) -> bool:
        """False from a failure until Redis answers again."""
        return self._link.available

    def _client(self) -> Any:
        if not self._link.connected:  # first use, or after aclose
            self._incr = self._link.client().register_script(_INCR)
            self._take_token = self._link.client().register_script(_TAKE_TOKEN)
        return self._link.client()

    def _key(self, key: str) -> str:
        return self._prefix + key

    async def get(self, key: str) -> bytes | None:
        value: bytes | None = await self._link.run(
            "read a record", self._client().get(self._key(key))
        )
        return value

    async def get_many(self, keys: list[str]) -> list[bytes | None]:
        if not keys:
            return []
        values: list[bytes | None] = await self._link.run(
            "read records", self._client().mget([self._key(key) for key in keys])
        )
        return values

    async def put(self, key: str, value: bytes, ttl: float | None) -> None:
        check_value(value)
        check_life(ttl)
        life = None if ttl is None else _milliseconds(ttl)
        await self._link.run("write a record", self._client().set(self._key(key), value, px=life))

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        check_value(value)
        check_ttl(ttl)
        written = await self._link.run(
            "add a record",
            self._client().set(self._key(key), value, px=_milliseconds(ttl), nx=True),
        )
        return bool(written)

    async def take(self, key: str) -> bytes | None:
        value: bytes | None = await self._link.run(
            "take a record", self._client().getdel(self._key(key))
        )
        return value

    async def delete(self, key: str) -> None:
        await self._link.run("delete a record", self._client().delete(self._key(key)))

    async def incr(self, key: str, ttl: float) -> int:
        check_ttl(ttl)
        self._client()
        count = await self._link.run(
            "count", self._incr(keys=[self._key(key)], args=[_milliseconds(ttl)])
        )
        if count is None:
            raise not_a_counter(key)
        return int(count)

    async def take_token(self, key: str, rate: float, burst: float) -> float:
        check_bucket(rate, burst)
        self._client()
        wait = await self._link.run(
            "take a token", self._take_token(keys=[self._key(key)], args=[repr(rate), repr(burst)])
        )
        if wait is None:
            raise not_a_bucket(key)
        return float(wait)

    async def aclose(self) -> None:
        await self._link.close()


def _check_database(url: str) -> None:
    """Refuse a ``redis://`` path that names no database: redis-py would quietly use 0."""
    if not url.startswith(("redis://", "rediss://")):
        return  # unix:// names its database in the query (?db=1)
    path = urlsplit(url).path.strip("/")
    if path and not (path.isascii() and path.isdigit()):
        raise ValueError(
            f"Malformed Redis URL {redact(url)!r}: the path names a database by its number "
            "(redis://host:port/0)"
        )


def _milliseconds(ttl: float) -> int:
    """A life in seconds as Redis's ``PX``: whole milliseconds, rounded up, at least 1."""
    return max(1, math.ceil(ttl * 1000))
