"""Caching hints: how long a client may keep a result, and who may share it."""

from __future__ import annotations

from typing import Literal

from ...protocol.records import Record

CacheScope = Literal["public", "private"]


class CachePolicy(Record):
    """How long clients may cache a result (``ttlMs``) and who may share it (``cacheScope``).

    ``scope="public"`` means the result holds nothing user-specific and may be shared across
    users by caches; ``"private"`` keeps it to one authorization context.
    """

    __slots__ = ("scope", "ttl_ms")  # a Record: see protocol/records.py

    def __init__(self, ttl_ms: int = 0, scope: CacheScope = "private") -> None:
        if type(ttl_ms) is not int or ttl_ms < 0:
            raise ValueError("ttl_ms must be a whole number of milliseconds >= 0")
        if scope not in ("public", "private"):
            raise ValueError("scope must be 'public' or 'private'")
        self.ttl_ms = ttl_ms
        self.scope = scope
