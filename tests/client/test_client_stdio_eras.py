"""``Client.stdio`` in both eras: pinned to a handshake-era version, or negotiating.

A stdio client speaks 2026-07-28 unless told otherwise; pinned to ``2025-11-25`` it sends
``initialize`` and answers the server's own requests (elicitation) with its handlers;
``negotiate=True`` settles the era as the HTTP client does. A server that exits fails the
requests waiting on it, and the next request, at once; a line on stdout that is not JSON
is not a message.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mcpserve import Client
from wire_helpers import ROOT, SERVERS, TIMEOUT, child_env

pytestmark = pytest.mark.subprocess

UPSTREAM = [sys.executable, str(SERVERS / "proxy_upstream.py")]
GARBAGE = [sys.executable, str(SERVERS / "proxy_garbage.py")]


def name_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def stdio(command: list[str], **options: Any) -> Client:
    return Client.stdio(command, cwd=str(ROOT), env=child_env(), timeout=TIMEOUT, **options)


def text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]  # type: ignore[no-any-return]


async def test_a_client_pinned_to_the_handshake_era_initializes_and_answers_questions() -> None:
    async with stdio(UPSTREAM, protocol_version="2025-11-25", on_elicit=name_ada) as client:
        assert client.legacy
        assert client.protocol_version == "2025-11-25"
        assert client.server_info["name"] == "proxied"
        assert text(await client.call_tool("greet")) == "Hello, Ada!"


async def test_a_negotiating_client_keeps_to_2026_07_28_with_a_server_that_speaks_it() -> None:
    async with stdio(UPSTREAM, negotiate=True) as client:
        assert not client.legacy
        assert client.protocol_version == "2026-07-28"
        assert client.instructions == "The server behind the proxy."
        assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"


async def test_a_negotiating_client_falls_back_to_the_handshake_for_an_older_server() -> None:
    async with stdio(GARBAGE, negotiate=True) as client:
        assert client.legacy
        assert client.protocol_version == "2025-06-18"


async def test_requests_to_a_server_that_exited_fail_at_once() -> None:
    async with stdio(UPSTREAM) as client:
        with pytest.raises(ConnectionError):
            await client.call_tool("exit_now")
        with pytest.raises(ConnectionError, match="exited"):
            await client.call_tool("echo", {"text": "hi"})


async def test_a_line_on_stdout_that_is_not_json_is_skipped() -> None:
    async with stdio(GARBAGE, protocol_version="2025-06-18") as client:
        result = await client.call_tool("after_noise")
    assert text(result) == "answered after a line of noise"
