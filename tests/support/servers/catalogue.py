"""The catalogue's test server: tags, versions, a visibility rule, tool search.

Tools: ``refund`` (tags billing, beta), ``invoice`` (billing), ``echo`` (untagged),
``report`` in versions 1 and 2, ``reset`` (admin: shown only to a client named
"admin-client" or sending ``X-Role: admin``), ``dump`` (internal: hidden by
``exclude_tags``), ``switch_beta(on)``, which enables or disables the tag "beta"
while serving, and ``touch(uri)``, which announces that resource updated. A prompt
``greet`` and a resource ``notes://beta`` carry the tag "beta" too; a resource
``notes://admin`` the tag "admin".
With ``MCPSERVE_TEST_TOOL_SEARCH=1`` the server lists search_tools and call_tool instead.
Served over stdio, or HTTP with ``MCPSERVE_TEST_HTTP_PORT`` (``_serve.py``).
"""

from __future__ import annotations

import os

from mcpserve import Server

search = os.environ.get("MCPSERVE_TEST_TOOL_SEARCH") == "1"
server = Server("catalogue", exclude_tags={"internal"}, tool_search=search)


@server.tool(tags={"billing", "beta"})
def refund(payment: str, amount: int) -> str:
    """Give a customer's money back for a payment."""
    return f"refunded {amount} of {payment}"


@server.tool(tags={"billing"})
def invoice(customer: str) -> str:
    """Send a customer the invoice of the month."""
    return f"invoiced {customer}"


@server.tool
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool(version="1")
def report() -> str:
    return "report v1"


@server.tool(name="report", version="2")
def report_v2() -> str:
    return "report v2"


@server.tool(tags={"admin"})
def reset() -> str:
    """Reset every account."""
    return "reset done"


@server.tool(tags={"internal"})
def dump() -> str:
    return "internal state"


@server.tool
def switch_beta(on: bool) -> str:
    if on:
        server.enable(tags={"beta"})
    else:
        server.disable(tags={"beta"})
    return f"beta {'on' if on else 'off'}"


@server.tool
async def touch(uri: str) -> str:
    await server.notify_resource_updated(uri)
    return f"touched {uri}"


@server.prompt(tags={"beta"})
def greet(name: str) -> str:
    return f"Hello, {name}"


@server.resource("notes://beta", tags={"beta"})
def beta_notes() -> str:
    return "beta notes"


@server.resource("notes://admin", tags={"admin"})
def admin_notes() -> str:
    return "admin notes"


@server.visibility
def admins_only(ctx, component) -> bool:  # type: ignore[no-untyped-def]
    if "admin" not in component.tags:
        return True
    named = (ctx.client_info or {}).get("name") == "admin-client"
    return named or ctx.headers.get("x-role") == "admin"


if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
