"""Proxy: what serving a server through ``Server.proxy`` costs, next to the server itself and
FastMCP's proxy of the same server, in the same run.

One upstream, the suite's mcpserve server (``servers/mcpserve_app.py``), and three ways to
reach it with HTTP ``tools/call echo`` (full 2026-07-28 requests, the suite's ``echo``
scenario: the exact bytes are checked before anything is measured):

* ``direct``: wrk to the upstream;
* ``mcpserve``: wrk to ``servers/mcpserve_proxy_app.py`` (``Server.proxy(url)``, nothing
  else), which forwards to the upstream over its one connection;
* ``fastmcp``: wrk to ``servers/fastmcp_proxy_app.py`` (FastMCP's ``create_proxy(url)``,
  in the ``fastmcp`` venv, stateless with JSON answers, as ``servers/fastmcp_app.py`` is
  served), forwarding to the same upstream.

Two loads: 16 connections (throughput) and 1 connection (latency, wrk's p50/p99).

Pinning, as in the suite: the measured server (the upstream itself for ``direct``, the
proxy otherwise) on the first CPU, wrk and this script on the second. The upstream behind
a proxy is a second process of the same server, on a third CPU when there is one and
otherwise on the second, with wrk: so each proxy gets a core to itself, as the server it
stands for did, and the upstream it forwards to is never the one being measured. Server
CPU per request is read from ``/proc`` for the measured server, and for the upstream
behind it (``upstream µs/req``).

Rounds run every case back to back, each round starting with another; figures are medians
over rounds. Ratios: ``mcpserve/direct`` and ``mcpserve/fastmcp`` (req/s medians, and per
round); the targets, at 16 connections: ``mcpserve/direct >= 0.5`` and
``mcpserve/fastmcp >= 10``.

::

    python3 benchmarks/proxy.py            # 5 rounds of 4 s windows: 3 to 5 minutes
    python3 benchmarks/proxy.py --quick    # 1 round of 3 s windows: seconds, to prove it runs

It builds the ``mcpserve`` and ``fastmcp`` venvs when missing (``envs.py``), needs ``wrk``,
re-runs itself in the mcpserve venv, prints a Markdown table and writes ``proxy.json`` to
``--out`` (``results/``; server logs under ``--out``/logs). It is not one of ``run.py``'s
phases; the figures are in ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import envs
import httpload
from common import SCENARIOS, CheckFailed
from proc import Cores, Server, free_port, servers
from recorder import Recorder, log, summarize

HERE = Path(__file__).resolve().parent
APPS = HERE / "servers"
ECHO = SCENARIOS["echo"]
CASES = ("direct", "mcpserve", "fastmcp")
#: Connections per load: throughput and latency.
LOADS = {"c16": 16, "c1": 1}
TARGETS = [
    {"ratio": "mcpserve/direct", "load": "c16", "at_least": 0.5},
    {"ratio": "mcpserve/fastmcp", "load": "c16", "at_least": 10.0},
]


class Case:
    """One way to reach the upstream: the server wrk talks to, and the upstream behind it."""

    def __init__(self, name: str, server: Server, port: int, upstream: Server | None) -> None:
        self.name = name
        self.server = server
        self.port = port
        self.upstream = upstream

    def run(
        self, wrk: str, request: Path, connections: int, core: Cores, duration: float
    ) -> dict[str, Any]:
        behind = self.upstream.cpu() if self.upstream is not None else 0.0
        sample = httpload.run_wrk(
            wrk, self.server, self.port, ECHO, request,
            connections=connections, duration=duration, core=core,
        )  # fmt: skip
        if self.upstream is not None:
            sample["upstream_cpu_us"] = (self.upstream.cpu() - behind) * 1e6 / sample["requests"]
        return sample


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s windows")
    parser.add_argument("--duration", type=float, default=None, help="seconds per window (4)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (5)")
    parser.add_argument("--warmup", type=float, default=None, help="seconds before each (1)")
    parser.add_argument("--start-warmup", type=float, default=None,
                        help="seconds of load per server before the rounds (5)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    quick = args.quick
    # Quick windows are 3 s: FastMCP's proxy answers 16 connections in about a second per
    # call, so a shorter window may see none complete.
    defaults = {"duration": (3.0, 4.0), "rounds": (1, 5), "warmup": (0.5, 1.0),
                "start_warmup": (1.0, 5.0)}  # fmt: skip
    for name, (short, full) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, short if quick else full)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def _rotated(items: list[str], rnd: int) -> list[str]:
    shift = rnd % len(items)
    return items[shift:] + items[:shift]


def _ratio(summary: dict[str, Any], samples: list[dict[str, Any]], spec: dict[str, Any]) -> Any:
    mine, theirs = spec["ratio"].split("/")
    load = spec["load"]
    row, base = summary.get(f"{load}:{mine}"), summary.get(f"{load}:{theirs}")
    value = row["rps"] / base["rps"] if row and base and base.get("rps") else None
    by_round: dict[int, dict[str, float]] = {}
    for sample in samples:
        if sample["case"].startswith(f"{load}:"):
            by_round.setdefault(sample["round"], {})[sample["framework"]] = sample["rps"]
    paired = [r[mine] / r[theirs] for _, r in sorted(by_round.items())
              if mine in r and theirs in r and r[theirs]]  # fmt: skip
    met = None if value is None else value >= spec["at_least"]
    return {**spec, "value": value, "per_round": paired, "met": met}


def markdown(results: dict[str, Any]) -> str:
    summary = results["summary"]
    config = results["config"]
    lines = [
        f"HTTP `tools/call echo` to one mcpserve upstream, directly and through each proxy; "
        f"medians of {config['rounds']} round(s) of {config['duration']:g} s"
        f"{' (--quick: not figures to read)' if config['quick'] else ''}",
        "",
        "| load | case | req/s | p50 ms | p99 ms | server CPU µs/req | upstream µs/req |",
        "|---|---|---|---|---|---|---|",
    ]
    for load, connections in LOADS.items():
        for case in CASES:
            row = summary.get(f"{load}:{case}")
            label = f"{connections} conn."
            if row is None:
                reason = results["unsupported"].get(f"{load}:{case}", "not measured")
                lines.append(f"| {label} | `{case}` | n/a ({reason}) | | | | |")
                continue
            upstream = row.get("upstream_cpu_us")
            lines.append(
                f"| {label} | `{case}` | {row['rps']:,.0f} | {row['p50_ms']:.2f} | "
                f"{row['p99_ms']:.2f} | {row['cpu_us']:.0f} | "
                f"{'' if upstream is None else f'{upstream:.0f}'} |"
            )
    lines.append("")
    for target in results["targets"]:
        verdict = {True: "met", False: "NOT met", None: "not measured"}[target["met"]]
        value = "n/a" if target["value"] is None else f"{target['value']:.2f}"
        rounds = ", ".join(f"{r:.2f}" for r in target["per_round"])
        connections = LOADS[target["load"]]
        lines.append(f"* `{target['ratio']}` ({connections} connections) = {value} (per round: "
                     f"{rounds}); target >= {target['at_least']:g}: {verdict}")  # fmt: skip
    lines.append(f"* {results['pinning']}")
    return "\n".join(lines)


def _setup(args: argparse.Namespace) -> None:
    """Outside the venv: build what is missing, then run again inside it."""
    envs.ensure_venvs(names=["mcpserve", "fastmcp"])
    envs.ensure_wrk()
    python = envs.python_of("mcpserve")
    os.execv(python, [python, str(Path(__file__).resolve()), *sys.argv[1:], "--in-venv"])


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not args.in_venv:
        _setup(args)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # servers start as deployed: with .pyc
    wrk = envs.ensure_wrk()
    first, load_core = envs.ensure_taskset_cores()
    cpus = sorted(os.sched_getaffinity(0))
    behind_core = cpus[2] if len(cpus) > 2 else load_core
    os.sched_setaffinity(0, {load_core})  # this process and wrk: the load core
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.UTC)
    log(f"proxy: {args.rounds} round(s) of {args.duration:g} s"
        f"{' (quick)' if args.quick else ''}")  # fmt: skip
    rec = Recorder()
    request = httpload.request_file(ECHO, logs)
    pinning = (f"measured server: CPU {first}; wrk and this script: CPU {load_core}; the "
               f"upstream behind a proxy: CPU {behind_core}")  # fmt: skip
    with servers() as started_servers:

        def start(name: str, command: list[str], core: Cores, port: int) -> Server:
            server = Server(command, core, log=logs / f"proxy-{name}.log")
            started_servers.append(server)
            server.wait_http(port)
            return server

        direct_port, behind_port = free_port(), free_port()
        upstream_app = [envs.python_of("mcpserve"), str(APPS / "mcpserve_app.py"), "http"]
        direct = start("direct", [*upstream_app, str(direct_port)], first, direct_port)
        behind = start("upstream", [*upstream_app, str(behind_port)], behind_core, behind_port)
        behind_url = f"http://127.0.0.1:{behind_port}{httpload.PATH}"
        cases = {"direct": Case("direct", direct, direct_port, None)}
        for name, venv, app in (("mcpserve", "mcpserve", "mcpserve_proxy_app.py"),
                                ("fastmcp", "fastmcp", "fastmcp_proxy_app.py")):  # fmt: skip
            port = free_port()
            command = [envs.python_of(venv), str(APPS / app), "http", str(port), behind_url]
            cases[name] = Case(name, start(name, command, first, port), port, behind)
        for name, case in list(cases.items()):
            try:
                httpload.validate(case.port, ECHO)
                log(f"  {name}: the answer wrk will be sent is right")
            except (CheckFailed, OSError, ValueError) as exc:
                for load in LOADS:
                    rec.skip(f"{load}:{name}", name, f"wrong answer: {exc}"[:300])
                del cases[name]
        if "direct" not in cases or "mcpserve" not in cases:
            raise SystemExit("the direct server or the mcpserve proxy answered wrongly")
        log(f"start-up warm-up: {args.start_warmup:g} s per server")
        for case in cases.values():
            try:
                case.run(wrk, request, LOADS["c16"], load_core, args.start_warmup)
            except (CheckFailed, RuntimeError) as exc:  # the rounds record it
                log(f"  {case.name}: warm-up failed: {exc}")
        order = list(cases)
        for rnd in range(args.rounds):
            log(f"proxy round {rnd + 1}/{args.rounds}")
            for load, connections in LOADS.items():
                for name in _rotated(order, rnd):
                    run = functools.partial(cases[name].run, wrk, request, connections,
                                            load_core)  # fmt: skip
                    rec.measure(f"{load}:{name}", name, rnd, run, args.warmup, args.duration)
        for name, case in cases.items():  # still right after all that load?
            try:
                httpload.validate(case.port, ECHO)
            except (CheckFailed, OSError, ValueError) as exc:
                for load in LOADS:
                    rec.skip(f"{load}:{name}", name, f"wrong answer after the load: {exc}"[:300])
                rec.samples = [s for s in rec.samples if s["framework"] != name]
    summary = {case: next(iter(table.values())) for case, table in summarize(rec.samples).items()}
    for key, row in summary.items():  # the upstream's CPU, a median too
        values = sorted(s["upstream_cpu_us"] for s in rec.samples
                        if s["case"] == key and "upstream_cpu_us" in s)  # fmt: skip
        row["upstream_cpu_us"] = values[len(values) // 2] if values else None
    results: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "machine": envs.machine(),
        "mcpserve_commit": envs.checkout(),
        "versions": {"mcpserve": envs.versions("mcpserve"), "fastmcp": envs.versions("fastmcp")},
        "config": {
            "quick": args.quick,
            "duration": args.duration,
            "rounds": args.rounds,
            "warmup": args.warmup,
            "start_warmup": args.start_warmup,
            "loads": LOADS,
            "scenario": "tools/call echo",
        },
        "pinning": pinning,
        "summary": summary,
        "targets": [_ratio(summary, rec.samples, spec) for spec in TARGETS],
        "unsupported": {case: next(iter(fws.values())) for case, fws in rec.unsupported.items()},
        "samples": rec.samples,
    }
    results["seconds"] = round((datetime.datetime.now(datetime.UTC) - started).total_seconds())
    out = args.out / "proxy.json"
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    print(markdown(results))
    log(f"done in {results['seconds']} s: {out}")


if __name__ == "__main__":
    main()
