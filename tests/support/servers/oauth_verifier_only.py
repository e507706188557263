"""A notes server protected by ``Server(auth=JWTVerifier(...))`` alone, for
``tests/auth/test_auth_official_clients.py``: no ``ResourceServer``, so nothing says which scopes
clients should ask for, and the server publishes the ones its entries declare.

``list_notes`` needs ``notes:read`` and ``add_note`` needs ``notes:write``; ``archive``
(``notes:archive``) is registered by the lifespan, when the server starts, after the HTTP
app was built. It serves over HTTP with uvicorn on ``127.0.0.1:$MCPSERVE_TEST_HTTP_PORT``,
its audience ``http://127.0.0.1:<port>/mcp``, for the issuer ``$MCPSERVE_TEST_ISSUER``,
logging everything (uvicorn at debug with its access log, every other logger at DEBUG) to
stderr, like ``oauth_notes.py``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcpserve import Context, Server
from mcpserve.auth import JWTVerifier

READ, WRITE, ARCHIVE = "notes:read", "notes:write", "notes:archive"


def build(issuer: str, public_url: str) -> Server:
    notes: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        @server.tool(scopes=[ARCHIVE])
        def archive() -> int:
            """Archive every note; needs ``notes:archive``."""
            archived = len(notes)
            notes.clear()
            return archived

        yield

    server = Server(
        "oauth-verifier-only",
        version="1.0.0",
        auth=JWTVerifier(issuer=issuer, audience=public_url),
        lifespan=lifespan,
    )

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the token says is calling, and with which scopes."""
        return {"principal": ctx.principal, "scopes": sorted(ctx.scopes)}

    @server.tool(scopes=[READ])
    def list_notes() -> list[str]:
        """Every note."""
        return list(notes)

    @server.tool(scopes=[WRITE])
    def add_note(text: str) -> int:
        """Add a note; answers how many there are."""
        notes.append(text)
        return len(notes)

    return server


def main() -> None:
    issuer = os.environ["MCPSERVE_TEST_ISSUER"]
    port = int(os.environ["MCPSERVE_TEST_HTTP_PORT"])
    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    build(issuer, f"http://127.0.0.1:{port}/mcp").run(
        "http", host="127.0.0.1", port=port, log_level="debug", access_log=True
    )


if __name__ == "__main__":
    main()
