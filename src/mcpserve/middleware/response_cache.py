"""``ResponseCache``: answers that do not change between two asks, kept for a while.

What is cached: the lists (``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list``), ``resources/read``, ``prompts/get``, and ``tools/call`` of a
tool annotated ``readOnlyHint: true``. A request is the same as another when its method and
its params other than ``_meta`` are the same (JSON with sorted keys); an interim answer
(``input_required``), a retry carrying input responses, an error and a tool's ``isError``
result are never kept.

Whose an entry is: the caller's own (its principal, else its client address), unless the
server's :class:`~mcpserve.CachePolicy` is public; then every caller shares it, and a result
that calls itself private (a list filtered by the caller's scopes, a resource with a policy
of its own) is not kept at all rather than shared.

How long: ``ttl`` seconds, or less when the result's ``ttlMs`` says so; ``ttlMs: 0`` (the
server's default policy) means not cached. A tool's result carries no ``ttlMs`` and lives
``ttl``.

Staleness: there is a generation per kind of list (``tools``, ``prompts``, ``resources``)
and one per resource URI, and every entry is kept with the generation it was made in. A
lookup reads the generation and the entry together (``get_many``: one round trip to Redis)
and takes the entry only if the two agree. A change this process publishes (a list
changed, ``notify_resource_updated(uri)``) writes a new, random generation for the kind or
the URI, so every instance sharing the store stops taking the old entries at once; nobody
deletes another instance's entries, which are overwritten or expire by themselves. A tools
list change also drops cached tool calls, and a prompts one cached prompts. A request
during which this process published a change waits, before its answer leaves, until the
new generation is written: once a client has the answer of the call that changed
something, no instance serves it the old one (``docs/decisions.md``, "Response
cache invalidation").
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os

from .._types import Event, Result
from ..backends.keyvalue import KeyValueStore
from ..backends.keyvalue_rules import StoreUnavailable
from ..protocol.jsonrpc import encode
from ..server.context.context import Context
from ..server.entries.cache import CachePolicy
from ..server.middleware import CallNext, MiddlewareHost
from . import facts
from .stores import MiddlewareStore, StoreOption

logger = logging.getLogger("mcpserve.middleware")

#: The cached methods and the kind whose change makes their entries stale (a read's own
#: generation is its URI's).
_KINDS = {
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
}
_READ = "resources/read"


class ResponseCache:
    """Keep lists, reads, prompts and read-only tools' results for up to ``ttl`` seconds."""

    def __init__(self, ttl: float = 60.0, *, store: StoreOption = None) -> None:
        if type(ttl) not in (int, float) or not 0 < ttl < 10**9:
            raise ValueError(f"ttl must be a positive number of seconds, not {ttl!r}")
        self.ttl = float(ttl)
        self._store = MiddlewareStore(store, "ResponseCache")
        self._policy = CachePolicy()
        #: Generations being written: a lookup in this process waits for them first.
        self._bumps: set[asyncio.Task[None]] = set()

    @property
    def store(self) -> KeyValueStore:
        """Where the entries and generations are kept."""
        return self._store.store

    def added_to(self, server: MiddlewareHost) -> None:
        self._store.added_to(server)
        self._policy = server.settings.cache
        server.subscriptions.on_publish.append(self._heard)

    async def __call__(self, ctx: Context, call_next: CallNext) -> Result:
        if not self._cacheable(ctx):
            return await self._answered(call_next)
        if self._bumps:
            await asyncio.gather(*self._bumps, return_exceptions=True)
        store = self.store
        generation_key, key = self._keys(ctx)
        try:
            generation, held = await store.get_many([generation_key, key])
        except StoreUnavailable:
            return await self._answered(call_next)
        made_in = generation or b"0"
        if held is not None:
            kept_in, _, kept = held.partition(b" ")
            if kept_in == made_in:
                cached: Result = json.loads(kept)
                return cached
        result = await self._answered(call_next)
        life = self._life(result)
        if life is not None:
            try:
                await store.put(key, made_in + b" " + encode(result), life)
            except (TypeError, ValueError):
                pass  # not JSON: the dispatcher answers that, not the cache
            except StoreUnavailable:
                pass  # answered all the same; the store logs its outage once
        return result

    async def _answered(self, call_next: CallNext) -> Result:
        result = await call_next()
        if self._bumps:  # this request changed something: its answer follows the change
            await asyncio.gather(*self._bumps, return_exceptions=True)
        return result

    def _cacheable(self, ctx: Context) -> bool:
        request = ctx.request
        method = request.method
        if method != _READ and method not in _KINDS:
            return False
        if ctx.is_retry:
            return False  # its answer depends on that user's input
        if method == "tools/call":
            wire = getattr(request.target, "wire", None)
            annotations = wire.get("annotations") if isinstance(wire, dict) else None
            return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True
        return True

    def _keys(self, ctx: Context) -> tuple[str, str]:
        """The keys of the generation an answer to ``ctx`` belongs to, and of its entry."""
        request = ctx.request
        params = {k: v for k, v in request.params.items() if k != "_meta"}
        if request.method == _READ:
            of = f"uri:{params.get('uri')}"
        else:
            of = f"kind:{_KINDS[request.method]}"
        whose = "public" if self._policy.scope == "public" else facts.caller(ctx)
        asked = encode([request.method, params, whose], sort_keys=True)
        return f"cache-generation:{of}", f"cache:{hashlib.sha256(asked).hexdigest()}"

    def _life(self, result: Result) -> float | None:
        """How long ``result`` may be kept, or None when it may not."""
        if "resultType" in result or result.get("isError"):
            return None  # an interim answer (input_required), or a tool's error
        if self._policy.scope == "public" and result.get("cacheScope") == "private":
            return None
        ttl_ms = result.get("ttlMs")
        if ttl_ms is None:
            return self.ttl
        if type(ttl_ms) is not int or ttl_ms <= 0:
            return None
        return min(self.ttl, ttl_ms / 1000)

    def _heard(self, event: Event) -> None:
        """A change this process publishes (on the event loop): a new generation."""
        kind = event.get("type")
        if kind in ("tools", "prompts", "resources"):
            of = f"kind:{kind}"
        elif kind == "updated" and isinstance(event.get("uri"), str):
            of = f"uri:{event['uri']}"
        else:
            return
        bump = asyncio.get_running_loop().create_task(self._bump(of))
        self._bumps.add(bump)
        bump.add_done_callback(self._bumps.discard)

    async def _bump(self, of: str) -> None:
        generation = os.urandom(8).hex().encode()
        try:
            # Living as long as any entry: once it is gone, so is every entry made before.
            await self.store.put(f"cache-generation:{of}", generation, self.ttl)
        except StoreUnavailable:
            logger.warning("ResponseCache: could not mark %s changed; entries may be stale", of)
