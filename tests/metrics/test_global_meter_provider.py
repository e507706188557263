"""``Server(metrics=None)`` records to the global meter provider once one is set, as tracing
does; ``metrics=False`` never does. A global provider can be set once per process, so the
servers run in a fresh interpreter of their own, which prints what its reader read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wire_helpers import child_env

pytestmark = pytest.mark.subprocess

BOUND_SECONDS = 60

SCRIPT = """
import asyncio
import json

from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from mcpserve import Server

default = Server("by-default")
off = Server("off", metrics=False)


@default.tool
def add(a: int, b: int) -> int:
    return a + b


@off.tool
def subtract(a: int, b: int) -> int:
    return a - b


def call(tool: str) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "global-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": tool, "arguments": {"a": 5, "b": 3}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


# Set after both servers were built: a server decides where it records when it first
# answers.
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))


async def main() -> list:
    answers = [await default.handle(call("add")), await off.handle(call("subtract"))]
    return [answer["result"]["structuredContent"] for answer in answers]


answers = asyncio.run(main())
data = reader.get_metrics_data()
found = [
    [metric.name, dict(point.attributes), getattr(point, "count", None)]
    for resource in (data.resource_metrics if data is not None else [])
    for scope in resource.scope_metrics
    for metric in scope.metrics
    for point in metric.data.data_points
]
print(json.dumps({"answers": answers, "points": found,
                  "off": off.runtime.metrics is None}))
"""


def test_metrics_none_records_to_the_global_provider_and_false_never_does(
    tmp_path: Path,
) -> None:
    script = tmp_path / "global_provider.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    assert printed["answers"] == [8, 2]  # both servers answered
    assert printed["points"] == [
        ["mcp.server.operation.duration",
         {"mcp.method.name": "tools/call", "gen_ai.tool.name": "add",
          "mcp.protocol.version": "2026-07-28"}, 1],
    ]  # fmt: skip
    assert printed["off"] is True
