"""The authorization server of one MCP endpoint: what its endpoints share.

An :class:`~mcpserve.auth.OIDCProxy` becomes one of these when the HTTP app is built
(:meth:`OIDCProxy.mount`), once the facts it needs are known: the MCP endpoint's URL (the
resource its tokens are for), the scopes the server's entries declare, the state key ring
(its signing, sealing and CSRF keys all derive from it) and the shared store.

The endpoints live in two modules by who calls them: ``browser.py`` (``/authorize``, the
consent page, the provider's callback: a person's browser) and ``backchannel.py``
(``/token``, ``/revoke``, ``/register`` and the metadata: the MCP client's own requests).
This module holds what both need: the RFC 8414 metadata, finding a client (registered, or
named by its metadata document), the scopes a client is granted, issuing tokens, and the
provider's token for a handler (:meth:`AuthorizationServer.upstream_token`).
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import time
from collections.abc import Callable, Sequence

from ..._types import JSONDict
from ...protocol.core import Auth
from ...protocol.errors import InvalidRequest
from ..jwt import JWTVerifier
from ..resource_uri import canonical_resource
from .client_metadata import ClientMetadataDocuments, is_metadata_url
from .errors import AuthorizationError
from .records import Records
from .registration import RegisteredClient
from .signing import TokenIssuer
from .upstream import Upstream, UpstreamFailed

logger = logging.getLogger("mcpserve.auth")

#: An upstream access token this close to its expiry is refreshed before it is handed out.
EXPIRY_MARGIN = 30.0
#: How long a handler waits for another instance's refresh of the same upstream token.
REFRESH_WAIT = 10.0
_NEVER_GRANTED = frozenset({"offline_access", "openid"})


class UpstreamTokenUnavailable(InvalidRequest):
    """The provider's token for this login is gone or expired beyond refreshing: the user
    signs in again. A handler that lets it escape answers the client with its message."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Unauthorized: {reason}; sign in again")


class AuthorizationServer:
    """One mounted authorization server (see the module's text)."""

    def __init__(
        self,
        *,
        issuer: str,
        resource: str,
        upstream: Upstream,
        records: Records,
        tokens: TokenIssuer,
        verifier: JWTVerifier,
        documents: ClientMetadataDocuments,
        csrf_key: bytes,
        scopes_supported: Callable[[], Sequence[str]],
        allowed_redirect_uris: Sequence[str] | None,
        registrations_per_minute: int,
        server_name: str,
        sign_ins_per_minute: int = 60,
    ) -> None:
        self.issuer = issuer
        self.resource = resource
        self.upstream = upstream
        self.records = records
        self.tokens = tokens
        #: Verifies the access tokens this server issued (the MCP endpoint's verifier).
        self.verifier = verifier
        self.documents = documents
        self.csrf_key = csrf_key
        self.scopes_supported = scopes_supported
        self.allowed_redirect_uris = allowed_redirect_uris
        self.registrations_per_minute = registrations_per_minute
        #: Sign-ins begun (each kept pending for ten minutes) from one address in a minute.
        self.sign_ins_per_minute = sign_ins_per_minute
        self.server_name = server_name
        self.secure_cookies = issuer.startswith("https://")
        self.callback_url = f"{issuer}/auth/callback"
        self.consent_url = f"{issuer}/auth/consent"

    async def aclose(self) -> None:
        await self.upstream.aclose()
        await self.documents.aclose()
        await self.records.store.aclose()

    def metadata(self) -> JSONDict:
        """The RFC 8414 authorization server metadata."""
        methods = ["none", "client_secret_basic", "client_secret_post"]
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "revocation_endpoint": f"{self.issuer}/revoke",
            "jwks_uri": f"{self.issuer}/.well-known/jwks.json",
            "scopes_supported": list(self.scopes_supported()),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": methods,
            "revocation_endpoint_auth_methods_supported": methods,
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }

    # -- clients ----------------------------------------------------------------------------

    async def client(self, client_id: str) -> RegisteredClient:
        """The client ``client_id`` names, or ``invalid_client``."""
        if not client_id or len(client_id) > 2048:
            raise AuthorizationError("invalid_client", "client_id is missing or too long")
        if is_metadata_url(client_id):
            client = await self.documents.client(client_id)
            self.check_allowed(client.redirect_uris)
            return client
        found = await self.records.client(client_id)
        if found is None:
            raise AuthorizationError("invalid_client", "no client is registered with this id")
        return found

    def check_allowed(self, redirect_uris: Sequence[str]) -> None:
        """``invalid_redirect_uri`` for a URI none of ``allowed_redirect_uris`` matches."""
        patterns = self.allowed_redirect_uris
        if patterns is None:
            return
        for uri in redirect_uris:
            if not any(fnmatch.fnmatchcase(uri, pattern) for pattern in patterns):
                raise AuthorizationError(
                    "invalid_redirect_uri", f"{uri[:200]!r} is not an allowed redirect URI"
                )

    def check_resource(self, resource: str | None) -> None:
        """RFC 8707: a token may only be asked for this server's MCP endpoint."""
        if resource is not None and canonical_resource(resource) != self.resource:
            raise AuthorizationError("invalid_target", "resource must be this MCP server's URL")

    def granted_scopes(self, requested: str | None) -> list[str]:
        """What a client asking for ``requested`` is granted: the scopes among those the
        server's tools, resources and prompts declare; all of them when it names none."""
        supported = set(self.scopes_supported())
        if requested is None or not requested.strip():
            return sorted(supported)
        asked = set(requested.split()) - _NEVER_GRANTED
        return sorted(asked & supported)

    # -- tokens -----------------------------------------------------------------------------

    async def issue(self, grant: JSONDict, scopes: Sequence[str]) -> JSONDict:
        """The token answer for ``grant`` (a login's subject, client, claims): a fresh access
        token for ``scopes`` and the next refresh token of the login."""
        subject = str(grant["subject"])
        client_id = str(grant["client_id"])
        claims = grant.get("claims")
        extra: JSONDict = dict(claims) if isinstance(claims, dict) else {}
        extra["sid"] = grant["login"]
        access = self.tokens.access_token(subject, scopes, client_id, extra=extra)
        refresh = await self.records.issue_refresh(
            {
                "login": grant["login"],
                "client_id": client_id,
                "subject": subject,
                "claims": claims,
                "scopes": list(grant["scopes"]),
                "resource": self.resource,
            }
        )
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.tokens.ttl_seconds),
            "refresh_token": refresh,
            "scope": " ".join(sorted(scopes)),
        }

    # -- the provider's token, for a handler ------------------------------------------------

    async def upstream_token(self, auth: Auth) -> str:
        """The provider's access token of the login ``auth`` came from, refreshed first when
        it is about to expire (by one instance at a time: the others wait for its result)."""
        login = auth.claims.get("sid") if auth.claims else None
        if not isinstance(login, str):
            raise UpstreamTokenUnavailable("this request was not made with a token of a login")
        deadline = time.monotonic() + REFRESH_WAIT
        while True:
            tokens = await self.records.upstream(login)
            if tokens is None:
                raise UpstreamTokenUnavailable("the identity provider's token for it is gone")
            if _fresh(tokens):
                return str(tokens["access_token"])
            if not isinstance(tokens.get("refresh_token"), str):
                raise UpstreamTokenUnavailable("the identity provider's token expired")
            if await self.records.lock_upstream(login):
                try:
                    return await self._refresh(login)
                finally:
                    await self.records.unlock_upstream(login)
            if time.monotonic() > deadline:
                raise UpstreamTokenUnavailable("the identity provider's token is being renewed")
            await asyncio.sleep(0.1)

    async def _refresh(self, login: str) -> str:
        tokens = await self.records.upstream(login)  # another instance may have just renewed
        if tokens is None:
            raise UpstreamTokenUnavailable("the identity provider's token for it is gone")
        if _fresh(tokens):
            return str(tokens["access_token"])
        try:
            renewed = await self.upstream.refresh(str(tokens["refresh_token"]))
        except UpstreamFailed as exc:
            logger.warning("Renewing a user's token at the identity provider failed: %s", exc)
            raise UpstreamTokenUnavailable(
                "the identity provider would not renew its token"
            ) from None
        kept = upstream_record(renewed, previous=tokens)
        await self.records.save_upstream(login, kept)
        return str(kept["access_token"])


def upstream_record(tokens: JSONDict, previous: JSONDict | None = None) -> JSONDict:
    """What is kept of the provider's token answer: the tokens, and when the access one ends."""
    expires_in = tokens.get("expires_in")
    refresh = tokens.get("refresh_token")
    if not isinstance(refresh, str) and previous is not None:
        refresh = previous.get("refresh_token")  # a provider that does not rotate
    return {
        "access_token": tokens["access_token"],
        "refresh_token": refresh if isinstance(refresh, str) else None,
        "expires_at": time.time() + float(expires_in)
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool)
        else None,
    }


def _fresh(tokens: JSONDict) -> bool:
    expires_at = tokens.get("expires_at")
    return not isinstance(expires_at, int | float) or expires_at - EXPIRY_MARGIN > time.time()
