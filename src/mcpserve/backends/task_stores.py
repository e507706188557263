"""The task store a URL names: the choice between the stores mcpserve ships.

``Server(task_store=...)`` takes a store or a URL; a URL (or ``$MCPSERVE_TASK_STORE``, or
the shared Redis) comes here. The store's protocol and the in-memory store are the tasks
extension's (``extensions/tasks/records.py``); SQLite and Redis load only when named.
"""

from __future__ import annotations

from ..extensions.tasks.records import MemoryTaskStore, TaskStore


def task_store_from_url(url: str, *, namespace: str) -> TaskStore:
    """The store a URL names: ``memory://``, ``sqlite:///path/to/tasks.db`` or
    ``redis://host:port/db`` (keys under ``namespace``)."""
    if url in ("", "memory://", "memory"):
        return MemoryTaskStore()
    if url.startswith("sqlite://"):
        from .sqlite.tasks import SQLiteTaskStore

        rest = url.removeprefix("sqlite://")  # sqlite:///relative.db, sqlite:////absolute.db
        if not rest.startswith("/") or len(rest) < 2:
            raise ValueError("sqlite:// needs a path: sqlite:///tasks.db, sqlite:////var/tasks.db")
        return SQLiteTaskStore(rest[1:])
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis.tasks import RedisTaskStore

        return RedisTaskStore(url, namespace=namespace)
    raise ValueError(f"Unknown task store {url[:60]!r}: use memory://, sqlite:///path or redis://")
