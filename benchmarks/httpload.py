"""Streamable HTTP load: check a server's answer, then drive it with wrk.

The bytes wrk sends are exactly the bytes checked here first (same headers, same body), so
a server that answers a measured request wrongly is caught before anything is measured.
"""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from common import HERE, SCENARIOS, CheckFailed, JSONDict, Scenario, check_exchange, parse_sse
from proc import Cores, Measured, cpu_list

LUA = HERE / "wrk" / "mcp.lua"
PATH = "/mcp"


def request_file(scenario: Scenario, directory: Path) -> Path:
    """Headers and body of ``scenario`` in the format ``wrk/mcp.lua`` reads."""
    path = directory / f"request-{scenario.key}.txt"
    head = "\n".join(f"{name}: {value}" for name, value in scenario.headers())
    path.write_bytes(head.encode() + b"\n\n" + scenario.body())
    return path


def post(
    port: int,
    scenario: Scenario,
    params: JSONDict | None = None,
    connection: http.client.HTTPConnection | None = None,
) -> list[JSONDict]:
    """One POST; the JSON-RPC messages it answered with (SSE events or one JSON body).

    On ``connection`` when given (kept open: keep-alive, as wrk sends), else on a new one."""
    if params is None:
        body = scenario.body()
    else:
        message = {"jsonrpc": "2.0", "id": 2, "method": scenario.method, "params": params}
        body = json.dumps(message, separators=(",", ":")).encode()
    own = connection is None
    if connection is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", PATH, body, dict(scenario.headers()))
        response = connection.getresponse()
        data = response.read()
        kind = response.getheader("content-type", "")
    finally:
        if own:
            connection.close()
    if response.status != 200:
        raise CheckFailed(f"HTTP {response.status}: {data[:300]!r}")
    if kind.startswith("text/event-stream"):
        return parse_sse(data)
    if not kind.startswith("application/json"):
        raise CheckFailed(f"unexpected Content-Type {kind!r}")
    return [json.loads(data)]


def validate(
    port: int, scenario: Scenario, connection: http.client.HTTPConnection | None = None
) -> None:
    """Raise ``CheckFailed`` unless the server answers the measured request correctly."""
    result = check_exchange(scenario, post(port, scenario, connection=connection))
    if scenario.two_rounds:
        retry = post(port, scenario, scenario.retry_params(result), connection)
        check_exchange(scenario.second_round(), retry)


def run_wrk(
    wrk: str,
    server: Measured,
    port: int,
    scenario: Scenario,
    request: Path,
    *,
    connections: int,
    duration: float,
    core: Cores,
    stop_after: int = 0,
    mode: str | None = None,
) -> dict[str, Any]:
    """Run wrk pinned to ``core`` against ``server``; requests/s, latency, server CPU.

    ``mode`` is the Lua script's (``plain``, ``two_rounds``, ``unique_ids``); by default it
    follows the scenario."""
    mode = mode or ("two_rounds" if scenario.two_rounds else "plain")
    seconds = max(1, round(duration))
    command = [
        "taskset",
        "-c",
        cpu_list(core),
        wrk,
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "30s",
        "-s",
        str(LUA),
        f"http://127.0.0.1:{port}{PATH}",
        "--",
        str(request),
        mode,
        str(stop_after),
    ]
    cpu_before = server.cpu()
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if stop_after:
            assert process.stdout is not None
            for line in process.stdout:  # ends at BENCHSTOP, or when wrk exits
                if line.startswith("BENCHSTOP"):
                    process.send_signal(signal.SIGINT)
                    break
        stdout, stderr = process.communicate(timeout=seconds + 120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    wall = time.monotonic() - started
    cpu = server.cpu() - cpu_before
    if process.returncode != 0:
        raise RuntimeError(f"wrk failed ({process.returncode}): {stderr.strip()[:500]}")
    lines = [line for line in stdout.splitlines() if line.startswith("BENCHJSON ")]
    if not lines:
        raise RuntimeError(f"wrk printed no BENCHJSON line:\n{stdout[-2000:]}")
    stats: dict[str, Any] = json.loads(lines[-1][len("BENCHJSON ") :])
    errors = sum(
        stats[k]
        for k in (
            "connect_errors",
            "read_errors",
            "write_errors",
            "status_errors",
            "timeouts",
            "bad",
        )
    )
    requests = stats["requests"]
    if requests == 0:
        raise CheckFailed(f"no request completed: {stats}")
    if errors:
        raise CheckFailed(f"{errors} failed requests under load: {stats}")
    if scenario.two_rounds and (stats["ok"] == 0 or stats["asked"] == 0):
        raise CheckFailed(f"no complete input_required round trip under load: {stats}")
    elapsed = stats["duration_us"] / 1e6
    return {
        "requests": requests,
        "rps": requests / elapsed,
        "p50_ms": stats["p50_us"] / 1000,
        "p99_ms": stats["p99_us"] / 1000,
        "cpu_us": cpu * 1e6 / requests,
        "cpu_util": cpu / wall,
        "round_trips": stats["ok"] if scenario.two_rounds else None,
    }


def _raw_post(port: int, headers: dict[str, str], body: bytes) -> tuple[int, JSONDict | None]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", PATH, body, headers)
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, None


def checks_on(port: int) -> dict[str, bool]:
    """Which invalid variants of the echo request the server refuses (True = refused).

    Shows that the measured configuration validates arguments, headers and ``_meta``.
    """
    echo = SCENARIOS["echo"]
    good = dict(echo.headers())
    message = json.loads(echo.body())

    def refused(headers: dict[str, str], body: JSONDict) -> bool:
        status, answer = _raw_post(port, headers, json.dumps(body).encode())
        if status != 200 or answer is None or "error" in answer:
            return True
        return bool(answer.get("result", {}).get("isError"))

    bad_argument = json.loads(json.dumps(message))
    bad_argument["params"]["arguments"] = {"text": 123}
    no_meta = json.loads(json.dumps(message))
    del no_meta["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    no_name = {k: v for k, v in good.items() if k != "Mcp-Name"}
    return {
        "argument of the wrong type": refused(good, bad_argument),
        "Mcp-Name header missing": refused(no_name, message),
        "Mcp-Name header differs from the body": refused({**good, "Mcp-Name": "other"}, message),
        "_meta without clientCapabilities": refused(good, no_meta),
        "MCP-Protocol-Version differs from _meta": refused(
            {**good, "MCP-Protocol-Version": "2025-11-25"}, message
        ),
    }
