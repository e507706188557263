"""In-process: each framework's own in-memory client calling its own server, no transport.

Run inside a framework's venv (``run.py`` does): ``python inprocess.py FRAMEWORK
--duration S --scenarios echo,model``. Prints one JSON object: per scenario, calls/s and
wall and CPU microseconds per call, measured over strictly sequential awaited calls after
a warm-up. The first answer of each scenario is checked as the wire tests check it.

* mcpserve: ``mcpserve.Client(server)`` (every message goes through the JSON encoder);
* official: ``mcp.Client(server, mode="2026-07-28")``;
* fastmcp: ``fastmcp.Client(server, mode="2026-07-28")``;
* raw: encode, decode, look up, answer, encode, decode: the floor of a JSON round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from common import SCENARIOS, JSONDict, Scenario

Call = Callable[[], Awaitable[JSONDict]]
WARMUP_CALLS = 300


def _dump(model: Any) -> JSONDict:
    """A pydantic result model as its wire dict."""
    dumped: JSONDict = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def mcpserve_calls(s: Scenario) -> tuple[AbstractAsyncContextManager[Any], Callable[[Any], Call]]:
    from mcpserve_app import server

    from mcpserve import Client

    def bind(client: Any) -> Call:
        return lambda: client.request(s.method, s.params)

    return Client(server), bind


def official_calls(s: Scenario) -> tuple[AbstractAsyncContextManager[Any], Callable[[Any], Call]]:
    from mcp import Client
    from official_app import server

    def bind(client: Any) -> Call:
        async def call() -> JSONDict:
            if s.method == "tools/call":
                return _dump(await client.call_tool(s.params["name"], s.params["arguments"]))
            if s.method == "tools/list":
                return _dump(await client.list_tools())
            return _dump(await client.read_resource(s.params["uri"]))

        return call

    return Client(server, mode="2026-07-28"), bind


def fastmcp_calls(s: Scenario) -> tuple[AbstractAsyncContextManager[Any], Callable[[Any], Call]]:
    from fastmcp import Client
    from fastmcp_app import server

    def bind(client: Any) -> Call:
        async def call() -> JSONDict:
            if s.method == "tools/call":
                args = s.params["arguments"]
                return _dump(await client.call_tool_mcp(s.params["name"], args))
            if s.method == "tools/list":
                return _dump(await client.list_tools_mcp())
            return _dump(await client.read_resource_mcp(s.params["uri"]))

        return call

    return Client(server, mode="2026-07-28"), bind


class _RawClient:
    async def __aenter__(self) -> _RawClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def raw_calls(s: Scenario) -> tuple[AbstractAsyncContextManager[Any], Callable[[Any], Call]]:
    import orjson
    from raw_app import answer

    body = s.body()

    async def notify(message: JSONDict) -> None:
        return None

    def bind(client: Any) -> Call:
        async def call() -> JSONDict:
            response = orjson.loads(orjson.dumps(await answer(orjson.loads(body), notify)))
            result: JSONDict = response["result"]
            return result

        return call

    return _RawClient(), bind


FACTORIES = {
    "mcpserve": mcpserve_calls,
    "official": official_calls,
    "fastmcp": fastmcp_calls,
    "raw": raw_calls,
}


async def measure(
    framework: str, scenario: Scenario, duration: float, count: int = 0
) -> dict[str, Any]:
    context, bind = FACTORIES[framework](scenario)
    async with context as client:
        call = bind(client)
        scenario.check(await call())
        for _ in range(WARMUP_CALLS):
            await call()
        if count:  # exactly this many more: for counting instructions (ab.py)
            for _ in range(count):
                await call()
            return {"requests": count}
        calls = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        stop = wall0 + duration
        while True:
            for _ in range(50):
                await call()
            calls += 50
            if time.perf_counter() >= stop:
                break
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
    return {
        "requests": calls,
        "rps": calls / wall,
        "wall_us": wall * 1e6 / calls,
        "cpu_us": cpu * 1e6 / calls,
        "cpu_util": cpu / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("framework", choices=sorted(FACTORIES))
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--scenarios", default="echo,model,list50,resource")
    parser.add_argument("--count", type=int, default=0, help="make exactly N calls, untimed")
    args = parser.parse_args()
    results = {}
    for key in args.scenarios.split(","):
        measured = measure(args.framework, SCENARIOS[key], args.duration, args.count)
        results[key] = asyncio.run(measured)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
