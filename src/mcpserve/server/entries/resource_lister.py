"""Resources listed by a function: ``@server.resource_lister``.

Registered resources are fixed; a server over a directory, a database or an API knows its
resources only when asked. A lister is called on each ``resources/list`` and its entries
follow the registered resources (then the page is cut, as for any list). It may be
``async def``, a plain ``def`` or ``@blocking``, and may take the :class:`Context`
(``ctx.principal`` to list what this caller may see). Each entry is a dict in the wire's
shape (``uri`` and ``name`` required; ``title``, ``description``, ``mimeType``, ``size``,
``annotations``, ``icons``, ``_meta`` optional). Reading a listed URI is the job of a
registered resource template.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..._types import JSONDict, UserFunction
from ...protocol.errors import InternalError
from ..context.context import Context
from .entry import FunctionEntry, Pool

F = TypeVar("F", bound=Callable[..., Any])

_FIELDS = frozenset(
    {"uri", "name", "title", "description", "mimeType", "size", "annotations", "icons", "_meta"}
)


class ResourceLister(FunctionEntry):
    """A function that lists resources on each ``resources/list``."""

    __slots__ = ()

    def __init__(self, fn: UserFunction, *, pool: Pool, blocking: bool | None = None):
        super().__init__(fn, fn.__name__, pool=pool, blocking=blocking)

    def shape(self, value: Any, ctx: Context) -> JSONDict:
        if not isinstance(value, list | tuple):
            raise InternalError(f"{self.key}() must return a list of resource entries")
        entries = []
        for entry in value:
            if (
                not isinstance(entry, dict)
                or type(entry.get("uri")) is not str
                or type(entry.get("name")) is not str
                or not entry.keys() <= _FIELDS
            ):
                raise InternalError(
                    f"{self.key}() returned an entry that is not a resource: each needs "
                    f"string uri and name, and only {', '.join(sorted(_FIELDS))}"
                )
            entries.append(dict(entry))
        return {"resources": entries}


def lister_maker(
    set_lister: Callable[[ResourceLister], None], pool: Pool, blocking: bool | None
) -> Callable[[F], F]:
    """What ``@server.resource_lister`` applies: make ``fn`` the lister ``set_lister`` keeps."""

    def make(fn: F) -> F:
        set_lister(ResourceLister(fn, pool=pool, blocking=blocking))
        return fn

    return make
