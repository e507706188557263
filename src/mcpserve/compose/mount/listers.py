"""``resources/list`` of a server with mounted servers that list resources of their own.

A registry has one resource lister (``@server.resource_lister``). While a mounted server has
one, the parent's registry holds a combined one instead (:class:`Listers`): the parent's own
lister, if any, then each mounted one's, with their URIs as the parent serves them. A
lister the parent registers later joins the combination rather than replacing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..._types import JSONDict
from ...protocol.core import answered
from ...server.context.context import Context
from ...server.entries.kinds import Entry
from ...server.entries.resource_lister import ResourceLister
from ...server.registry import ListKind, Registry
from .entries import Namespace

if TYPE_CHECKING:  # the thread pool's module loads with the first blocking handler
    from concurrent.futures import ThreadPoolExecutor


class ListingParent(Protocol):
    """What the combined lister reads of the parent server."""

    registry: Registry

    def thread_pool(self) -> ThreadPoolExecutor: ...


class ListingMount(Protocol):
    """What it reads of each mount (``mount.py``'s ``Mount``)."""

    lister: Entry | None
    namespace: Namespace


class Listers:
    """``resources/list`` of a parent whose mounted servers list resources of their own: the
    parent's lister (if any), then each mounted one's, their URIs rewritten."""

    def __init__(self, parent: ListingParent, mounts: Sequence[ListingMount]) -> None:
        self.registry = parent.registry
        self.mounts = mounts
        self._pool = parent.thread_pool
        self._lister: Entry | None = None
        self._own: Entry | None = None
        self._following = False

    def changed(self) -> bool:
        """Install or remove the combined lister as mounted listers come and go; whether the
        parent's lister changed."""
        registry = self.registry
        wanted = any(mount.lister is not None for mount in self.mounts)
        if wanted and self._lister is None:
            self._own = registry.resource_lister
            self._lister = ResourceLister(self.list_all, pool=self._pool)
            registry.resource_lister = self._lister
            if not self._following:
                registry.on_change(self._adopt)
                self._following = True
            return True
        if not wanted and self._lister is not None:
            registry.resource_lister, self._lister = self._own, None
            return True
        return False

    def _adopt(self, kind: ListKind) -> None:
        # The parent registered a lister of its own (set_resource_lister replaced ours):
        # it joins the combination.
        registry = self.registry
        lister = self._lister
        if kind == "resources" and lister is not None and registry.resource_lister is not lister:
            self._own = registry.resource_lister
            registry.resource_lister = lister

    async def list_all(self, ctx: Context) -> list[JSONDict]:
        entries: list[JSONDict] = []
        sources = [(self._own, None), *((m.lister, m.namespace) for m in self.mounts)]
        for lister, namespace in sources:
            if lister is None:
                continue
            result = await answered(lister.run({}, ctx))
            for entry in result["resources"]:
                if namespace is not None:
                    entry = {**entry, "uri": namespace.uri(entry["uri"])}
                entries.append(entry)
        return entries
