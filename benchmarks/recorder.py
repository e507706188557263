"""Measured samples: who, what, how fast, and how busy the rest of the machine was."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Sample = dict[str, Any]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Recorder:
    """Collects every measured sample, with how busy the rest of the machine was."""

    def __init__(self) -> None:
        self.samples: list[dict[str, Any]] = []
        self.unsupported: dict[str, dict[str, str]] = {}

    def skip(self, case: str, framework: str, reason: str) -> None:
        log(f"  {case} / {framework}: n/a ({reason})")
        self.unsupported.setdefault(case, {})[framework] = reason

    def measure(
        self,
        case: str,
        framework: str,
        rnd: int,
        fn: Callable[[float], Sample],
        warmup: float,
        duration: float,
    ) -> None:
        """``fn(warmup)`` unrecorded, then ``fn(duration)`` recorded, with the CPU that
        neither the server nor the load generator used during it (``other_cpu``, cores).

        Only the recorded window can fail the case: a server slower than the warm-up (a
        call that takes longer than it, under load) completes nothing in it, and is then
        measured over the longer window like any other."""
        if framework in self.unsupported.get(case, {}):
            return
        try:
            fn(warmup)
        except Exception as exc:
            log(f"  {case} / {framework}: warm-up completed nothing ({exc})"[:200])
        try:
            busy0, own0, t0 = _busy(), _own_cpu(), time.monotonic()
            sample = fn(duration)
        except Exception as exc:  # a failure under load is recorded, never measured around
            self.skip(case, framework, f"failed under load: {exc}"[:300])
            return
        wall = time.monotonic() - t0
        server = sample["cpu_us"] * sample["requests"] / 1e6
        other = (_busy() - busy0) - (_own_cpu() - own0) - server
        self.add(case, framework, rnd, {**sample, "other_cpu": max(0.0, other) / wall})

    def add(self, case: str, framework: str, rnd: int, sample: Sample) -> None:
        sample = {**sample, "case": case, "framework": framework, "round": rnd}
        self.samples.append(sample)
        log(
            f"  {case} / {framework}: {sample['rps']:,.0f} req/s, {sample['cpu_us']:.0f} us CPU/req"
        )


def _busy() -> float:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def summarize(samples: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Medians per case and framework, over rounds."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for sample in samples:
        grouped.setdefault((sample["case"], sample["framework"]), []).append(sample)
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for (case, fw), group in grouped.items():
        medians: dict[str, Any] = {"rounds": len(group)}
        for metric in ("rps", "p50_ms", "p99_ms", "cpu_us", "cpu_util", "other_cpu"):
            values = [s[metric] for s in group if s.get(metric) is not None]
            medians[metric] = statistics.median(values) if values else None
        summary.setdefault(case, {})[fw] = medians
    return summary
