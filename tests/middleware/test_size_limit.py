"""``ResponseSizeLimit``: a tool result over the limit becomes a tool error, never a
truncated body; on every wire, then in process for where the limit falls exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpserve import Server
from mcpserve.middleware import ResponseSizeLimit
from middleware_peers import WIRES, serving

pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize(("transport", "era"), WIRES)
async def test_a_result_over_the_limit_becomes_a_tool_error(
    transport: str, era: str, tmp_path: Path
) -> None:
    async with serving(transport, tmp_path, MCPSERVE_TEST_MIDDLEWARE="size") as open_peer:
        peer = await open_peer(era)
        assert (await peer.call("sized", size=20)).text == "x" * 20
        refused = await peer.call("sized", size=500)
        assert refused.result["isError"] is True
        size = len(json.dumps({"content": [{"type": "text", "text": "x" * 500}]},
                              separators=(",", ":")))  # fmt: skip
        assert refused.text == f"Result of {size} bytes exceeds the limit of 200 bytes"
        assert "xxxx" not in json.dumps(refused.message)
        # Lists are not measured: the tool list is longer than 200 bytes.
        assert len((await peer.ask("tools/list")).result["tools"]) > 3


async def test_the_limit_counts_utf8_bytes_and_is_inclusive(connect: Any) -> None:
    server = Server("sized")

    @server.tool
    def text(value: str) -> str:
        return value

    body = {"content": [{"type": "text", "text": "é" * 10}]}
    exact = len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
    server.middleware(ResponseSizeLimit(max_bytes=exact))
    async with connect(server) as client:
        assert (await client.call_tool("text", {"value": "é" * 10}))["content"][0][
            "text"
        ] == "é" * 10
        over = await client.call_tool("text", {"value": "é" * 11})
    assert over["isError"] is True
    assert over["content"][0]["text"] == (
        f"Result of {exact + 2} bytes exceeds the limit of {exact} bytes"
    )


@pytest.mark.parametrize("limit", [0, -5, 1.5, "100"])
def test_a_limit_that_is_not_a_positive_whole_number_is_refused(limit: Any) -> None:
    with pytest.raises(ValueError, match="max_bytes must be a whole number of bytes"):
        ResponseSizeLimit(max_bytes=limit)
