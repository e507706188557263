"""The directory several processes share their Prometheus values through.

``mcpserve run --workers N --metrics`` calls :func:`shared_directory` before uvicorn starts
its workers, which inherit ``PROMETHEUS_MULTIPROC_DIR`` from it (prometheus-client reads the
variable when it is imported, in each worker). A directory already set is used as it is and
left in place; otherwise a new temporary one is made, and removed when serving ends, so a
restart does not count the last run's requests again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from .prometheus import MULTIPROCESS_DIR


@contextlib.contextmanager
def shared_directory() -> Iterator[str]:
    """``PROMETHEUS_MULTIPROC_DIR`` for the processes started inside: the one set, or a
    temporary one of our own, removed on the way out."""
    given = os.environ.get(MULTIPROCESS_DIR)
    if given:
        yield given
        return
    made = tempfile.mkdtemp(prefix="mcpserve-metrics-")
    os.environ[MULTIPROCESS_DIR] = made
    try:
        yield made
    finally:
        os.environ.pop(MULTIPROCESS_DIR, None)
        shutil.rmtree(made, ignore_errors=True)
