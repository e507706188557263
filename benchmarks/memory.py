"""Memory of a served HTTP app (one uvicorn worker or one Node process, JSON responses,
``tools/call echo``).

For each framework, on a fresh server:

1. **idle**: RSS after start-up and one checked request, then one quiet second;
2. **warm-up**: ``warmup`` requests at 16 connections, RSS after (the baseline for growth);
3. **load**: ``requests`` more requests; RSS after, and the peak (``VmHWM``) as *loaded*;
4. **growth** = RSS after the load minus RSS after the warm-up.

RSS covers the server process and any descendants.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import envs
import httpload
from common import SCENARIOS
from proc import Server, free_port, servers


def _peak_mib(server: Server) -> float:
    total = 0
    for pid in server.pids():
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total / 1024


def memory(
    frameworks: list[str],
    wrk: str,
    cores: tuple[int, int],
    logs: Path,
    *,
    warmup: int,
    requests: int,
) -> dict[str, Any]:
    scenario = SCENARIOS["echo"]
    request = httpload.request_file(scenario, logs)
    results: dict[str, Any] = {}
    for fw in frameworks:
        port = free_port()
        command = envs.server_command(fw, "http", str(port))
        with servers() as started:
            server = Server(command, cores[0], log=logs / f"memory-{fw}.log")
            started.append(server)
            server.wait_http(port)
            httpload.validate(port, scenario)
            time.sleep(1.0)
            idle = server.rss()
            load = functools.partial(
                httpload.run_wrk,
                wrk,
                server,
                port,
                scenario,
                request,
                connections=16,
                duration=900,
                core=cores[1],
            )
            warm = load(stop_after=warmup)
            time.sleep(0.5)
            after_warmup = server.rss()
            run = load(stop_after=requests)
            time.sleep(0.5)
            after = server.rss()
            results[fw] = {
                "idle_mib": idle,
                "loaded_peak_mib": _peak_mib(server),
                "after_warmup_mib": after_warmup,
                "after_load_mib": after,
                "growth_mib": after - after_warmup,
                "warmup_requests": warm["requests"],
                "load_requests": run["requests"],
            }
    return results
