"""``JWTBearer``: a workload that proves who it is with a JWT its platform issued.

Workload identity federation: a Kubernetes service account token, a CI job's OIDC token or
a cloud instance's identity token is a JWT whose audience is the authorization server. The
grant is RFC 7523's ``urn:ietf:params:oauth:grant-type:jwt-bearer``, the JWT as its
``assertion``, with the ``resource`` and the selected scopes: no secret to keep.

``assertion`` is the JWT, or a function returning it (plain or async) that is called for
every token request, so a token the platform rotates (a projected file, a metadata
endpoint) is read fresh each time. A client id, when the authorization server wants one,
is sent as a public client's (``none``), or authenticated with a secret or a key as
:class:`~.client_credentials.ClientCredentials` does.

A refused grant (``invalid_grant``, ``invalid_scope``, ``unauthorized_client``) raises
:class:`~.errors.OAuthError` at once: the same assertion would be refused again, and no
other grant is tried in its place. An expired access token is replaced by a new grant; a
403 ``insufficient_scope`` asks once more for the union of scopes (``max_step_ups``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

import httpx2

from .dpop import DPoPKey
from .errors import OAuthError
from .metadata import IssuerMetadata
from .tokens import TokenStorage
from .unattended import UnattendedGrant

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
Assertion = str | Callable[[], str | Awaitable[str]]


class JWTBearer(UnattendedGrant):
    """OAuth 2.0 JWT-bearer grant (RFC 7523): tokens for a workload's platform-issued JWT.

    ::

        token_file = Path("/var/run/secrets/tokens/mcp")
        auth = JWTBearer(lambda: token_file.read_text().strip())
        async with Client("https://mcp.example.com/mcp", auth=auth) as client:
            ...
    """

    request_name = "JWT-bearer token request"

    def __init__(
        self,
        assertion: Assertion,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
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
        if not (callable(assertion) or (isinstance(assertion, str) and assertion)):
            raise ValueError("JWTBearer needs the assertion: a JWT, or a function returning one")
        if private_key is not None and client_id is None:
            raise ValueError("private_key= needs client_id=")
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
        self._assertion = assertion

    async def _grant_form(
        self,
        http: httpx2.AsyncClient,
        issuer: IssuerMetadata,
        resource: str,
        scopes: tuple[str, ...] | None,
    ) -> dict[str, str]:
        return {"grant_type": GRANT_TYPE, "assertion": await read_assertion(self._assertion)}


async def read_assertion(source: Assertion, what: str = "The JWTBearer assertion function") -> str:
    """The JWT ``source`` is, or returns now (a function, plain or async)."""
    if isinstance(source, str):
        return source
    value = source()
    if inspect.isawaitable(value):
        value = await value
    if not isinstance(value, str) or not value:
        raise OAuthError(f"{what} returned no JWT")
    return value
