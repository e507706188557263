"""``/metrics`` for Prometheus: served without the endpoint's auth but behind its Host
check, with the series and labels the docs name, and summed over ``--workers``."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcpserve import Server
from mcpserve.auth import AccessToken, InvalidToken
from servers.add_refuse import add_and_refuse
from wire_helpers import (
    asgi_client,
    call,
    default_headers,
    encode,
    http_server_process,
    post,
    request,
)

MODERN = "2026-07-28"
#: Seconds both workers get to serve some of the calls.
WORKERS_TIMEOUT = 30.0


class OneTokenVerifier:
    """Knows one token, ``"good"``; refuses every other."""

    issuer = "https://auth.example.com"
    audience = "http://127.0.0.1/mcp"

    async def verify(self, token: str) -> AccessToken:
        if token != "good":
            raise InvalidToken("The access token has expired")
        return AccessToken("alice", frozenset(), {"sub": "alice"})


def counts(text: str) -> dict[tuple[tuple[str, str], ...], float]:
    """``mcp_server_operation_duration_seconds_count`` samples, by their labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mcp_server_operation_duration_seconds_count":
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def labels(method: str, tool: str = "", error: str = "") -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"mcp_method_name": method, "gen_ai_tool_name": tool,
                         "error_type": error, "mcp_protocol_version": MODERN}.items()))  # fmt: skip


async def test_metrics_are_answered_without_the_endpoints_token_but_behind_its_host_check() -> None:
    server = Server("guarded", auth=OneTokenVerifier(), metrics=True)  # type: ignore[arg-type]

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    app = server.http_app()
    async with asgi_client(app) as http:
        tokenless = await http.post("/mcp", content=encode(request(1, "tools/list")),
                                    headers=default_headers(request(1, "tools/list")))  # fmt: skip
        assert tokenless.status_code == 401
        scraped = await http.get("/metrics")
        assert scraped.status_code == 200
        assert scraped.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert "# TYPE mcp_server_operation_duration_seconds histogram" in scraped.text
    async with asgi_client(app, host="attacker.example") as http:
        refused = await http.get("/metrics")
        endpoint = await http.post("/mcp", content=b"{}", headers={"authorization": "Bearer good"})
    assert (refused.status_code, endpoint.status_code) == (421, 421)
    assert refused.json() == endpoint.json()
    assert refused.json()["error"]["message"].startswith("Misdirected: Host 'attacker.example'")


async def test_the_exposition_has_each_operation_by_method_tool_error_and_version() -> None:
    server = add_and_refuse("counted", metrics=True)
    async with asgi_client(server.http_app()) as http:
        for n in range(3):
            await post(http, call(n, "add", {"a": n, "b": 1}))
        await post(http, call(10, "refuse", {}))
        await post(http, call(11, "missing", {}))
        await post(http, request(12, "tools/list"))
        scraped = (await http.get("/metrics")).text
        assert (await http.post("/metrics")).status_code == 405
    assert counts(scraped) == {
        labels("tools/call", "add"): 3.0,
        labels("tools/call", "refuse", "tool_error"): 1.0,
        labels("tools/call", "", "-32602"): 1.0,
        labels("tools/list"): 1.0,
    }
    in_flight = [line for line in scraped.splitlines()
                 if line.startswith("mcpserve_requests_in_flight{")]  # fmt: skip
    # Every method has its gauge from the start (at 0), so a dashboard has a line to draw.
    assert 'mcpserve_requests_in_flight{mcp_method_name="tools/call"} 0.0' in in_flight
    assert 'mcpserve_requests_in_flight{mcp_method_name="tools/list"} 0.0' in in_flight
    assert [line for line in in_flight if not line.endswith("} 0.0")] == []


async def test_metrics_true_is_off_by_default_and_on_with_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with asgi_client(Server("plain").http_app()) as http:
        assert (await http.get("/metrics")).status_code == 404
    monkeypatch.setenv("MCPSERVE_METRICS", "1")
    async with asgi_client(Server("by-environment").http_app()) as http:
        assert (await http.get("/metrics")).status_code == 200


WORKER_APP = """
import os
import time

from mcpserve import Server

server = Server("pids", legacy=False, blocking_warning_seconds=None{options})


@server.tool
def where() -> dict:
    time.sleep(0.02)  # holds this worker's event loop: a call sent meanwhile goes to the other
    return {"pid": os.getpid(), "directory": os.environ.get("PROMETHEUS_MULTIPROC_DIR")}
"""


def where(client: httpx2.Client, url: str, n: int) -> dict[str, Any]:
    message = call(n, "where", {})
    # A connection of its own each time: uvicorn's workers share the listening socket, and
    # the kernel hands each new connection to one of them.
    response = client.post(url, content=encode(message),
                           headers={**default_headers(message), "connection": "close"})  # fmt: skip
    structured: dict[str, Any] = response.json()["result"]["structuredContent"]
    return structured


#: How a served server turns /metrics on: (its options, flags of ``mcpserve run``, a line of
#: its --env-file). The CLI's supervising process must see each before it starts workers.
TURNED_ON = {
    "the flag": ("", ["--metrics"], None),
    "the option": (", metrics=True", [], None),
    "an env file": ("", [], "MCPSERVE_METRICS=1"),
}


@pytest.mark.subprocess
@pytest.mark.parametrize("how", list(TURNED_ON))
def test_several_workers_report_the_sum_of_all_and_remove_their_directory(
    tmp_path: Path, how: str
) -> None:
    from mcpserve.protocol.request_state import generate_key

    options, flags, env_line = TURNED_ON[how]
    app = tmp_path / "pids.py"
    app.write_text(WORKER_APP.replace("{options}", options))
    if env_line is not None:
        (tmp_path / "serve.env").write_text(env_line + "\n")
        flags = [*flags, "--env-file", str(tmp_path / "serve.env")]
    command = [sys.executable, "-m", "mcpserve.cli", "run", str(app), "--http",
               "--port", "{port}", "--workers", "2", *flags]  # fmt: skip
    env = {"MCPSERVE_STATE_KEYS": generate_key(), "PROMETHEUS_MULTIPROC_DIR": ""}
    if env_line is None:  # (a variable already set wins over the env file's line)
        env["MCPSERVE_METRICS"] = ""
    seen: dict[int, int] = {}
    directories = set()
    with (
        http_server_process(tmp_path, args=command, env=env) as served,
        httpx2.Client(timeout=10) as client,
    ):
        calls = 0
        # Bounded in time: the second worker may still be starting on a busy machine; four
        # calls at once: a worker held by one leaves the next to the other.
        deadline = time.monotonic() + WORKERS_TIMEOUT
        with ThreadPoolExecutor(4) as pool:
            while (len(seen) < 2 or calls < 20) and time.monotonic() < deadline:
                batch = list(
                    pool.map(lambda n: where(client, served.url, n), range(calls, calls + 4))
                )
                calls += len(batch)
                for answer in batch:
                    seen[answer["pid"]] = seen.get(answer["pid"], 0) + 1
                    directories.add(answer["directory"])
        metrics_url = served.url.removesuffix("/mcp") + "/metrics"
        totals = set()
        for _ in range(6):  # each scrape is answered by either worker: all say the same
            scraped = client.get(metrics_url, headers={"connection": "close"}).text
            totals.add(counts(scraped).get(labels("tools/call", "where")))
    assert len(seen) == 2, f"one worker served all {calls} calls: {seen}"
    assert totals == {float(calls)}
    (directory,) = directories
    assert Path(directory).name.startswith("mcpserve-metrics-")  # made by mcpserve for the run
    assert not Path(directory).exists()


def test_a_multiprocess_directory_given_is_used_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpserve.metrics.multiprocess import shared_directory

    given = tmp_path / "given"
    given.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(given))
    with shared_directory() as used:
        assert used == str(given)
    assert given.is_dir()
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    with shared_directory() as made:
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == made
        assert Path(made).is_dir()
    assert not Path(made).exists()
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
