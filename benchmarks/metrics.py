"""Metrics: what ``/metrics`` for Prometheus costs an mcpserve HTTP server.

HTTP ``tools/call echo`` at 16 connections under wrk, on the README's serving path
(``server.run("http")``, ``servers/mcpserve_readme_app.py``), one server process per
configuration, side by side (``side_by_side.py``: pinning, warm-ups, rounds, medians):

* ``off``: no metrics (``MCPSERVE_METRICS`` unset, no meter provider), the baseline;
* ``prometheus``: ``MCPSERVE_METRICS=1``: every request measured (duration histogram by
  method, tool, error type and protocol version; requests in flight), ``/metrics`` served.

Once both servers answered the request wrk sends, and again after the last round, the
measured one must count on ``/metrics`` what it was sent: at least that checked request,
and exactly one more for one more request (proof that it measured what it served, before
and after the load). The target is ``prometheus/off >= 0.95`` (req/s).

Run it in a venv with mcpserve's ``http`` and ``metrics`` extras (the worktree's ``.venv``)::

    .venv/bin/python benchmarks/metrics.py [--duration 4] [--rounds 3]

It prints a Markdown table. It is not one of ``run.py``'s phases.
"""

from __future__ import annotations

import argparse
import http.client
import re
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

import httpload
from common import SCENARIOS, CheckFailed
from side_by_side import Config, compare

HERE = Path(__file__).resolve().parent
APP = [sys.executable, str(HERE / "servers" / "mcpserve_readme_app.py"), "http", "{port}"]
ECHO = SCENARIOS["echo"]
MEASURED = "prometheus"
CONFIGS = [
    Config("off", "no metrics (baseline)", APP),
    Config(MEASURED, "MCPSERVE_METRICS=1: measured, /metrics served", APP,
           {"MCPSERVE_METRICS": "1"}),
]  # fmt: skip
TARGET = 0.95


def counted(port: int) -> float:
    """The ``tools/call`` count the server's ``/metrics`` reports."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    pattern = (
        r"^mcp_server_operation_duration_seconds_count"
        r'\{[^}]*mcp_method_name="tools/call"[^}]*\} (\S+)$'
    )
    return sum(float(value) for value in re.findall(pattern, text, re.MULTILINE))


def check_counting(ports: Mapping[str, int]) -> None:
    """The measured server counts what it served: the request it was checked with (or the
    whole load), and exactly one more for one more."""
    port = ports[MEASURED]
    before = counted(port)
    if before < 1:
        raise CheckFailed("the measured server did not count the checked request")
    httpload.validate(port, ECHO)
    if counted(port) != before + 1:
        raise CheckFailed("/metrics does not count each request it serves")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--start-warmup", type=float, default=2.0)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    measured = compare(
        CONFIGS,
        ECHO,
        out=args.out,
        duration=args.duration,
        rounds=args.rounds,
        warmup=args.warmup,
        start_warmup=args.start_warmup,
        # Neither may leak in from the caller's shell: the baseline must measure nothing,
        # and each server keeps its own values.
        scrub=("MCPSERVE_METRICS", "PROMETHEUS_MULTIPROC_DIR"),
        check=check_counting,
    )
    print(measured.table())
    per_round = ", ".join(f"{ratio:.2f}" for ratio in measured.ratios(MEASURED))
    print(f"\n{MEASURED}/off per round: {per_round}; target >= {TARGET}")


if __name__ == "__main__":
    main()
