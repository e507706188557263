"""Sealed ``requestState``: integrity, binding, expiry, keys (``docs/decisions.md``,
"Sealed requestState").

``requestState`` travels through the client, so it is attacker-controlled input. Anything
that does not open, or opens but was issued for another request, principal or time, is
-32602 ``Invalid requestState`` on the wire; why it was refused goes only to the server log
(logger ``mcpserve.state``).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import sys
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from mcpserve import Auth, Client, Context, MCPError, Server
from mcpserve.cli import main as cli_main
from mcpserve.protocol import constants as c
from mcpserve.protocol.request_state import (
    MAX_STATE_CHARS,
    Binding,
    StateRejected,
    StateSealer,
    generate_key,
    parse_keys,
)
from wire_helpers import SERVERS
from wire_schema import check, check_response

FORM = {"elicitation": {"form": {}}}
ALICE = {"action": "accept", "content": {"name": "Alice"}}
SHARED_SERVER = SERVERS / "mrtr_shared.py"


@pytest.fixture(autouse=True)
def _no_shared_state_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSERVE_STATE_KEYS", raising=False)


class UserName(BaseModel):
    name: str


def key(kid: str) -> tuple[str, bytes]:
    return (kid, os.urandom(32))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def make_server(**options: Any) -> Server:
    """Two eliciting tools, a prompt named like one of them, a resource template and a
    tool that never asks: every retry target the binding tests need."""
    server = Server("state", **options)

    @server.tool
    async def greet(ctx: Context, excited: bool = False) -> str:
        answer = await ctx.elicit("What is your name?", UserName, key="user_name")
        return f"Hello, {answer.data.name}{'!' if excited else '.'}"

    @server.tool
    async def farewell(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", UserName, key="user_name")
        return f"Bye, {answer.data.name}."

    @server.tool
    def plain() -> str:
        return "plain"

    @server.prompt(name="greet")
    async def greet_prompt(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", UserName, key="user_name")
        return f"Greet {answer.data.name}"

    @server.resource("doc://{name}")
    async def doc(name: str, ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", UserName, key="user_name")
        return f"{name} for {answer.data.name}"

    return server


async def call(
    client: Any,
    name: str = "greet",
    arguments: dict[str, Any] | None = None,
    *,
    state: Any = None,
    responses: Any = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if state is not None:
        params["requestState"] = state
    if responses is not None:
        params["inputResponses"] = responses
    result: dict[str, Any] = await client.request("tools/call", params, capabilities=FORM)
    return result


async def issue(client: Any, name: str = "greet", arguments: dict[str, Any] | None = None) -> str:
    """The ``requestState`` of a first attempt."""
    result = await call(client, name, arguments)
    assert result["resultType"] == "input_required"
    state: str = result["requestState"]
    return state


async def rejection(
    client: Any, name: str = "greet", arguments: dict[str, Any] | None = None, **kwargs: Any
) -> MCPError:
    """Retry with ``kwargs``; the retry must fail with an ``MCPError``, which is returned."""
    kwargs.setdefault("responses", {"user_name": ALICE})
    with pytest.raises(MCPError) as raised:
        await call(client, name, arguments, **kwargs)
    return raised.value


def assert_invalid_state(error: MCPError) -> None:
    assert error.code == -32602
    assert error.message == "Invalid requestState"
    assert error.data is None


def rejection_reasons(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "mcpserve.state" and record.levelno >= logging.WARNING
    ]


def flip(position: int) -> Any:
    def tamper(state: str) -> str:
        index = position % len(state)
        return state[:index] + chr(ord(state[index]) ^ 0x01) + state[index + 1 :]

    tamper.__name__ = f"flip_{position}"
    return tamper


URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def flip_sextet(position: int) -> Any:
    """Flip the lowest bit that the base64url character at ``position`` encodes."""

    def tamper(state: str) -> str:
        index = position % len(state)
        flipped = URLSAFE[URLSAFE.index(state[index]) ^ 0x01]
        return state[:index] + flipped + state[index + 1 :]

    return tamper


TAMPERINGS = {
    "flip-version": flip(0),
    "flip-key-id": flip(3),
    "flip-nonce": flip(12),
    "flip-middle": lambda s: flip(len(s) // 2)(s),
    "flip-encoded-bit": lambda s: flip_sextet(len(s) // 2)(s),
    "flip-tag": flip(-3),
    "truncate-one": lambda s: s[:-1],
    "truncate-half": lambda s: s[: len(s) // 2],
    "header-only": lambda s: s.rsplit(".", 1)[0] + ".",
    "append-TAMPERED": lambda s: s + "-TAMPERED",
    "empty": lambda s: "",
    "garbage": lambda s: "hello",
    "wrong-version": lambda s: "v2" + s[2:],
    "unknown-key-id": lambda s: "v1.nokey." + s.rsplit(".", 1)[1],
    "huge": lambda s: "v1." + "A" * (MAX_STATE_CHARS + 1),
    "number": lambda s: 12345,
    "list": lambda s: [s],
    "object": lambda s: {"state": s},
    "boolean": lambda s: True,
}


# --------------------------------------------------------------------------- tampering


@pytest.mark.parametrize("tamper", TAMPERINGS.values(), ids=TAMPERINGS.keys())
async def test_tampered_state_is_invalid_params_naming_no_reason(connect, tamper):
    async with connect(make_server()) as client:
        state = await issue(client)
        error = await rejection(client, state=tamper(state))
    assert_invalid_state(error)


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda s: flip_sextet(len(s) // 2)(s), "authentication failed"),
        (lambda s: "v2" + s[2:], "unknown format version"),
        (lambda s: "v1.nokey." + s.rsplit(".", 1)[1], "unknown key id"),
        (lambda s: "", "not a string"),
        (lambda s: 12345, "not a string"),
        (lambda s: "v1." + "A" * (MAX_STATE_CHARS + 1), "acceptable size"),
    ],
    ids=["bit-flip", "version", "key-id", "empty", "non-string", "huge"],
)
async def test_rejection_reason_goes_to_the_server_log(connect, caplog, tamper, reason):
    async with connect(make_server()) as client:
        state = await issue(client)
        with caplog.at_level(logging.WARNING, logger="mcpserve.state"):
            error = await rejection(client, state=tamper(state))
    assert reason not in error.message
    assert any(reason in message for message in rejection_reasons(caplog))


async def test_state_is_verified_even_by_a_tool_that_never_asks(connect):
    async with connect(make_server()) as client:
        state = await issue(client, "greet")
        error = await rejection(client, "plain", state=state + "-TAMPERED", responses={})
    assert_invalid_state(error)


async def test_untouched_state_is_accepted(connect):
    async with connect(make_server()) as client:
        state = await issue(client)
        result = await call(client, state=state, responses={"user_name": ALICE})
    assert result["content"][0]["text"] == "Hello, Alice."


def malleable_variants(state: str) -> dict[str, str]:
    """Strings that differ from ``state`` but that a lax base64 decoder maps to its bytes."""
    header, token = state.rsplit(".", 1)
    variants = {
        "padding-appended": state + "==",
        "standard-alphabet": header + "." + token.replace("-", "+").replace("_", "/"),
        "non-alphabet-inserted": header + "." + token[:4] + "!!!!" + token[4:],
    }
    if len(token) % 4 in (2, 3):  # the last character carries unused low bits
        last = URLSAFE.index(token[-1])
        variants["unused-bit-flipped"] = header + "." + token[:-1] + URLSAFE[last ^ 1]
    return variants


def seal_with_token(sealer: StateSealer, binding: Binding, needs: Any) -> str:
    """A state whose token satisfies ``needs`` (its length depends on the payload size)."""
    for pad in range(64):
        state = sealer.seal(binding, {"pad": "x" * pad}, round_number=1)
        if needs(state.rsplit(".", 1)[1]):
            return state
    raise AssertionError("no payload size gave the wanted token")


@pytest.mark.parametrize(
    ("variant", "needs"),
    [
        ("padding-appended", lambda token: True),
        ("standard-alphabet", lambda token: "-" in token or "_" in token),
        ("non-alphabet-inserted", lambda token: len(token) % 4 == 0),
        ("unused-bit-flipped", lambda token: len(token) % 4 == 2),
    ],
    ids=["padding-appended", "standard-alphabet", "non-alphabet-inserted", "unused-bit-flipped"],
)
def test_state_text_other_than_the_issued_one_is_rejected(variant, needs):
    # Each variant decodes to the sealed bytes under a lax base64 decoder, so AES-GCM alone
    # cannot catch it: the string itself must be the exact, canonical one issued.
    sealer = StateSealer([key("k1")])
    binding = Binding.of("tools/call", "greet", {}, None)
    state = seal_with_token(sealer, binding, needs)
    tampered = malleable_variants(state)[variant]
    assert tampered != state
    with pytest.raises(StateRejected):
        sealer.open(tampered, binding)


async def test_state_with_padding_appended_is_rejected_on_the_wire(connect):
    async with connect(make_server()) as client:
        state = await issue(client)
        with pytest.raises(MCPError) as raised:
            await call(client, state=state + "==", responses={"user_name": ALICE})
    assert_invalid_state(raised.value)


async def test_client_cannot_read_the_sealed_state(connect):
    server = Server("state")

    @server.tool
    async def secretive(ctx: Context) -> str:
        ctx.state["secret"] = "hunter2"
        await ctx.elicit("What is your name?", UserName, key="user_name")
        return "ok"

    async with connect(server) as client:
        first = await call(client, "secretive")
        second = await call(client, "secretive", state=first["requestState"])
    for state in (first["requestState"], second["requestState"]):
        token = state.rsplit(".", 1)[1]
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        assert b"hunter2" not in raw
        assert b"greet" not in raw
        assert "hunter2" not in state


# --------------------------------------------------------------------------- binding


async def test_state_from_one_tool_is_rejected_on_another_tool(connect, caplog):
    async with connect(make_server()) as client:
        state = await issue(client, "greet")
        with caplog.at_level(logging.WARNING, logger="mcpserve.state"):
            error = await rejection(client, "farewell", state=state)
    assert_invalid_state(error)
    assert any("another request" in message for message in rejection_reasons(caplog))


async def test_state_is_rejected_when_the_arguments_differ(connect):
    async with connect(make_server()) as client:
        state = await issue(client, "greet", {"excited": False})
        error = await rejection(client, "greet", {"excited": True}, state=state)
    assert_invalid_state(error)


async def test_state_is_accepted_with_the_same_arguments_in_another_key_order(connect):
    server = Server("state")

    @server.tool
    async def pair(a: int, b: int, ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", UserName, key="user_name")
        return f"{a}+{b} for {answer.data.name}"

    async with connect(server) as client:
        state = await issue(client, "pair", {"a": 1, "b": 2})
        result = await call(
            client, "pair", {"b": 2, "a": 1}, state=state, responses={"user_name": ALICE}
        )
    assert result["content"][0]["text"] == "1+2 for Alice"


async def test_tool_state_is_rejected_on_a_prompt_of_the_same_name(connect):
    async with connect(make_server()) as client:
        state = await issue(client, "greet")
        with pytest.raises(MCPError) as raised:
            await client.request(
                "prompts/get",
                {"name": "greet", "requestState": state, "inputResponses": {"user_name": ALICE}},
                capabilities=FORM,
            )
    assert_invalid_state(raised.value)


async def test_resource_state_is_rejected_on_another_uri(connect):
    async with connect(make_server()) as client:
        first = await client.request("resources/read", {"uri": "doc://a"}, capabilities=FORM)
        with pytest.raises(MCPError) as raised:
            await client.request(
                "resources/read",
                {
                    "uri": "doc://b",
                    "requestState": first["requestState"],
                    "inputResponses": {"user_name": ALICE},
                },
                capabilities=FORM,
            )
    assert_invalid_state(raised.value)


def tools_call(state: str | None = None, *, request_id: int = 1) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "greet",
        "arguments": {},
        "_meta": {
            c.META_PROTOCOL_VERSION: c.LATEST_VERSION,
            c.META_CLIENT_CAPABILITIES: FORM,
        },
    }
    if state is not None:
        params["requestState"] = state
        params["inputResponses"] = {"user_name": ALICE}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def issue_as(server: Server, principal: str | None) -> str:
    response = await server.handle(tools_call(), auth=Auth(principal=principal))
    assert response is not None
    check_response("tools/call", response)
    state: str = response["result"]["requestState"]
    return state


async def test_state_is_accepted_from_the_principal_it_was_issued_to():
    server = make_server()
    state = await issue_as(server, "alice")
    response = await server.handle(tools_call(state, request_id=2), auth=Auth(principal="alice"))
    assert response is not None
    check_response("tools/call", response)
    assert response["result"]["content"][0]["text"] == "Hello, Alice."


@pytest.mark.parametrize(
    ("issued_to", "presented_by"),
    [("alice", "bob"), ("alice", None), (None, "bob")],
    ids=["other-user", "anonymous", "anonymous-state"],
)
async def test_state_presented_by_another_principal_is_rejected(caplog, issued_to, presented_by):
    server = make_server()
    state = await issue_as(server, issued_to)
    with caplog.at_level(logging.WARNING, logger="mcpserve.state"):
        response = await server.handle(
            tools_call(state, request_id=2), auth=Auth(principal=presented_by)
        )
    assert response is not None
    check_response("tools/call", response)
    assert response["error"] == {"code": -32602, "message": "Invalid requestState"}
    assert any("another principal" in message for message in rejection_reasons(caplog))


# --------------------------------------------------------------------------- expiry


async def test_expired_state_is_rejected(connect, caplog):
    async with connect(make_server(state_ttl_seconds=0.001)) as client:
        state = await issue(client)
        await asyncio.sleep(0.05)
        with caplog.at_level(logging.WARNING, logger="mcpserve.state"):
            error = await rejection(client, state=state)
    assert_invalid_state(error)
    assert any("expired" in message for message in rejection_reasons(caplog))


def test_sealer_refuses_a_state_past_its_ttl():
    sealer = StateSealer([key("k1")], ttl_seconds=-1)
    binding = Binding.of("tools/call", "greet", {}, None)
    state = sealer.seal(binding, {}, round_number=1)
    with pytest.raises(StateRejected, match="expired"):
        sealer.open(state, binding)


def test_sealer_opens_a_fresh_state_with_its_payload_and_round():
    sealer = StateSealer([key("k1")])
    binding = Binding.of("tools/call", "greet", {"x": 1}, "alice")
    state = sealer.seal(binding, {"a": {"k": 1}}, round_number=3)
    assert sealer.open(state, binding) == ({"a": {"k": 1}}, 3)


# --------------------------------------------------------------------------- keys


def test_state_sealed_with_an_old_key_opens_after_rotation():
    old, new = key("old"), key("new")
    binding = Binding.of("tools/call", "greet", {}, None)
    state = StateSealer([old]).seal(binding, {"n": 1}, round_number=1)
    payload, _ = StateSealer([new, old]).open(state, binding)
    assert payload == {"n": 1}


def test_rotated_sealer_seals_with_the_newest_key_id():
    old, new = key("old"), key("new")
    binding = Binding.of("tools/call", "greet", {}, None)
    state = StateSealer([new, old]).seal(binding, {}, round_number=1)
    assert state.startswith("v1.new.")
    with pytest.raises(StateRejected, match="unknown key id"):
        StateSealer([old]).open(state, binding)


async def test_retry_completes_on_a_server_whose_keys_were_rotated(connect):
    old, new = key("old"), key("new")
    async with connect(make_server(state_keys=[old])) as before:
        state = await issue(before)
    async with connect(make_server(state_keys=[new, old])) as after:
        result = await call(after, state=state, responses={"user_name": ALICE})
        reissued = await issue(after)
    assert result["content"][0]["text"] == "Hello, Alice."
    assert reissued.startswith("v1.new.")


async def test_state_from_one_instance_completes_on_another_with_the_same_keys(connect):
    keys = [key("shared")]
    async with (
        connect(make_server(state_keys=keys)) as one,
        connect(make_server(state_keys=keys)) as two,
    ):
        state = await issue(one)
        result = await call(two, state=state, responses={"user_name": ALICE})
    assert result["content"][0]["text"] == "Hello, Alice."


@pytest.mark.parametrize(
    ("other_keys", "reason"),
    [([("shared", os.urandom(32))], "authentication failed"), ([key("other")], "unknown key")],
    ids=["same-id-other-key", "other-id"],
)
async def test_state_from_one_instance_is_rejected_by_one_with_other_keys(
    connect, caplog, other_keys, reason
):
    async with (
        connect(make_server(state_keys=[key("shared")])) as one,
        connect(make_server(state_keys=other_keys)) as two,
    ):
        state = await issue(one)
        with caplog.at_level(logging.WARNING, logger="mcpserve.state"):
            error = await rejection(two, state=state)
    assert_invalid_state(error)
    assert any(reason in message for message in rejection_reasons(caplog))


async def test_instances_without_configured_keys_cannot_open_each_others_state(connect):
    async with connect(make_server()) as one, connect(make_server()) as two:
        state = await issue(one)
        error = await rejection(two, state=state)
    assert_invalid_state(error)


def test_unconfigured_sealer_says_so():
    assert not StateSealer().configured
    assert StateSealer([key("k1")]).configured


# --------------------------------------------------------------------------- MCPSERVE_STATE_KEYS


def test_parse_keys_reads_ids_and_keys_newest_first():
    first, second = os.urandom(32), os.urandom(32)
    assert parse_keys(f"new:{b64(first)}, old:{b64(second)}") == [
        ("new", first),
        ("old", second),
    ]


def test_parse_keys_accepts_unpadded_url_safe_base64():
    raw = bytes(range(250, 256)) + os.urandom(26)  # starts with bytes that encode to '-'/'_'
    encoded = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert parse_keys(f"k1:{encoded}") == [("k1", raw)]


@pytest.mark.parametrize(
    "spec",
    [
        "",
        " , ",
        "no-colon-here",
        f"bad-id:{b64(os.urandom(32))}",
        f":{b64(os.urandom(32))}",
        f"short:{b64(os.urandom(16))}",
        f"long:{b64(os.urandom(48))}",
        "junk:!!!!",
        "k1:",
        "k1:abcde",
    ],
    ids=[
        "empty",
        "only-commas",
        "no-colon",
        "id-not-alnum",
        "no-id",
        "short",
        "long",
        "junk",
        "no-key",
        "bad-base64-length",
    ],
)
def test_parse_keys_refuses_malformed_specs(spec):
    with pytest.raises(ValueError, match="MCPSERVE_STATE_KEYS"):
        parse_keys(spec)


def test_sealer_reads_keys_from_the_environment(monkeypatch):
    monkeypatch.setenv("MCPSERVE_STATE_KEYS", f"env1:{b64(os.urandom(32))}")
    sealer = StateSealer()
    assert sealer.configured
    assert sealer.seal(Binding.of("tools/call", "t", {}, None), {}, round_number=1).startswith(
        "v1.env1."
    )


def test_sealer_refuses_a_malformed_environment_key(monkeypatch):
    monkeypatch.setenv("MCPSERVE_STATE_KEYS", "k1:tooshort")
    with pytest.raises(ValueError, match="MCPSERVE_STATE_KEYS"):
        StateSealer()


async def test_servers_sharing_environment_keys_open_each_others_state(connect, monkeypatch):
    monkeypatch.setenv("MCPSERVE_STATE_KEYS", generate_key())
    async with connect(make_server()) as one, connect(make_server()) as two:
        state = await issue(one)
        result = await call(two, state=state, responses={"user_name": ALICE})
    assert result["content"][0]["text"] == "Hello, Alice."


def test_explicit_state_keys_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("MCPSERVE_STATE_KEYS", f"env1:{b64(os.urandom(32))}")
    server = Server("state", state_keys=[key("explicit")])
    state = server.runtime.sealer.seal(Binding.of("tools/call", "t", {}, None), {}, round_number=1)
    assert state.startswith("v1.explicit.")


def test_keygen_prints_one_key_that_parses():
    outcome = CliRunner().invoke(cli_main, ["keygen"])
    assert outcome.exit_code == 0, outcome.output
    ((kid, raw),) = parse_keys(outcome.output.strip())
    assert kid.isalnum()
    assert len(raw) == 32


def test_keygen_prints_a_new_key_each_time():
    runner = CliRunner()
    first = runner.invoke(cli_main, ["keygen"]).output
    second = runner.invoke(cli_main, ["keygen"]).output
    assert first != second


def test_generated_key_seals_and_opens():
    sealer = StateSealer(parse_keys(generate_key()))
    binding = Binding.of("prompts/get", "p", {"a": "1"}, None)
    assert sealer.open(sealer.seal(binding, {"u": 1}, round_number=1), binding)[0] == {"u": 1}


def test_several_processes_need_shared_keys():
    with pytest.raises(RuntimeError, match="MCPSERVE_STATE_KEYS"):
        Server("state").runtime.require_shared_state_keys(2)


def test_one_process_needs_no_shared_keys():
    Server("state").runtime.require_shared_state_keys(1)


def test_several_processes_are_fine_with_explicit_keys():
    Server("state", state_keys=[key("k1")]).runtime.require_shared_state_keys(2)


def test_several_processes_are_fine_with_environment_keys(monkeypatch):
    monkeypatch.setenv("MCPSERVE_STATE_KEYS", generate_key())
    Server("state").runtime.require_shared_state_keys(4)


# --------------------------------------------------------------------------- two processes


def stdio_command() -> list[str]:
    return [sys.executable, "-m", "mcpserve.cli", "run", str(SHARED_SERVER)]


def text_of(result: dict[str, Any]) -> str:
    check("CallToolResult", result)
    return "".join(block["text"] for block in result["content"])


async def retry_across_processes(keys_one: str, keys_two: str) -> tuple[str, str, Any]:
    """Ask on process one, answer on process two: (pid one, pid two, result or MCPError)."""
    one = Client.stdio(stdio_command(), env={"MCPSERVE_STATE_KEYS": keys_one}, capabilities=FORM)
    two = Client.stdio(stdio_command(), env={"MCPSERVE_STATE_KEYS": keys_two}, capabilities=FORM)
    async with asyncio.timeout(60), one, two:
        pid_one = text_of(await one.call_tool("pid", {}))
        pid_two = text_of(await two.call_tool("pid", {}))
        first = await one.call_tool("greet", {})
        check("InputRequiredResult", first)
        params = {
            "name": "greet",
            "arguments": {},
            "inputResponses": {"user_name": ALICE},
            "requestState": first["requestState"],
        }
        try:
            outcome: Any = await two.request("tools/call", params)
        except MCPError as exc:
            outcome = exc
    return pid_one, pid_two, outcome


@pytest.mark.subprocess
async def test_state_from_one_process_completes_on_another_sharing_the_key():
    shared = generate_key()
    pid_one, pid_two, result = await retry_across_processes(shared, shared)
    assert pid_one != pid_two
    assert text_of(result) == f"Hello, Alice! (pid {pid_two})"


@pytest.mark.subprocess
async def test_state_from_one_process_is_rejected_by_another_with_its_own_key():
    # An empty MCPSERVE_STATE_KEYS means "not configured": each process picks a random key.
    pid_one, pid_two, outcome = await retry_across_processes("", "")
    assert pid_one != pid_two
    assert isinstance(outcome, MCPError)
    assert outcome.code == -32602
    assert outcome.message == "Invalid requestState"
