"""Small public records with value semantics, without dataclass machinery.

A dataclass writes and compiles its methods when its module is imported (about 0.3 ms per
class on Python 3.11), a noticeable share of the cold start of a stdio server that a client
spawns on demand. The public records such a server loads at start (``Auth``, ``ToolResult``,
``InputRequired``, ``CachePolicy``, ``Contents``) derive from :class:`Record` instead: their
``__slots__`` are their fields, which equality, hashing and ``repr`` use. Treat them as
immutable, as the frozen dataclasses they replace were.
"""

from __future__ import annotations

from typing import Any


class Record:
    """Equal when of the same type with equal fields; hashable when the fields are."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
