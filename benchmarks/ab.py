#!/usr/bin/env python3
"""A/B: this checkout against an earlier commit, side by side in one run.

    python3 benchmarks/ab.py HEAD~1                       # in process, echo and model
    python3 benchmarks/ab.py HEAD~1 --phase http --rounds 7

The earlier commit is checked out into a temporary git worktree; both run in the mcpserve
benchmark venv (``envs.py``), the earlier one with its ``src`` first on ``PYTHONPATH``, so
only mcpserve's code differs. Rounds alternate A, B, B, A, ... so that a machine that
slows down during the run weighs on both alike. Reported: per scenario, the median of
each side and the ratio B/A (above 1: this checkout is faster).

Phases: ``inprocess`` (``inprocess.py``: sequential calls through the in-memory client,
the most sensitive to a few instructions per request), ``http`` (the README's serving
path, ``server.run("http")``, under wrk with 16 connections, as ``run.py`` measures it)
and ``instructions``: the CPU instructions of one in-process call, counted by valgrind's
cachegrind (the difference between runs of 300 and 1,300 calls, so start-up cancels out).
Counting is deterministic to about 0.1% whatever else the machine does, where requests per
second on a shared machine move by tens of percent: it shows a change of a few
instructions per request that timing cannot. There, "B/A" is A's count over B's (above 1:
this checkout does less work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import envs  # noqa: E402


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """The source tree of ``ref``, in a temporary worktree removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="mcpserve-ab-") as folder:
        tree = Path(folder) / "tree"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(tree), ref],
            check=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False
            )


def environment(source: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Bytecode caches as any deployment has them: without, every run compiles both trees.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(source / "src"), str(HERE / "servers")])
    return env


def inprocess(source: Path, scenarios: str, duration: float) -> dict[str, float]:
    done = subprocess.run(
        [
            envs.python_of("mcpserve"),
            str(HERE / "inprocess.py"),
            "mcpserve",
            "--duration",
            str(duration),
            "--scenarios",
            scenarios,
        ],
        env=environment(source),
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    results = json.loads(done.stdout)
    return {name: result["rps"] for name, result in results.items()}


class ReadmeServers:
    """The README's serving path (``servers/mcpserve_readme_app.py``) of each side, started
    once, pinned to the first core; wrk runs on the second."""

    def __init__(self, sides: dict[str, Path], logs: Path) -> None:
        from common import SCENARIOS
        from httpload import request_file
        from proc import Server, free_port

        self.requests = {key: request_file(scenario, logs) for key, scenario in SCENARIOS.items()}
        self.servers: dict[str, tuple[Server, int]] = {}
        for side, source in sides.items():
            port = free_port()
            command = [
                envs.python_of("mcpserve"),
                str(HERE / "servers" / "mcpserve_readme_app.py"),
                "http",
                str(port),
            ]
            server = Server(command, 0, log=logs / f"server-{side}.log", env=environment(source))
            self.servers[side] = (server, port)
            server.wait_http(port)

    def measure(self, side: str, scenarios: str, duration: float) -> dict[str, float]:
        from common import SCENARIOS
        from httpload import run_wrk, validate

        server, port = self.servers[side]
        results = {}
        for key in scenarios.split(","):
            validate(port, SCENARIOS[key])
            measured = run_wrk(
                _wrk(),
                server,
                port,
                SCENARIOS[key],
                self.requests[key],
                connections=16,
                duration=duration,
                core=1,
            )
            results[key] = float(measured["rps"])
        return results

    def stop(self) -> None:
        for server, _ in self.servers.values():
            server.stop()


def _wrk() -> str:
    import shutil

    found = shutil.which("wrk")
    if found is None:
        raise SystemExit("the http phase needs wrk (Debian: apt-get install wrk)")
    return found


def instructions(source: Path, scenarios: str, _duration: float) -> dict[str, float]:
    """Instructions per in-process call, by scenario."""
    per_call = {}
    for scenario in scenarios.split(","):
        # Once uncounted first, so that both counted runs find the bytecode caches written.
        subprocess.run(
            [
                envs.python_of("mcpserve"),
                str(HERE / "inprocess.py"),
                "mcpserve",
                "--scenarios",
                scenario,
                "--count",
                "1",
            ],
            env=environment(source),
            capture_output=True,
            check=True,
            timeout=300,
        )
        counted = []
        for count in (300, 1300):
            done = subprocess.run(
                [
                    "valgrind",
                    "--tool=cachegrind",
                    "--cache-sim=no",
                    "--cachegrind-out-file=/dev/null",
                    envs.python_of("mcpserve"),
                    str(HERE / "inprocess.py"),
                    "mcpserve",
                    "--scenarios",
                    scenario,
                    "--count",
                    str(count),
                ],
                env=environment(source),
                capture_output=True,
                text=True,
                check=True,
                timeout=900,
            )
            [line] = [line for line in done.stderr.splitlines() if "I   refs:" in line]
            counted.append(int(line.split()[-1].replace(",", "")))
        per_call[scenario] = (counted[1] - counted[0]) / 1000
    return per_call


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base", help="the earlier commit (A), e.g. HEAD~1")
    parser.add_argument(
        "--phase", choices=["inprocess", "http", "instructions"], default="inprocess"
    )
    parser.add_argument("--scenarios", default="echo,model")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=float, default=3.0)
    args = parser.parse_args()
    envs.ensure_venvs(names=["mcpserve"])
    samples: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    with (
        checkout(args.base) as base,
        tempfile.TemporaryDirectory(prefix="mcpserve-ab-logs-") as logs,
    ):
        sides = {"A": base, "B": REPO}
        readme = ReadmeServers(sides, Path(logs)) if args.phase == "http" else None
        try:
            for round_number in range(args.rounds):
                order = ("A", "B") if round_number % 2 == 0 else ("B", "A")
                for side in order:
                    if args.phase == "instructions":
                        measured = instructions(sides[side], args.scenarios, args.duration)
                    elif readme is None:
                        measured = inprocess(sides[side], args.scenarios, args.duration)
                    else:
                        measured = readme.measure(side, args.scenarios, args.duration)
                    for scenario, rps in measured.items():
                        samples[side].setdefault(scenario, []).append(rps)
                print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            if readme is not None:
                readme.stop()
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    unit = "instructions per call" if args.phase == "instructions" else "requests per second"
    print(
        f"A = {args.base}, B = this checkout ({head}); {args.phase}, {args.rounds} rounds "
        f"of {args.duration} s; {unit}, median (min-max)"
    )
    for scenario in samples["A"]:
        a, b = samples["A"][scenario], samples["B"][scenario]
        ratio = statistics.median(b) / statistics.median(a)
        if args.phase == "instructions":
            ratio = 1 / ratio
        print(
            f"  {scenario:10} A {statistics.median(a):9.0f} ({min(a):.0f}-{max(a):.0f})   "
            f"B {statistics.median(b):9.0f} ({min(b):.0f}-{max(b):.0f})   B/A {ratio:.3f}"
        )


if __name__ == "__main__":
    main()
