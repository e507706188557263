"""A parent serving a mounted server, for the composition wire tests (``test_mount_wire.py``).

``billing`` is mounted under the namespace ``billing``: a tool that reads billing's lifespan
state, a resource template and a prompt with completers, and ``charge``, transformed in the
parent into ``charge_eur`` (currency fixed, amount narrowed). The parent's own tools change
billing from outside a listen: ``grow`` registers a tool in billing, ``touch`` publishes
billing's ``notifications/resources/updated``. Each lifespan start and stop is appended to
``$MCPSERVE_TEST_MARKER_DIR/lifespans.txt``.

Served over HTTP on ``$MCPSERVE_TEST_HTTP_PORT`` (``_serve.py``), stdio otherwise.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcpserve import Context, Server


def _mark(event: str) -> None:
    directory = os.environ.get("MCPSERVE_TEST_MARKER_DIR")
    if directory:
        with (Path(directory) / "lifespans.txt").open("a") as marks:
            marks.write(event + "\n")


def _lifespan(name: str) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        _mark(f"{name} start")
        try:
            yield {"owner": name}
        finally:
            _mark(f"{name} stop")

    return lifespan


billing = Server("billing", lifespan=_lifespan("billing"))


@billing.tool
def pay(amount: int, ctx: Context) -> str:
    """Pay an amount (and say whose lifespan state the handler saw)."""
    return f"paid {amount} ({ctx.lifespan_state['owner']})"


@billing.tool
def charge(amount: int, currency: str) -> str:
    """Charge an amount in a currency."""
    return f"charged {amount} {currency}"


@billing.resource("ledger://{account}")
def account(account: str) -> str:
    return f"account {account}"


@billing.completion(resource="ledger://{account}", argument="account")
def accounts(value: str) -> list[str]:
    return [name for name in ("acme", "initech") if name.startswith(value)]


@billing.prompt
def invoice(customer: str) -> str:
    return f"Invoice {customer}"


@billing.completion(prompt="invoice", argument="customer")
def customers(value: str) -> list[str]:
    return [name for name in ("acme", "initech", "umbrella") if name.startswith(value)]


app = Server("app", version="1.0.0", lifespan=_lifespan("app"))


def _grown() -> str:
    return "grown"


@app.tool
def grow(name: str) -> str:
    """Register a tool named ``name`` in billing."""
    billing.add_tool(_grown, name=name)
    return f"billing has {name}"


@app.tool
async def touch(account: str) -> str:
    """Billing publishes an update of ``ledger://<account>``."""
    await billing.notify_resource_updated(f"ledger://{account}")
    return f"touched {account}"


app.mount(billing, namespace="billing")
app.transform_tool("billing_charge", name="charge_eur", fixed={"currency": "EUR"},
                   schema={"amount": {"maximum": 100}})  # fmt: skip

if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(app)
