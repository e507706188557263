"""The identity provider behind the authorization server: where users really log in.

GitHub, Google, Entra and company SSO take only clients registered by hand, so the server
is one such client (``client_id``, ``client_secret``, its callback registered at the
provider) and every MCP client's login goes through it:

1. :meth:`Upstream.authorization_url` sends the browser to the provider with the server's
   client, the scopes it asks of the provider, a ``state`` (the pending login), PKCE S256
   and, for OpenID providers, a ``nonce``;
2. :meth:`Upstream.exchange` trades the provider's code for its tokens at the callback;
3. :meth:`Upstream.identity` says who logged in: the ID token's ``sub``, verified against
   the provider's keys, its ``iss``, the server's ``client_id`` as audience and the nonce;
   without an ID token the userinfo endpoint's ``sub``; for GitHub, which is not OpenID,
   the user API's numeric ``id``;
4. :meth:`Upstream.refresh` renews the provider's access token for ``ctx.upstream_token()``.

Endpoints come from the provider's discovery document (``issuer`` +
``/.well-known/openid-configuration``, fetched once), unless given. Any failure to reach the
provider, or an answer that is not what the protocol promises, is :class:`UpstreamFailed`
with a sentence fit for a log; the provider's tokens never appear in one.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlencode

import httpx2
import jwt

from ..._types import JSONDict
from ..jwt import JWTVerifier
from ..tokens import InvalidToken, VerifierUnavailable

Identity = Literal["oidc", "github"]
GITHUB_USER_API = "https://api.github.com/user"
#: Entra's multi-tenant discovery names its issuer with this placeholder for the tenant.
TENANT_PLACEHOLDER = "{tenantid}"


class UpstreamFailed(Exception):
    """The provider could not be reached or answered something unusable."""


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(challenge).rstrip(b"=").decode("ascii")


class Upstream:
    """One identity provider and the server's own registered client there."""

    def __init__(
        self,
        *,
        issuer: str,
        client_id: str,
        client_secret: str,
        scopes: Sequence[str],
        authorization_endpoint: str | None = None,
        token_endpoint: str | None = None,
        userinfo_endpoint: str | None = None,
        jwks_uri: str | None = None,
        identity: Identity = "oidc",
        auth_method: Literal["client_secret_basic", "client_secret_post"] | None = None,
        authorize_params: Mapping[str, str] | None = None,
        issuer_aliases: Sequence[str] = (),
        timeout: float = 10.0,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.client_id = client_id
        self.client_secret = client_secret
        self.scopes = list(scopes)
        self.identity_source = identity
        self.auth_method = auth_method
        self.authorize_params = dict(authorize_params or {})
        #: Other spellings of the issuer its ID tokens may carry (Google: without https://).
        self.issuer_aliases = frozenset(issuer_aliases)
        self.timeout = timeout
        self._given: JSONDict = {
            name: value
            for name, value in (
                ("authorization_endpoint", authorization_endpoint),
                ("token_endpoint", token_endpoint),
                ("userinfo_endpoint", userinfo_endpoint),
                ("jwks_uri", jwks_uri),
            )
            if value is not None
        }
        self._metadata: JSONDict | None = None
        self._verifiers: dict[str, JWTVerifier] = {}
        self._http: httpx2.AsyncClient | None = None

    @property
    def http(self) -> httpx2.AsyncClient:
        if self._http is None:
            self._http = httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        for verifier in self._verifiers.values():
            await verifier.aclose()
        self._verifiers.clear()

    async def metadata(self) -> JSONDict:
        """The provider's endpoints: as given, else from its discovery document (once)."""
        if self._metadata is not None:
            return self._metadata
        needed = {"authorization_endpoint", "token_endpoint"}
        if self.identity_source == "oidc":
            needed.add("jwks_uri")
        discovered: JSONDict = {}
        if not needed <= set(self._given):
            url = f"{self.issuer}/.well-known/openid-configuration"
            document = await self._json(self.http.get(url), "discovery")
            discovered = document
        self._metadata = {**discovered, **self._given}
        missing = sorted(name for name in needed if not isinstance(self._metadata.get(name), str))
        if missing:
            self._metadata = None
            raise UpstreamFailed(f"the provider's metadata lacks {', '.join(missing)}")
        return self._metadata

    async def authorization_url(
        self, *, redirect_uri: str, state: str, challenge: str, nonce: str
    ) -> str:
        metadata = await self.metadata()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.scopes),
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            **self.authorize_params,
        }
        if self.identity_source == "oidc":
            query["nonce"] = nonce
        endpoint = str(metadata["authorization_endpoint"])
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"

    async def exchange(self, *, code: str, redirect_uri: str, verifier: str) -> JSONDict:
        """The provider's tokens for its ``code``."""
        return await self._token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
            }
        )

    async def refresh(self, refresh_token: str) -> JSONDict:
        return await self._token({"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def _token(self, data: dict[str, str]) -> JSONDict:
        metadata = await self.metadata()
        method = self.auth_method
        if method is None:
            supported = metadata.get("token_endpoint_auth_methods_supported")
            basic = not isinstance(supported, list) or "client_secret_basic" in supported
            method = "client_secret_basic" if basic else "client_secret_post"
        auth: Any = httpx2.USE_CLIENT_DEFAULT
        if method == "client_secret_basic":
            auth = httpx2.BasicAuth(self.client_id, self.client_secret)
        else:
            data = {**data, "client_id": self.client_id, "client_secret": self.client_secret}
        request = self.http.post(
            str(metadata["token_endpoint"]),
            data=data,
            auth=auth,
            headers={"accept": "application/json"},
        )
        answer = await self._json(request, "token request", errors_ok=True)
        if "error" in answer:  # GitHub says so with 200; others with 400
            raise UpstreamFailed(f"the provider refused the token request: {answer['error']}")
        if not isinstance(answer.get("access_token"), str):
            raise UpstreamFailed("the provider's token answer has no access_token")
        return answer

    async def identity(self, tokens: JSONDict, nonce: str) -> tuple[str, JSONDict]:
        """Who logged in: ``(subject, claims)``."""
        if self.identity_source == "github":
            metadata = await self.metadata()
            user = await self._json(
                self.http.get(
                    str(metadata.get("userinfo_endpoint") or GITHUB_USER_API),
                    headers={
                        "authorization": f"Bearer {tokens['access_token']}",
                        "accept": "application/vnd.github+json",
                        "user-agent": "mcpserve",
                    },
                ),
                "GitHub user API",
            )
            if not isinstance(user.get("id"), int):
                raise UpstreamFailed("GitHub's user API answered no user id")
            claims = {name: user[name] for name in ("login", "name", "email") if user.get(name)}
            return str(user["id"]), claims
        id_token = tokens.get("id_token")
        if isinstance(id_token, str):
            claims = await self._verified_id_token(id_token)
            if claims.get("nonce") != nonce:
                raise UpstreamFailed("the ID token's nonce is not the one this login sent")
        else:
            metadata = await self.metadata()
            endpoint = metadata.get("userinfo_endpoint")
            if not isinstance(endpoint, str):
                raise UpstreamFailed("the provider sent no ID token and has no userinfo endpoint")
            headers = {"authorization": f"Bearer {tokens['access_token']}"}
            claims = await self._json(self.http.get(endpoint, headers=headers), "userinfo")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise UpstreamFailed("the provider named no subject (sub) for the user")
        kept = ("sub", "name", "email", "preferred_username", "tid")
        return subject, {name: claims[name] for name in kept if name in claims}

    async def _verified_id_token(self, id_token: str) -> JSONDict:
        metadata = await self.metadata()
        issuer = str(metadata.get("issuer") or self.issuer)
        if self.issuer_aliases:
            try:
                claimed = jwt.decode(id_token, options={"verify_signature": False}).get("iss")
            except jwt.PyJWTError:
                raise UpstreamFailed("the ID token cannot be read") from None
            if claimed in self.issuer_aliases:
                issuer = str(claimed)  # still verified: signature, audience, expiry, nonce
        if TENANT_PLACEHOLDER in issuer:  # multi-tenant Entra: the token's tenant, verified
            try:
                tenant = jwt.decode(id_token, options={"verify_signature": False}).get("tid")
            except jwt.PyJWTError:
                raise UpstreamFailed("the ID token cannot be read") from None
            if not isinstance(tenant, str) or not tenant.replace("-", "").isalnum():
                raise UpstreamFailed("the ID token names no tenant")
            issuer = issuer.replace(TENANT_PLACEHOLDER, tenant)
        verifier = self._verifiers.get(issuer)
        if verifier is None:
            verifier = JWTVerifier(
                issuer,
                self.client_id,
                jwks_url=str(metadata["jwks_uri"]),
                cache=None,
                http=self.http,
            )
            if len(self._verifiers) < 64:
                self._verifiers[issuer] = verifier
        try:
            verified = await verifier.verify(id_token)
        except (InvalidToken, VerifierUnavailable) as exc:
            raise UpstreamFailed(f"the ID token was refused: {exc.description}") from None
        return dict(verified.claims)

    async def _json(self, request: Any, what: str, *, errors_ok: bool = False) -> JSONDict:
        try:
            response = await request
        except httpx2.HTTPError as exc:
            raise UpstreamFailed(
                f"{what}: the provider cannot be reached ({type(exc).__name__})"
            ) from None
        if response.status_code >= 400 and not (errors_ok and response.status_code < 500):
            raise UpstreamFailed(f"{what}: the provider answered HTTP {response.status_code}")
        try:
            document = response.json()
        except ValueError:
            raise UpstreamFailed(f"{what}: the provider's answer is not JSON") from None
        if not isinstance(document, dict):
            raise UpstreamFailed(f"{what}: the provider's answer is not a JSON object")
        return document
