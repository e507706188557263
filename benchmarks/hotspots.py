#!/usr/bin/env python3
"""Where mcpserve spends its time on the hot paths, by cProfile.

    python3 benchmarks/hotspots.py [--duration 8] [--docs]

Runs the mcpserve benchmark server under cProfile (``servers/profiled.py``), pinned to the
server core, drives ``tools/call echo`` with the suite's load (wrk at 16 connections over
HTTP; 64 in flight over stdio) from the other core, and profiles only the measured window.
Writes benchmarks/results/hotspots.md: the top functions by self time, each with its share
of the profiled time, its calls per request and its self microseconds per request, and the
raw ``.prof`` files next to it. With ``--docs`` the tables also go into
docs/performance.md.

A deterministic profiler adds a fixed cost to every Python call, so small functions called
often look heavier than they are and absolute times are inflated (throughput under the
profiler is printed for scale); call counts are exact. A sampling profiler (py-spy) was
tried first and dropped: on this kind of VM its samples pile up on system-call exits.
"""

from __future__ import annotations

import argparse
import os
import pstats
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import envs  # noqa: E402

TOP = 20
START, END = "<!-- hotspots:start -->", "<!-- hotspots:end -->"
TITLES = {
    "http": "HTTP `tools/call echo`, wrk at 16 connections",
    "stdio": "stdio `tools/call echo`, pipelined (64 in flight)",
}


def _command(out: Path, *args: str) -> list[str]:
    app = HERE / "servers" / "mcpserve_app.py"
    return [envs.python_of("mcpserve"), str(HERE / "servers" / "profiled.py"), str(out),
            str(app), *args]  # fmt: skip


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no profile written to {path}")
        time.sleep(0.1)


def profile_http(wrk: str, cores: tuple[int, int], seconds: int, out: Path) -> dict[str, Any]:
    import httpload
    from common import SCENARIOS
    from proc import Server, free_port

    port = free_port()
    scenario = SCENARIOS["echo"]
    with Server(_command(out, "http", str(port)), cores[0], log=out.with_suffix(".log")) as server:
        server.wait_http(port)
        httpload.validate(port, scenario)
        request = httpload.request_file(scenario, out.parent)
        load = {"connections": 16, "core": cores[1]}
        httpload.run_wrk(wrk, server, port, scenario, request, duration=2, **load)
        os.kill(server.pid, signal.SIGUSR1)
        result = httpload.run_wrk(wrk, server, port, scenario, request, duration=seconds, **load)
        os.kill(server.pid, signal.SIGUSR2)
        _wait_for(out)
    return result


def profile_stdio(cores: tuple[int, int], seconds: int, out: Path) -> dict[str, Any]:
    from common import SCENARIOS
    from proc import Server
    from stdio_load import StdioDriver

    with Server(
        _command(out, "stdio"), cores[0], stdio=True, log=out.with_suffix(".log")
    ) as server:
        driver = StdioDriver(server)
        driver.exchange(SCENARIOS["echo"])
        driver.run(SCENARIOS["echo"], 2, 64)
        os.kill(server.pid, signal.SIGUSR1)
        time.sleep(0.2)
        result = driver.run(SCENARIOS["echo"], seconds, 64)
        os.kill(server.pid, signal.SIGUSR2)
        _wait_for(out)
        driver.close()
    return result


def _where(file: str, line: int, name: str) -> str:
    if file == "~":
        return name.strip("<>")
    for marker in ("site-packages/", "/src/", "/lib/python3.11/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{name} ({file}:{line})"


def table(prof: Path, requests: int) -> list[str]:
    stats = pstats.Stats(str(prof))
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in entries.values())
    rows = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)[:TOP]
    lines = ["| self % | µs/request | calls/request | function |", "|---|---|---|---|"]
    for (file, line, name), (_cc, calls, tottime, _cum, _callers) in rows:
        lines.append(
            f"| {100 * tottime / total:.1f} | {tottime * 1e6 / requests:.2f} | "
            f"{calls / requests:.2f} | `{_where(file, line, name)}` |"
        )
    return lines


def import_table(core: int) -> list[str]:
    """``python -X importtime -c "import mcpserve"``: the costliest imports, self and total."""
    command = [envs.python_of("mcpserve"), "-X", "importtime", "-c", "import mcpserve"]
    subprocess.run(command, capture_output=True, check=True)  # bytecode caches first
    runs = []
    for _ in range(5):
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=lambda: os.sched_setaffinity(0, {core}),
        )
        rows = []
        for line in done.stderr.splitlines()[1:]:
            own, total, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
            rows.append((name, int(own), int(total)))
        runs.append(rows)
    best = min(runs, key=lambda rows: max(total for _, _, total in rows))
    total_us = max(total for _, _, total in best)
    lines = [
        f"`import mcpserve`: {total_us / 1000:.0f} ms in the fastest of 5 runs "
        "(`-X importtime`, which adds a little).",
        "",
        "| self ms | total ms | module |",
        "|---|---|---|",
    ]
    for name, own, total in sorted(best, key=lambda row: row[1], reverse=True)[:12]:
        lines.append(f"| {own / 1000:.1f} | {total / 1000:.1f} | `{name}` |")
    lines += ["", "| total ms | mcpserve module (cumulative, with what it imports) |", "|---|---|"]
    ours = [row for row in best if row[0].startswith("mcpserve")]
    for name, _own, total in sorted(ours, key=lambda row: row[2], reverse=True)[:10]:
        lines.append(f"| {total / 1000:.1f} | `{name}` |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--docs", action="store_true", help="also update docs/performance.md")
    args = parser.parse_args()
    envs.ensure_venvs()
    wrk = envs.ensure_wrk()
    cores = envs.ensure_taskset_cores()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.sched_setaffinity(0, {cores[1]})
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    results = {}
    for key in TITLES:
        prof = out / f"hotspots-{key}.prof"
        prof.unlink(missing_ok=True)
        if key == "http":
            result = profile_http(wrk, cores, args.duration, prof)
        else:
            result = profile_stdio(cores, args.duration, prof)
        results[key] = (prof, result)
    lines: list[str] = [f"mcpserve commit {envs.checkout()}.", ""]
    for key, (prof, result) in results.items():
        lines += [
            f"#### {TITLES[key]}",
            "",
            f"{result['requests']:,} requests profiled; {result['rps']:,.0f} req/s and "
            f"{result['cpu_us']:.0f} µs of server CPU per request under the profiler.",
            "",
            *table(prof, result["requests"]),
            "",
        ]
    lines += ["#### Import", "", *import_table(cores[0]), ""]
    text = "\n".join(lines)
    (out / "hotspots.md").write_text("# mcpserve hot spots (cProfile)\n\n" + text)
    print(text)
    if args.docs:
        docs = HERE.parent / "docs" / "performance.md"
        current = docs.read_text()
        if START in current and END in current:
            head, rest = current.split(START, 1)
            docs.write_text(f"{head}{START}\n{text}{END}{rest.split(END, 1)[1]}")


if __name__ == "__main__":
    main()
