"""Turn a run's results into ``latest.json``, ``latest.md`` and ``docs/performance.md``.

Every figure is shown with its ratio to the official SDK and to the raw ceiling, written
``value (ax / bx)``: ``a`` = this / official, ``b`` = this / raw. For requests/s higher is
better; for latency, CPU, time and memory lower is better.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs" / "performance.md"
ORDER = ["mcpserve", "mcpserve-readme", "official", "fastmcp", "typescript", "raw"]
NAMES = {
    "mcpserve": "mcpserve",
    "mcpserve-readme": "mcpserve (README: server.run)",
    "official": "official mcp",
    "fastmcp": "FastMCP",
    "typescript": "TypeScript SDK",
    "raw": "raw ceiling",
}
TITLES = {
    "echo": "tools/call echo",
    "model": "tools/call pydantic model",
    "list50": "tools/list, 50 tools",
    "resource": "resources/read 1 MiB",
    "progress": "tools/call + 10 progress notifications",
    "input_required": "input_required round trip",
}
README = 'README path (`server.run("http")`)'
#: (label, case, metric, "min"/"max" ratio, needed, versus, whose figure: mcpserve unless said)
RATIO_TARGETS: list[tuple[str, str, str, str, float, str, str]] = [
    ("HTTP tools/call, 16 connections: req/s", "http:echo:c16", "rps", "min", 8.0, "official",
     "mcpserve"),
    ("HTTP tools/call, 16 connections: server CPU/req", "http:echo:c16", "cpu_us", "max", 1.8,
     "raw", "mcpserve"),
    ("stdio pipelined tools/call: req/s", "stdio:echo:pipelined", "rps", "min", 25.0,
     "official", "mcpserve"),
    ("stdio sequential tools/call: req/s", "stdio:echo:sequential", "rps", "min", 5.0,
     "official", "mcpserve"),
    ("in-process Client tools/call: calls/s", "inprocess:echo", "rps", "min", 20.0, "official",
     "mcpserve"),
    ("HTTP tools/call, 16 connections: req/s", "http:echo:c16", "rps", "min", 8.0, "typescript",
     "mcpserve"),
    ("stdio pipelined tools/call: req/s", "stdio:echo:pipelined", "rps", "min", 4.0,
     "typescript", "mcpserve"),
    (f"{README} within 10% of the tuned uvicorn: HTTP tools/call, 16 connections: req/s",
     "http:echo:c16", "rps", "min", 0.9, "mcpserve", "mcpserve-readme"),
    (f"{README}: HTTP tools/call, 16 connections: req/s", "http:echo:c16", "rps", "min", 8.0,
     "official", "mcpserve-readme"),
]  # fmt: skip
GROWTH_TOLERANCE_MIB = 2.0
X = "\N{MULTIPLICATION SIGN}"
NONE = "\N{EN DASH}"


def _num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    if digits == 0 and abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{max(digits, 1) if abs(value) < 100 else digits}f}"


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return NONE
    ratio = value / base
    return f"{ratio:.2f}{X}" if ratio < 10 else f"{ratio:.1f}{X}"


def _cell(row: dict[str, Any], refs: dict[str, Any], metric: str, digits: int = 0) -> str:
    value = row.get(metric)
    if value is None:
        return "n/a"
    official = (refs.get("official") or {}).get(metric)
    raw = (refs.get("raw") or {}).get(metric)
    return f"{_num(value, digits)} ({_ratio(value, official)} / {_ratio(value, raw)})"


def _frameworks(table: dict[str, Any]) -> list[str]:
    return [fw for fw in ORDER if fw in table]


def _case_title(case: str) -> str:
    parts = case.split(":")
    title = TITLES.get(parts[1], parts[1])
    if parts[0] != "http":
        return title
    sse = " (SSE)" if parts[1] == "progress" else ""
    return f"{title}{sse}, {parts[2].replace('c', '', 1)} conn."


def load_tables(results: dict[str, Any], phase: str) -> list[str]:
    summary = results.get("summary", {})
    unsupported = results.get("unsupported", {})
    cases = [c for c in summary if c.startswith(phase + ":")]
    cases += [c for c in unsupported if c.startswith(phase + ":") and c not in cases]
    if not cases:
        return []
    lines = [
        "| Scenario | Framework | req/s | p50 ms | p99 ms | server CPU µs/req "
        "| server busy | other CPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    if phase == "stdio":
        lines[0] = lines[0].replace("| Scenario |", "| Scenario | Mode |")
        lines[1] += "---|"
    for case in cases:
        table = summary.get(case, {})
        label = _case_title(case)
        first = True
        for fw in ORDER:
            prefix = f"| {label if first else ''} |"
            if phase == "stdio":
                prefix += f" {case.split(':')[2] if first else ''} |"
            reason = unsupported.get(case, {}).get(fw)
            if reason is not None:
                lines.append(f"{prefix} {NAMES[fw]} | n/a: {reason.replace('|', '/')} | | | | | |")
                first = False
                continue
            row = table.get(fw)
            if row is None:
                continue
            busy = row.get("cpu_util")
            other = row.get("other_cpu")
            lines.append(
                f"{prefix} {NAMES[fw]} | {_cell(row, table, 'rps')} | "
                f"{_cell(row, table, 'p50_ms', 2)} | {_cell(row, table, 'p99_ms', 2)} | "
                f"{_cell(row, table, 'cpu_us')} | {_num(busy and busy * 100)}% | "
                f"{_num(other, 2)} |"
            )
            first = False
    return lines


def inprocess_table(results: dict[str, Any]) -> list[str]:
    summary = results.get("summary", {})
    cases = [c for c in summary if c.startswith("inprocess:")]
    if not cases:
        return []
    lines = ["| Scenario | Framework | calls/s | CPU µs/call |", "|---|---|---|---|"]
    for case in cases:
        table = summary[case]
        for i, fw in enumerate(_frameworks(table)):
            row = table[fw]
            label = _case_title(case) if i == 0 else ""
            lines.append(
                f"| {label} | {NAMES[fw]} | {_cell(row, table, 'rps')} | "
                f"{_cell(row, table, 'cpu_us', 1)} |"
            )
    return lines


def startup_table(results: dict[str, Any]) -> list[str]:
    cold, imports = results.get("coldstart"), results.get("import")
    if not cold and not imports:
        return []
    lines = [
        "| Framework | spawn → first answer (stdio), median ms | min ms "
        "| import time, median ms | module | bare interpreter ms |",
        "|---|---|---|---|---|---|",
    ]
    for fw in ORDER:
        c, i = (cold or {}).get(fw), (imports or {}).get(fw)
        if c is None and i is None:
            continue
        cell_c = _cell(c, cold, "median_ms", 1) if c else NONE
        cell_i = _cell(i, imports, "median_ms", 1) if i else NONE
        lines.append(
            f"| {NAMES[fw]} | {cell_c} | {_num(c and c['min_ms'], 1)} | {cell_i} | "
            f"`{i['module'] if i else ''}` | {_num(i and i['interpreter_ms'], 1)} |"
        )
    return lines


def memory_table(results: dict[str, Any]) -> list[str]:
    memory = results.get("memory")
    if not memory:
        return []
    lines = [
        "| Framework | idle RSS MiB | loaded peak MiB | after warm-up MiB "
        "| after load MiB | growth MiB | requests (warm-up + load) |",
        "|---|---|---|---|---|---|---|",
    ]
    for fw in _frameworks(memory):
        m = memory[fw]
        lines.append(
            f"| {NAMES[fw]} | {_cell(m, memory, 'idle_mib', 1)} | "
            f"{_cell(m, memory, 'loaded_peak_mib', 1)} | {_num(m['after_warmup_mib'], 1)} | "
            f"{_num(m['after_load_mib'], 1)} | {m['growth_mib']:+.1f} | "
            f"{m['warmup_requests']:,} + {m['load_requests']:,} |"
        )
    return lines


def checks_table(results: dict[str, Any]) -> list[str]:
    checks = results.get("checks")
    if not checks:
        return []
    fws = _frameworks(checks)
    lines = [
        "| Invalid echo request | " + " | ".join(NAMES[f] for f in fws) + " |",
        "|---|" + "---|" * len(fws),
    ]
    for probe in next(iter(checks.values())):
        marks = ["refused" if checks[f][probe] else "**accepted**" for f in fws]
        lines.append(f"| {probe} | " + " | ".join(marks) + " |")
    return lines


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    summary = results.get("summary", {})
    frameworks = set(results.get("config", {}).get("frameworks") or ORDER)
    out: list[dict[str, Any]] = []
    for label, case, metric, kind, needed, versus, whose in RATIO_TARGETS:
        if not {whose, versus} <= frameworks:
            continue  # a narrowed run: not "not measured", just not asked
        ours = summary.get(case, {}).get(whose, {}).get(metric)
        base = summary.get(case, {}).get(versus, {}).get(metric)
        ratio = ours / base if ours and base else None
        met = None if ratio is None else (ratio >= needed if kind == "min" else ratio <= needed)
        need = f"{'≥' if kind == 'min' else '≤'} {needed:g}{X} {NAMES[versus]}"
        got = "n/a" if ratio is None else f"{ratio:.2f}{X} ({_num(ours)} vs {_num(base)})"
        out.append(
            {
                "target": label,
                "framework": whose,
                "versus": versus,
                "needed": need,
                "measured": got,
                "met": met,
                "ratio": ratio,
            }
        )
    cold = results.get("coldstart") or {}
    if "mcpserve" in cold and "official" in cold:
        ours, base = cold["mcpserve"]["median_ms"], cold["official"]["median_ms"]
        out.append(
            {
                "target": "cold start over stdio",
                "needed": f"≤ 0.25{X} official mcp (aim < 150 ms)",
                "measured": f"{ours / base:.2f}{X} ({ours:.0f} ms vs {base:.0f} ms)",
                "met": ours / base <= 0.25,
                "ratio": ours / base,
                "aim_met": ours < 150,
            }
        )
    if "mcpserve" in cold and "typescript" in cold:
        ours, base = cold["mcpserve"]["median_ms"], cold["typescript"]["median_ms"]
        out.append(
            {
                "target": "cold start over stdio",
                "versus": "typescript",
                "needed": f"< 1{X} TypeScript SDK (lower)",
                "measured": f"{ours / base:.2f}{X} ({ours:.0f} ms vs {base:.0f} ms)",
                "met": ours < base,
                "ratio": ours / base,
            }
        )
    imports = results.get("import") or {}
    if "mcpserve" in imports:
        ms = imports["mcpserve"]["median_ms"]
        out.append(
            {
                "target": "`import mcpserve`",
                "needed": "< 100 ms",
                "measured": f"{ms:.0f} ms",
                "met": ms < 100,
                "ratio": None,
            }
        )
    memory = results.get("memory") or {}
    if "mcpserve" in memory and "official" in memory:
        ours, base = memory["mcpserve"]["idle_mib"], memory["official"]["idle_mib"]
        out.append(
            {
                "target": "idle RSS of a served app",
                "needed": f"≤ 0.7{X} official mcp",
                "measured": f"{ours / base:.2f}{X} ({ours:.1f} MiB vs {base:.1f} MiB)",
                "met": ours / base <= 0.7,
                "ratio": ours / base,
            }
        )
    if "mcpserve" in memory:
        m = memory["mcpserve"]
        out.append(
            {
                "target": f"RSS growth over {m['load_requests']:,} requests after warm-up",
                "needed": f"none (≤ {GROWTH_TOLERANCE_MIB:g} MiB)",
                "measured": f"{m['growth_mib']:+.1f} MiB",
                "met": m["growth_mib"] <= GROWTH_TOLERANCE_MIB,
                "ratio": None,
            }
        )
    return out


def _versions_line(results: dict[str, Any]) -> str:
    v = results["versions"]
    line = (
        f"Versions: mcpserve {v['mcpserve'].get('mcpserve')} "
        f"(commit {results.get('mcpserve_commit', 'unknown')}), mcp {v['official'].get('mcp')}, "
        f"fastmcp {v['fastmcp'].get('fastmcp')} (with mcp {v['fastmcp'].get('mcp')}), "
        f"uvicorn {v['mcpserve'].get('uvicorn')} (httptools {v['mcpserve'].get('httptools')}, "
        f"uvloop {v['mcpserve'].get('uvloop')}, 1 worker), pydantic "
        f"{v['mcpserve'].get('pydantic')}, orjson {v['mcpserve'].get('orjson')}"
    )
    ts = v.get("typescript")
    if ts:
        line += (
            f"; TypeScript SDK @modelcontextprotocol/server "
            f"{ts.get('@modelcontextprotocol/server')} (@modelcontextprotocol/node "
            f"{ts.get('@modelcontextprotocol/node')}, zod {ts.get('zod')}) on Node {ts.get('node')}"
        )
    return line + "."


def _not_run(results: dict[str, Any], *phases: str) -> list[str]:
    """A line under a phase's table naming the frameworks that sat it out, and why."""
    skipped: dict[str, str] = {}
    for phase in phases:
        skipped.update((results.get("not_run") or {}).get(phase, {}))
    if not skipped:
        return []
    why = "; ".join(f"{NAMES[fw]}: {reason}" for fw, reason in skipped.items())
    return ["", f"Not run here: {why}."]


def cluster_tables(results: dict[str, Any]) -> list[str]:
    cluster = results.get("cluster")
    if not cluster:
        return []
    summary, unsupported = cluster["summary"], cluster.get("unsupported", {})
    titles: dict[str, str] = cluster["titles"]
    lines = [
        "| Configuration | req/s | p50 ms | p99 ms | mcpserve CPU µs/req | mcpserve busy "
        "| haproxy busy |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, title in titles.items():
        if case in unsupported:
            lines.append(f"| {title} | n/a: {unsupported[case].replace('|', '/')} | | | | | |")
            continue
        row = summary.get(case)
        if row is None:
            continue
        busy, front = row.get("cpu_util"), row.get("balancer_util")
        haproxy = f"{_num(front * 100)}%" if front else NONE
        each = row.get("process_utils")
        split = f" ({' + '.join(f'{_num(u * 100)}%' for u in each)})" if each else ""
        lines.append(
            f"| {title} | {_num(row['rps'])} | {_num(row['p50_ms'], 2)} | "
            f"{_num(row['p99_ms'], 2)} | {_num(row['cpu_us'])} | "
            f"{_num(busy and busy * 100)}%{split} | {haproxy} |"
        )
    lines += ["", "| Ratio (req/s) | measured |", "|---|---|"]
    for item in cluster.get("ratios", []):
        ratio = item["ratio"]
        got = "n/a" if ratio is None else f"{ratio:.2f}{X}"
        lines.append(f"| {titles[item['case']]} ÷ {titles[item['versus']]} | {got} |")
    notes = cluster.get("notes", {})
    lines += [
        "",
        "*mcpserve busy* adds up the processes (200% = both cores), each one in brackets; "
        f"*haproxy busy* is its one thread's share of a core. Pinning: {cluster.get('pinning')}.",
    ]
    if notes.get("shared_state_key"):
        lines.append(f"Shared `requestState` key: {notes['shared_state_key']}.")
    if notes.get("redis_unused"):
        lines.append(f"**Note:** {notes['redis_unused']}.")
    elif "redis_keys_after_handshakes" in notes:
        lines.append(f"Redis keys after the handshakes: {notes['redis_keys_after_handshakes']}.")
    return lines


def markdown(results: dict[str, Any], for_docs: bool = False) -> str:
    m = results["machine"]
    cfg = results["config"]
    lines = [
        f"Run {results['started']} ({results.get('seconds', '?')} s), "
        f"{cfg['rounds']} interleaved round(s) per figure, medians. Machine: {m['cpu']}, "
        f"{m['cores']} cores, {m['ram']} RAM, {m['kernel']}, Python {m['python']}. "
        f"{_versions_line(results)}",
        "",
        f"Cells read `value (a{X} / b{X})`: a = this ÷ official mcp, b = this ÷ raw ceiling. "
        "*server busy* is the server's CPU time ÷ wall time (100% = the server core was "
        "saturated; less means the load generator, the pipe or the client was the limit). "
        "*other CPU* is CPU (in cores) used during the window by anything but the server "
        "and the load generator, kernel network processing included: a noise gauge. "
        f"*{NAMES['mcpserve-readme']}* is the same mcpserve server served by "
        '`server.run("http", host=..., port=...)` and nothing else, as the README shows.',
        "",
        "### Targets",
        "",
        "| Target | Needed | Measured | Met |",
        "|---|---|---|---|",
    ]
    if not results.get("targets"):
        lines[-2:] = ["No target compares the frameworks of this run."]
    for t in results.get("targets", []):
        met = "not measured" if t["met"] is None else "yes" if t["met"] else "**no**"
        if t.get("aim_met") is False:
            met += " (aim < 150 ms: **no**)"
        lines.append(f"| {t['target']} | {t['needed']} | {t['measured']} | {met} |")
    sections = [
        (
            "Streamable HTTP (wrk; 1 uvicorn worker, 1 Node process)",
            load_tables(results, "http") + _not_run(results, "http"),
        ),
        ("stdio", load_tables(results, "stdio") + _not_run(results, "stdio")),
        ("In-process clients", inprocess_table(results) + _not_run(results, "inprocess")),
        ("Start-up", startup_table(results) + _not_run(results, "coldstart", "import")),
        ("Memory (HTTP, tools/call echo)", memory_table(results)),
        ("Checks that stay on in the measured configurations", checks_table(results)),
        (
            "Cluster (mcpserve, tools/call echo, 16 connections, wrk on any CPU)",
            cluster_tables(results),
        ),
    ]
    for title, table in sections:
        if table and table[0]:
            lines += ["", f"### {title}", "", *table]
    return "\n".join(lines) + "\n"


def add_ratios(results: dict[str, Any]) -> None:
    """Next to every figure, its ratio to the official SDK's and to the raw ceiling's."""
    tables = list(results.get("summary", {}).values())
    tables += [results[k] for k in ("coldstart", "import", "memory") if results.get(k)]
    for table in tables:
        official, raw = table.get("official") or {}, table.get("raw") or {}
        for row in table.values():
            ratios: dict[str, dict[str, float | None]] = {}
            for metric, value in row.items():
                if not isinstance(value, int | float) or metric in ("rounds", "runs"):
                    continue
                ratios[metric] = {
                    "vs_official": value / official[metric] if official.get(metric) else None,
                    "vs_raw": value / raw[metric] if raw.get(metric) else None,
                }
            row["ratios"] = ratios


START, END = "<!-- results:start -->", "<!-- results:end -->"


def write(results: dict[str, Any], out: Path, *, update_docs: bool) -> None:
    add_ratios(results)
    results["targets"] = targets(results)
    (out / "latest.json").write_text(json.dumps(results, indent=1) + "\n")
    table = markdown(results)
    (out / "latest.md").write_text("# mcpserve benchmark results\n\n" + table)
    if update_docs:
        text = DOCS.read_text() if DOCS.exists() else f"# Performance\n\n{START}\n{END}\n"
        if START not in text or END not in text:
            text += f"\n{START}\n{END}\n"
        head, rest = text.split(START, 1)
        tail = rest.split(END, 1)[1]
        DOCS.write_text(f"{head}{START}\n{table}{END}{tail}")


def main() -> None:
    """Re-render a results file: ``python report.py results/latest.json [--docs]``."""
    import sys

    path = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "latest.json"
    write(json.loads(path.read_text()), path.parent, update_docs="--docs" in sys.argv)


if __name__ == "__main__":
    main()
