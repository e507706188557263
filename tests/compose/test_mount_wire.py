"""A mounted server over real HTTP (uvicorn on 127.0.0.1), in both eras.

The server is ``tests/support/servers/mounted.py``: ``billing`` mounted in ``app`` under the
namespace ``billing``, with one of its tools transformed in the parent. Raw exchanges are
validated against the official schema of their era (``wire_helpers.post`` for 2026-07-28,
``legacy_schema.LegacyHTTPClient`` for 2025-11-25); list changes and resource updates are
heard through mcpserve's ``Client`` in both eras, and the official SDK's client uses the
mounted entries in the handshake era. Every wait is bounded; the server is always stopped.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client as OfficialClient
from mcp.types import PromptReference, ResourceTemplateReference, TextContent

from legacy_schema import LegacyHTTPClient, legacy_request
from mcpserve import Client
from wire_helpers import (
    SERVERS,
    TIMEOUT,
    HTTPServerProcess,
    call,
    http_server_process,
    post,
    request,
    wait_for_file,
)

pytestmark = pytest.mark.subprocess

MOUNTED = SERVERS / "mounted.py"
ERAS = ["2026-07-28", "2025-11-25"]


def serve(directory: Path) -> Any:
    return http_server_process(directory, args=[sys.executable, str(MOUNTED)])


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with serve(tmp_path_factory.mktemp("mounted-http")) as server:
        yield server


def only_text(result: dict[str, Any]) -> str:
    [block] = result["content"]
    return block["text"]  # type: ignore[no-any-return]


# The same requests in both eras: (method, params) and what the result must hold.
def exchanges() -> list[tuple[str, dict[str, Any], Any]]:
    return [
        ("tools/call", {"name": "billing_pay", "arguments": {"amount": 3}},
         lambda r: only_text(r) == "paid 3 (billing)"),
        ("resources/read", {"uri": "billing+ledger://acme"},
         lambda r: r["contents"] == [{"uri": "billing+ledger://acme", "text": "account acme"}]),
        ("prompts/get", {"name": "billing_invoice", "arguments": {"customer": "acme"}},
         lambda r: r["messages"][0]["content"]["text"] == "Invoice acme"),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "billing_invoice"},
                                 "argument": {"name": "customer", "value": "in"}},
         lambda r: r["completion"]["values"] == ["initech"]),
        ("completion/complete", {"ref": {"type": "ref/resource",
                                         "uri": "billing+ledger://{account}"},
                                 "argument": {"name": "account", "value": "a"}},
         lambda r: r["completion"]["values"] == ["acme"]),
        ("tools/call", {"name": "charge_eur", "arguments": {"amount": 7}},
         lambda r: only_text(r) == "charged 7 EUR"),
        ("tools/call", {"name": "charge_eur", "arguments": {"amount": 500}},
         lambda r: r["isError"] is True
         and only_text(r) == "Invalid arguments for tool charge_eur: amount: 500 is greater "
                             "than the maximum of 100"),
        ("tools/call", {"name": "charge_eur", "arguments": {"amount": 1, "currency": "USD"}},
         lambda r: r["isError"] is True and "currency: this argument is set by the server"
         in only_text(r)),
    ]  # fmt: skip


async def test_mounted_entries_answer_on_the_2026_wire(mounted: HTTPServerProcess) -> None:
    base = f"http://127.0.0.1:{mounted.port}"
    async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
        listed = await post(http, request(1, "tools/list"))
        names = [tool["name"] for tool in listed.result["tools"]]
        assert names[:4] == ["grow", "touch", "billing_pay", "charge_eur"]
        assert "billing_charge" not in names
        charge = next(tool for tool in listed.result["tools"] if tool["name"] == "charge_eur")
        assert set(charge["inputSchema"]["properties"]) == {"amount"}
        assert charge["inputSchema"]["properties"]["amount"]["maximum"] == 100
        templates = await post(http, request(2, "resources/templates/list"))
        assert [t["uriTemplate"] for t in templates.result["resourceTemplates"]] == [
            "billing+ledger://{account}"
        ]
        for number, (method, params, holds) in enumerate(exchanges(), start=10):
            reply = await post(http, request(number, method, params))
            assert reply.status == 200, reply
            assert holds(reply.result), (method, params, reply.result)


async def test_mounted_entries_answer_on_the_handshake_wire(mounted: HTTPServerProcess) -> None:
    base = f"http://127.0.0.1:{mounted.port}"
    async with httpx2.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
        client = LegacyHTTPClient.over_httpx(http)
        try:
            hello = await client.initialize()
            capabilities = hello.result["capabilities"]
            assert capabilities["tools"] == {"listChanged": True}
            assert capabilities["resources"] == {"subscribe": True, "listChanged": True}
            assert "completions" in capabilities
            listed = await client.post(legacy_request(1, "tools/list"))
            assert "billing_pay" in [tool["name"] for tool in listed.result["tools"]]
            for number, (method, params, holds) in enumerate(exchanges(), start=10):
                reply = await client.post(legacy_request(number, method, params))
                assert reply.status == 200, reply
                assert holds(reply.result), (method, params, reply.result)
            # A list change in the mounted server reaches the session's standalone stream.
            stream = await client.get()
            name = f"grown_{uuid.uuid4().hex[:6]}"
            grown = await client.post(legacy_request(50, "tools/call", {
                "name": "grow", "arguments": {"name": name}}))  # fmt: skip
            assert only_text(grown.result) == f"billing has {name}"
            note = await stream.next_message()
            assert note["method"] == "notifications/tools/list_changed"
            again = await client.post(legacy_request(51, "tools/list"))
            assert f"billing_{name}" in [tool["name"] for tool in again.result["tools"]]
            assert (await client.delete()).status == 200
        finally:
            await client.close()


async def next_note(notes: Any) -> dict[str, Any]:
    note: dict[str, Any] = await asyncio.wait_for(anext(aiter(notes)), TIMEOUT)
    return note


@pytest.mark.parametrize("era", ERAS)
async def test_changes_and_updates_in_the_mounted_server_reach_http_listeners(
    mounted: HTTPServerProcess, era: str
) -> None:
    name = f"grown_{uuid.uuid4().hex[:6]}"
    async with (
        asyncio.timeout(TIMEOUT * 2),
        Client(mounted.url, protocol_version=era) as client,
        client.listen(tools_list_changed=True, resources=["billing+ledger://acme"]) as notes,
    ):
        assert notes.acknowledged is not None
        assert notes.acknowledged["resourceSubscriptions"] == ["billing+ledger://acme"]
        assert only_text(await client.call_tool("grow", {"name": name})) == (f"billing has {name}")
        assert (await next_note(notes))["method"] == "notifications/tools/list_changed"
        assert only_text(await client.call_tool(f"billing_{name}")) == "grown"
        await client.call_tool("touch", {"account": "acme"})
        updated = await next_note(notes)
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"]["uri"] == "billing+ledger://acme"


async def test_the_official_client_uses_mounted_entries_in_the_handshake_era(
    mounted: HTTPServerProcess,
) -> None:
    async with OfficialClient(mounted.url, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
        assert client.protocol_version == "2025-11-25"
        paid = await client.call_tool("billing_pay", {"amount": 4})
        [block] = paid.content
        assert isinstance(block, TextContent)
        assert block.text == "paid 4 (billing)"
        read = await client.read_resource("billing+ledger://initech")
        assert read.contents[0].text == "account initech"  # type: ignore[union-attr]
        completed = await client.complete(
            PromptReference(type="ref/prompt", name="billing_invoice"),
            {"name": "customer", "value": "u"},
        )
        assert completed.completion.values == ["umbrella"]
        completed = await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="billing+ledger://{account}"),
            {"name": "account", "value": "i"},
        )
        assert completed.completion.values == ["initech"]
        refused = await client.call_tool("charge_eur", {"amount": 101})
        assert refused.is_error is True


async def test_the_mounted_lifespan_runs_inside_the_parents_in_a_served_process(
    tmp_path: Path,
) -> None:
    marks = tmp_path / "lifespans.txt"
    with serve(tmp_path) as server:
        await wait_for_file(marks)
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:  # serving: both are running
            reply = await post(http, call(1, "billing_pay", {"amount": 1}), path=server.url)
            assert only_text(reply.result) == "paid 1 (billing)"
        assert marks.read_text().split("\n")[:2] == ["app start", "billing start"]
    # The process was stopped (SIGTERM): the mounted server stopped first.
    assert marks.read_text().splitlines() == ["app start", "billing start", "billing stop",
                                              "app stop"]  # fmt: skip
