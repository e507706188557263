"""``ClientCredentials``: a program acting on its own behalf, with no user.

The client is registered beforehand: a client id and a secret, or a private key whose
public half the authorization server knows (``private_key_jwt``, :mod:`.assertion`). The
grant is ``client_credentials`` with the ``resource`` and the selected scopes. An expired token is
simply replaced by a new one (there is nobody to ask, and nothing to refresh), and a 403
``insufficient_scope`` asks once more for the union of scopes (the spec lets such clients
step up or give up; ``max_step_ups=0`` gives up).
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from .endpoints import request_tokens
from .errors import OAuthError
from .flow import OAuthFlow
from .metadata import IssuerMetadata, ResourceMetadata
from .tokens import Tokens, TokenStorage


class ClientCredentials(OAuthFlow):
    """OAuth 2.1 client credentials: tokens for a program, no user and no browser.

    ::

        auth = ClientCredentials("reporting-bot", os.environ["BOT_SECRET"])
        async with Client("https://mcp.example.com/mcp", auth=auth) as client:
            ...

        # or with a key instead of a secret (private_key_jwt):
        auth = ClientCredentials("reporting-bot", private_key=Path("bot.pem").read_text())

    ``signing_algorithm`` defaults to the one the key's type calls for (``RS256``,
    ``ES256``...); ``key_id`` goes in the assertion's ``kid`` header when given.
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str | None = None,
        *,
        private_key: str | bytes | None = None,
        signing_algorithm: str | None = None,
        key_id: str | None = None,
        token_endpoint_auth_method: str | None = None,
        issuer: str | None = None,
        scopes: Sequence[str] | None = None,
        storage: TokenStorage | None = None,
        timeout: float = 30.0,
        max_step_ups: int = 1,
    ) -> None:
        if not client_id or (not client_secret) == (private_key is None):
            raise ValueError("ClientCredentials needs a client_id and either a client_secret "
                             "or a private_key")  # fmt: skip
        assertion = None
        if private_key is not None:
            from .assertion import PrivateKeyJWT

            assertion = PrivateKeyJWT(private_key, algorithm=signing_algorithm, key_id=key_id)
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            client_assertion=assertion,
            token_endpoint_auth_method=token_endpoint_auth_method,
            issuer=issuer,
            scopes=scopes,
            storage=storage,
            timeout=timeout,
            max_step_ups=max_step_ups,
        )

    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ResourceMetadata,
        issuer: IssuerMetadata,
        scopes: tuple[str, ...] | None,
    ) -> Tokens:
        return await self._grant(http, issuer, resource.resource, scopes)

    async def _grant(
        self,
        http: httpx.AsyncClient,
        issuer: IssuerMetadata,
        resource: str,
        scopes: tuple[str, ...] | None,
    ) -> Tokens:
        client = self._preregistered(issuer)
        assert client is not None  # a client id is required at construction
        form = {"grant_type": "client_credentials"}
        if scopes:
            form["scope"] = " ".join(scopes)
        return await self._bounded(
            request_tokens(http, issuer, client, form, resource=resource, requested=scopes,
                           http_timeout=self.timeout),
            f"The client credentials token request at {issuer.issuer}",
        )  # fmt: skip

    async def _renew(self, key: str, tokens: Tokens, http: httpx.AsyncClient) -> Tokens | None:
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
