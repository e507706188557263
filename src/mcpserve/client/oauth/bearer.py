"""How an HTTP connection carries OAuth: an ``httpx2.Auth`` around every request it sends.

:class:`BearerAuth` is built by :class:`~mcpserve.client.http.HTTPConnection` for its
endpoint and passed on each of its requests (POSTs, the handshake era's GET stream and
DELETE), so the token goes on every HTTP request to the server and nowhere else: the
authorization server is reached with separate requests, through the same connection pool,
and never sees it. The flow object (``OAuth`` or ``ClientCredentials``) decides; this
module only reads the answer:

* 401: ask the flow for new tokens and send the request again; at most twice (a refresh,
  then a new authorization). A token just obtained that is refused again raises
  :class:`~.errors.OAuthError` with the server's ``error_description``.
* 403 with ``error="insufficient_scope"``: ask the flow to step up, at most
  ``max_step_ups`` times; when it declines, the 403 is the answer (its JSON-RPC error, if
  any, is what the caller sees).
* Anything else is the answer, and so is any answer to the handshake era's closing
  ``DELETE``: ending a session is not worth a login.

A request body is bytes, so sending it again is safe. The refused response is read to its
end first, which gives its connection back to the pool.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator

import httpx2

from .challenge import bearer_challenge
from .errors import OAuthError
from .flow import OAuthFlow
from .tokens import Tokens

_MAX_REFUSALS = 2


def _with_token(request: httpx2.Request, tokens: Tokens | None) -> httpx2.Request:
    if tokens is not None:
        request.headers["Authorization"] = f"Bearer {tokens.access_token}"
    return request


class BearerAuth(httpx2.Auth):
    """OAuth bearer tokens for the requests of one connection to ``server_url``."""

    def __init__(
        self, flow: OAuthFlow, server_url: str, http: Callable[[], httpx2.AsyncClient]
    ) -> None:
        self.flow = flow
        self.server_url = server_url
        self._http = http

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        raise RuntimeError("OAuth works with an httpx2.AsyncClient only")

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        http = self._http()
        tokens = await self.flow.token(self.server_url, http)
        response = yield _with_token(request, tokens)
        if request.method == "DELETE":
            return
        refusals = step_ups = 0
        authorized = False
        while response.status_code in (401, 403):
            challenge = bearer_challenge(response.headers.get_list("www-authenticate"))
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
            response = yield _with_token(request, tokens)
