#!/usr/bin/env python3
"""mcpserve benchmark suite: mcpserve vs the official ``mcp`` SDK vs FastMCP vs a raw ceiling.

    python3 benchmarks/run.py            # the full suite (about 20 minutes on 2 cores)
    python3 benchmarks/run.py --quick    # a sanity run: 1 round, short windows

Sets up what it needs (a venv per framework under benchmarks/.venvs, wrk via apt), checks
every server's answers, measures in interleaved rounds, and writes
benchmarks/results/latest.{json,md}; a full run also rewrites docs/performance.md.
See benchmarks/README.md for the scenarios and the method.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import envs  # noqa: E402
from recorder import Recorder, log, summarize  # noqa: E402

FRAMEWORKS = ["mcpserve", "official", "fastmcp", "raw"]
PHASES = ["import", "coldstart", "inprocess", "http", "stdio", "memory"]
#: HTTP cases: (scenario, connections, needs a server in SSE mode)
HTTP_CASES = [
    ("echo", 16, False),
    ("echo", 1, False),
    ("model", 16, False),
    ("list50", 16, False),
    ("resource", 16, False),
    ("progress", 16, True),
    ("input_required", 16, False),
]
STDIO_MODES = {"pipelined": 64, "sequential": 1}
STDIO_SCENARIOS = ["echo", "model", "list50", "resource", "progress", "input_required"]
INPROCESS_SCENARIOS = ["echo", "model", "list50", "resource"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 round, short windows")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3)")
    parser.add_argument("--duration", type=float, help="seconds per HTTP window (default 4)")
    parser.add_argument(
        "--scenarios",
        help="comma list of scenario keys: "
        "echo,model,list50,resource,progress,input_required (default all)",
    )
    parser.add_argument("--phases", help=f"comma list of {','.join(PHASES)} (default all)")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument(
        "--refresh-venvs", action="store_true", help="reinstall the latest mcp 2.x / fastmcp 4.x"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument(
        "--docs",
        choices=["auto", "yes", "no"],
        default="auto",
        help="rewrite docs/performance.md (auto: only after a full run)",
    )
    parser.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    full = not args.quick
    args.rounds = args.rounds or (3 if full else 1)
    args.duration = args.duration or (4.0 if full else 1.0)
    args.warmup = 1.0
    args.stdio_duration = args.duration / 2 if full else 0.5
    args.stdio_warmup = 0.5 if full else 0.2
    args.inprocess_duration = 2.0 if full else 0.5
    args.start_runs = 10 if full else 3
    args.memory_warmup, args.memory_requests = (10_000, 100_000) if full else (2_000, 10_000)
    args.phases = args.phases.split(",") if args.phases else PHASES
    args.scenarios = args.scenarios.split(",") if args.scenarios else None
    args.frameworks = args.frameworks.split(",")
    args.complete = (
        full
        and set(args.phases) == set(PHASES)
        and args.scenarios is None
        and args.frameworks == FRAMEWORKS
    )
    return args


def wanted(args: argparse.Namespace, scenario: str) -> bool:
    return args.scenarios is None or scenario in args.scenarios


def server_command(framework: str, *args: str) -> list[str]:
    return [envs.python_of(framework), str(HERE / "servers" / f"{framework}_app.py"), *args]


# -- phases -----------------------------------------------------------------------------------


def phase_http(
    args: argparse.Namespace, rec: Recorder, wrk: str, cores: tuple[int, int], logs: Path
) -> dict[str, Any]:
    import httpload
    from common import SCENARIOS, CheckFailed
    from proc import Server, free_port, servers

    cases = [c for c in HTTP_CASES if wanted(args, c[0])]
    checks: dict[str, Any] = {}
    with servers() as started:
        ports: dict[tuple[str, bool], tuple[Server, int]] = {}
        for fw in args.frameworks:
            for sse in sorted({False} | {sse for _, _, sse in cases}):
                if sse and fw in ("mcpserve", "raw"):  # they pick SSE per request themselves
                    ports[(fw, True)] = ports[(fw, False)]
                    continue
                port = free_port()
                extra = ["--sse"] if sse else []
                server = Server(
                    server_command(fw, "http", str(port), *extra),
                    cores[0],
                    log=logs / f"http-{fw}{'-sse' if sse else ''}.log",
                )
                started.append(server)
                server.wait_http(port)
                ports[(fw, sse)] = (server, port)
            checks[fw] = httpload.checks_on(ports[(fw, False)][1])
        if "mcpserve" in checks and not all(checks["mcpserve"].values()):
            raise SystemExit(f"mcpserve's measured configuration skips checks: {checks}")
        requests = {key: httpload.request_file(SCENARIOS[key], logs) for key, _, _ in cases}
        for key, conns, sse in cases:
            for fw in args.frameworks:
                try:
                    httpload.validate(ports[(fw, sse)][1], SCENARIOS[key])
                except CheckFailed as exc:
                    rec.skip(f"http:{key}:c{conns}", fw, f"wrong answer: {exc}"[:300])
        for rnd in range(args.rounds):
            log(f"HTTP round {rnd + 1}/{args.rounds}")
            for key, conns, sse in cases:
                for fw in _rotated(args.frameworks, rnd):
                    server, port = ports[(fw, sse)]
                    run = functools.partial(
                        httpload.run_wrk,
                        wrk,
                        server,
                        port,
                        SCENARIOS[key],
                        requests[key],
                        connections=conns,
                        core=cores[1],
                    )
                    rec.measure(
                        f"http:{key}:c{conns}",
                        fw,
                        rnd,
                        lambda seconds, run=run: run(duration=seconds),
                        args.warmup,
                        args.duration,
                    )
        for key, conns, sse in cases:  # still right after all that load?
            for fw in args.frameworks:
                case = f"http:{key}:c{conns}"
                if fw in rec.unsupported.get(case, {}):
                    continue
                try:
                    httpload.validate(ports[(fw, sse)][1], SCENARIOS[key])
                except CheckFailed as exc:
                    rec.skip(case, fw, f"wrong answer after the load: {exc}"[:300])
                    rec.samples = [
                        s for s in rec.samples if (s["case"], s["framework"]) != (case, fw)
                    ]
    return checks


def phase_stdio(
    args: argparse.Namespace, rec: Recorder, cores: tuple[int, int], logs: Path
) -> None:
    from common import SCENARIOS, CheckFailed
    from proc import Server, servers
    from stdio_load import StdioDriver

    keys = [k for k in STDIO_SCENARIOS if wanted(args, k)]
    with servers() as started:
        drivers: dict[str, StdioDriver] = {}
        for fw in args.frameworks:
            server = Server(
                server_command(fw, "stdio"), cores[0], stdio=True, log=logs / f"stdio-{fw}.log"
            )
            started.append(server)
            drivers[fw] = StdioDriver(server)
            for key in keys:
                try:
                    drivers[fw].exchange(SCENARIOS[key])
                except CheckFailed as exc:
                    for mode in STDIO_MODES:
                        rec.skip(f"stdio:{key}:{mode}", fw, f"wrong answer: {exc}"[:300])
        for rnd in range(args.rounds):
            log(f"stdio round {rnd + 1}/{args.rounds}")
            for key in keys:
                for mode, window in STDIO_MODES.items():
                    for fw in _rotated(args.frameworks, rnd):
                        run = functools.partial(drivers[fw].run, SCENARIOS[key], window=window)
                        rec.measure(
                            f"stdio:{key}:{mode}",
                            fw,
                            rnd,
                            run,
                            args.stdio_warmup,
                            args.stdio_duration,
                        )
        for fw, driver in drivers.items():  # still right after all that load?
            for key in keys:
                try:
                    driver.exchange(SCENARIOS[key])
                except CheckFailed as exc:
                    for mode in STDIO_MODES:
                        case = f"stdio:{key}:{mode}"
                        rec.skip(case, fw, f"wrong answer after the load: {exc}"[:300])
                        rec.samples = [
                            s for s in rec.samples if (s["case"], s["framework"]) != (case, fw)
                        ]
            driver.close()


def phase_inprocess(args: argparse.Namespace, rec: Recorder, cores: tuple[int, int]) -> None:
    import subprocess

    from proc import pin

    keys = [k for k in INPROCESS_SCENARIOS if wanted(args, k)]
    for rnd in range(args.rounds):
        log(f"in-process round {rnd + 1}/{args.rounds}")
        for fw in _rotated(args.frameworks, rnd):
            command = [
                envs.python_of(fw),
                str(HERE / "inprocess.py"),
                fw,
                "--duration",
                str(args.inprocess_duration),
                "--scenarios",
                ",".join(keys),
            ]
            try:
                out = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    check=True,
                    preexec_fn=pin(cores[0]),
                    timeout=600,
                )
            except subprocess.CalledProcessError as exc:
                for key in keys:
                    rec.skip(f"inprocess:{key}", fw, exc.stderr.strip()[-300:])
                continue
            results = json.loads(out.stdout.strip().splitlines()[-1])
            for key in keys:
                rec.add(f"inprocess:{key}", fw, rnd, results[key])


def _rotated(items: list[str], rnd: int) -> list[str]:
    """Interleave: each round starts with a different framework."""
    shift = rnd % len(items)
    return items[shift:] + items[:shift]


def main() -> None:
    args = parse_args()
    # SIGTERM ends the run like Ctrl-C: every server is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # servers start as deployed: with .pyc
    if not args.in_venv:
        envs.ensure_venvs(refresh=args.refresh_venvs)
        envs.ensure_wrk()
        # Re-run under the mcpserve venv: the load drivers then parse with orjson.
        python = envs.python_of("mcpserve")
        os.execv(python, [python, str(Path(__file__).resolve()), *sys.argv[1:], "--in-venv"])
    wrk = shutil.which("wrk") or envs.ensure_wrk()
    cores = envs.ensure_taskset_cores()
    os.sched_setaffinity(0, {cores[1]})  # this process drives the load: the other core
    args.out.mkdir(parents=True, exist_ok=True)
    logs = args.out / "logs"
    logs.mkdir(exist_ok=True)
    started = datetime.datetime.now(datetime.UTC)
    log(
        f"phases {args.phases}, {args.rounds} round(s), server core {cores[0]}, "
        f"load core {cores[1]}"
    )
    rec = Recorder()
    results: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "machine": envs.machine(),
        "mcpserve_commit": envs.checkout(),
        "versions": {name: envs.versions(name) for name in envs.REQUIREMENTS},
        "config": {k: v for k, v in vars(args).items() if k not in ("out", "in_venv")},
        "uvicorn": {"http": "httptools", "loop": "uvloop", "workers": 1},
    }
    import coldstart
    import memory

    if "import" in args.phases:
        log("import time")
        results["import"] = coldstart.import_times(args.frameworks, cores[0], args.start_runs)
    if "coldstart" in args.phases:
        log("cold start over stdio")
        results["coldstart"] = coldstart.cold_start(args.frameworks, cores[0], args.start_runs)
    if "inprocess" in args.phases:
        phase_inprocess(args, rec, cores)
    if "http" in args.phases:
        results["checks"] = phase_http(args, rec, wrk, cores, logs)
    if "stdio" in args.phases:
        phase_stdio(args, rec, cores, logs)
    if "memory" in args.phases and wanted(args, "echo"):
        log("memory")
        results["memory"] = memory.memory(
            args.frameworks,
            wrk,
            cores,
            logs,
            warmup=args.memory_warmup,
            requests=args.memory_requests,
        )
    if envs.checkout() != results["mcpserve_commit"]:
        results["mcpserve_commit"] += f" (changed to {envs.checkout()} during the run)"
    results["samples"] = rec.samples
    results["unsupported"] = rec.unsupported
    results["summary"] = summarize(rec.samples)
    results["seconds"] = round((datetime.datetime.now(datetime.UTC) - started).total_seconds())
    import report

    report.write(
        results, args.out, update_docs=args.docs == "yes" or (args.docs == "auto" and args.complete)
    )
    log(f"done in {results['seconds']} s: {args.out / 'latest.md'}")


if __name__ == "__main__":
    main()
