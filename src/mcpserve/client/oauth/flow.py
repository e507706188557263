"""The OAuth client's decisions: when to discover, register, authorize, refresh, step up.

A :class:`~mcpserve.Client` given ``auth=`` sends every HTTP request through
:class:`~.bearer.BearerAuth`, which asks the flow here for the token to send and tells it
about each refusal. The flow keeps no per-connection state: tokens are in its
:class:`~.tokens.TokenStorage` under the endpoint's canonical URL, client registrations
under the issuer, so one ``OAuth`` object may serve many clients and servers at once. One
lock per endpoint makes concurrent refusals cost one authorization: a request that waited
for the lock finds the tokens renewed and just uses them.

* **Before a request**: the stored tokens. Expired ones are refreshed first when there is
  a refresh token (a client-credentials client simply gets new ones); if that fails they
  are sent anyway and the server's 401 decides.
* **401** (the token is missing, expired, revoked, or from an authorization server the
  server no longer trusts): refresh once, else authorize from scratch: the protected
  resource metadata (:mod:`.metadata`, read again, since it may name a new authorization
  server), the first authorization server whose metadata checks out, a client identity at
  *that* server, then the grant. A token just obtained that is refused again ends the
  attempt with :class:`~.errors.OAuthError`.
* **403 insufficient_scope**: authorize again for the union of the scopes held and the
  challenged ones, at most ``max_step_ups`` times per request, and only while the union
  is larger than what is held: if the token already carries every challenged scope, asking
  again cannot help, and the 403 is the caller's answer.
* **Asked to broaden** (:meth:`OAuthFlow.broaden`: a caller that missed something a server
  hides from tokens without the scope, such as a tool left out of ``tools/list``): the same
  step-up, with the scopes the protected resource metadata names standing for a challenge.

With ``dpop=`` (:mod:`.dpop`), every token request carries a proof of the flow's key, and
the tokens the authorization server binds to it are sent with a proof on every request.

Scope selection for a first authorization: ``scopes=`` if given, else the challenge's
``scope``, else the metadata's ``scopes_supported``, else no ``scope`` at all. The
``resource`` of every authorization and token request is the metadata's ``resource``,
exactly as published.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import httpx2

from ...auth.resource_uri import canonical_resource
from .assertion import PrivateKeyJWT
from .challenge import BearerChallenge
from .dpop import DPoPKey, proofs_for
from .endpoints import request_tokens
from .errors import OAuthError
from .metadata import (
    IssuerMetadata,
    ResourceMetadata,
    fetch_issuer_metadata,
    fetch_resource_metadata,
)
from .tokens import ClientRegistration, MemoryTokenStorage, Tokens, TokenStorage

logger = logging.getLogger("mcpserve.client.oauth")

T = TypeVar("T")


class OAuthFlow(ABC):
    """What every grant of the OAuth client shares (see the module docstring); the grants
    are :class:`~.authorization_code.OAuth` and :class:`~.client_credentials.ClientCredentials`.
    """

    def __init__(
        self,
        *,
        client_id: str | None,
        client_secret: str | None,
        token_endpoint_auth_method: str | None,
        issuer: str | None,
        scopes: Sequence[str] | None,
        storage: TokenStorage | None,
        timeout: float,
        max_step_ups: int,
        client_assertion: PrivateKeyJWT | None = None,
        dpop: bool | DPoPKey = False,
    ) -> None:
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret= needs client_id=")
        #: DPoP (:mod:`.dpop`): the key and nonces of this flow's proofs; ``None``: off.
        self.dpop = proofs_for(dpop)
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_assertion = client_assertion
        self.token_endpoint_auth_method = token_endpoint_auth_method
        #: The issuer the pre-registered client belongs to; learned at first use if not given.
        self.issuer = issuer
        self.scopes = tuple(scopes) if scopes is not None else None
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        self.timeout = timeout
        self.max_step_ups = max_step_ups
        # Per event loop: an object kept across asyncio.run() calls gets fresh locks in each.
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]]
        self._locks = weakref.WeakKeyDictionary()
        self._issuers: dict[str, IssuerMetadata] = {}

    def __repr__(self) -> str:  # never the secret
        return f"{type(self).__name__}(client_id={self.client_id!r}, issuer={self.issuer!r})"

    # -- what the connection asks ---------------------------------------------------------------

    async def token(self, server_url: str, http: httpx2.AsyncClient) -> Tokens | None:
        """The tokens to send to ``server_url`` now (renewed first if they have expired)."""
        key = canonical_resource(server_url)
        tokens = await self.storage.load_tokens(key)
        if tokens is None or not tokens.expired():
            return tokens
        async with self._lock(key):
            current = await self.storage.load_tokens(key)
            if current is None or current.access_token != tokens.access_token:
                return current
            return await self._renew(key, tokens, http) or tokens

    async def unauthorized(
        self,
        server_url: str,
        challenge: BearerChallenge,
        sent: Tokens | None,
        http: httpx2.AsyncClient,
        *,
        may_refresh: bool,
    ) -> tuple[Tokens, bool]:
        """New tokens after a 401 to ``sent``, and whether they come from a new
        authorization (rather than a refresh, or another request's renewal)."""
        key = canonical_resource(server_url)
        async with self._lock(key):
            current = await self.storage.load_tokens(key)
            if current is not None and (sent is None or current.access_token != sent.access_token):
                return current, False
            if may_refresh and sent is not None:
                renewed = await self._renew(key, sent, http)
                if renewed is not None:
                    return renewed, False
            return await self._authorize(server_url, challenge, None, http), True

    async def insufficient_scope(
        self,
        server_url: str,
        challenge: BearerChallenge,
        sent: Tokens | None,
        http: httpx2.AsyncClient,
    ) -> Tokens | None:
        """New tokens with more scope after a 403 ``insufficient_scope``; ``None`` when
        asking again cannot help (every challenged scope is already held, or none named)."""
        key = canonical_resource(server_url)
        async with self._lock(key):
            current = await self.storage.load_tokens(key)
            if (
                current is not None
                and sent is not None
                and current.access_token != sent.access_token
            ):
                return current
            union = _step_up_scopes(sent, challenge.scope or ())
            if union is None:
                logger.info(
                    "%s still refuses scope %s; not asking again",
                    server_url,
                    " ".join(challenge.scope or ()) or "(none named)",
                )
                return None
            logger.info("Stepping up to scope %s for %s", " ".join(union), server_url)
            return await self._authorize(server_url, challenge, union, http)

    async def broaden(
        self,
        server_url: str,
        http: httpx2.AsyncClient,
        before: Callable[[tuple[str, ...]], object] | None = None,
    ) -> Tokens | None:
        """New tokens for the scopes held and every scope the server's protected resource
        metadata names (``scopes_supported``), when that is more than the stored tokens
        hold or asked for; ``None`` when asking cannot bring more. For what a server hides
        from a token without the scope instead of refusing it (a tool it leaves out of
        ``tools/list``): no 403 comes to step up from. ``before(scopes)`` hears the scopes
        just before they are asked for (a browser may open)."""
        key = canonical_resource(server_url)
        if await self.storage.load_tokens(key) is None:
            return None  # never authorized there: the server did not ask, so hides nothing
        resource = await self._bounded(
            fetch_resource_metadata(http, server_url, None, self.timeout),
            f"Reading the protected resource metadata of {server_url}",
        )
        async with self._lock(key):
            sent = await self.storage.load_tokens(key)
            union = _step_up_scopes(sent, resource.scopes_supported or ())
            if union is None:
                return None
            if before is not None:
                before(union)
            logger.info("Broadening to scope %s for %s", " ".join(union), server_url)
            return await self._authorize(server_url, BearerChallenge(scope=union), union, http)

    # -- the steps ------------------------------------------------------------------------------

    def _lock(self, key: str) -> asyncio.Lock:
        locks = self._locks.setdefault(asyncio.get_running_loop(), {})
        return locks.setdefault(key, asyncio.Lock())

    async def _bounded(self, work: Awaitable[T], what: str) -> T:
        try:
            async with asyncio.timeout(self.timeout):
                return await work
        except TimeoutError:
            raise OAuthError(f"{what} took longer than {self.timeout:g} s") from None

    async def _authorize(
        self,
        server_url: str,
        challenge: BearerChallenge,
        scopes: tuple[str, ...] | None,
        http: httpx2.AsyncClient,
    ) -> Tokens:
        resource = await self._bounded(
            fetch_resource_metadata(http, server_url, challenge.resource_metadata, self.timeout),
            f"Reading the protected resource metadata of {server_url}",
        )
        issuer = await self._choose_issuer(resource, http)
        if scopes is None:
            scopes = self.scopes or challenge.scope or resource.scopes_supported or None
        logger.info(
            "Authorizing at %s for %s (scope %s)",
            issuer.issuer,
            resource.resource,
            " ".join(scopes) if scopes else "not sent",
        )
        tokens = await self._obtain(http, resource, issuer, scopes)
        await self.storage.save_tokens(canonical_resource(server_url), tokens)
        return tokens

    async def _choose_issuer(
        self, resource: ResourceMetadata, http: httpx2.AsyncClient
    ) -> IssuerMetadata:
        failures: list[str] = []
        for issuer in resource.authorization_servers:
            try:
                return await self._issuer(issuer, http)
            except OAuthError as failure:
                failures.append(str(failure))
        raise OAuthError(" ".join(failures))

    async def _issuer(self, issuer: str, http: httpx2.AsyncClient) -> IssuerMetadata:
        known = self._issuers.get(issuer)
        if known is None:
            known = await self._bounded(
                fetch_issuer_metadata(http, issuer, self.timeout),
                f"Reading the metadata of the authorization server {issuer}",
            )
            self._issuers[issuer] = known
        return known

    def _preregistered(self, issuer: IssuerMetadata) -> ClientRegistration | None:
        """The client id given to this object, for the issuer it belongs to."""
        if self.client_id is None:
            return None
        if self.issuer is None:
            self.issuer = issuer.issuer  # pre-registered credentials belong to one server
        elif self.issuer != issuer.issuer:
            raise OAuthError(
                f"The client {self.client_id!r} is registered at {self.issuer}, but the server "
                f"now names {issuer.issuer} as its authorization server: not sending those "
                "credentials there (give the client id registered at the new server)"
            )
        return ClientRegistration(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method=self.token_endpoint_auth_method,
            client_assertion=self.client_assertion,
        )

    async def _refresh(self, key: str, tokens: Tokens, http: httpx2.AsyncClient) -> Tokens | None:
        """``tokens`` refreshed (and stored), or ``None`` if they cannot be."""
        if tokens.refresh_token is None or tokens.issuer is None or tokens.resource is None:
            return None
        try:
            issuer = await self._issuer(tokens.issuer, http)
            client = await self._known_client(issuer)
            if client is None:
                return None
            form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
            answer = await self._bounded(
                request_tokens(
                    http,
                    issuer,
                    client,
                    form,
                    resource=tokens.resource,
                    requested=tokens.scopes,
                    http_timeout=self.timeout,
                    dpop=self.dpop,
                ),
                f"Refreshing the token at {issuer.issuer}",
            )
        except OAuthError as failure:
            logger.info("Could not refresh the token for %s: %s", key, failure)
            return None
        renewed = tokens.renewed(answer)
        await self.storage.save_tokens(key, renewed)
        return renewed

    # -- what each grant does -------------------------------------------------------------------

    async def _renew(self, key: str, tokens: Tokens, http: httpx2.AsyncClient) -> Tokens | None:
        """Tokens to replace refused or expired ``tokens`` without a new authorization."""
        return await self._refresh(key, tokens, http)

    async def _known_client(self, issuer: IssuerMetadata) -> ClientRegistration | None:
        """The client identity at ``issuer`` that needs no registration, if any."""
        return self._preregistered(issuer) or await self.storage.load_client(issuer.issuer)

    @abstractmethod
    async def _obtain(
        self,
        http: httpx2.AsyncClient,
        resource: ResourceMetadata,
        issuer: IssuerMetadata,
        scopes: tuple[str, ...] | None,
    ) -> Tokens:
        """New tokens for ``resource`` from ``issuer``: the grant's own exchange."""


def _step_up_scopes(sent: Tokens | None, wanted: Sequence[str]) -> tuple[str, ...] | None:
    """The scopes held with those ``wanted``; ``None`` when asking for them cannot help:
    none are wanted, or each was held or asked for already (an authorization server that
    granted less the last time would again)."""
    held = (sent.scopes if sent is not None else None) or ()
    asked = (sent.requested_scopes if sent is not None else None) or ()
    if not wanted or set(wanted) <= {*held, *asked}:
        return None
    return tuple(dict.fromkeys((*held, *wanted)))
