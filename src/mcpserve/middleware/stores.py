"""Where a middleware keeps what it shares: ``store=`` resolved against its server.

``store=`` is a :class:`~mcpserve.backends.keyvalue.KeyValueStore` or a URL (``memory://``,
``sqlite:///f.db``, ``redis://host:port/db``). Without one, the store is the server's shared
Redis when it has one (``redis_url=``, ``MCPSERVE_REDIS_URL``), so every instance shares the
middleware's state, and else this process's memory. A URL is opened when the middleware is
added to a server, with the server's name as its namespace, and closed when the server
stops; a store object given is the caller's to close.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from ..backends.keyvalue import KeyValueStore, MemoryKeyValue, keyvalue_from_url
from ..server.middleware import MiddlewareHost

StoreOption = KeyValueStore | str | None


class MiddlewareStore:
    """A middleware's store: the one given, or the one its server implies."""

    def __init__(self, option: StoreOption, what: str) -> None:
        if option is not None and not isinstance(option, str):
            for operation in ("get", "put", "take_token"):
                if not callable(getattr(option, operation, None)):
                    raise TypeError(
                        f"{what}: store= must be a key-value store or a URL "
                        "(memory://, sqlite:///f.db, redis://host:port/db)"
                    )
        self._option = option
        self._store: KeyValueStore | None = None
        self._owned = False

    @property
    def store(self) -> KeyValueStore:
        """The store; this process's memory until the middleware joins a server."""
        if self._store is None:
            self._store = self._open(self._option, None, "mcpserve")
        return self._store

    def added_to(self, server: MiddlewareHost) -> None:
        self._store = self._open(self._option, server.redis_url, server.name)
        if self._owned:
            server.lifecycle.add(self._close_with)

    def _open(self, option: StoreOption, redis_url: str | None, namespace: str) -> KeyValueStore:
        if option is not None and not isinstance(option, str):
            self._owned = False
            return option
        url = option if option is not None else redis_url
        self._owned = url is not None
        return MemoryKeyValue() if url is None else keyvalue_from_url(url, namespace=namespace)

    async def _close_with(self, stack: AsyncExitStack) -> None:
        stack.push_async_callback(self.store.aclose)
