"""Ask before acting: a transfer between two accounts that moves money only once the user
confirms it.

``transfer`` asks with ``await ctx.elicit(message, Confirmation)``. On MCP 2026-07-28 that is
a multi round-trip request: the first attempt ends with an ``input_required`` result
holding the form, the client shows it to the user and sends the same call again with the
answer, and the function runs again from the top, where ``ctx.elicit`` now returns it. So
the money moves after the question, never before, and everything above the question runs
on every attempt (so the balance is checked again when the answer arrives).

A sealed ``requestState`` can be sent more than once, so the transfer's id rides in
``ctx.state``: sending the confirmed retry again answers with the same receipt and moves
nothing twice. The tool ``requires`` form elicitation: a client that cannot ask its user
gets -32021 before anything runs, rather than a transfer nobody confirmed.

Run it over stdio, for a client that supports elicitation forms::

    python examples/confirm.py
    mcpserve run examples/confirm.py --http --port 8000
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcpserve import Context, Server, ToolError

Account = Literal["checking", "savings"]
Amount = Annotated[Decimal, Field(gt=0, le=1_000_000, decimal_places=2)]


class Confirmation(BaseModel):
    """The form the user fills in."""

    confirm: bool = Field(description="Move the money now?")
    memo: str = Field(default="", max_length=80, description="A note for the statement")


class Outcome(BaseModel):
    moved: bool
    message: str
    balances: dict[str, str]
    transfer_id: str | None = None


@dataclass
class Ledger:
    """Balances in cents, and the transfers already made (by id)."""

    cents: dict[str, int]
    done: dict[str, str] = field(default_factory=dict)  # transfer id -> its receipt

    def balances(self) -> dict[str, str]:
        return {account: f"{cents / 100:.2f}" for account, cents in self.cents.items()}


@asynccontextmanager
async def open_ledger(server: Server) -> AsyncIterator[Ledger]:
    yield Ledger({"checking": 120_000, "savings": 500_000})


server = Server(
    "confirm",
    version="1.0.0",
    instructions="Moves money between the user's checking and savings accounts. Every "
    "transfer is confirmed by the user first.",
    lifespan=open_ledger,
)


def ledger_of(ctx: Context) -> Ledger:
    ledger: Ledger = ctx.lifespan_state
    return ledger


@server.tool(annotations={"readOnlyHint": True})
def balances(ctx: Context) -> dict[str, str]:
    """The balance of each account."""
    return ledger_of(ctx).balances()


@server.tool(
    requires={"elicitation": {"form": {}}},
    annotations={"destructiveHint": True, "idempotentHint": False},
)
async def transfer(source: Account, target: Account, amount: Amount, ctx: Context) -> Outcome:
    """Move money from one account to the other, once the user confirms.

    Args:
        source: The account the money leaves.
        target: The account it goes to.
        amount: How much, with at most two decimals (e.g. 25.50).
    """
    ledger = ledger_of(ctx)
    if source == target:
        raise ToolError("source and target are the same account; pick the other one.")
    # Chosen on the first attempt, sealed into requestState, the same on every retry.
    transfer_id: str = ctx.state.setdefault("transfer_id", secrets.token_hex(8))
    if transfer_id in ledger.done:  # this confirmed retry was already carried out
        return Outcome(
            moved=False,
            message=ledger.done[transfer_id],
            balances=ledger.balances(),
            transfer_id=transfer_id,
        )
    cents = int(amount * 100)
    if cents > ledger.cents[source]:
        raise ToolError(f"{source} holds only {ledger.balances()[source]}; ask for less.")

    answer = await ctx.elicit(f"Move {amount:.2f} from {source} to {target}?", Confirmation)

    if not answer.accepted:
        reason = "declined" if answer.action == "decline" else "cancelled"
        message = f"The user {reason}; nothing moved."
        return Outcome(moved=False, message=message, balances=ledger.balances())
    confirmation: Confirmation = answer.data
    if not confirmation.confirm:
        message = "Not confirmed; nothing moved."
        return Outcome(moved=False, message=message, balances=ledger.balances())
    ledger.cents[source] -= cents
    ledger.cents[target] += cents
    memo = f" ({confirmation.memo})" if confirmation.memo else ""
    receipt = f"Moved {amount:.2f} from {source} to {target}{memo}."
    ledger.done[transfer_id] = receipt
    return Outcome(moved=True, message=receipt, balances=ledger.balances(), transfer_id=transfer_id)


if __name__ == "__main__":
    server.run()
