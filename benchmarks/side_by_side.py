"""Configurations of one server, measured side by side over HTTP under wrk.

For the benchmarks that ask what one option costs (metrics, middleware): each configuration
is one server process (a command and its environment), started once and pinned to the
first CPU, with wrk (``-t1``) and the calling script on the second, as in the suite's HTTP
phase. Before anything is measured every server answers the exact request wrk will send
(``httpload.validate``). Each server then gets a start-up warm-up, and every round runs all
of them back to back (a warm-up, then the measured window), each round starting with the
next one, so drift on a shared machine lands on every configuration alike. The results are
medians over the rounds, and ratios to the first configuration (the baseline), per round
too.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import envs
import httpload
from common import CheckFailed, Scenario
from proc import Server, free_port, servers
from recorder import log


@dataclass
class Config:
    """One server: a command (``{port}`` is replaced by its port) and its environment."""

    name: str
    label: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Measured:
    """Every configuration's samples (``httpload.run_wrk``'s dicts), in the given order."""

    configs: list[Config]
    samples: dict[str, list[dict[str, Any]]]

    def median(self, name: str, key: str) -> float:
        return statistics.median(sample[key] for sample in self.samples[name])

    def ratios(self, name: str) -> list[float]:
        """req/s of ``name`` over the baseline's, round by round."""
        base = self.samples[self.configs[0].name]
        return [
            mine["rps"] / theirs["rps"]
            for mine, theirs in zip(self.samples[name], base, strict=True)
        ]

    def table(self) -> str:
        """A Markdown table: req/s, the ratio to the baseline, latency, server CPU."""
        base = self.median(self.configs[0].name, "rps")
        lines = [
            "| configuration | req/s | vs baseline | p50 ms | p99 ms | server CPU µs/req |",
            "|---|---|---|---|---|---|",
        ]
        for config in self.configs:
            rps = self.median(config.name, "rps")
            lines.append(
                f"| {config.label} | {rps:,.0f} | {rps / base:.2f}x "
                f"| {self.median(config.name, 'p50_ms'):.2f} "
                f"| {self.median(config.name, 'p99_ms'):.2f} "
                f"| {self.median(config.name, 'cpu_us'):.0f} |"
            )
        return "\n".join(lines)


def compare(
    configs: list[Config],
    scenario: Scenario,
    *,
    out: Path,
    duration: float = 4.0,
    rounds: int = 3,
    warmup: float = 1.0,
    start_warmup: float = 2.0,
    connections: int = 16,
    scrub: tuple[str, ...] = (),
    check: Callable[[Mapping[str, int]], None] | None = None,
) -> Measured:
    """Start every configuration, check it, measure them all in rounds; stop them.

    ``scrub``: environment variables removed from every server's environment before its own
    are added (so a setting of the caller's shell cannot leak into the baseline). ``check``
    gets the ports by name once every server answered, and again after the last round."""
    wrk = envs.ensure_wrk()
    cores = envs.ensure_taskset_cores()
    os.sched_setaffinity(0, {cores[1]})
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    request = httpload.request_file(scenario, logs)
    samples: dict[str, list[dict[str, Any]]] = {config.name: [] for config in configs}
    inherited = {key: value for key, value in os.environ.items() if key not in scrub}
    with servers() as started:
        ports: dict[str, int] = {}
        running: dict[str, Server] = {}
        for config in configs:
            port = free_port()
            server = Server(
                [part.replace("{port}", str(port)) for part in config.command],
                cores[0],
                log=logs / f"{config.name}.log",
                env={**inherited, **config.env},
            )
            started.append(server)
            server.wait_http(port)
            httpload.validate(port, scenario)
            ports[config.name], running[config.name] = port, server
        if check is not None:
            check(ports)

        def run(name: str, seconds: float) -> dict[str, Any]:
            return httpload.run_wrk(
                wrk, running[name], ports[name], scenario, request,
                connections=connections, duration=seconds, core=cores[1],
            )  # fmt: skip

        for config in configs:
            with contextlib.suppress(CheckFailed, RuntimeError):
                run(config.name, start_warmup)
        names = [config.name for config in configs]
        for number in range(rounds):
            log(f"round {number + 1}/{rounds}")
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                run(name, warmup)
                samples[name].append(run(name, duration))
        if check is not None:
            check(ports)
    return Measured(configs, samples)
