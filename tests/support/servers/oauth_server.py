"""Several OAuth-protected MCP endpoints in one uvicorn process, for
``tests/auth/test_auth_oidc.py``.

Each endpoint is its own :class:`~mcpserve.Server` whose ``auth=`` is one verifier, served
with :meth:`~mcpserve.Server.http_app` at its own path on one port; a small ASGI router sends
each request to the endpoint its path names (the endpoint path, its trailing-slash form and
its protected resource metadata paths). Every endpoint's resource (and audience) is
``http://127.0.0.1:<port><path>``:

===================  ============================================================================
path                 verifier
===================  ============================================================================
``/jwt/mcp``         :class:`JWTVerifier` for the issuer, keys found by discovery, ``leeway=0``
``/introspect/mcp``  :class:`IntrospectionVerifier`, endpoint found by discovery, as the resource
                     server client, ``TokenCache(max_age=$MCPSERVE_TEST_CACHE_MAX_AGE)``
``/elsewhere/mcp``   :class:`JWTVerifier` trusting another issuer (``FOREIGN_ISSUER``) but
                     reading the real issuer's keys: the real tokens verify, their ``iss`` not
``/down/mcp``        :class:`JWTVerifier` whose ``jwks_url`` is ``$MCPSERVE_TEST_DOWN_JWKS``
``/slow/mcp``        :class:`JWTVerifier` whose ``jwks_url`` is ``$MCPSERVE_TEST_SLOW_JWKS``
===================  ============================================================================

The key fetches of ``/down`` and ``/slow`` are bounded by ``$MCPSERVE_TEST_KEY_TIMEOUT``
seconds. Each endpoint has two tools: ``whoami``, the caller's principal, scopes and client;
``stack``, the uvicorn HTTP protocol serving (``httptools``, as ``http="auto"`` picks).

Other environment: ``MCPSERVE_TEST_HTTP_PORT``, ``MCPSERVE_TEST_ISSUER``,
``MCPSERVE_TEST_JWKS`` (the issuer's ``jwks_uri``, for ``/elsewhere``),
``MCPSERVE_TEST_INTROSPECTION_CLIENT`` and ``MCPSERVE_TEST_INTROSPECTION_SECRET``.

It logs as verbosely as it can, to stderr: uvicorn at ``debug`` with its access log, and every
``mcpserve`` logger at ``DEBUG``, so a test that looks for a token in the log looks in
everything the server could have written. The ASGI lifespan goes to ``/jwt/mcp``'s app; the
other apps need none (``tests/transports/test_http_mount.py``).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import uvicorn

from mcpserve import Context, Server
from mcpserve.auth import IntrospectionVerifier, JWTVerifier, ResourceServer, TokenCache
from mcpserve.auth.tokens import TokenVerifier

READ = "notes:read"
FOREIGN_ISSUER = "https://issuer.invalid"


def endpoint(name: str, verifier: TokenVerifier, resource: str) -> Server:
    auth = ResourceServer(verifier, resource=resource, scopes_supported=[READ])
    server = Server(name, version="1.0.0", auth=auth)

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the token says is calling: the principal, the scopes, the client."""
        return {
            "principal": ctx.principal,
            "scopes": sorted(ctx.scopes),
            "client_id": ctx.auth.claims.get("client_id"),
        }

    @server.tool
    def stack() -> dict[str, str]:
        """The uvicorn HTTP protocol (parser) this process serves with."""
        protocols = sorted(
            name.rsplit(".", 1)[1].removesuffix("_impl")
            for name in sys.modules
            if name.startswith("uvicorn.protocols.http.") and name.endswith("_impl")
        )
        return {"http": ",".join(protocols)}

    return server


def verifiers(base: str, env: dict[str, str]) -> dict[str, TokenVerifier]:
    issuer = env["MCPSERVE_TEST_ISSUER"]
    timeout = float(env["MCPSERVE_TEST_KEY_TIMEOUT"])
    return {
        "/jwt/mcp": JWTVerifier(issuer=issuer, audience=base + "/jwt/mcp", leeway=0),
        "/introspect/mcp": IntrospectionVerifier(
            issuer=issuer,
            client_id=env["MCPSERVE_TEST_INTROSPECTION_CLIENT"],
            client_secret=env["MCPSERVE_TEST_INTROSPECTION_SECRET"],
            audience=base + "/introspect/mcp",
            cache=TokenCache(max_age=float(env["MCPSERVE_TEST_CACHE_MAX_AGE"])),
        ),
        "/elsewhere/mcp": JWTVerifier(
            issuer=FOREIGN_ISSUER,
            audience=base + "/elsewhere/mcp",
            jwks_url=env["MCPSERVE_TEST_JWKS"],
        ),
        "/down/mcp": JWTVerifier(
            issuer=issuer,
            audience=base + "/down/mcp",
            jwks_url=env["MCPSERVE_TEST_DOWN_JWKS"],
            timeout=timeout,
        ),
        "/slow/mcp": JWTVerifier(
            issuer=issuer,
            audience=base + "/slow/mcp",
            jwks_url=env["MCPSERVE_TEST_SLOW_JWKS"],
            timeout=timeout,
        ),
    }


class Router:
    """Each request to the app of the endpoint its path names; anything else to the first."""

    def __init__(self, apps: list[Any]) -> None:
        self.first = apps[0]
        self.routes: dict[str, Any] = {}
        for app in apps:
            paths = (app.path, app.path + "/", *app.resource_server.metadata_paths)
            for path in paths:
                self.routes.setdefault(path, app)  # the bare well-known path: the first's

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        app = self.routes.get(scope.get("path", ""), self.first)
        await app(scope, receive, send)


def main() -> None:
    env = dict(os.environ)
    port = int(env["MCPSERVE_TEST_HTTP_PORT"])
    base = f"http://127.0.0.1:{port}"
    apps = [
        endpoint(path.split("/")[1], verifier, base + path).http_app(path)
        for path, verifier in verifiers(base, env).items()
    ]
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mcpserve").setLevel(logging.DEBUG)
    uvicorn.run(
        Router(apps),
        host="127.0.0.1",
        port=port,
        log_level="debug",
        access_log=True,
        lifespan="on",
        loop="auto",
        http="auto",
    )


if __name__ == "__main__":
    main()
