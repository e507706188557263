"""A stdio server for the cross-process ``requestState`` tests
(``tests/protocol/test_request_state.py``).

Started as ``python -m mcpserve.cli run tests/support/servers/mrtr_shared.py``; the state
key comes from ``MCPSERVE_STATE_KEYS``. ``pid`` names the process, so a test can show that
the retry was answered by a different process than the first attempt.
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from mcpserve import Context, Server

server = Server("mrtr-shared", version="1.0.0")


class UserName(BaseModel):
    name: str


@server.tool
async def greet(ctx: Context) -> str:
    """Ask for a name, then greet."""
    answer = await ctx.elicit("What is your name?", UserName, key="user_name")
    return f"Hello, {answer.data.name}! (pid {os.getpid()})"


@server.tool
def pid() -> str:
    """This process's id."""
    return str(os.getpid())


if __name__ == "__main__":
    server.run()
