"""The one seam through which an extension joins a server.

An extension (tasks, skills; see ``mcpserve/extensions/``) is an object the server adds
when the first thing that needs it is registered: the first task tool, the first skill. It
contributes three things, and only through this seam:

* methods, each marked with the eras that answer it, merged into the server's one method
  table (:mod:`.methods`);
* its entry under ``capabilities.extensions``, or None while it offers nothing (so the
  capabilities keep following what is registered);
* a part in the server's lifespan: started when the server starts, stopped when it stops.

An extension never reaches into the server: it is built with the parts it uses (the
registry, the runtime, ...). MCP Apps need no object of their own: an app is a resource of
its MIME type, and the registry's entries say so (:func:`.settings.capabilities`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Protocol, TypeVar

from .._types import JSONDict
from .methods import Method


class Extension(Protocol):
    """What an extension gives the server it joins."""

    #: Its identifier in ``capabilities.extensions``.
    key: str

    def methods(self) -> Mapping[str, Method]:
        """The methods it answers, with the eras that answer each."""
        ...

    def capability(self) -> JSONDict | None:
        """Its entry under ``capabilities.extensions`` now, or None while it offers nothing."""
        ...

    async def start(self, stack: AsyncExitStack) -> None:
        """The server starts: begin, and push onto ``stack`` whatever must happen at its end."""
        ...


E = TypeVar("E", bound=Extension)


class Extensions:
    """The extensions one server runs, by key, in the order they joined."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self._by_key: dict[str, Extension] = {}
        #: Called when one joins: the method table is built again with its methods.
        self._on_change = on_change

    def get(self, key: str) -> Extension | None:
        return self._by_key.get(key)

    def add(self, extension: E) -> E:
        if extension.key in self._by_key:
            raise ValueError(f"The extension {extension.key!r} has joined this server already")
        self._by_key[extension.key] = extension
        self._on_change()
        return extension

    def methods(self) -> dict[str, Method]:
        table: dict[str, Method] = {}
        for extension in self._by_key.values():
            table.update(extension.methods())
        return table

    def capabilities(self) -> dict[str, JSONDict]:
        offered: dict[str, JSONDict] = {}
        for key, extension in self._by_key.items():
            capability = extension.capability()
            if capability is not None:
                offered[key] = capability
        return offered

    async def start(self, stack: AsyncExitStack) -> None:
        for extension in self._by_key.values():
            await extension.start(stack)
