"""A notes server protected by OAuth bearer tokens, for
``tests/auth/test_auth_official_clients.py``.

It serves over HTTP with uvicorn on 127.0.0.1, with ``auth=`` a
:class:`~mcpserve.auth.ResourceServer` around a :class:`~mcpserve.auth.JWTVerifier` for the
given issuer, and audience (and resource) its public MCP URL. Clients are told to ask for
``notes:read`` first (``scopes_supported``, the 401 ``scope``); ``add_note`` needs
``notes:write`` (the step-up).

Configuration, each from the command line or else the environment:

==================  ===============================  ========================================
option              environment                      meaning
==================  ===============================  ========================================
``--issuer``        ``MCPSERVE_TEST_ISSUER``         the authorization server (required)
``--port``          ``MCPSERVE_TEST_HTTP_PORT``      the port to listen on (required)
``--public-url``    ``MCPSERVE_TEST_PUBLIC_URL``     default ``http://127.0.0.1:<port>/mcp``
==================  ===============================  ========================================

It logs as verbosely as it can, to stderr: uvicorn at ``debug`` with its access log, and
every other logger (mcpserve's, httpx2 fetching the issuer's keys, ...) at ``DEBUG``, so a
test that looks for a token in the log looks in everything the server could have written.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from mcpserve import Context, Server
from mcpserve.auth import JWTVerifier, ResourceServer

READ = "notes:read"
WRITE = "notes:write"


def build(issuer: str, public_url: str) -> Server:
    auth = ResourceServer(
        JWTVerifier(issuer=issuer, audience=public_url),
        scopes_supported=[READ],
        resource_name="OAuth notes (tests)",
    )
    server = Server("oauth-notes", version="1.0.0", auth=auth)
    notes: list[dict[str, str | None]] = []

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the token says is calling: ``sub``, the scopes, the client, the audience."""
        claims = ctx.auth.claims
        return {
            "principal": ctx.principal,
            "scopes": sorted(ctx.scopes),
            "client_id": claims.get("client_id"),
            "aud": claims.get("aud"),
        }

    @server.tool(scopes=[READ])
    def list_notes() -> list[dict[str, str | None]]:
        """Every note, with who wrote it."""
        return list(notes)

    @server.tool(scopes=[WRITE])
    def add_note(text: str, ctx: Context) -> dict[str, Any]:
        """Add a note; needs ``notes:write``. Answers who wrote it and with which scopes."""
        notes.append({"text": text, "author": ctx.principal})
        return {"author": ctx.principal, "scopes": sorted(ctx.scopes), "count": len(notes)}

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issuer", default=os.environ.get("MCPSERVE_TEST_ISSUER"))
    parser.add_argument("--port", type=int, default=os.environ.get("MCPSERVE_TEST_HTTP_PORT"))
    parser.add_argument("--public-url", default=os.environ.get("MCPSERVE_TEST_PUBLIC_URL"))
    options = parser.parse_args()
    if not options.issuer or not options.port:
        parser.error("give --issuer and --port (or MCPSERVE_TEST_ISSUER, MCPSERVE_TEST_HTTP_PORT)")
    public_url = options.public_url or f"http://127.0.0.1:{options.port}/mcp"
    # Everything at DEBUG (mcpserve, httpx2 fetching the keys, ...), to stderr.
    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    build(options.issuer, public_url).run(
        "http", host="127.0.0.1", port=int(options.port), log_level="debug", access_log=True
    )


if __name__ == "__main__":
    main()
