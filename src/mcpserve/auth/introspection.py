"""Verifying opaque access tokens by asking the authorization server (RFC 7662 introspection).

:meth:`IntrospectionVerifier.verify` POSTs ``token=...&token_type_hint=access_token`` to
the introspection endpoint (``url``, or the ``introspection_endpoint`` of the issuer's
metadata, looked up once), authenticating as this resource server with HTTP Basic: the
client id and secret form-urlencoded, then joined, as RFC 6749 section 2.3.1 asks.

The answer decides: ``active`` must be ``true``; an ``exp`` in the past refuses (the
server should not call such a token active, but its clock and ours may disagree); an
``iss``, when the verifier knows its issuer, must be that issuer. When an ``audience`` is
configured the answer must carry an ``aud`` that names it, compared in canonical form
(:func:`.resource_uri.canonical_resource`): an answer without ``aud`` is refused, since
nothing then says the token was meant for this server, and a token issued for another
server must not be replayable here. Without ``audience`` the ``aud`` is not looked at.

An endpoint that cannot be reached, answers other than 200 (a 401 means this server's own
credentials are wrong) or with something other than a JSON object leaves the verifier
unable to decide: :class:`VerifierUnavailable`, never a refusal the client would act on.

Revocation: an active answer is cached (:class:`TokenCache`, by default for 60 seconds,
never past the token's ``exp``), so a token revoked at the authorization server is still
accepted here for at most the cache's ``max_age``: that is the knob. Requests verifying
the same token at once share one introspection request; the cache is bounded in entries.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import math
import time
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any
from urllib.parse import quote_plus

import httpx2

from .._types import JSONDict
from .discovery import FetchFailed, discover, request_json
from .resource_uri import audience_matches, canonical_audiences
from .tokens import (
    MAX_TOKEN_LENGTH,
    AccessToken,
    InvalidToken,
    TokenCache,
    VerifierUnavailable,
    parse_scopes,
    principal_of,
)

logger = logging.getLogger("mcpserve.auth")

UNAVAILABLE = "The access token could not be checked with the authorization server"

_DEFAULT_CACHE: Any = object()  # "a cache of its own"; None is "no cache"


class IntrospectionVerifier:
    """Verifies tokens by RFC 7662 introspection (see the module's text).

    Give the endpoint as ``url``, or the ``issuer`` whose metadata names it. With no
    ``client_id`` no Authorization header is sent (for an endpoint that authenticates
    this server otherwise, by network or mutual TLS through ``http``).
    """

    def __init__(
        self,
        url: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        *,
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        cache: TokenCache | None = _DEFAULT_CACHE,
        timeout: float = 5.0,
        http: httpx2.AsyncClient | None = None,
    ) -> None:
        if url is None and issuer is None:
            raise ValueError("IntrospectionVerifier needs a url, or an issuer to discover it")
        self.url = url
        self.issuer = issuer
        self.audience = audience
        self.cache = TokenCache(max_age=60.0) if cache is _DEFAULT_CACHE else cache
        self.timeout = timeout
        self._audiences = None if audience is None else canonical_audiences(audience)
        self._headers = {"Accept": "application/json"}
        if client_id is not None:
            secret = quote_plus(client_secret or "")
            credentials = f"{quote_plus(client_id)}:{secret}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(credentials).decode()
        self._http = http
        self._owns_http = http is None
        self._pending: dict[str, asyncio.Task[AccessToken]] = {}
        self._discovering: asyncio.Lock | None = None

    async def verify(self, token: str) -> AccessToken:
        """The token's meaning, or :class:`InvalidToken` / :class:`VerifierUnavailable`."""
        cache = self.cache
        if cache is not None and (hit := cache.get(token)) is not None:
            return hit
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken("The access token is too long")
        if not token:
            raise InvalidToken("The access token is malformed")
        task = self._pending.get(token)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._introspect(token))
            self._pending[token] = task
            task.add_done_callback(lambda done: self._settled(token, done))
        # Shielded: one waiter giving up does not cancel the request the others await.
        return await asyncio.shield(task)

    def _settled(self, token: str, task: asyncio.Task[AccessToken]) -> None:
        if self._pending.get(token) is task:
            del self._pending[token]

    async def _introspect(self, token: str) -> AccessToken:
        form = {"token": token, "token_type_hint": "access_token"}
        try:
            async with asyncio.timeout(self.timeout):
                url = await self._endpoint()
                answer = await request_json(
                    self._client(), "POST", url, data=form, headers=self._headers
                )
        except (FetchFailed, TimeoutError) as failure:
            logger.warning("Token introspection failed: %s", str(failure) or "no answer in time")
            raise VerifierUnavailable(UNAVAILABLE) from None
        if not isinstance(answer, dict):
            logger.warning("Token introspection at %s answered with no JSON object", url)
            raise VerifierUnavailable(UNAVAILABLE)
        verified = self._accept(answer)
        if self.cache is not None:
            self.cache.put(token, verified)
        return verified

    def _accept(self, answer: JSONDict) -> AccessToken:
        """What an introspection answer says of the token, if it says the token is good."""
        if answer.get("active") is not True:
            raise InvalidToken("The access token is not active")
        expires_at = answer.get("exp")
        if expires_at is not None:
            if isinstance(expires_at, bool) or not isinstance(expires_at, int | float):
                logger.warning("Token introspection answered an exp that is not a number")
                raise VerifierUnavailable(UNAVAILABLE)
            expires_at = float(expires_at)
            if not math.isfinite(expires_at) or expires_at <= time.time():
                raise InvalidToken("The access token has expired")
        if self.issuer is not None and answer.get("iss", self.issuer) != self.issuer:
            raise InvalidToken("The access token was not issued by the expected issuer")
        if self._audiences is not None and not audience_matches(answer.get("aud"), self._audiences):
            raise InvalidToken("The access token is not for this server")
        client_id = answer.get("client_id")
        return AccessToken(
            principal_of(answer),
            parse_scopes(answer.get("scope")),
            MappingProxyType(answer),
            client_id=client_id if isinstance(client_id, str) else None,
            expires_at=expires_at,
        )

    async def _endpoint(self) -> str:
        if self.url is not None:
            return self.url
        if self._discovering is None:
            self._discovering = asyncio.Lock()
        async with self._discovering:  # the first requests share one discovery
            if self.url is None:
                assert self.issuer is not None
                metadata = await discover(self.issuer, self._client())
                url = metadata.get("introspection_endpoint")
                if not isinstance(url, str) or not url:
                    raise FetchFailed(f"the metadata of {self.issuer} names no introspection")
                self.url = url
        return self.url

    def _client(self) -> httpx2.AsyncClient:
        if self._http is None:  # made on first use, inside the event loop that uses it
            self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(self.timeout))
        return self._http

    async def aclose(self) -> None:
        """Close the HTTP client, if this verifier made it."""
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None
