"""A real Prometheus (Debian's ``prometheus``) scrapes two mcpserve instances, and a PromQL
query over its HTTP API counts the calls a scripted load made, per tool and outcome."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest

from http_serving import serve_asgi
from mcpserve import Server, ToolError
from wire_helpers import call, default_headers, encode, free_port, stop_process

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
WAIT = 60.0
QUERY = (
    "sum by (gen_ai_tool_name, error_type) "
    '(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})'
)

pytestmark = pytest.mark.subprocess


def instance(name: str) -> Server:
    server = Server(name, metrics=True)

    @server.tool
    def a() -> str:
        return "fine"

    @server.tool
    def b() -> str:
        raise ToolError("Not today.")

    return server


@contextlib.contextmanager
def prometheus(tmp_path: Path, targets: list[str]) -> Iterator[str]:
    """Prometheus on 127.0.0.1, scraping ``targets`` every second; yields its URL."""
    port = free_port()
    config = tmp_path / "prometheus.yml"
    quoted = ", ".join(f"'{target}'" for target in targets)
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        f"scrape_configs:\n  - job_name: mcpserve\n    static_configs:\n"
        f"      - targets: [{quoted}]\n"
    )
    log = tmp_path / "prometheus.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        while True:
            if process.poll() is not None:
                raise AssertionError(f"prometheus exited:\n{log.read_text()}")
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"prometheus never became ready:\n{log.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        stop_process(process)


def scraped_after(url: str, moment: datetime) -> bool:
    """Whether every target was scraped, successfully, since ``moment``."""
    targets = httpx2.get(f"{url}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
    return bool(targets) and all(
        target["health"] == "up" and parse_time(target["lastScrape"]) > moment for target in targets
    )


def parse_time(value: str) -> datetime:
    # Prometheus writes nanoseconds; Python reads at most microseconds.
    trimmed = re.sub(r"(\.\d{6})\d*", r"\1", value).replace("Z", "+00:00")
    return datetime.fromisoformat(trimmed)


def load(urls: list[str]) -> None:
    """7 good calls of ``a``, 3 ``isError`` calls of ``b``, 2 calls of no tool, spread."""
    script = [("a", 7), ("b", 3), ("nothing", 2)]
    n = 0
    with httpx2.Client(timeout=10) as client:
        for tool, times in script:
            for _ in range(times):
                message = call(n, tool, {})
                reply = client.post(urls[n % 2], content=encode(message),
                                    headers=default_headers(message))  # fmt: skip
                assert reply.status_code == 200
                n += 1


def test_prometheus_counts_the_calls_of_two_instances_per_tool_and_outcome(
    tmp_path: Path,
) -> None:
    with (
        serve_asgi(instance("one").http_app()) as first,
        serve_asgi(instance("two").http_app()) as second,
    ):
        targets = [base.removeprefix("http://") for base in (first, second)]
        with prometheus(tmp_path, targets) as url:
            load([f"{first}/mcp", f"{second}/mcp"])
            done = datetime.now().astimezone()
            deadline = time.monotonic() + WAIT
            while not scraped_after(url, done):
                assert time.monotonic() < deadline, "prometheus did not scrape both instances"
                time.sleep(0.25)
            answer: Any = httpx2.get(f"{url}/api/v1/query", params={"query": QUERY},
                                     timeout=5).json()  # fmt: skip
    assert answer["status"] == "success"
    counted = {
        (row["metric"].get("gen_ai_tool_name", ""), row["metric"].get("error_type", "")): row[
            "value"
        ][1]
        for row in answer["data"]["result"]
    }
    assert counted == {("a", ""): "7", ("b", "tool_error"): "3", ("", "-32602"): "2"}
