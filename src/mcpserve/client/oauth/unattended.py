"""What the grants with nobody to ask share: client credentials, and a workload's JWT.

Such a grant has no login and no consent: its tokens come from one token request, made
again whenever they expire (after a refresh, if the server gave a refresh token) and for
each step-up. A grant says only what its token request carries (:meth:`_grant_form`);
the request itself (the client's authentication, the ``resource``, the scopes, the time
bound) is the same for every one.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import httpx2

from .endpoints import request_tokens
from .errors import OAuthError
from .flow import OAuthFlow
from .metadata import IssuerMetadata, ResourceMetadata
from .tokens import ClientRegistration, Tokens


class UnattendedGrant(OAuthFlow):
    """An :class:`~.flow.OAuthFlow` whose tokens come from one token request, again and
    again: :class:`~.client_credentials.ClientCredentials`, :class:`~.jwt_bearer.JWTBearer`,
    :class:`~.enterprise.EnterpriseAuthorization`."""

    #: The grant's token request, as errors name it.
    request_name = "token request"

    def __init__(
        self,
        *,
        private_key: str | bytes | None,
        signing_algorithm: str | None,
        key_id: str | None,
        **flow: Any,
    ) -> None:
        """``private_key`` (a PEM): the client authenticates with ``private_key_jwt``; the
        rest is :class:`~.flow.OAuthFlow`'s."""
        signer = None
        if private_key is not None:
            from .assertion import PrivateKeyJWT

            signer = PrivateKeyJWT(private_key, algorithm=signing_algorithm, key_id=key_id)
        super().__init__(client_assertion=signer, **flow)

    @abstractmethod
    async def _grant_form(
        self,
        http: httpx2.AsyncClient,
        issuer: IssuerMetadata,
        resource: str,
        scopes: tuple[str, ...] | None,
    ) -> dict[str, str]:
        """The grant's own fields of the token request (``grant_type`` and the rest), for
        ``resource`` at ``issuer`` (a grant may first fetch what it presents there)."""

    async def _obtain(
        self,
        http: httpx2.AsyncClient,
        resource: ResourceMetadata,
        issuer: IssuerMetadata,
        scopes: tuple[str, ...] | None,
    ) -> Tokens:
        return await self._grant(http, issuer, resource.resource, scopes)

    async def _grant(
        self,
        http: httpx2.AsyncClient,
        issuer: IssuerMetadata,
        resource: str,
        scopes: tuple[str, ...] | None,
    ) -> Tokens:
        client = self._preregistered(issuer) or ClientRegistration(client_id="")
        form = await self._grant_form(http, issuer, resource, scopes)
        if scopes:
            form["scope"] = " ".join(scopes)
        return await self._bounded(
            request_tokens(
                http,
                issuer,
                client,
                form,
                resource=resource,
                requested=scopes,
                http_timeout=self.timeout,
                dpop=self.dpop,
            ),
            f"The {self.request_name} at {issuer.issuer}",
        )

    async def _renew(self, key: str, tokens: Tokens, http: httpx2.AsyncClient) -> Tokens | None:
        refreshed = await self._refresh(key, tokens, http)
        if refreshed is not None or tokens.issuer is None or tokens.resource is None:
            return refreshed
        try:
            issuer = await self._issuer(tokens.issuer, http)
            renewed = await self._grant(http, issuer, tokens.resource, tokens.requested_scopes)
        except OAuthError:
            return None
        await self.storage.save_tokens(key, renewed)
        return renewed
