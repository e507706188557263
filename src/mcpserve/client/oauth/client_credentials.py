"""``ClientCredentials``: a program acting on its own behalf, with no user.

The client is registered beforehand: a client id and a secret, or a private key whose
public half the authorization server knows (``private_key_jwt``, :mod:`.assertion`). The
grant is ``client_credentials`` with the ``resource`` and the selected scopes. An expired
token is simply replaced by a new one (there is nobody to ask, and nothing to refresh), and a 403
``insufficient_scope`` asks once more for the union of scopes (the spec lets such clients
step up or give up; ``max_step_ups=0`` gives up).
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx2

from .dpop import DPoPKey
from .metadata import IssuerMetadata
from .tokens import TokenStorage
from .unattended import UnattendedGrant


class ClientCredentials(UnattendedGrant):
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

    request_name = "client credentials token request"

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
        dpop: bool | DPoPKey = False,
    ) -> None:
        if not client_id or (not client_secret) == (private_key is None):
            raise ValueError(
                "ClientCredentials needs a client_id and either a client_secret or a private_key"
            )
        super().__init__(
            private_key=private_key,
            signing_algorithm=signing_algorithm,
            key_id=key_id,
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=token_endpoint_auth_method,
            issuer=issuer,
            scopes=scopes,
            storage=storage,
            timeout=timeout,
            max_step_ups=max_step_ups,
            dpop=dpop,
        )

    async def _grant_form(
        self,
        http: httpx2.AsyncClient,
        issuer: IssuerMetadata,
        resource: str,
        scopes: tuple[str, ...] | None,
    ) -> dict[str, str]:
        return {"grant_type": "client_credentials"}
