"""The environment variables mcpserve reads, and the one function that reads them.

Every setting that may come from the environment is named here, so ``grep`` over this file
is the list a deployment can set (the public ones are in ``docs/deployment.md``). A value that is
set but empty counts as unset. Code anywhere in the package reads through :func:`read`;
nothing else touches ``os.environ`` to learn a setting.
"""

from __future__ import annotations

import os

#: The Redis every process of a server shares (bus, handshake-era sessions, task store).
REDIS_URL = "MCPSERVE_REDIS_URL"
#: The subscription bus: ``memory://`` or ``redis://host:port/db``.
BUS = "MCPSERVE_BUS"
#: Where tasks are kept: ``memory://``, ``sqlite:///path`` or ``redis://...``.
TASK_STORE = "MCPSERVE_TASK_STORE"
#: The Redis whose workers (``mcpserve worker``) run task tools: ``redis://host:port/db``.
TASK_QUEUE = "MCPSERVE_TASK_QUEUE"
#: The keys that seal ``requestState``, shared by every process (``mcpserve keygen``).
STATE_KEYS = "MCPSERVE_STATE_KEYS"
#: Serve /metrics for Prometheus (``Server(metrics=None)``, ``mcpserve run --metrics``).
METRICS = "MCPSERVE_METRICS"
#: Host names and origins the HTTP transport accepts (comma-separated), and its public URL.
ALLOWED_HOSTS = "MCPSERVE_ALLOWED_HOSTS"
ALLOWED_ORIGINS = "MCPSERVE_ALLOWED_ORIGINS"
PUBLIC_URL = "MCPSERVE_PUBLIC_URL"
#: Where ``mcpserve`` keeps the OAuth tokens of ``--oauth``; and the cache it defaults to.
TOKEN_FILE = "MCPSERVE_TOKEN_FILE"
XDG_CACHE_HOME = "XDG_CACHE_HOME"
#: The OAuth client ``mcpserve`` commands get tokens as (read by click, for their options).
CLIENT_ID = "MCPSERVE_CLIENT_ID"
CLIENT_SECRET = "MCPSERVE_CLIENT_SECRET"
#: Graceful drain over HTTP: the seconds /readyz fails before the process stops, and the
#: seconds requests still running get after that (``--drain-seconds``, ``--shutdown-grace``).
DRAIN_SECONDS = "MCPSERVE_DRAIN_SECONDS"
SHUTDOWN_GRACE = "MCPSERVE_SHUTDOWN_GRACE"
#: ``text`` or ``json``: the format of the log lines ``server.run`` and ``mcpserve run`` write.
LOG_FORMAT = "MCPSERVE_LOG_FORMAT"
#: What ``mcpserve run --workers`` and ``--reload`` hand each worker process they start.
WORKER_TARGET = "MCPSERVE_WORKER_TARGET"
WORKER_PATH = "MCPSERVE_WORKER_PATH"
WORKER_HOST = "MCPSERVE_WORKER_HOST"
#: "1": the reloader's worker, the server's only process.
WORKER_SOLE = "MCPSERVE_WORKER_SOLE"


def read(name: str) -> str | None:
    """The value of ``name`` (one of this module's names), or None when unset or empty."""
    return os.environ.get(name) or None


def read_list(name: str) -> list[str] | None:
    """A comma-separated value as its items (blanks dropped), or None when unset."""
    raw = os.environ.get(name)
    if raw is None:
        return None
    return [item.strip() for item in raw.split(",") if item.strip()]
