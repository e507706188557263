"""The mcpserve echo server behind OAuth bearer tokens, served the way the README says.

``Server(..., auth=JWTVerifier(issuer=..., audience=...))`` and ``server.run("http",
host="127.0.0.1", port=P)`` with no other option, as ``mcpserve_readme_app.py`` serves the
suite's server: HTTP parser, event loop, log level and access log are what ``server.run``
picks. One tool, ``echo(text: str) -> str``; every check stays on.

Configured by the environment (``benchmarks/auth.py`` sets it), the port by the command
line as for every other server (``mcpserve_auth_app.py http PORT``):

* ``BENCH_AUTH``: ``none`` (no ``auth=``, the baseline), ``jwt`` (``JWTVerifier`` with its
  default token cache) or ``jwt-uncached`` (``JWTVerifier(..., cache=None)``: signature and
  claims verified on every request);
  or ``issued`` (``OIDCProxy``: the server is its clients' authorization server, and the
  tokens are the ones it issues, signed with keys derived from ``BENCH_AUTH_RING``);
* ``BENCH_AUTH_ISSUER``: the issuer URL (its metadata names the JWKS; for ``issued``, the
  identity provider, never contacted while measuring);
* ``BENCH_AUTH_RING``: for ``issued``, the state key ring (``id:base64key``);
* ``BENCH_AUTH_AUDIENCE``: this server's MCP URL, which tokens must be issued for (default
  ``http://127.0.0.1:PORT/mcp``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from _shared import parse_cli

from mcpserve import Server

MODES = ("none", "jwt", "jwt-uncached", "issued")
MODE_ENV = "BENCH_AUTH"
ISSUER_ENV = "BENCH_AUTH_ISSUER"
AUDIENCE_ENV = "BENCH_AUTH_AUDIENCE"


def make_auth(mode: str, issuer: str | None, audience: str) -> Any:
    """What ``auth=`` gets in ``mode``."""
    if mode == "none":
        return None
    if mode not in MODES:
        raise SystemExit(f"{MODE_ENV} must be one of {', '.join(MODES)}, not {mode!r}")
    if not issuer:
        raise SystemExit(f"{MODE_ENV}={mode} needs {ISSUER_ENV}")
    from mcpserve.auth import JWTVerifier, OIDCProxy

    if mode == "issued":
        from mcpserve.protocol.request_state import parse_keys

        return OIDCProxy(
            issuer=issuer,
            client_id="bench",
            client_secret="bench-secret",
            base_url=audience.removesuffix("/mcp"),
            signing_keys=parse_keys(os.environ["BENCH_AUTH_RING"]),
        )
    if mode == "jwt":
        return JWTVerifier(issuer=issuer, audience=audience)
    return JWTVerifier(issuer=issuer, audience=audience, cache=None)


def build(auth: Any) -> Server:
    server = Server("bench-auth", version="1.0.0", auth=auth)

    @server.tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


if __name__ == "__main__":
    transport, port, _sse = parse_cli()
    if transport != "http":
        raise SystemExit("mcpserve_auth_app.py serves HTTP only: stdio has no bearer tokens")
    mode = os.environ.get(MODE_ENV, "none")
    audience = os.environ.get(AUDIENCE_ENV) or f"http://127.0.0.1:{port}/mcp"
    auth = make_auth(mode, os.environ.get(ISSUER_ENV), audience)
    print(f"mcpserve_auth_app: auth {mode}, audience {audience}", file=sys.stderr, flush=True)
    build(auth).run("http", host="127.0.0.1", port=port)
