"""Log in with the identity provider users already have: an authorization server for MCP
clients in front of GitHub, Google, Entra or any OpenID provider.

::

    from mcpserve import Server
    from mcpserve.auth import OIDCProxy

    server = Server(
        "notes",
        auth=OIDCProxy(
            issuer="https://accounts.example.com",
            client_id="registered-at-the-provider",
            client_secret="its-secret",
            base_url="https://mcp.example.com",
        ),
    )

MCP clients register themselves (RFC 7591, or a client ID metadata document) and expect the
authorization server to let them; the providers teams use take only clients registered by
hand. So the MCP server is the authorization server its clients see (its protected resource
metadata names ``base_url``), with its own metadata, ``/authorize``, ``/token``, ``/register``
and ``/revoke``, and it sends users to the provider with its one registered client, whose
redirect URI is ``base_url`` + ``/auth/callback``. ``docs/auth.md`` ("Log in with GitHub /
Google / Entra") walks through it; ``auth/server/`` holds the parts, each module saying
what it does.

The tokens it issues are JWTs signed with Ed25519 keys derived from the state key ring
(``MCPSERVE_STATE_KEYS``), verified on the MCP endpoint like any other, so ``ctx.principal``
(the provider's ``sub``, or GitHub's user id), ``ctx.scopes``, per-tool scopes and step-up
work as they do with an external authorization server. ``await ctx.upstream_token()`` gives
a handler the provider's access token for the user.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Literal

from .._types import ASGIApp, Message, Receive, Scope, Send
from ..backends.keyvalue import (
    KeyValueStore,
    MemoryKeyValue,
    StoreUnavailable,
    keyvalue_from_url,
)
from ..protocol.core import Auth
from .jwt import JWTVerifier
from .mounting import Site
from .resource import ResourceServer
from .resource_uri import canonical_resource
from .server import backchannel, browser
from .server.authorization_server import AuthorizationServer, UpstreamTokenUnavailable
from .server.client_metadata import ClientMetadataDocuments
from .server.consent import csrf_key
from .server.records import Records, TokenCipher
from .server.signing import ALGORITHM, SigningKeys, TokenIssuer
from .server.upstream import Identity, Upstream
from .server.web import send_json

logger = logging.getLogger("mcpserve.auth")

DAY = 86400.0


class OIDCProxy:
    """The MCP server as its clients' authorization server, logging users in at ``issuer``.

    ``client_id`` and ``client_secret`` are the server's client at the provider, registered
    with the redirect URI ``base_url`` + ``/auth/callback``; ``base_url`` is where this
    server's HTTP app is reached (its MCP endpoint is ``base_url`` + the served path);
    ``scopes`` are asked of the provider. Everything else has a default; see
    ``docs/auth.md`` for each.
    """

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str,
        base_url: str,
        scopes: Sequence[str] = ("openid",),
        *,
        token_ttl: float = 3600.0,
        refresh_ttl: float = 30 * DAY,
        code_ttl: float = 120.0,
        client_ttl: float = 365 * DAY,
        consent_ttl: float = 30 * DAY,
        store: KeyValueStore | str | None = None,
        signing_keys: Sequence[tuple[str, bytes]] | None = None,
        allowed_redirect_uris: Sequence[str] | None = None,
        registrations_per_minute: int = 100,
        sign_ins_per_minute: int = 60,
        trusted_metadata_hosts: Sequence[str] = (),
        required_scopes: Sequence[str] = (),
        authorization_endpoint: str | None = None,
        token_endpoint: str | None = None,
        userinfo_endpoint: str | None = None,
        jwks_uri: str | None = None,
        upstream_auth_method: Literal["client_secret_basic", "client_secret_post"] | None = None,
        authorize_params: Mapping[str, str] | None = None,
        identity: Identity = "oidc",
        issuer_aliases: Sequence[str] = (),
    ) -> None:
        for name, ttl in (
            ("token_ttl", token_ttl),
            ("refresh_ttl", refresh_ttl),
            ("code_ttl", code_ttl),
            ("client_ttl", client_ttl),
            ("consent_ttl", consent_ttl),
        ):
            if ttl <= 0:
                raise ValueError(f"OIDCProxy({name}=...) must be a positive number of seconds")
        if not base_url.startswith(("https://", "http://")):
            raise ValueError(
                "OIDCProxy(base_url=...) is the URL clients reach this server at, "
                "e.g. https://mcp.example.com"
            )
        if not client_id or not client_secret:
            raise ValueError(
                "OIDCProxy needs client_id= and client_secret=: register an application at the "
                f"identity provider with the redirect URI {base_url.rstrip('/')}/auth/callback"
            )
        self.base_url = base_url.rstrip("/")
        self.upstream = Upstream(
            issuer=issuer,
            client_id=client_id,
            client_secret=client_secret,
            scopes=scopes,
            authorization_endpoint=authorization_endpoint,
            token_endpoint=token_endpoint,
            userinfo_endpoint=userinfo_endpoint,
            jwks_uri=jwks_uri,
            identity=identity,
            auth_method=upstream_auth_method,
            authorize_params=authorize_params,
            issuer_aliases=issuer_aliases,
        )
        self.token_ttl = token_ttl
        self.refresh_ttl = refresh_ttl
        self.code_ttl = code_ttl
        self.client_ttl = client_ttl
        self.consent_ttl = consent_ttl
        self.signing_keys = list(signing_keys) if signing_keys is not None else None
        self.allowed_redirect_uris = (
            list(allowed_redirect_uris) if allowed_redirect_uris is not None else None
        )
        self.registrations_per_minute = registrations_per_minute
        self.sign_ins_per_minute = sign_ins_per_minute
        self.required_scopes = list(required_scopes)
        self.documents = ClientMetadataDocuments(trusted_hosts=trusted_metadata_hosts)
        self._store_given = store
        self._store: KeyValueStore | None = None
        self._mounted: AuthorizationServer | None = None

    @property
    def callback_url(self) -> str:
        """The redirect URI to register at the identity provider."""
        return f"{self.base_url}/auth/callback"

    def _store_for(self, site: Site) -> KeyValueStore:
        if self._store is None:
            given = self._store_given
            namespace = f"mcpserve:{site.server_name}:auth"
            if isinstance(given, str):
                self._store = keyvalue_from_url(given, namespace=namespace)
            elif given is not None:
                self._store = given
            elif site.redis_url is not None:
                self._store = keyvalue_from_url(site.redis_url, namespace=namespace)
            else:
                self._store = MemoryKeyValue()
        return self._store

    def mount(self, site: Site) -> tuple[ResourceServer, Mapping[str, ASGIApp]]:
        """The MCP endpoint's resource server and this authorization server's routes."""
        ring = self.signing_keys or site.state_keys
        keys = SigningKeys(ring)
        resource = canonical_resource(self.base_url + "/" + site.path.strip("/"))
        verifier = JWTVerifier(self.base_url, resource, jwks=keys.jwks, algorithms=[ALGORITHM])
        unbound = _ProtectedByProxy(
            verifier,
            resource=resource,
            authorization_servers=[self.base_url],
            required_scopes=self.required_scopes,
        )
        unbound.proxy = self
        protected = unbound.with_declared_scopes(site.declared_scopes)
        server = AuthorizationServer(
            issuer=self.base_url,
            resource=resource,
            upstream=self.upstream,
            records=Records(
                self._store_for(site),
                TokenCipher(ring),
                code_ttl=self.code_ttl,
                refresh_ttl=self.refresh_ttl,
                client_ttl=self.client_ttl,
                consent_ttl=self.consent_ttl,
            ),
            tokens=TokenIssuer(
                keys, issuer=self.base_url, audience=resource, ttl_seconds=self.token_ttl
            ),
            verifier=verifier,
            documents=self.documents,
            csrf_key=csrf_key(ring[0][1]),
            scopes_supported=lambda: protected.scopes_supported,
            allowed_redirect_uris=self.allowed_redirect_uris,
            registrations_per_minute=self.registrations_per_minute,
            server_name=site.server_name,
            sign_ins_per_minute=self.sign_ins_per_minute,
        )
        self._mounted = server
        endpoints = {
            "/authorize": browser.authorize,
            "/auth/consent": browser.consent,
            "/auth/callback": browser.callback,
            "/token": backchannel.token,
            "/register": backchannel.registration,
            "/revoke": backchannel.revoke,
            "/.well-known/oauth-authorization-server": backchannel.metadata,
            "/.well-known/openid-configuration": backchannel.metadata,
            "/.well-known/jwks.json": backchannel.jwks,
        }
        routes = {path: _bound(endpoint, server) for path, endpoint in endpoints.items()}
        return protected, routes

    async def upstream_token(self, auth: Auth) -> str:
        """The identity provider's access token for ``auth``'s user (``ctx.upstream_token``)."""
        if self._mounted is None:
            raise UpstreamTokenUnavailable("the server is not serving HTTP with this login")
        return await self._mounted.upstream_token(auth)

    async def aclose(self) -> None:
        """Close the connections to the provider and the store (the app's shutdown does)."""
        await self.upstream.aclose()
        await self.documents.aclose()
        owned = self._store_given is None or isinstance(self._store_given, str)
        if owned and self._store is not None:
            await self._store.aclose()
            self._store = None


class _ProtectedByProxy(ResourceServer):
    """The endpoint's resource server, which also closes the proxy at the app's shutdown."""

    proxy: OIDCProxy | None = None

    async def aclose(self) -> None:
        await super().aclose()
        if self.proxy is not None:
            await self.proxy.aclose()


Endpoint = Callable[[AuthorizationServer, Scope, Receive, Send], Awaitable[None]]


def _bound(endpoint: Endpoint, server: AuthorizationServer) -> ASGIApp:
    """``endpoint`` as a route of the app; a store that cannot be reached answers 503 (the
    client may try again), never an error page of the server's own making."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await endpoint(server, scope, receive, sending)
        except StoreUnavailable as exc:
            logger.warning("A sign-in step failed: its records cannot be reached (%s)", exc)
            if not started:
                answer = {"error": "temporarily_unavailable", "error_description": "Try again"}
                await send_json(send, 503, answer, [(b"retry-after", b"5")])

    return route
