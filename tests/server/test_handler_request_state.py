"""A tool that keeps its own ``requestState`` (``@server.tool(request_state="handler")``):
mcpserve neither seals nor verifies it (``docs/decisions.md``, "A handler's own
requestState").

The wire tests run ``tests/support/servers/own_state.py`` over real HTTP on 127.0.0.1, 2026-07-28,
every answer schema-checked: the handler's string goes out verbatim, whatever the client
sends back reaches the handler unverified, and a tool beside it keeps its sealed state,
tampering refused. The in-memory tests pin the mistakes a handler can make, each one line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator, Iterator
from itertools import count
from typing import Any

import httpx2
import pytest

from mcpserve import Client, Context, InputRequired, Server
from wire_helpers import SERVERS, TIMEOUT, HTTPServerProcess, call, http_server_process, post

CAPABILITIES = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
DUPLICATE = {"action": "accept", "content": {"resolution": "Duplicate"}}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    script = str(SERVERS / "own_state.py")
    with http_server_process(
        tmp_path_factory.mktemp("own-state"), args=[sys.executable, script]
    ) as srv:
        yield srv


class Wire:
    """Raw ``tools/call`` requests over HTTP, answers schema-checked."""

    def __init__(self, http: httpx2.AsyncClient) -> None:
        self.http = http
        self.ids = count(1)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        state: Any = None,
        responses: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON-RPC response (result or error) to one call."""
        message = call(next(self.ids), tool, arguments or {}, **CAPABILITIES)
        if state is not None:
            message["params"]["requestState"] = state
        if responses is not None:
            message["params"]["inputResponses"] = responses
        reply = await post(self.http, message)
        assert reply.status == 200, reply
        return reply.message


@pytest.fixture
async def wire(served: HTTPServerProcess) -> AsyncIterator[Wire]:
    async with httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{served.port}", timeout=TIMEOUT
    ) as http:
        yield Wire(http)


def text(response: dict[str, Any]) -> str:
    (block,) = response["result"]["content"]
    return block["text"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------ wire


@pytest.mark.subprocess
async def test_the_handlers_state_goes_out_verbatim(wire: Wire) -> None:
    first = (await wire.call("resolve", {"item": 7}))["result"]
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["resolution"]
    assert first["requestState"] == "item=7"

    second = await wire.call("resolve", {"item": 7}, state="item=7",
                             responses={"resolution": DUPLICATE})  # fmt: skip
    assert list(second["result"]["inputRequests"]) == ["duplicate"]
    assert second["result"]["requestState"] == "item=7;resolution=Duplicate"

    answer = {"duplicate": {"action": "accept", "content": {"duplicate_of": 42}}}
    done = await wire.call("resolve", {"item": 7}, state=second["result"]["requestState"],
                           responses=answer)  # fmt: skip
    assert text(done) == "item 7: Duplicate of 42 (state 'item=7;resolution=Duplicate')"


@pytest.mark.subprocess
async def test_whatever_the_client_sends_back_reaches_the_handler_unverified(wire: Wire) -> None:
    made_up = "item=7;resolution=Made up by the client ✓"
    answer = {"duplicate": {"action": "accept", "content": {"duplicate_of": 1}}}
    done = await wire.call("resolve", {"item": 7}, state=made_up, responses=answer)
    assert "error" not in done
    assert text(done) == f"item 7: Made up by the client ✓ of 1 (state {made_up!r})"


@pytest.mark.subprocess
async def test_a_sealed_looking_state_is_not_opened_for_the_handler(wire: Wire) -> None:
    """A state mcpserve sealed for another tool means nothing here: the handler gets it as
    text (and, finding no resolution in it, asks again), no -32602."""
    sealed = (await wire.call("sealed"))["result"]["requestState"]
    asked = await wire.call("resolve", {"item": 3}, state=sealed)
    assert asked["result"]["resultType"] == "input_required"
    assert asked["result"]["requestState"] == "item=3"


@pytest.mark.subprocess
async def test_a_handler_that_sets_no_state_hands_out_none(wire: Wire) -> None:
    first = (await wire.call("stateless"))["result"]
    assert first["resultType"] == "input_required"
    assert "requestState" not in first
    done = await wire.call("stateless", state="anything", responses={"ok": DUPLICATE})
    assert text(done) == "answered (state 'anything')"


@pytest.mark.subprocess
async def test_a_tampered_state_on_a_sealed_tool_is_still_refused(wire: Wire) -> None:
    state = (await wire.call("sealed"))["result"]["requestState"]
    assert state.startswith("v1.")
    tampered = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
    refused = await wire.call("sealed", state=tampered, responses={"resolution": DUPLICATE})
    assert refused["error"] == {"code": -32602, "message": "Invalid requestState"}
    untouched = await wire.call("sealed", state=state, responses={"resolution": DUPLICATE})
    assert text(untouched) == "sealed Duplicate"


@pytest.mark.subprocess
async def test_the_handlers_own_string_is_refused_by_a_sealed_tool(wire: Wire) -> None:
    refused = await wire.call("sealed", state="item=7", responses={"resolution": DUPLICATE})
    assert refused["error"] == {"code": -32602, "message": "Invalid requestState"}


# ------------------------------------------------------------------------------ in memory


async def test_a_question_takes_only_this_rounds_answer() -> None:
    """With no sealed record of earlier rounds, an answer given in round 2 is gone in round
    3: the handler asks again unless it kept the answer in its own state."""
    server = Server("forgetful")

    @server.tool(request_state="handler")
    async def two_questions(ctx: Context) -> str:
        first = await ctx.elicit("First?", {"type": "object", "properties": {}}, key="first")
        second = await ctx.elicit("Second?", {"type": "object", "properties": {}}, key="second")
        return f"{first.action} {second.action}"

    yes = {"action": "accept", "content": {}}
    capabilities = {"elicitation": {"form": {}}}
    async with Client(server) as client:
        params: dict[str, Any] = {"name": "two_questions", "arguments": {}}
        one = await client.request("tools/call", params, capabilities=capabilities)
        assert list(one["inputRequests"]) == ["first"]
        two = await client.request("tools/call", {**params, "inputResponses": {"first": yes}},
                                   capabilities=capabilities)  # fmt: skip
        assert list(two["inputRequests"]) == ["second"]
        three = await client.request("tools/call", {**params, "inputResponses": {"second": yes}},
                                     capabilities=capabilities)  # fmt: skip
        assert list(three["inputRequests"]) == ["first"]
        both = {"first": yes, "second": yes}
        done = await client.request("tools/call", {**params, "inputResponses": both},
                                    capabilities=capabilities)  # fmt: skip
    assert done["content"] == [{"type": "text", "text": "accept accept"}]


def mistaken_server(handler: Any, *, request_state: str = "handler") -> Server:
    server = Server("mistakes", raise_exceptions=True)
    server.tool(name="mistaken", request_state=request_state)(handler)  # type: ignore[call-overload]
    return server


async def run_mistaken(server: Server) -> None:
    async with Client(server) as client:
        await client.request("tools/call", {"name": "mistaken", "arguments": {}},
                             capabilities={"elicitation": {"form": {}}})  # fmt: skip


async def test_reading_the_sealed_state_of_a_handler_state_tool_says_what_to_do() -> None:
    async def mistaken(ctx: Context) -> str:
        return str(ctx.state)

    with pytest.raises(RuntimeError) as raised:
        await run_mistaken(mistaken_server(mistaken))
    assert str(raised.value) == (
        'mistaken keeps its own requestState (request_state="handler"), so nothing is '
        "sealed: read ctx.raw_request_state and hand yours out with "
        "ctx.set_raw_request_state(text)"
    )


async def test_sealed_state_in_input_required_of_a_handler_state_tool_says_what_to_do() -> None:
    async def mistaken(ctx: Context) -> Any:
        return InputRequired({}, state={"step": 1})

    with pytest.raises(RuntimeError) as raised:
        await run_mistaken(mistaken_server(mistaken))
    assert str(raised.value) == (
        'mistaken keeps its own requestState (request_state="handler"), so nothing is '
        "sealed: hand yours out with ctx.set_raw_request_state(text), not "
        "InputRequired(state=...)"
    )


async def test_setting_a_raw_state_on_a_sealed_tool_says_what_to_do() -> None:
    async def mistaken(ctx: Context) -> str:
        ctx.set_raw_request_state("mine")
        return "never"

    with pytest.raises(RuntimeError) as raised:
        await run_mistaken(mistaken_server(mistaken, request_state="sealed"))
    assert str(raised.value) == (
        "mistaken's requestState is sealed by mcpserve: keep your data in ctx.state, or "
        'register the tool with request_state="handler" to hand out your own'
    )


async def test_a_raw_state_is_a_string() -> None:
    async def mistaken(ctx: Context) -> str:
        ctx.set_raw_request_state({"step": 1})  # type: ignore[arg-type]
        return "never"

    with pytest.raises(TypeError, match=r"^A requestState is a string, not dict$"):
        await run_mistaken(mistaken_server(mistaken))


def lookup() -> str:
    return "x"


def test_an_unknown_keeper_is_refused_at_registration() -> None:
    server = Server("typo")
    message = "Tool 'lookup': request_state must be \"sealed\" or \"handler\", not 'mine'"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        server.tool(request_state="mine")(lookup)  # type: ignore[call-overload]


def test_tools_seal_their_state_unless_told() -> None:
    assert Server("default").tool(lookup).request_state == "sealed"


# ------------------------------------------------------------------------------ the docs


def reference_example() -> Server:
    """docs/reference.md's example of a tool that signs its own state."""
    from markdown_blocks import ROOT, blocks

    [example] = [
        block.code
        for block in blocks(ROOT / "docs" / "reference.md")
        if block.language == "python" and block.code.startswith("import hashlib\n")
    ]
    namespace: dict[str, Any] = {"__name__": "reference_example"}
    exec(compile(example, "reference.md", "exec"), namespace)
    server: Server = namespace["tracker"]
    return server


async def test_the_reference_example_carries_its_signed_state_across_rounds() -> None:
    def answer(params: dict[str, Any]) -> dict[str, Any]:
        if params["message"] == "Resolution?":
            return {"action": "accept", "content": {"resolution": "Duplicate"}}
        return {"action": "accept", "content": {"item": 42}}

    async with Client(reference_example(), on_elicit=answer) as client:
        result = await client.call_tool("resolve", {"item": 7})
    assert result["content"] == [{"type": "text", "text": "#7: duplicate of #42"}]


async def test_the_reference_example_starts_over_on_a_state_it_did_not_sign() -> None:
    forged = "0" * 64 + '.{"item": 7, "resolution": "Duplicate"}'
    async with Client(reference_example()) as client:
        params = {"name": "resolve", "arguments": {"item": 7}, "requestState": forged}
        asked = await client.request(
            "tools/call", params, capabilities={"elicitation": {"form": {}}}
        )
    assert list(asked["inputRequests"]) == ["resolution"]
    assert "requestState" not in asked
