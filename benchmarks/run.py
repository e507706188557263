#!/usr/bin/env python3
"""mcpserve benchmark suite: mcpserve (tuned, and as the README serves it) vs the official
``mcp`` SDK vs FastMCP vs the official TypeScript SDK vs a raw ceiling; and mcpserve as a
cluster (several processes behind haproxy, sessions in Redis).

    python3 benchmarks/run.py            # the full suite (about 30 minutes on 2 cores)
    python3 benchmarks/run.py --quick    # a sanity run: 1 round, short windows

Sets up what it needs (a venv per Python framework under benchmarks/.venvs, the TypeScript
SDK under benchmarks/.node, wrk via apt), checks every server's answers, measures in
interleaved rounds, and writes benchmarks/results/latest.{json,md}; a full run also
rewrites docs/performance.md. See benchmarks/README.md for the scenarios and the method.
"""

from __future__ import annotations

import argparse
import contextlib
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

FRAMEWORKS = ["mcpserve", "mcpserve-readme", "official", "fastmcp", "typescript", "raw"]
PHASES = ["import", "coldstart", "inprocess", "http", "stdio", "memory", "cluster"]
#: Phases a framework sits out, and why: the report says so under the phase's table.
_README_SAME = "the same as mcpserve's: the README path differs only in how HTTP is served"
NOT_RUN: dict[str, dict[str, str]] = {
    "mcpserve-readme": {
        "import": _README_SAME,
        "coldstart": _README_SAME + " (over stdio it is `server.run()`, as for mcpserve)",
        "inprocess": _README_SAME,
        "stdio": _README_SAME + " (over stdio it is `server.run()`, as for mcpserve)",
    },
    "typescript": {
        "inprocess": "the phase drives each framework's own in-memory client from Python",
    },
}
#: Frameworks that switch to SSE per request (one server serves every HTTP scenario).
SSE_PER_REQUEST = {"mcpserve", "mcpserve-readme", "raw"}
#: Frameworks whose measured HTTP configuration must refuse every invalid variant.
MUST_REFUSE = ("mcpserve", "mcpserve-readme")
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
    parser.add_argument(
        "--phases",
        help=f"comma list of {','.join(PHASES)} (default all; cluster only when haproxy and "
        "redis-server are installed)",
    )
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument(
        "--refresh-venvs",
        action="store_true",
        help="reinstall the latest mcp 2.x / fastmcp 4.x (and the pinned TypeScript SDK)",
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
    args.start_warmup = 5.0 if full else 2.0
    args.stdio_duration = args.duration / 2 if full else 0.5
    args.stdio_warmup = 0.5 if full else 0.2
    args.inprocess_duration = 2.0 if full else 0.5
    args.start_runs = 10 if full else 3
    args.memory_warmup, args.memory_requests = (10_000, 100_000) if full else (2_000, 10_000)
    defaults = default_phases()
    args.phases = args.phases.split(",") if args.phases else defaults
    args.scenarios = args.scenarios.split(",") if args.scenarios else None
    args.frameworks = args.frameworks.split(",")
    checked = (("phase", args.phases, PHASES), ("framework", args.frameworks, FRAMEWORKS))
    for name, given, known in checked:
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"unknown {name}(s) {', '.join(unknown)}; known: {', '.join(known)}")
    args.complete = (
        full
        and set(args.phases) == set(defaults)
        and args.scenarios is None
        and args.frameworks == FRAMEWORKS
    )
    return args


def default_phases() -> list[str]:
    """Every phase; ``cluster`` only where haproxy and redis-server are installed."""
    if _missing_cluster_tools():
        return [phase for phase in PHASES if phase != "cluster"]
    return list(PHASES)


def _missing_cluster_tools() -> list[str]:
    return [tool for tool, path in envs.cluster_tools().items() if path is None]


def runs_in(args: argparse.Namespace, phase: str) -> list[str]:
    """The requested frameworks that take part in ``phase``."""
    return [fw for fw in args.frameworks if phase not in NOT_RUN.get(fw, {})]


def not_run(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """Per phase run, the requested frameworks that sat it out, with the reason."""
    found: dict[str, dict[str, str]] = {}
    for fw in args.frameworks:
        for phase, reason in NOT_RUN.get(fw, {}).items():
            if phase in args.phases:
                found.setdefault(phase, {})[fw] = reason
    return found


def wanted(args: argparse.Namespace, scenario: str) -> bool:
    return args.scenarios is None or scenario in args.scenarios


# -- phases -----------------------------------------------------------------------------------


def phase_http(
    args: argparse.Namespace, rec: Recorder, wrk: str, cores: tuple[int, int], logs: Path
) -> dict[str, Any]:
    import httpload
    from common import SCENARIOS, CheckFailed
    from proc import Server, free_port, servers

    cases = [c for c in HTTP_CASES if wanted(args, c[0])]
    frameworks = runs_in(args, "http")
    checks: dict[str, Any] = {}
    with servers() as started:
        ports: dict[tuple[str, bool], tuple[Server, int]] = {}
        for fw in frameworks:
            for sse in sorted({False} | {sse for _, _, sse in cases}):
                if sse and fw in SSE_PER_REQUEST:  # they pick SSE per request themselves
                    ports[(fw, True)] = ports[(fw, False)]
                    continue
                port = free_port()
                extra = ["--sse"] if sse else []
                server = Server(
                    envs.server_command(fw, "http", str(port), *extra),
                    cores[0],
                    log=logs / f"http-{fw}{'-sse' if sse else ''}.log",
                )
                started.append(server)
                server.wait_http(port)
                ports[(fw, sse)] = (server, port)
            checks[fw] = httpload.checks_on(ports[(fw, False)][1])
        for fw in MUST_REFUSE:
            if fw in checks and not all(checks[fw].values()):
                raise SystemExit(f"{fw}'s measured configuration skips checks: {checks[fw]}")
        requests = {key: httpload.request_file(SCENARIOS[key], logs) for key, _, _ in cases}
        for key, conns, sse in cases:
            for fw in frameworks:
                try:
                    httpload.validate(ports[(fw, sse)][1], SCENARIOS[key])
                except CheckFailed as exc:
                    rec.skip(f"http:{key}:c{conns}", fw, f"wrong answer: {exc}"[:300])
        log(f"HTTP start-up warm-up: {args.start_warmup:g} s per server")
        for (fw, sse), (server, port) in ports.items():
            if sse and fw in SSE_PER_REQUEST:
                continue  # the same server as the JSON one
            warm = SCENARIOS["progress" if sse else "echo"]
            with contextlib.suppress(CheckFailed, RuntimeError):  # the rounds will say
                httpload.run_wrk(
                    wrk,
                    server,
                    port,
                    warm,
                    httpload.request_file(warm, logs),
                    connections=16,
                    duration=args.start_warmup,
                    core=cores[1],
                )
        for rnd in range(args.rounds):
            log(f"HTTP round {rnd + 1}/{args.rounds}")
            for key, conns, sse in cases:
                for fw in _rotated(frameworks, rnd):
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
            for fw in frameworks:
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
    frameworks = runs_in(args, "stdio")
    with servers() as started:
        drivers: dict[str, StdioDriver] = {}
        for fw in frameworks:
            server = Server(
                envs.server_command(fw, "stdio"),
                cores[0],
                stdio=True,
                log=logs / f"stdio-{fw}.log",
            )
            started.append(server)
            drivers[fw] = StdioDriver(server)
            for key in keys:
                try:
                    drivers[fw].exchange(SCENARIOS[key])
                except CheckFailed as exc:
                    for mode in STDIO_MODES:
                        rec.skip(f"stdio:{key}:{mode}", fw, f"wrong answer: {exc}"[:300])
            with contextlib.suppress(CheckFailed):  # start-up warm-up; the rounds will say
                drivers[fw].run(SCENARIOS["echo"], args.start_warmup / 2, STDIO_MODES["pipelined"])
        for rnd in range(args.rounds):
            log(f"stdio round {rnd + 1}/{args.rounds}")
            for key in keys:
                for mode, window in STDIO_MODES.items():
                    for fw in _rotated(frameworks, rnd):
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
        for fw in _rotated(runs_in(args, "inprocess"), rnd):
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
    shift = rnd % len(items) if items else 0
    return items[shift:] + items[:shift]


def main() -> None:
    args = parse_args()
    # SIGTERM ends the run like Ctrl-C: every server is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # servers start as deployed: with .pyc
    missing = _missing_cluster_tools()
    if "cluster" in args.phases and missing:
        raise SystemExit(
            f"the cluster phase needs {' and '.join(missing)}: install the Debian "
            f"package(s) (`apt-get install -y {' '.join(missing)}`) or leave the phase out"
        )
    if not args.in_venv:
        if missing:
            log(f"cluster phase left out: {' and '.join(missing)} not installed")
        envs.ensure_venvs(refresh=args.refresh_venvs)
        if "typescript" in args.frameworks:
            envs.ensure_node(refresh=args.refresh_venvs)
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
        "not_run": not_run(args),
    }
    if "typescript" in args.frameworks:
        results["versions"]["typescript"] = envs.node_versions()
    import coldstart
    import memory

    if "import" in args.phases:
        log("import time")
        fws = runs_in(args, "import")
        results["import"] = coldstart.import_times(fws, cores[0], args.start_runs)
    if "coldstart" in args.phases:
        log("cold start over stdio")
        fws = runs_in(args, "coldstart")
        results["coldstart"] = coldstart.cold_start(fws, cores[0], args.start_runs)
    if "inprocess" in args.phases:
        phase_inprocess(args, rec, cores)
    if "http" in args.phases:
        results["checks"] = phase_http(args, rec, wrk, cores, logs)
    if "stdio" in args.phases:
        phase_stdio(args, rec, cores, logs)
    if "memory" in args.phases and wanted(args, "echo"):
        log("memory")
        results["memory"] = memory.memory(
            runs_in(args, "memory"),
            wrk,
            cores,
            logs,
            warmup=args.memory_warmup,
            requests=args.memory_requests,
        )
    if "cluster" in args.phases:
        import cluster

        log("cluster")
        results["cluster"] = cluster.cluster(args, wrk, cores, logs)
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
