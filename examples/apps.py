"""Dice with a face: an MCP App that shows the rolls and rolls again from its own button.

``roll`` is an ordinary tool with a text answer any client can read. Its ``app=`` names the
``ui://dice/view`` app, so a host that renders MCP Apps (Claude, ChatGPT, VS Code, Goose,
``mcpserve dev``...) also shows ``dice.html`` in a sandboxed iframe beside the answer. The
view gets the call's arguments and result from the host, and its "Roll again" button calls
``reroll`` through the host. ``reroll`` is ``visibility=["app"]``: hosts keep it from the
model, which has ``roll`` for that.

The view is one HTML file with a few lines of JavaScript that speak the host protocol
(JSON-RPC over ``postMessage``) by hand: no SDK, no build step and nothing fetched, so its
``csp`` declares no domains at all. ``path=`` reads the file at each ``resources/read``, so
an edit shows the next time the tool is called. A client that says it renders no apps
(``supports_apps``) gets the rolls spelled out in the text instead.

Try it in the browser, the dev page being an MCP Apps host::

    mcpserve dev examples/apps.py
    python examples/apps.py          # stdio, for a desktop client
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from mcpserve import Context, Server, ToolResult, supports_apps

server = Server("dice", version="1.0.0", instructions="Rolls dice, and shows them.")

dice_view = server.app(
    "ui://dice/view",
    path=Path(__file__).with_name("dice.html"),
    title="Dice",
    description="The rolled dice, with a button to roll them again.",
    prefers_border=True,
)

Count = Annotated[int, Field(ge=1, le=12, description="How many dice")]
Sides = Annotated[int, Field(ge=2, le=100, description="Sides of each die")]


class Rolls(BaseModel):
    rolls: list[int]
    sides: int
    total: int


def _roll(dice: int, sides: int) -> Rolls:
    rolls = [random.randint(1, sides) for _ in range(dice)]
    return Rolls(rolls=rolls, sides=sides, total=sum(rolls))


@server.tool(app=dice_view, annotations={"readOnlyHint": True})
def roll(ctx: Context, dice: Count = 2, sides: Sides = 6) -> ToolResult:
    """Roll some dice and total them."""
    rolled = _roll(dice, sides)
    text = f"Rolled {dice}d{sides}: {rolled.total}."
    if not supports_apps(ctx):  # no view will show the dice: say them
        text += f" ({', '.join(map(str, rolled.rolls))})"
    return ToolResult(content=[text], structured=rolled.model_dump())


@server.tool(app=dice_view, visibility=["app"])
def reroll(dice: Count, sides: Sides) -> Rolls:
    """Roll the same dice again (the view's button)."""
    return _roll(dice, sides)


if __name__ == "__main__":
    server.run()
