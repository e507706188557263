"""``deploy/grafana-dashboard.json``: every metric its PromQL reads is one a live server
exports, taken from a ``/metrics`` answer rather than a list kept by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from mcpserve import Server
from wire_helpers import asgi_client, call, post

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana-dashboard.json"
#: PromQL's own words: aggregations, functions and keywords are not metric names.
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset",
                "bool", "and", "or", "unless", "le", "inf", "nan"}  # fmt: skip


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def metric_names(expression: str) -> set[str]:
    """The metric names a PromQL expression selects (not its functions, labels or ranges)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', "", expression)  # label values
    bare = re.sub(r"\{[^}]*\}", "", bare)  # label matchers
    bare = re.sub(r"\[[^\]]*\]", "", bare)  # ranges
    bare = re.sub(r"\b(?:by|without)\s*\([^)]*\)", "", bare)  # grouping labels
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", bare):
        word = match.group()
        followed = bare[match.end() :].lstrip()
        if followed.startswith("(") or word.lower() in PROMQL_WORDS:
            continue  # a function or an aggregation, or a keyword
        names.add(word)
    return names


def exported_names(text: str) -> set[str]:
    """Every name a query can select in this exposition, samples or not yet."""
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(sample.name for sample in family.samples)
        if family.type == "histogram":
            names.update(f"{family.name}_{suffix}" for suffix in ("bucket", "count", "sum"))
        elif family.type == "counter":
            names.add(f"{family.name}_total")
        else:
            names.add(family.name)
    return names


def test_the_name_reader_finds_metrics_not_functions() -> None:
    expression = (
        "histogram_quantile(0.95, sum by (le, mcp_method_name) "
        '(rate(mcp_server_operation_duration_seconds_bucket{error_type!="x"}[$__rate_interval])))'
    )
    assert metric_names(expression) == {"mcp_server_operation_duration_seconds_bucket"}


async def test_every_metric_the_dashboard_reads_is_exported() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    server = Server("dashboard", metrics=True)

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    async with asgi_client(server.http_app()) as http:
        await post(http, call(1, "add", {"a": 1, "b": 2}))
        exposition = (await http.get("/metrics")).text
    exported = exported_names(exposition)
    read = set().union(*(metric_names(expression) for expression in expressions(dashboard)))
    assert "mcp_server_operation_duration_seconds_count" in read  # the reader reads
    assert sorted(read - exported) == []
    # And each series mcpserve exports has a panel (prometheus-client's *_created
    # timestamps are not series to chart).
    families = {family.name for family in text_string_to_metric_families(exposition)
                if not family.name.endswith("_created")}  # fmt: skip
    shown = {name for name in families if any(r.startswith(name) for r in read)}
    assert shown == families
