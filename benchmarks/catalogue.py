"""The catalogue on a 1,000-tool server: tool search, tags and a visibility rule.

mcpserve only, in process through ``server.handle`` (the dispatcher every transport uses,
without a transport), strictly sequential awaited calls after a warm-up. The tools are
generated: 1,000 names of verb, noun and a number (``send_invoice_17``), each with a
one-sentence description and two or three typed parameters, a tenth tagged ``beta``.

* **tools/list**: the bytes of the whole list (every page; 1,000 entries) as JSON, next to
  the bytes of the two entries ``Server(tool_search=True)`` lists instead;
* **search_tools**: latency of a three-word query (p50, p99), the index built once before;
  and the time to build the index after a change (first query after a registration);
* **call_tool** next to a direct ``tools/call`` of the same tool: what the indirection costs;
* **tools/list with a visibility rule**: a plain rule over 1,000 entries, and one page
  (the default: all) next to the same list without a rule.

Run it in the mcpserve venv::

    .venv/bin/python benchmarks/catalogue.py [--tools 1000] [--rounds 2000]

It prints a Markdown table and writes ``results/catalogue.json``; the figures are in
``docs/performance.md`` ("Large catalogues").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import orjson

from mcpserve import Server

HERE = Path(__file__).resolve().parent
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
VERBS = ["send", "list", "get", "create", "delete", "update", "refund", "archive", "sync", "export"]
NOUNS = [
    "invoice", "customer", "payment", "order", "ticket", "report", "user", "file", "mail",
    "calendar", "event", "project", "task", "note", "contract", "shipment", "product", "review",
    "account", "subscription",
]  # fmt: skip


def handler(id: str = "", limit: int = 0, note: str = "") -> str:
    return "ok"


def build(count: int, **options: Any) -> Server:
    server = Server("catalogue-bench", **options)
    rng = random.Random(7)
    for index in range(count):
        verb, noun = VERBS[index % len(VERBS)], NOUNS[(index // len(VERBS)) % len(NOUNS)]
        name = f"{verb}_{noun}_{index}"
        params = {"id": "string", "limit": "integer", "note": "string"}
        chosen = dict(rng.sample(sorted(params.items()), rng.choice([2, 3])))
        schema = {
            "type": "object",
            "properties": {
                p: {"type": t, "description": f"The {noun}'s {p}"} for p, t in chosen.items()
            },
        }
        server.add_tool(
            handler,
            name=name,
            description=f"{verb.capitalize()} a {noun} of the workspace ({index}).",
            input_schema=schema,
            tags={"beta"} if index % 10 == 0 else (),
        )
    return server


def message(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> Any:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": META},
    }


async def timed(server: Server, msg: Any, rounds: int) -> list[float]:
    for _ in range(min(rounds, 200)):
        await server.handle(msg)
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = await server.handle(msg)
        samples.append(time.perf_counter() - started)
        assert response is not None
        assert "error" not in response, response
    return samples


def pair(values: tuple[float, float]) -> str:
    return f"{values[0]:.0f} / {values[1]:.0f} µs"


def micro(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e6, ordered[int(len(ordered) * 0.99)] * 1e6


async def list_bytes(server: Server) -> int:
    response = await server.handle(message("tools/list"))
    assert response is not None
    return len(orjson.dumps(response["result"]["tools"]))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    plain = build(args.tools)
    searched = build(args.tools, tool_search=True)
    # A tool the query below names: verb 6 is "refund", noun 2 is "payment".
    index = next(i for i in range(args.tools) if i % 10 == 6 and (i // 10) % 20 == 2)
    name = f"refund_payment_{index}"
    figures: dict[str, Any] = {"tools": args.tools}
    figures["list_bytes"] = await list_bytes(plain)
    figures["search_list_bytes"] = await list_bytes(searched)

    query = message(
        "tools/call", {"name": "search_tools", "arguments": {"query": "refund a payment"}}
    )
    first = time.perf_counter()
    await searched.handle(query)
    figures["index_build_ms"] = (time.perf_counter() - first) * 1e3
    figures["search_us"] = micro(await timed(searched, query, args.rounds))
    direct = message("tools/call", {"name": name, "arguments": {"id": "x"}})
    through = message(
        "tools/call", {"name": "call_tool", "arguments": {"name": name, "arguments": {"id": "x"}}}
    )
    figures["direct_call_us"] = micro(await timed(searched, direct, args.rounds))
    figures["call_tool_us"] = micro(await timed(searched, through, args.rounds))

    listing = message("tools/list")
    figures["list_us"] = micro(await timed(plain, listing, args.rounds // 4))
    plain.visibility(lambda ctx, component: "beta" not in component.tags)
    figures["list_with_rule_us"] = micro(await timed(plain, listing, args.rounds // 4))

    rows = [
        ("tools/list, whole catalogue", f"{figures['list_bytes']:,} bytes", "-"),
        ("tools/list with tool_search=True", f"{figures['search_list_bytes']:,} bytes", "-"),
        (
            "search index built (first query after a change)",
            f"{figures['index_build_ms']:.1f} ms",
            "-",
        ),
        ("search_tools, three words", pair(figures["search_us"]), "p50 / p99"),
        (
            "tools/call of one tool, direct",
            pair(figures["direct_call_us"]),
            "p50 / p99",
        ),
        ("the same through call_tool", pair(figures["call_tool_us"]), "p50 / p99"),
        ("tools/list, 1,000 entries, no rule", pair(figures["list_us"]), "p50 / p99"),
        (
            "tools/list with a plain visibility rule",
            pair(figures["list_with_rule_us"]),
            "p50 / p99",
        ),
    ]
    print("| measure | value | |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    out = HERE / "results" / "catalogue.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
