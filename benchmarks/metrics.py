"""Metrics: what ``/metrics`` for Prometheus costs an mcpserve HTTP server.

HTTP ``tools/call echo`` at 16 connections under wrk, on the README's serving path
(``server.run("http")``, ``servers/mcpserve_readme_app.py``), one server process per
configuration:

* ``off``: no metrics (``MCPSERVE_METRICS`` unset, no meter provider), the baseline;
* ``prometheus``: ``MCPSERVE_METRICS=1``: every request measured (duration histogram by
  method, tool, error type and protocol version; requests in flight), ``/metrics`` served.

Before anything is measured each server answers the exact request wrk sends
(``httpload.validate``), and the measured one must expose its count on ``/metrics``
afterwards (proof that it measured what was sent). Method as in the suite's HTTP phase:
servers pinned to the first CPU, wrk (``-t1``) and this script to the second; a start-up
warm-up per server, then rounds in which both run back to back (1 s warm-up, then the
measured window), each round starting with the other; medians over the rounds. The target
is ``prometheus/off >= 0.95`` (req/s).

Run it in a venv with mcpserve's ``http`` and ``metrics`` extras (the worktree's ``.venv``)::

    .venv/bin/python benchmarks/metrics.py [--duration 4] [--rounds 3]

It prints a Markdown table. It is not one of ``run.py``'s phases.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import signal
import statistics
import sys
from pathlib import Path
from typing import Any

import envs
import httpload
from common import SCENARIOS, CheckFailed
from proc import Server, free_port, servers
from recorder import log

HERE = Path(__file__).resolve().parent
APP = HERE / "servers" / "mcpserve_readme_app.py"
ECHO = SCENARIOS["echo"]
CONNECTIONS = 16
CONFIGS = {
    "off": ({}, "no metrics (baseline)"),
    "prometheus": ({"MCPSERVE_METRICS": "1"}, "MCPSERVE_METRICS=1: measured, /metrics served"),
}
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
    wrk = envs.ensure_wrk()
    cores = envs.ensure_taskset_cores()
    os.sched_setaffinity(0, {cores[1]})
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    request = httpload.request_file(ECHO, logs)
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    with servers() as started:
        ports: dict[str, int] = {}
        measured: dict[str, Server] = {}
        for name, (env, _) in CONFIGS.items():
            port = free_port()
            environment = {key: value for key, value in os.environ.items()
                           if key != "MCPSERVE_METRICS"}  # fmt: skip
            server = Server(
                [sys.executable, str(APP), "http", str(port)],
                cores[0],
                log=logs / f"metrics-{name}.log",
                env={**environment, **env},
            )
            started.append(server)
            server.wait_http(port)
            httpload.validate(port, ECHO)
            ports[name], measured[name] = port, server
        if counted(ports["prometheus"]) < 1:
            raise CheckFailed("the measured server did not count the checked request")

        def run(name: str, duration: float) -> dict[str, Any]:
            server, port = measured[name], ports[name]
            return httpload.run_wrk(wrk, server, port, ECHO, request, connections=CONNECTIONS,
                                    duration=duration, core=cores[1])  # fmt: skip

        for name in CONFIGS:
            with contextlib.suppress(CheckFailed, RuntimeError):
                run(name, args.start_warmup)
        order = list(CONFIGS)
        for rnd in range(args.rounds):
            log(f"metrics round {rnd + 1}/{args.rounds}")
            for name in order[rnd % 2 :] + order[: rnd % 2]:
                run(name, args.warmup)
                samples[name].append(run(name, args.duration))
        before = counted(ports["prometheus"])
        httpload.validate(ports["prometheus"], ECHO)
        if counted(ports["prometheus"]) != before + 1:
            raise CheckFailed("after the load, /metrics no longer counts each request")
    print("| configuration | req/s | vs off | p50 ms | p99 ms | server CPU µs/req |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(s["rps"] for s in samples["off"])
    for name, (_, label) in CONFIGS.items():
        rps = statistics.median(s["rps"] for s in samples[name])
        p50 = statistics.median(s["p50_ms"] for s in samples[name])
        p99 = statistics.median(s["p99_ms"] for s in samples[name])
        cpu = statistics.median(s["cpu_us"] for s in samples[name])
        ratio = f"{rps / base:.2f}\N{MULTIPLICATION SIGN}"
        print(f"| {label} | {rps:,.0f} | {ratio} | {p50:.2f} | {p99:.2f} | {cpu:.0f} |")
    per_round = [
        p["rps"] / o["rps"] for p, o in zip(samples["prometheus"], samples["off"], strict=True)
    ]
    print(f"\nprometheus/off per round: {', '.join(f'{r:.2f}' for r in per_round)}; "
          f"target >= {TARGET}")  # fmt: skip


if __name__ == "__main__":
    main()
