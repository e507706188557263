"""The terminal as the client's user (``mcpserve.cli.terminal``): a form that has a field no
terminal prompt can take (an object, a list of free values) is refused once, with the reason,
instead of asked for as text the server rejects and asks for again; a nullable field is asked
for as its type.

The servers here hand-write their forms through the low-level ``InputRequired`` (mcpserve's
own ``ctx.elicit`` refuses such forms before they are sent), as another server might.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpserve.cli import main
from wire_helpers import child_env

SHIPPING = '''
import json

from mcpserve import Context, InputRequired, Server

server = Server("shipping")

NESTED = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "address": {"type": "object", "properties": {"street": {"type": "string"}}},
    },
    "required": ["name", "address"],
}
NULLABLE = {
    "type": "object",
    "properties": {
        "parcels": {"type": ["integer", "null"]},
        "speed": {"anyOf": [{"type": "string", "enum": ["slow", "fast"]}, {"type": "null"}]},
    },
    "required": ["parcels"],
}


def ask(schema):
    return InputRequired({"where": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Ship it where?", "requestedSchema": schema}}})


@server.tool
def ship(ctx: Context):
    """Ask for an address as a nested object, until the answer has one (or is no answer)."""
    answer = ctx.input_responses.get("where")
    content = (answer or {}).get("content") or {}
    accepted = answer is not None and answer["action"] == "accept"
    if answer is None or (accepted and not isinstance(content.get("address"), dict)):
        return ask(NESTED)
    return f"answered {answer['action']}"


@server.tool
def count(ctx: Context):
    """Ask for a nullable integer and a nullable choice; report what came back."""
    answer = ctx.input_responses.get("where")
    if answer is None or answer["action"] != "accept":
        return ask(NULLABLE)
    content = answer["content"]
    if not isinstance(content.get("parcels"), int):
        return ask(NULLABLE)
    return json.dumps(content, sort_keys=True)
'''


@pytest.fixture
def shipping(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "shipping_app.py"
    path.write_text(SHIPPING)
    modules, syspath = set(sys.modules), list(sys.path)
    yield str(path)
    for name in set(sys.modules) - modules:  # loading the target imported it: undo that
        del sys.modules[name]
    sys.path[:] = syspath


def mcpserve(*args: str, input: str) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


@pytest.mark.parametrize(("typed", "action"), [("\n", "cancel"), ("decline\n", "decline")])
def test_a_form_with_an_object_field_is_refused_once_with_the_reason(
    shipping: str, typed: str, action: str
) -> None:
    result = mcpserve("call", shipping, "ship", input=typed)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"answered {action}\n"
    assert result.stderr.count("The server asks: Ship it where?") == 1
    assert (
        "  This form cannot be filled in at the terminal: field 'address' is an object, and a "
        "form field is a string, a number, a boolean or a choice.\n"
        "Answer (decline, cancel) [cancel]: "
    ) in result.stderr
    assert "name:" not in result.stderr  # no field was asked for


def test_a_nullable_field_is_asked_for_as_its_type(shipping: str) -> None:
    result = mcpserve("call", shipping, "count", input="accept\nthree\n3\nfast\n")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"parcels": 3, "speed": "fast"}
    assert "'three' is not a valid integer" in result.stderr  # asked again, as an integer
    assert result.stderr.count("The server asks: Ship it where?") == 1


@pytest.mark.subprocess
def test_the_refusal_over_stdio_ends_the_call(shipping: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcpserve.cli", "call", shipping, "ship", "--stdio"],
        input="cancel\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "answered cancel\n"
    assert "This form cannot be filled in at the terminal: field 'address'" in done.stderr
