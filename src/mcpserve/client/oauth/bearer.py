"""How an HTTP connection carries OAuth: an ``httpx2.Auth`` around every request it sends.

:class:`BearerAuth` is built by :class:`~mcpserve.client.http.HTTPConnection` for its
endpoint and passed on each of its requests (POSTs, the handshake era's GET stream and
DELETE), so the token goes on every HTTP request to the server and nowhere else: the
authorization server is reached with separate requests, through the same connection pool,
and never sees it. The flow object (``OAuth`` or ``ClientCredentials``) decides; this
module only reads the answer:

* 401 refusing a DPoP proof for its nonce (``use_dpop_nonce``, with a ``DPoP-Nonce``):
  send the request again once, with a proof carrying the new nonce (:mod:`.dpop`); the
  nonce any answer carries is kept for the next proofs.
* 401: ask the flow for new tokens and send the request again; at most twice (a refresh,
  then a new authorization). A token just obtained that is refused again raises
  :class:`~.errors.OAuthError` with the server's ``error_description``.
* 403 with ``error="insufficient_scope"``: ask the flow to step up, at most
  ``max_step_ups`` times; when it declines, the 403 is the answer (its JSON-RPC error, if
  any, is what the caller sees).
* Anything else is the answer, and so is any answer to the handshake era's closing
  ``DELETE``: ending a session is not worth a login.

A token is sent as ``Authorization: Bearer``, or, when the authorization server bound it to
the flow's DPoP key (``token_type`` ``DPoP``), as ``Authorization: DPoP`` with a fresh
proof for this request in ``DPoP``; a challenge is read in the scheme the token was sent
with. A request body is bytes, so sending it again is safe. The refused response is read to its
end first, which gives its connection back to the pool.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator

import httpx2

from .challenge import bearer_challenge
from .dpop import asks_for_nonce
from .errors import OAuthError
from .flow import OAuthFlow
from .tokens import Tokens

_MAX_REFUSALS = 2


class BearerAuth(httpx2.Auth):
    """OAuth access tokens (Bearer, or DPoP-bound) for the requests of one connection to
    ``server_url``."""

    def __init__(
        self, flow: OAuthFlow, server_url: str, http: Callable[[], httpx2.AsyncClient]
    ) -> None:
        self.flow = flow
        self.server_url = server_url
        self._http = http

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        raise RuntimeError("OAuth works with an httpx2.AsyncClient only")

    def _with_token(self, request: httpx2.Request, tokens: Tokens | None) -> httpx2.Request:
        """``request`` carrying ``tokens``: as a Bearer token, or as a DPoP-bound one with
        a fresh proof of the flow's key."""
        if tokens is None:
            return request
        if tokens.token_type.lower() != "dpop":
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
            return request
        if self.flow.dpop is None:
            raise OAuthError(
                f"The token kept for {self.server_url} is DPoP-bound, but this OAuth flow has "
                "no DPoP key: give it dpop= (the key the token is bound to), or forget the token"
            )
        request.headers["Authorization"] = f"DPoP {tokens.access_token}"
        request.headers["DPoP"] = self.flow.dpop.proof(
            request.method, str(request.url), tokens.access_token
        )
        return request

    def _remember_nonce(self, response: httpx2.Response) -> None:
        if self.flow.dpop is not None:
            self.flow.dpop.remember(str(response.request.url), response.headers.get("dpop-nonce"))

    @staticmethod
    def _refused_for_nonce(response: httpx2.Response, tokens: Tokens | None) -> bool:
        """Whether ``response`` refused the DPoP proof for want of the nonce it names."""
        if tokens is None or tokens.token_type.lower() != "dpop":
            return False
        challenges = response.headers.get_list("www-authenticate")
        return bool(response.headers.get("dpop-nonce")) and asks_for_nonce(
            response.status_code, None, challenges
        )

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        http = self._http()
        tokens = await self.flow.token(self.server_url, http)
        response = yield self._with_token(request, tokens)
        self._remember_nonce(response)
        if request.method == "DELETE":
            return
        refusals = step_ups = 0
        authorized = nonce_renewed = False
        while response.status_code in (401, 403):
            if self._refused_for_nonce(response, tokens):
                await response.aread()
                if nonce_renewed:
                    raise OAuthError(
                        f"{self.server_url} refused the DPoP proof for its nonce again, just "
                        "after giving a new one: giving up"
                    )
                nonce_renewed = True
                response = yield self._with_token(request, tokens)
                self._remember_nonce(response)
                continue
            sent_as = (
                "dpop" if tokens is not None and tokens.token_type.lower() == "dpop" else "bearer"
            )
            challenge = bearer_challenge(response.headers.get_list("www-authenticate"), sent_as)
            if response.status_code == 403 and challenge.error != "insufficient_scope":
                return
            await response.aread()
            if response.status_code == 401:
                if authorized or refusals >= _MAX_REFUSALS:
                    said = f": {challenge.error_description}" if challenge.error_description else ""
                    raise OAuthError(
                        f"{self.server_url} refused the access token just obtained "
                        f"(401 {challenge.error or 'unauthorized'}){said}"
                    )
                tokens, authorized = await self.flow.unauthorized(
                    self.server_url, challenge, tokens, http, may_refresh=refusals == 0
                )
                refusals += 1
            else:
                if step_ups >= self.flow.max_step_ups:
                    return
                stepped = await self.flow.insufficient_scope(
                    self.server_url, challenge, tokens, http
                )
                if stepped is None:
                    return
                tokens, step_ups = stepped, step_ups + 1
            response = yield self._with_token(request, tokens)
            self._remember_nonce(response)
