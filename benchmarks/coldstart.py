"""Start-up costs: spawn to first answer over stdio, and how long importing a framework takes.

* **cold start**: ``Popen`` of the server's stdio command, the ``tools/call echo`` request
  written at once, until its answer line is read: interpreter start, imports, building the
  server, and the first request. The server is pinned to the server core. One unmeasured
  start first, so that bytecode caches exist (as on any deployed machine).
* **import**: ``import <package>`` timed inside a fresh interpreter (``perf_counter``
  around the import), next to the bare interpreter start-up for reference. For the
  TypeScript SDK: ``await import("@modelcontextprotocol/server")`` timed inside a fresh
  ``node`` (``performance.now()`` around it), next to a bare ``node`` start.

Medians of ``runs`` starts; every start is a new process.
"""

from __future__ import annotations

import os
import select
import statistics
import subprocess
import time
from typing import Any

import envs
from common import SCENARIOS, check_exchange
from proc import pin
from stdio_load import loads

IMPORTS = {
    "mcpserve": "mcpserve",
    "official": "mcp",
    "fastmcp": "fastmcp",
    "typescript": "@modelcontextprotocol/server",
    "raw": "orjson",
}
_TIMER = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
_NODE_TIMER = (
    "const t = performance.now(); await import({module!r}); "
    "console.log((performance.now() - t) / 1000);"
)


def _first_answer(framework: str, core: int, timeout: float = 60.0) -> float:
    scenario = SCENARIOS["echo"]
    command = envs.server_command(framework, "stdio")
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        preexec_fn=pin(core),
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(scenario.body(1) + b"\n")
        process.stdin.flush()
        fd, data = process.stdout.fileno(), b""
        while b"\n" not in data:
            left = started + timeout - time.perf_counter()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError(f"{framework}: no answer within {timeout} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise RuntimeError(f"{framework}: exited before answering")
            data += chunk
        elapsed = time.perf_counter() - started
        check_exchange(scenario, [loads(data.split(b"\n", 1)[0])])
        return elapsed
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def cold_start(frameworks: list[str], core: int, runs: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {fw: [] for fw in frameworks}
    for fw in frameworks:
        _first_answer(fw, core)  # writes bytecode caches; not measured
    for _ in range(runs):  # interleaved, so a noisy moment hits every framework alike
        for fw in frameworks:
            samples[fw].append(_first_answer(fw, core))
    return {
        fw: {"median_ms": statistics.median(s) * 1000, "min_ms": min(s) * 1000, "runs": len(s)}
        for fw, s in samples.items()
    }


def _time_import(framework: str, module: str | None, core: int) -> tuple[float, float]:
    """(seconds the import took inside the process, wall seconds of the whole process)."""
    if framework == "typescript":  # an ES module, resolved from the SDK's node_modules
        code = _NODE_TIMER.format(module=module) if module else "console.log(0);"
        command = [envs.node_binary(), "--input-type=module", "-e", code]
    else:
        code = _TIMER.format(module=module) if module else "print(0.0)"
        command = [envs.python_of(framework), "-c", code]
    started = time.perf_counter()
    out = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=True,
        cwd=envs.NODE_DIR if framework == "typescript" else None,
        preexec_fn=pin(core),
    )
    return float(out.stdout.strip()), time.perf_counter() - started


def import_times(frameworks: list[str], core: int, runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for fw in frameworks:
        module = IMPORTS[fw]
        _time_import(fw, module, core)  # bytecode caches
        inside = [_time_import(fw, module, core)[0] for _ in range(runs)]
        bare = [_time_import(fw, None, core)[1] for _ in range(runs)]
        results[fw] = {
            "module": module,
            "median_ms": statistics.median(inside) * 1000,
            "min_ms": min(inside) * 1000,
            "interpreter_ms": statistics.median(bare) * 1000,
        }
    return results
