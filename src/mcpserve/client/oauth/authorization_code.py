"""``OAuth``: a user's authorization, with the authorization code grant and PKCE.

The client identity comes, in the spec's order of preference, from ``client_id=`` (a client
registered beforehand at that authorization server), a Client ID Metadata Document
(``client_metadata_url=``, used when the server says ``client_id_metadata_document_supported``),
a registration kept in the storage from an earlier run, or dynamic registration (RFC 7591)
at the server's ``registration_endpoint``, kept for next time. A registration belongs to
the issuer that made it and is never shown to another.

The authorization request carries PKCE ``S256`` (a server whose metadata does not list it
is refused before anything is sent), a fresh ``state``, the ``resource`` and the selected
scopes, plus ``offline_access`` when the server lists it (so that a refresh token spares
the user the next login). The redirect is checked (:func:`~.redirect.authorization_code`)
before the code is exchanged at the token endpoint, with the same ``redirect_uri``,
``resource`` and the code verifier. With ``dpop=``, the request names the key's thumbprint
(``dpop_jkt``), so that the code can only be exchanged with a proof of that key.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx2

from .dpop import DPoPKey
from .endpoints import register_client, request_tokens
from .errors import OAuthError
from .flow import OAuthFlow
from .metadata import IssuerMetadata, ResourceMetadata, is_loopback
from .redirect import (
    AuthorizeHook,
    HookRedirect,
    LoopbackRedirect,
    RedirectHandler,
    authorization_code,
    pkce_pair,
)
from .tokens import ClientRegistration, Tokens, TokenStorage

DEFAULT_CLIENT_NAME = "mcpserve client"
_OFFLINE_ACCESS = "offline_access"


def _check_metadata_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
        raise ValueError(
            f"client_metadata_url {url!r} must be an https URL with a path "
            "(where your Client ID Metadata Document is served)"
        )


def _with_query(endpoint: str, query: dict[str, str]) -> str:
    parts = urlsplit(endpoint)
    joined = f"{parts.query}&{urlencode(query)}" if parts.query else urlencode(query)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, joined, ""))


class OAuth(OAuthFlow):
    """OAuth 2.1 for a user: authorization code with PKCE, refresh, step-up.

    ::

        async with Client("https://mcp.example.com/mcp", auth=OAuth()) as client:
            ...  # the first request's 401 starts the login in the user's browser

    ``on_authorize`` gets the user to the authorization URL and returns the URL the browser
    was redirected to: by default a :class:`~.redirect.LoopbackRedirect` (the URL printed and
    opened, the redirect received on ``127.0.0.1``); or a function ``async def (url) -> str``
    of yours, with the ``redirect_uri`` it handles.
    """

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        issuer: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = DEFAULT_CLIENT_NAME,
        redirect_uri: str | None = None,
        on_authorize: AuthorizeHook | RedirectHandler | None = None,
        scopes: Sequence[str] | None = None,
        offline_access: bool = True,
        storage: TokenStorage | None = None,
        timeout: float = 30.0,
        max_step_ups: int = 2,
        dpop: bool | DPoPKey = False,
    ) -> None:
        super().__init__(
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
        if client_metadata_url is not None:
            _check_metadata_url(client_metadata_url)
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.offline_access = offline_access
        self.redirect: RedirectHandler
        if on_authorize is None:
            self.redirect = (
                LoopbackRedirect.for_uri(redirect_uri) if redirect_uri else LoopbackRedirect()
            )
        elif hasattr(on_authorize, "session"):
            self.redirect = on_authorize
        else:
            if redirect_uri is None:
                raise ValueError("on_authorize= needs the redirect_uri= it handles")
            self.redirect = HookRedirect(redirect_uri, on_authorize)

    async def _known_client(self, issuer: IssuerMetadata) -> ClientRegistration | None:
        if self.client_id is None and self._uses_metadata_document(issuer):
            return ClientRegistration(self.client_metadata_url, token_endpoint_auth_method="none")  # type: ignore[arg-type]
        return await super()._known_client(issuer)

    def _uses_metadata_document(self, issuer: IssuerMetadata) -> bool:
        return self.client_metadata_url is not None and issuer.client_id_metadata_document_supported

    async def _client(
        self, issuer: IssuerMetadata, redirect_uri: str, http: httpx2.AsyncClient
    ) -> ClientRegistration:
        known = await self._known_client(issuer)
        if known is not None and _redirect_registered(known, redirect_uri):
            return known
        if issuer.registration_endpoint is None:
            hint = (
                " (it accepts Client ID Metadata Documents: give client_metadata_url=)"
                if issuer.client_id_metadata_document_supported and not self.client_metadata_url
                else ""
            )
            raise OAuthError(
                f"No client identity for {issuer.issuer}: it offers no dynamic registration"
                f"{hint}; give the client_id= registered there"
            )
        grant_types = ("authorization_code", "refresh_token")
        client = await self._bounded(
            register_client(
                http,
                issuer,
                client_name=self.client_name,
                redirect_uri=redirect_uri,
                grant_types=grant_types,
                http_timeout=self.timeout,
            ),
            f"Registering at {issuer.issuer}",
        )
        await self.storage.save_client(issuer.issuer, client)
        return client

    def _scopes_for(
        self, scopes: tuple[str, ...] | None, issuer: IssuerMetadata
    ) -> tuple[str, ...] | None:
        offered = issuer.scopes_supported or ()
        if scopes and self.offline_access and _OFFLINE_ACCESS in offered:
            return tuple(dict.fromkeys((*scopes, _OFFLINE_ACCESS)))
        return scopes

    async def _obtain(
        self,
        http: httpx2.AsyncClient,
        resource: ResourceMetadata,
        issuer: IssuerMetadata,
        scopes: tuple[str, ...] | None,
    ) -> Tokens:
        if issuer.authorization_endpoint is None:
            raise OAuthError(
                f"The authorization server {issuer.issuer} has no authorization_endpoint"
            )
        if "S256" not in (issuer.code_challenge_methods_supported or ()):
            raise OAuthError(
                f"The authorization server {issuer.issuer} does not list PKCE S256 in "
                "code_challenge_methods_supported: refusing to authorize without PKCE"
            )
        if self.dpop is not None:  # before the user is asked, not after
            self.dpop.check_algorithms(issuer.issuer, issuer.dpop_signing_alg_values_supported)
        requested = self._scopes_for(scopes, issuer)
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(32)
        async with self.redirect.session() as session:
            redirect_uri = session.redirect_uri
            client = await self._client(issuer, redirect_uri, http)
            query = {
                "response_type": "code",
                "client_id": client.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": resource.resource,
            }
            if requested:
                query["scope"] = " ".join(requested)
            if self.dpop is not None:  # the code is bound to the key too (RFC 9449 section 10)
                query["dpop_jkt"] = self.dpop.key.thumbprint
            callback = await session.authorize(_with_query(issuer.authorization_endpoint, query))
        code = authorization_code(
            callback,
            state=state,
            issuer=issuer.issuer,
            iss_required=issuer.authorization_response_iss_parameter_supported,
        )
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        return await self._bounded(
            request_tokens(
                http,
                issuer,
                client,
                form,
                resource=resource.resource,
                requested=requested,
                http_timeout=self.timeout,
                dpop=self.dpop,
            ),
            f"Exchanging the authorization code at {issuer.issuer}",
        )


def _redirect_registered(client: ClientRegistration, redirect_uri: str) -> bool:
    """Whether ``client`` may use ``redirect_uri``: it names it, or names none we know of,
    or differs only in the port of a loopback URI (any port matches there, RFC 8252)."""
    if not client.redirect_uris or redirect_uri in client.redirect_uris:
        return True
    wanted = urlsplit(redirect_uri)
    if not is_loopback(wanted.hostname):
        return False
    for registered in map(urlsplit, client.redirect_uris):
        same = (registered.scheme, registered.hostname, registered.path)
        if same == (wanted.scheme, wanted.hostname, wanted.path):
            return True
    return False
