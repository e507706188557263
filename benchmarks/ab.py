#!/usr/bin/env python3
"""A/B: two versions of mcpserve side by side in one run, with a budget that can gate a change.

    python3 benchmarks/ab.py HEAD~1               # this checkout (B) against HEAD~1 (A)
    python3 benchmarks/ab.py main~1 main          # two commits, neither of them checked out
    python3 benchmarks/ab.py HEAD~1 --quick       # a check of the harness, in a few minutes
    python3 benchmarks/ab.py HEAD~1 --phases instructions,startup

A is a commit; B is another commit or, by default, this checkout as it is on disk (local
edits included). Each commit is checked out into a temporary git worktree. Both sides run
in the mcpserve benchmark venv (``envs.py``) with their own ``src`` first on
``PYTHONPATH``, and the harness (servers, drivers) is this checkout's: only mcpserve's code
differs.

Phases (``--phases``; the first four by default):

* ``instructions``: instructions per request, counted by cachegrind (``instructions.py``),
  in process, over stdio and over HTTP, for each scenario. Budget: 3% (``--budget``);
* ``startup``: the instructions of ``import mcpserve`` and of a cold start (the stdio server
  answering its first request and exiting). Budget: 5% (``--startup-budget``);
* ``http``: requests/s of the README's ``server.run("http")`` under wrk, 16 connections;
* ``stdio``: requests/s of ``server.run()`` over stdio, pipelined (64 requests in flight,
  ``stdio_load.py``);
* ``inprocess``: calls/s through the in-memory client (``inprocess.py``).

Counts repeat to about 0.1% for the same code and ``PYTHONHASHSEED`` (``instructions.py``),
but the seed decides how dicts and sets are laid out, and two versions of the code can
fare differently under one seed by up to about 1%. So each count is made once per side and
seed (``--hash-seeds``, three by default), and the medians are compared.

Timings on a shared machine move by tens of percent: they run in interleaved rounds (A, B,
then B, A, ...), so that a machine that slows down during the run weighs on both sides
alike, and are reported as medians with their range. They gate only when given a budget
(``--throughput-budget``), since noise alone can exceed any useful one.

The summary table gives each figure for A and B, B against A in percent, and whether the
change is within budget. Exit status: 0 when every figure is within budget, 1 when one is
not, 2 when something could not be measured (the reason in one line). Server logs, the
cachegrind summaries and ``ab.json`` (every sample) are written to ``results/ab/``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "results" / "ab"
sys.path.insert(0, str(HERE))

import envs  # noqa: E402
from common import SCENARIOS, CheckFailed  # noqa: E402

PHASES = ("instructions", "startup", "http", "stdio", "inprocess")
DEFAULT_PHASES = "instructions,startup,http,stdio"
COUNTED_PATHS = {"inprocess": "in process", "stdio": "stdio", "http": "HTTP"}
PIPELINED = 64
#: Settings not given on the command line: a full run, and --quick's.
FULL = {"rounds": 6, "duration": 3.0, "warmup": 2.0, "counts": "300,1300", "hash_seeds": "0,1,2"}
QUICK = {"rounds": 2, "duration": 1.0, "warmup": 1.0, "counts": "100,400", "hash_seeds": "0"}
CONNECTIONS = 16


@dataclass
class Figure:
    """One line of the summary: samples of each side and how much worse B may be."""

    title: str
    unit: str
    budget: float | None  # percent; None: reported, not gated
    higher_is_better: bool
    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)

    def add(self, side: str, value: float) -> None:
        (self.a if side == "A" else self.b).append(value)

    def change(self) -> float:
        """B against A in percent (of A's median)."""
        a, b = statistics.median(self.a), statistics.median(self.b)
        return (b - a) / a * 100

    def within_budget(self) -> bool:
        worse_by = -self.change() if self.higher_is_better else self.change()
        return self.budget is None or worse_by <= self.budget


def log(message: str) -> None:
    print(f"[ab] {message}", file=sys.stderr, flush=True)


def commit_of(ref: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ab.py: {ref!r} is not a commit of {REPO}; try e.g. HEAD~1 or main")
    return done.stdout.strip()


@contextlib.contextmanager
def checkout(commit: str) -> Iterator[Path]:
    """The source tree of ``commit``, in a temporary worktree removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="mcpserve-ab-") as folder:
        tree = Path(folder) / "tree"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(tree), commit],
            check=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False
            )


def environment(source: Path) -> dict[str, str]:
    env = dict(os.environ)  # main() has dropped PYTHONDONTWRITEBYTECODE: caches are written
    env["PYTHONPATH"] = os.pathsep.join([str(source / "src"), str(HERE / "servers")])
    return env


def count(args: argparse.Namespace, sides: dict[str, Path], figures: list[Figure]) -> None:
    """The instruction counts of each side, once per hash seed (they do not drift as timings
    do, but each seed lays dicts and sets out differently: the median evens that out)."""
    import instructions

    instructions.require_valgrind()
    low, high = args.counts
    for seed in args.hash_seeds:
        for side, source in sides.items():
            env = {**environment(source), "PYTHONHASHSEED": str(seed)}
            logs = OUT / side / f"seed-{seed}"
            logs.mkdir(parents=True, exist_ok=True)
            if "instructions" in args.phases:
                for path, where in COUNTED_PATHS.items():
                    for key in args.scenarios:
                        log(f"{side}, seed {seed}: instructions per request, {where}, {key}")
                        title = f"instructions per request: {where}, {key}"
                        figure = _figure(figures, title, "instructions", args.budget, False)
                        counted = instructions.per_request(
                            path, env, SCENARIOS[key], low, high, logs
                        )
                        figure.add(side, counted)
            if "startup" in args.phases:
                log(f"{side}, seed {seed}: instructions of start-up")
                title = "start-up: import mcpserve (over a bare interpreter)"
                figure = _figure(figures, title, "instructions", args.startup_budget, False)
                figure.add(side, instructions.import_cost(env, logs))
                title = "start-up: cold start (stdio server: first answer, exit)"
                figure = _figure(figures, title, "instructions", args.startup_budget, False)
                figure.add(side, instructions.cold_start(env, logs))


def _figure(
    figures: list[Figure], title: str, unit: str, budget: float | None, higher_is_better: bool
) -> Figure:
    for figure in figures:
        if figure.title == title:
            return figure
    figures.append(Figure(title, unit, budget, higher_is_better))
    return figures[-1]


class Served:
    """Each side's servers for the timed rounds, started once and pinned to the server core:
    the README's HTTP server (wrk on the load core) and the stdio server (this process,
    on the load core, drives it)."""

    def __init__(self, sides: dict[str, Path], args: argparse.Namespace, cores: tuple[int, int]):
        from proc import Server
        from stdio_load import StdioDriver

        self.cores = cores
        self.wrk = envs.ensure_wrk() if "http" in args.phases else ""
        self.http: dict[str, tuple[Server, int]] = {}
        self.stdio: dict[str, StdioDriver] = {}
        self.stdio_servers: list[Server] = []
        try:
            self._start(sides, args)
        except BaseException:
            self.stop()
            raise

    def _start(self, sides: dict[str, Path], args: argparse.Namespace) -> None:
        from proc import Server, free_port
        from stdio_load import StdioDriver

        cores = self.cores
        for side, source in sides.items():
            logs, env = OUT / side, environment(source)
            if "http" in args.phases:
                port = free_port()
                command = envs.server_command("mcpserve-readme", "http", str(port))
                server = Server(command, cores[0], log=logs / "timed-http.log", env=env)
                self.http[side] = (server, port)
                server.wait_http(port)
            if "stdio" in args.phases:
                command = envs.server_command("mcpserve", "stdio")
                log_file = logs / "timed-stdio.log"
                server = Server(command, cores[0], log=log_file, stdio=True, env=env)
                self.stdio_servers.append(server)
                self.stdio[side] = StdioDriver(server)
        for side in sides:  # each answer checked, then a warm-up: lazy imports, caches
            for key in args.scenarios:
                self.measure(side, "http", key, args.warmup)
                self.measure(side, "stdio", key, args.warmup)

    def measure(self, side: str, phase: str, key: str, duration: float) -> float | None:
        from httpload import request_file, run_wrk, validate

        scenario = SCENARIOS[key]
        if phase == "http" and side in self.http:
            server, port = self.http[side]
            validate(port, scenario)
            request = request_file(scenario, OUT / side)
            measured = run_wrk(
                self.wrk,
                server,
                port,
                scenario,
                request,
                connections=CONNECTIONS,
                duration=duration,
                core=self.cores[1],
            )
            return float(measured["rps"])
        if phase == "stdio" and side in self.stdio:
            driver = self.stdio[side]
            driver.exchange(scenario)
            return float(driver.run(scenario, duration, PIPELINED)["rps"])
        return None

    def stop(self) -> None:
        for driver in self.stdio.values():
            driver.close()
        for server in [*(server for server, _ in self.http.values()), *self.stdio_servers]:
            server.stop()


def in_process(source: Path, key: str, duration: float, core: int) -> float:
    from proc import pin

    script = [envs.python_of("mcpserve"), str(HERE / "inprocess.py"), "mcpserve"]
    done = subprocess.run(
        [*script, "--duration", str(duration), "--scenarios", key],
        env=environment(source),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        preexec_fn=pin(core),
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise CheckFailed(f"inprocess.py exited with {done.returncode}: {last}")
    return float(json.loads(done.stdout)[key]["rps"])


TIMED = {
    "http": f"throughput: HTTP, {CONNECTIONS} connections",
    "stdio": f"throughput: stdio, {PIPELINED} in flight",
    "inprocess": "throughput: in process",
}


def time_rounds(args: argparse.Namespace, sides: dict[str, Path], figures: list[Figure]) -> None:
    """Requests per second, in rounds that alternate which side goes first."""
    phases = [phase for phase in TIMED if phase in args.phases]
    if not phases:
        return
    cores = envs.ensure_taskset_cores()
    os.sched_setaffinity(0, {cores[1]})  # this process drives the load: the other core
    log(f"starting the servers; warm-up of {args.warmup:g} s per scenario")
    served = Served(sides, args, cores)
    try:
        for round_number in range(args.rounds):
            order = ("A", "B") if round_number % 2 == 0 else ("B", "A")
            for side in order:
                for phase in phases:
                    for key in args.scenarios:
                        unit = "calls/s" if phase == "inprocess" else "req/s"
                        title = f"{TIMED[phase]}, {key}"
                        figure = _figure(figures, title, unit, args.throughput_budget, True)
                        if phase == "inprocess":
                            rps = in_process(sides[side], key, args.duration, cores[0])
                        else:
                            measured = served.measure(side, phase, key, args.duration)
                            assert measured is not None
                            rps = measured
                        figure.add(side, rps)
            log(f"round {round_number + 1}/{args.rounds} done")
    finally:
        served.stop()


def _value(figure: Figure, samples: list[float]) -> str:
    median = statistics.median(samples)
    if median >= 1e7:  # a start-up count
        shown = [f"{value / 1e6:,.1f} M" for value in (median, min(samples), max(samples))]
    else:
        shown = [f"{value:,.0f}" for value in (median, min(samples), max(samples))]
    return shown[0] if len(samples) == 1 else f"{shown[0]} ({shown[1]}-{shown[2]})"


def summary(figures: list[Figure]) -> str:
    lines = [
        "| figure | unit | A | B | B vs A | budget | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for figure in figures:
        if figure.budget is None:
            budget, verdict = "not gated", "-"
        else:
            budget, verdict = f"{figure.budget:g}% worse", "ok" if figure.within_budget() else "OUT"
        lines.append(
            f"| {figure.title} | {figure.unit} | {_value(figure, figure.a)} | "
            f"{_value(figure, figure.b)} | {figure.change():+.2f}% | {budget} | {verdict} |"
        )
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base", help="A: the earlier commit, e.g. HEAD~1")
    parser.add_argument("head", nargs="?", help="B: a commit (default: this checkout, on disk)")
    parser.add_argument("--phases", default=DEFAULT_PHASES, help=f"of {','.join(PHASES)}")
    parser.add_argument("--scenarios", default="echo,model")
    parser.add_argument("--rounds", type=int, help="timed rounds (6; --quick: 2)")
    parser.add_argument("--duration", type=float, help="seconds per timed window (3; 1)")
    parser.add_argument("--warmup", type=float, help="seconds per server and scenario (2; 1)")
    parser.add_argument("--counts", help="LOW,HIGH exchanges counted per path (300,1300; 100,400)")
    parser.add_argument("--hash-seeds", help="PYTHONHASHSEED of each count (0,1,2; 0)")
    parser.add_argument("--budget", type=float, default=3.0, help="percent, per request")
    parser.add_argument("--startup-budget", type=float, default=5.0, help="percent")
    parser.add_argument("--throughput-budget", type=float, default=None, help="percent")
    parser.add_argument("--quick", action="store_true", help="a check of the harness")
    args = parser.parse_args()
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.phases = [phase for phase in args.phases.split(",") if phase]
    args.scenarios = [key for key in args.scenarios.split(",") if key]
    for phase in args.phases:
        if phase not in PHASES:
            parser.error(f"unknown phase {phase!r}; the phases are {', '.join(PHASES)}")
    for key in args.scenarios:
        if key not in SCENARIOS:
            parser.error(f"unknown scenario {key!r}; the scenarios are {', '.join(SCENARIOS)}")
    try:
        low, high = (int(part) for part in args.counts.split(","))
    except ValueError:
        parser.error(f"--counts takes two numbers, LOW,HIGH; got {args.counts!r}")
    if not 0 < low < high:
        parser.error(f"--counts: LOW must be above 0 and below HIGH; got {args.counts!r}")
    args.counts = (low, high)
    try:
        args.hash_seeds = [int(seed) for seed in args.hash_seeds.split(",")]
    except ValueError:
        parser.error(f"--hash-seeds takes numbers, e.g. 0,1,2; got {args.hash_seeds!r}")
    if any(not 0 <= seed <= 4294967295 for seed in args.hash_seeds):
        parser.error("--hash-seeds: PYTHONHASHSEED is between 0 and 4294967295")
    return args


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # servers stopped on the way out
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # servers start as deployed: with .pyc
    venv = envs.VENVS / "mcpserve"
    if Path(sys.prefix).resolve() != venv.resolve():
        envs.ensure_venvs(names=["mcpserve"])
        # Re-run in the venv: the stdio driver then parses with orjson, as run.py's does.
        python = envs.python_of("mcpserve")
        os.execv(python, [python, str(Path(__file__).resolve()), *sys.argv[1:]])
    base = commit_of(args.base)
    head = commit_of(args.head) if args.head else None
    commits = {"A": base, "B": head}
    shutil.rmtree(OUT, ignore_errors=True)
    for side in commits:
        (OUT / side).mkdir(parents=True)
    started = time.monotonic()
    figures: list[Figure] = []
    with contextlib.ExitStack() as trees:
        sides = {
            side: trees.enter_context(checkout(commit)) if commit else REPO
            for side, commit in commits.items()
        }
        try:
            if {"instructions", "startup"} & set(args.phases):
                count(args, sides, figures)
            time_rounds(args, sides, figures)
        except (CheckFailed, RuntimeError, subprocess.TimeoutExpired) as failed:
            log(f"could not measure: {failed} (logs in {OUT})")
            sys.exit(2)
    minutes = (time.monotonic() - started) / 60
    names = {
        "A": f"{args.base} ({base[:8]})",
        "B": f"{args.head} ({head[:8]})" if head else f"this checkout ({envs.checkout()})",
    }
    print(f"A = {names['A']}, B = {names['B']}; {minutes:.1f} minutes")
    if {"instructions", "startup"} & set(args.phases):
        print(
            f"instructions: {args.counts[0]} and {args.counts[1]} exchanges counted, once per "
            f"side and PYTHONHASHSEED ({','.join(map(str, args.hash_seeds))}), median (min-max)"
        )
    if set(TIMED) & set(args.phases):
        print(f"timings: {args.rounds} interleaved rounds of {args.duration:g} s, median (min-max)")
    print()
    print(summary(figures))
    out_of_budget = [figure.title for figure in figures if not figure.within_budget()]
    results = {
        "a": names["A"],
        "b": names["B"],
        "config": {key: value for key, value in vars(args).items() if key not in ("base", "head")},
        "seconds": round(time.monotonic() - started),
        "figures": [
            {**asdict(figure), "change_percent": figure.change(), "ok": figure.within_budget()}
            for figure in figures
        ],
    }
    (OUT / "ab.json").write_text(json.dumps(results, indent=2) + "\n")
    if out_of_budget:
        print(f"\nOUT OF BUDGET: {'; '.join(out_of_budget)}")
        sys.exit(1)
    print("\nevery figure within budget")


if __name__ == "__main__":
    try:
        main()
    except SystemExit as stop:
        if isinstance(stop.code, str):  # the one-line reason why nothing could be measured
            print(stop.code, file=sys.stderr)
            sys.exit(2)
        raise
