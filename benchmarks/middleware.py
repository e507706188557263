"""The per-request cost of each ``mcpserve.middleware`` object, in process and over HTTP.

``python benchmarks/middleware.py [--calls N] [--rounds R] [--redis redis://127.0.0.1:6379/0]``
sends ``tools/call echo`` (a plain function, the suite's request) through
``Server.handle``, the dispatcher every transport uses, strictly one after another, with
no middleware and with each middleware alone, and prints a Markdown table: microseconds
per call (the median of the rounds) and the difference from none. Transports add the same
cost to every row, so the difference is the middleware's. A configuration on Redis runs
only when ``--redis`` names one (a real server: its round trips are the cost).

``--http`` measures what users run instead: one server process per configuration
(``servers/mcpserve_middleware_app.py``, served with ``server.run("http")``), under wrk at
16 connections, side by side (``side_by_side.py``), and prints req/s and the ratio to no
middleware. Run it in a venv with mcpserve's ``http`` extra (``redis`` too for
``--redis``), from the repository's root::

    .venv/bin/python benchmarks/middleware.py --http [--duration 4] [--rounds 3] [--redis URL]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from mcpserve import CachePolicy, CallNext, Context, Server
from mcpserve.middleware import (
    RateLimit,
    ResponseCache,
    ResponseSizeLimit,
    StructuredLogging,
    Timing,
)

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def passthrough(ctx: Context, call_next: CallNext) -> dict[str, Any]:
    return await call_next()


def configurations(redis: str | None) -> dict[str, Callable[[], Any]]:
    quiet = logging.getLogger("bench.requests")
    quiet.addHandler(logging.NullHandler())
    quiet.setLevel(logging.INFO)
    quiet.propagate = False
    made: dict[str, Callable[[], Any]] = {
        "none": lambda: None,
        "a pass-through function": lambda: passthrough,
        "RateLimit (memory)": lambda: RateLimit(rate=1e9, burst=10**9),
        "ResponseCache (memory), a hit": lambda: ResponseCache(ttl=60),
        "StructuredLogging (INFO, to a handler)": lambda: StructuredLogging(quiet),
        "Timing": lambda: Timing(),
        "ResponseSizeLimit": lambda: ResponseSizeLimit(max_bytes=1_000_000),
    }
    if redis is not None:
        made["RateLimit (Redis)"] = lambda: RateLimit(rate=1e9, burst=10**9, store=redis)
        made["ResponseCache (Redis), a hit"] = lambda: ResponseCache(ttl=60, store=redis)
    return made


def server_with(middleware: Any) -> Server:
    server = Server("bench", cache=CachePolicy(60_000))

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        return text

    if middleware is not None:
        server.middleware(middleware)
    return server


async def per_call(server: Server, calls: int) -> float:
    """Microseconds per call, over ``calls`` sequential calls after a warm-up."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": META},
    }
    for _ in range(200):
        await server.handle(message)
    started = time.perf_counter()
    for _ in range(calls):
        answer = await server.handle(message)
    elapsed = time.perf_counter() - started
    assert answer is not None
    assert answer["result"]["content"] == [{"type": "text", "text": "hello"}], answer
    return elapsed / calls * 1e6


def over_http(args: argparse.Namespace) -> None:
    import sys
    from pathlib import Path

    from common import SCENARIOS
    from side_by_side import Config, compare

    here = Path(__file__).resolve().parent
    app = [sys.executable, str(here / "servers" / "mcpserve_middleware_app.py"), "http", "{port}"]
    modes = [
        ("none", "no middleware (baseline)"),
        ("passthrough", "a pass-through function (the chain itself)"),
        ("rate-limit", "`RateLimit` (memory)"),
        ("cache", "`ResponseCache` (memory), a hit"),
        ("logging", "`StructuredLogging` (INFO, to a file)"),
        ("timing", "`Timing`"),
        ("size-limit", "`ResponseSizeLimit`"),
    ]
    configs = [Config(mode, label, app, {"BENCH_MIDDLEWARE": mode}) for mode, label in modes]
    if args.redis is not None:
        for mode, label in (("rate-limit", "`RateLimit` (Redis)"),
                            ("cache", "`ResponseCache` (Redis), a hit")):  # fmt: skip
            env = {"BENCH_MIDDLEWARE": mode, "BENCH_MIDDLEWARE_STORE": args.redis}
            configs.append(Config(f"{mode}-redis", label, app, env))
    measured = compare(
        configs,
        SCENARIOS["echo"],
        out=here / "results",
        duration=args.duration,
        rounds=args.rounds,
        scrub=("BENCH_MIDDLEWARE", "BENCH_MIDDLEWARE_STORE", "MCPSERVE_REDIS_URL"),
    )
    print(measured.table())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis", default=None)
    parser.add_argument("--http", action="store_true", help="measure over HTTP under wrk")
    parser.add_argument("--duration", type=float, default=4.0, help="--http: seconds each")
    args = parser.parse_args()
    if args.http:
        over_http(args)
        return
    results: dict[str, float] = {}
    for name, make in configurations(args.redis).items():
        rounds = []
        for _ in range(args.rounds):
            server = server_with(make())
            async with server.running():
                rounds.append(await per_call(server, args.calls))
        results[name] = statistics.median(rounds)
    base = results["none"]
    print("| middleware | µs per call | added µs |")
    print("|---|---|---|")
    for name, micros in results.items():
        print(f"| {name} | {micros:.1f} | {micros - base:+.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
