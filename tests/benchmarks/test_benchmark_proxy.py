"""``benchmarks/proxy.py --quick`` runs end to end: venvs, servers, checks, wrk, report.

The benchmark builds what it needs on first use (the ``mcpserve`` and ``fastmcp`` venvs
under ``benchmarks/.venvs``, from PyPI: a minute or two, once; wrk from Debian's package
when run as root, as ``.ci/run`` is) and re-runs itself in the mcpserve venv. Its quick
mode measures for seconds: nothing here reads the figures, only that every case was
measured with a checked answer and that the report says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wire_helpers import ROOT, child_env

pytestmark = [pytest.mark.subprocess, pytest.mark.network]

#: First use builds two venvs; after that the run takes about half a minute.
BOUND_SECONDS = 900


def test_the_quick_proxy_benchmark_measures_every_case(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "proxy.py"), "--quick", "--out", str(tmp_path)],
        cwd=str(ROOT),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads((tmp_path / "proxy.json").read_text())
    assert results["config"]["quick"] is True
    assert results["unsupported"] == {}
    measured = {(s["case"], s["framework"]) for s in results["samples"]}
    assert measured == {(f"{load}:{case}", case) for load in ("c16", "c1")
                        for case in ("direct", "mcpserve", "fastmcp")}  # fmt: skip
    for key, row in results["summary"].items():
        assert row["rps"] > 0, key
        assert (row["upstream_cpu_us"] is None) == key.endswith(":direct"), key
    assert [t["ratio"] for t in results["targets"]] == ["mcpserve/direct", "mcpserve/fastmcp"]
    assert all(t["value"] is not None for t in results["targets"])
    assert "| 16 conn. | `mcpserve` |" in done.stdout
