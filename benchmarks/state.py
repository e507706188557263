"""State and limits: what ``ctx.store`` and a tool's ``timeout=``/``max_concurrency=`` cost.

mcpserve only, in process through ``server.handle`` (the dispatcher every transport uses,
without a transport), strictly sequential awaited calls after a warm-up, each for
``--duration`` seconds:

* **async tool, no limit**: ``tools/call`` of an ``async def`` that returns its argument;
* **with timeout=30**, **with max_concurrency=8**, **with both**: the same function, bounded;
* **ctx.store.get** and **ctx.store.set**: the same tool reading (or writing) one JSON value
  of the caller's, on each store: ``memory://``, ``sqlite:///`` on a temporary file,
  ``redis://`` on a throwaway redis-server (persistence off) on 127.0.0.1.

Run it in the mcpserve venv (``run.py`` builds it)::

    benchmarks/.venvs/mcpserve/bin/python benchmarks/state.py [--duration 3]

It prints a Markdown table of calls per second and CPU microseconds per call.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpserve import Context, Server

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
WARMUP = 200


def build(store: str) -> Server:
    server = Server("bench-state", store=store, server_info_in_results=False)

    @server.tool
    async def echo(text: str) -> str:
        return text

    @server.tool(timeout=30)
    async def echo_timeout(text: str) -> str:
        return text

    @server.tool(max_concurrency=8)
    async def echo_narrow(text: str) -> str:
        return text

    @server.tool(timeout=30, max_concurrency=8)
    async def echo_both(text: str) -> str:
        return text

    @server.tool
    async def read_choice(ctx: Context) -> str:
        return str(await ctx.store.get("choice", default="none"))

    @server.tool
    async def write_choice(text: str, ctx: Context) -> str:
        await ctx.store.set("choice", {"text": text})
        return text

    return server


async def rate(server: Server, tool: str, duration: float) -> tuple[float, float]:
    """Calls per second and CPU microseconds per call of ``tool``, one call at a time."""

    def message(n: int) -> dict[str, Any]:
        arguments = {} if tool == "read_choice" else {"text": "hi"}
        params = {"name": tool, "arguments": arguments, "_meta": META}
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}

    for n in range(WARMUP):
        answer = await server.handle(message(n))
        assert answer is not None, tool
        assert "result" in answer, answer
    calls, started, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - started < duration:
        await server.handle(message(calls))
        calls += 1
    elapsed, used = time.perf_counter() - started, time.process_time() - cpu
    return calls / elapsed, used / calls * 1e6


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def measure(duration: float, directory: Path, redis_url: str | None) -> list[str]:
    rows: list[str] = []
    stores: list[tuple[str, str]] = [("memory", "memory://")]
    stores.append(("sqlite", f"sqlite:///{directory / 'state.db'}"))
    if redis_url is not None:
        stores.append(("redis", redis_url))
    limits: list[tuple[str, str]] = [
        ("async tool, no limit", "echo"),
        ("with timeout=30", "echo_timeout"),
        ("with max_concurrency=8", "echo_narrow"),
        ("with both", "echo_both"),
    ]
    server = build("memory://")
    async with server.running():
        for label, tool in limits:
            per_second, cpu = await rate(server, tool, duration)
            rows.append(f"| {label} | {per_second:,.0f} | {cpu:.1f} |")
    for name, url in stores:
        server = build(url)
        async with server.running():
            for label, tool in (
                ("ctx.store.set", "write_choice"),
                ("ctx.store.get", "read_choice"),
            ):
                per_second, cpu = await rate(server, tool, duration)
                rows.append(f"| {label}, {name} | {per_second:,.0f} | {cpu:.1f} |")
    return rows


def with_redis(run: Callable[[str | None], list[str]]) -> list[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        return run(None)
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        return run(f"redis://127.0.0.1:{port}/0")
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=3.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        rows = with_redis(lambda url: asyncio.run(measure(args.duration, Path(directory), url)))
    print("| call | calls/s | µs CPU per call |")
    print("|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
