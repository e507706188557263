"""A notes server its users log in to at an OpenID provider, through ``OIDCProxy``: for
``tests/auth/server/``.

Served with uvicorn on 127.0.0.1. Configuration from the environment:

==================================  ==========================================================
``MCPSERVE_TEST_ISSUER``            the identity provider (oidc-provider in the tests)
``MCPSERVE_TEST_CLIENT_ID``         the server's client registered there (confidential)
``MCPSERVE_TEST_CLIENT_SECRET``     its secret
``MCPSERVE_TEST_HTTP_PORT``         the port to listen on
``MCPSERVE_TEST_BASE_URL``          default ``http://127.0.0.1:<port>`` (behind haproxy: its URL)
``MCPSERVE_TEST_TOKEN_TTL``         seconds the access tokens it issues live (default 3600)
``MCPSERVE_TEST_ALLOWED_REDIRECTS`` comma-separated redirect URI patterns (default: any)
``MCPSERVE_TEST_TRUSTED_HOSTS``     comma-separated hosts whose client metadata documents may
                                    be fetched over plain HTTP (default: none)
``MCPSERVE_TEST_GITHUB_URL``       given: log in with the ``GitHub`` preset, its endpoints at
                                    this stand-in's URL instead of github.com
``MCPSERVE_REDIS_URL``              the shared store (two instances); else memory
``MCPSERVE_STATE_KEYS``             the key ring (two instances share it)
==================================  ==========================================================

Tools: ``whoami`` (the caller as the token says), ``provider_userinfo`` (the provider's
userinfo endpoint called with ``ctx.upstream_token()``: the user as the provider knows them),
``upstream_token_sha256`` (the SHA-256 of ``ctx.upstream_token()``, for a provider without
userinfo), ``list_notes`` (``notes:read``) and ``add_note`` (``notes:write``). Logs at DEBUG
with the access log, so a test can check that no token was written.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Any

import httpx2

from mcpserve import Context, Server
from mcpserve.auth import OIDCProxy
from mcpserve.auth.providers import GitHub

READ = "notes:read"
WRITE = "notes:write"


def _list(name: str) -> list[str] | None:
    value = os.environ.get(name)
    return [item for item in value.split(",") if item] if value else None


def build() -> Server:
    port = os.environ["MCPSERVE_TEST_HTTP_PORT"]
    issuer = os.environ.get("MCPSERVE_TEST_ISSUER", "")
    base_url = os.environ.get("MCPSERVE_TEST_BASE_URL") or f"http://127.0.0.1:{port}"
    common: dict[str, Any] = {
        "token_ttl": float(os.environ.get("MCPSERVE_TEST_TOKEN_TTL", "3600")),
        "allowed_redirect_uris": _list("MCPSERVE_TEST_ALLOWED_REDIRECTS"),
        "trusted_metadata_hosts": _list("MCPSERVE_TEST_TRUSTED_HOSTS") or (),
    }
    client_id = os.environ["MCPSERVE_TEST_CLIENT_ID"]
    client_secret = os.environ["MCPSERVE_TEST_CLIENT_SECRET"]
    github = os.environ.get("MCPSERVE_TEST_GITHUB_URL")
    auth: OIDCProxy
    if github:
        auth = GitHub(
            client_id=client_id,
            client_secret=client_secret,
            base_url=base_url,
            authorization_endpoint=f"{github}/login/oauth/authorize",
            token_endpoint=f"{github}/login/oauth/access_token",
            userinfo_endpoint=f"{github}/user",
            **common,
        )
    else:
        auth = OIDCProxy(
            issuer=issuer,
            client_id=client_id,
            client_secret=client_secret,
            base_url=base_url,
            scopes=["openid", "profile", "offline_access"],
            **common,
        )
    server = Server("oidc-notes", version="1.0.0", auth=auth)
    notes: list[dict[str, Any]] = []

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the token says is calling."""
        claims = ctx.auth.claims
        return {
            "principal": ctx.principal,
            "scopes": sorted(ctx.scopes),
            "client_id": claims.get("client_id"),
            "aud": claims.get("aud"),
            "iss": claims.get("iss"),
        }

    @server.tool
    async def provider_userinfo(ctx: Context) -> dict[str, Any]:
        """The provider's userinfo, fetched as the user with their upstream token."""
        token = await ctx.upstream_token()
        async with httpx2.AsyncClient(trust_env=False, timeout=10) as http:
            discovery = (await http.get(f"{issuer}/.well-known/openid-configuration")).json()
            answer = await http.get(
                discovery["userinfo_endpoint"], headers={"authorization": f"Bearer {token}"}
            )
        return {"status": answer.status_code, "sub": answer.json().get("sub")}

    @server.tool
    async def upstream_token_sha256(ctx: Context) -> str:
        """The SHA-256 (hex) of the provider's token for the user."""
        return hashlib.sha256((await ctx.upstream_token()).encode()).hexdigest()

    @server.tool(scopes=[READ])
    def list_notes() -> list[dict[str, Any]]:
        """Every note."""
        return list(notes)

    @server.tool(scopes=[WRITE])
    def add_note(text: str, ctx: Context) -> dict[str, Any]:
        """Add a note (needs notes:write)."""
        notes.append({"text": text, "author": ctx.principal})
        return {"author": ctx.principal, "count": len(notes)}

    return server


def main() -> None:
    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    port = int(os.environ["MCPSERVE_TEST_HTTP_PORT"])
    build().run("http", host="127.0.0.1", port=port, log_level="debug", access_log=True)


if __name__ == "__main__":
    main()
