"""``EnterpriseAuthorization``: a user's enterprise single sign-on, turned into MCP tokens.

The Enterprise-Managed Authorization extension (``io.modelcontextprotocol/enterprise-managed-
authorization``, an application of the IETF's Identity Assertion JWT Authorization Grant):
the user has signed in to the client through the company's identity provider (IdP), and
the client holds the ID token of that login. For each MCP server, with no browser and no
consent screen, it

1. asks the IdP's token endpoint for an **ID-JAG** (an identity assertion authorization
   grant), with an RFC 8693 token exchange: ``grant_type``
   ``urn:ietf:params:oauth:grant-type:token-exchange``, the ID token as ``subject_token``
   (``subject_token_type`` ``urn:ietf:params:oauth:token-type:id_token``),
   ``requested_token_type`` ``urn:ietf:params:oauth:token-type:id-jag``, ``audience``: the
   MCP server's authorization server (its issuer identifier), ``resource``: the MCP
   server (its protected resource metadata's ``resource``), and the selected scopes. The
   IdP applies the company's policy: which users may use which client with which server;
   the answer's ``issued_token_type`` must be the ID-JAG's;
2. presents the ID-JAG to the MCP server's authorization server with RFC 7523's JWT-bearer
   grant (``urn:ietf:params:oauth:grant-type:jwt-bearer``, the ID-JAG as ``assertion``),
   authenticated as the client registered there (a secret, or a key); the answer is the
   access token.

Discovery is the usual one (the 401, the protected resource metadata, the authorization
server's metadata); an expired token is replaced by the same two steps (the ID token is
read again each time, so a function returning the current one keeps the client going
after the IdP session is renewed). A refusal at either step raises
:class:`~.errors.OAuthError` naming the step and the server: the IdP's policy said no, or
the ID token has expired, and asking again would not change that.

The client's identity at the IdP is ``idp_client_id`` (with ``idp_client_secret`` when the
IdP wants one, sent in the form as the extension's example does); at the MCP server's
authorization server it is ``client_id`` with ``client_secret`` or ``private_key``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx2

from .dpop import DPoPKey
from .endpoints import fetch_answer, refusal
from .errors import OAuthError
from .jwt_bearer import GRANT_TYPE as JWT_BEARER
from .jwt_bearer import Assertion, read_assertion
from .metadata import IssuerMetadata, check_secure
from .tokens import TokenStorage
from .unattended import UnattendedGrant

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class EnterpriseAuthorization(UnattendedGrant):
    """Enterprise-managed authorization: the user's ID token from the company's identity
    provider, exchanged there for an ID-JAG, and that for the MCP server's tokens.

    ::

        auth = EnterpriseAuthorization(
            lambda: session.id_token,                     # from the user's SSO login
            idp_token_endpoint="https://acme.idp.example/oauth2/token",
            idp_client_id="mcp-desktop",                  # the client, at the IdP
            client_id="mcp-desktop", client_secret=secret,  # the client, at the MCP server's AS
        )
        async with Client("https://mcp.acme.example/mcp", auth=auth) as client:
            ...
    """

    request_name = "JWT-bearer token request with the ID-JAG"

    def __init__(
        self,
        id_token: Assertion,
        *,
        idp_token_endpoint: str,
        idp_client_id: str,
        idp_client_secret: str | None = None,
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
        if not (callable(id_token) or (isinstance(id_token, str) and id_token)):
            raise ValueError(
                "EnterpriseAuthorization needs the user's ID token, or a function returning it"
            )
        if not idp_client_id:
            raise ValueError("EnterpriseAuthorization needs idp_client_id= (the client at the IdP)")
        try:
            check_secure(idp_token_endpoint, "idp_token_endpoint")
        except OAuthError as exc:
            raise ValueError(str(exc)) from None
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
        self._id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self._idp_client_secret = idp_client_secret

    def __repr__(self) -> str:  # never a secret or a token
        idp = urlsplit(self.idp_token_endpoint).netloc
        return f"EnterpriseAuthorization(idp={idp!r}, client_id={self.client_id!r})"

    async def _grant_form(
        self,
        http: httpx2.AsyncClient,
        issuer: IssuerMetadata,
        resource: str,
        scopes: tuple[str, ...] | None,
    ) -> dict[str, str]:
        grant = await self._bounded(
            self._identity_assertion_grant(http, issuer.issuer, resource, scopes),
            f"The token exchange at {self.idp_token_endpoint}",
        )
        return {"grant_type": JWT_BEARER, "assertion": grant}

    async def _identity_assertion_grant(
        self,
        http: httpx2.AsyncClient,
        audience: str,
        resource: str,
        scopes: tuple[str, ...] | None,
    ) -> str:
        """The ID-JAG the IdP issues for ``resource`` at the authorization server
        ``audience`` (the token exchange of step 1)."""
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": audience,
            "resource": resource,
            "subject_token": await read_assertion(self._id_token, "The ID token function"),
            "subject_token_type": ID_TOKEN,
            "client_id": self.idp_client_id,
        }
        if scopes:
            form["scope"] = " ".join(scopes)
        if self._idp_client_secret is not None:
            form["client_secret"] = self._idp_client_secret
        what = "The token exchange for an ID-JAG"
        endpoint = self.idp_token_endpoint
        status, answer, _ = await fetch_answer(
            http,
            "POST",
            endpoint,
            what,
            data=form,
            headers={"Accept": "application/json"},
            timeout=self.timeout,
        )
        if status != 200 or not isinstance(answer, dict) or "error" in answer:
            raise refusal(what, endpoint, status, answer)
        grant, kind = answer.get("access_token"), answer.get("issued_token_type")
        if kind != ID_JAG or not isinstance(grant, str) or not grant:
            raise OAuthError(
                f"{what} at {endpoint} answered no ID-JAG (issued_token_type {kind!r})"
            )
        return grant
