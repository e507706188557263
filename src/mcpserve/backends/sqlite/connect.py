"""One connection to a store's SQLite file, set up as every SQLite store of mcpserve needs it.

Autocommit (each transaction an explicit ``BEGIN IMMEDIATE ... COMMIT``), write-ahead
logging, full sync, and the store's schema. Processes (or stores) opening a new file at
the same moment contend for the switch to WAL, and SQLite answers that switch "database
is locked" at once instead of waiting its busy timeout: the setup is tried again until the
timeout has passed, as every other statement waits.
"""

from __future__ import annotations

import os
import sqlite3
import time


def open_database(
    path: str | os.PathLike[str], *, busy_timeout: float, schema: str
) -> sqlite3.Connection:
    """A set-up connection to ``path``; ``sqlite3.Error`` once ``busy_timeout`` has passed."""
    deadline = time.monotonic() + busy_timeout
    while True:
        db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(schema)
        except sqlite3.OperationalError as exc:
            db.close()
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
            continue
        except BaseException:
            db.close()
            raise
        return db
