"""The endpoints an MCP client calls itself: ``/token``, ``/revoke``, ``/register``, and the
metadata and keys (RFC 8414, RFC 7517).

``/token`` (RFC 6749 as OAuth 2.1 narrows it) takes two grants:

* ``authorization_code``: the code (used once: a second use revokes everything its login
  was issued), the same ``redirect_uri`` as the authorization request, and the PKCE
  verifier of its challenge;
* ``refresh_token``: the token is rotated, every use answered with a new one; presenting a
  rotated token again means it was copied, so the whole login is revoked (its refresh
  tokens and the provider's tokens); a ``scope`` may narrow what the new access token grants.

A client authenticates as it registered: a public client sends its ``client_id`` alone,
a confidential one its secret by Basic authentication or in the form. Refusals are RFC 6749
5.2's JSON (``invalid_client`` is 401, with a ``WWW-Authenticate`` challenge when Basic was
tried); the description says what is wrong and never repeats a token or a secret.

``/revoke`` (RFC 7009) revokes a refresh token's whole login; given one of this server's
access tokens it revokes that token's login too, though the access token itself stays valid
until it expires (within ``token_ttl``: they are short-lived and verified without a lookup).
It answers 200 whether or not the token was known.

``/register`` (RFC 7591) is open, as MCP clients expect, and bounded: at most
``registrations_per_minute`` from one client address (429 past it) and the limits of
``registration.py``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import unquote

from ..._types import Receive, Scope, Send
from ..tokens import InvalidToken
from .authorization_server import AuthorizationServer
from .errors import AuthorizationError
from .pkce import check_verifier
from .records import json_list
from .registration import RegisteredClient, register
from .web import Malformed, TooLarge, WebRequest, send_json, send_method_not_allowed

logger = logging.getLogger("mcpserve.auth")


async def _error(send: Send, error: AuthorizationError, *, basic: bool = False) -> None:
    status = 401 if error.error == "invalid_client" else 400
    headers = [(b"www-authenticate", b'Basic realm="token"')] if basic and status == 401 else []
    await send_json(send, status, error.to_json(), headers)


def _basic(header: str | None) -> tuple[str, str] | None:
    if not header or header[:6].lower() != "basic ":
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise AuthorizationError("invalid_client", "the Basic credentials are malformed") from None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        raise AuthorizationError("invalid_client", "the Basic credentials are malformed")
    return unquote(client_id), unquote(secret)


async def authenticate_client(
    server: AuthorizationServer, request: WebRequest, form: dict[str, str]
) -> RegisteredClient:
    """The client making this request, proven as it registered; or ``invalid_client``."""
    basic = _basic(request.headers.get("authorization"))
    secret: str | None
    if basic is not None:
        client_id, secret = basic
        if form.get("client_id", client_id) != client_id:
            raise AuthorizationError("invalid_client", "two different client ids were given")
        method = "client_secret_basic"
    else:
        client_id = form.get("client_id", "")
        secret = form.get("client_secret")
        method = "none" if secret is None else "client_secret_post"
    client = await server.client(client_id)
    registered = client.token_endpoint_auth_method
    if registered == "none":
        if basic is not None or secret is not None:
            raise AuthorizationError("invalid_client", "this client is public: send no secret")
        return client
    if method == "none" or client.client_secret is None:
        raise AuthorizationError("invalid_client", "this client must authenticate")
    assert secret is not None
    if not hmac.compare_digest(secret.encode(), client.client_secret.encode()):
        raise AuthorizationError("invalid_client", "the client secret is wrong")
    return client


ClientCall = Callable[[RegisteredClient, dict[str, str]], Awaitable[dict[str, object]]]


async def _answer_client(
    server: AuthorizationServer, scope: Scope, receive: Receive, send: Send, call: ClientCall
) -> None:
    """One POST of an authenticated client (``/token``, ``/revoke``): its form read, the
    client proven, ``call``'s answer sent; a refusal as RFC 6749 5.2 says."""
    request = WebRequest(scope, receive)
    if request.method != "POST":
        await send_method_not_allowed(send, "POST")
        return
    try:
        form = await request.form()
        client = await authenticate_client(server, request, form)
        answer = await call(client, form)
    except Malformed as exc:
        await _error(send, AuthorizationError("invalid_request", str(exc)))
        return
    except AuthorizationError as exc:
        await _error(send, exc, basic="authorization" in request.headers)
        return
    await send_json(send, 200, answer)


async def token(server: AuthorizationServer, scope: Scope, receive: Receive, send: Send) -> None:
    async def grant(client: RegisteredClient, form: dict[str, str]) -> dict[str, object]:
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            return await _code_grant(server, client, form)
        if grant_type == "refresh_token":
            return await _refresh_grant(server, client, form)
        raise AuthorizationError(
            "unsupported_grant_type", "grant_type must be authorization_code or refresh_token"
        )

    await _answer_client(server, scope, receive, send, grant)


def _required(form: dict[str, str], name: str) -> str:
    value = form.get(name)
    if not value:
        raise AuthorizationError("invalid_request", f"{name} is required")
    return value


async def _code_grant(
    server: AuthorizationServer, client: RegisteredClient, form: dict[str, str]
) -> dict[str, object]:
    code = _required(form, "code")
    verifier = _required(form, "code_verifier")
    grant, replayed_login = await server.records.redeem_code(code)
    if grant is None:
        if replayed_login is not None:
            await server.records.revoke_login(replayed_login)
            raise AuthorizationError(
                "invalid_grant", "the code was used before; what it was issued for is revoked"
            )
        raise AuthorizationError("invalid_grant", "the code is unknown or has expired")
    if grant["client_id"] != client.client_id:
        raise AuthorizationError("invalid_grant", "the code was issued to another client")
    # OAuth 2.1 4.1.3: required, and the same, when the authorization request named it.
    sent = form.get("redirect_uri")
    if (sent is not None or grant.get("redirect_uri_sent", True)) and sent != grant["redirect_uri"]:
        raise AuthorizationError(
            "invalid_grant", "redirect_uri must be the one of the authorization request"
        )
    check_verifier(str(grant["challenge"]), verifier)
    server.check_resource(form.get("resource"))
    return await server.issue(grant, json_list(grant["scopes"]))


async def _refresh_grant(
    server: AuthorizationServer, client: RegisteredClient, form: dict[str, str]
) -> dict[str, object]:
    presented = _required(form, "refresh_token")
    grant, reused_login = await server.records.rotate_refresh(presented)
    if grant is None:
        if reused_login is not None:
            await server.records.revoke_login(reused_login)
            raise AuthorizationError(
                "invalid_grant", "the refresh token was used before; its login is revoked"
            )
        raise AuthorizationError("invalid_grant", "the refresh token is unknown or has expired")
    login = str(grant["login"])
    if grant["client_id"] != client.client_id:
        await server.records.revoke_login(login)  # someone else holds the client's token
        raise AuthorizationError("invalid_grant", "the refresh token was issued to another client")
    if await server.records.revoked(login):
        raise AuthorizationError("invalid_grant", "the refresh token's login is revoked")
    server.check_resource(form.get("resource"))
    scopes = json_list(grant["scopes"])
    asked = form.get("scope")
    if asked is not None:
        narrower = sorted(set(asked.split()))
        if not set(narrower) <= set(scopes):
            raise AuthorizationError("invalid_scope", "scope may only narrow what was granted")
        return await server.issue(grant, narrower)
    return await server.issue(grant, scopes)


async def revoke(server: AuthorizationServer, scope: Scope, receive: Receive, send: Send) -> None:
    async def revocation(client: RegisteredClient, form: dict[str, str]) -> dict[str, object]:
        presented = _required(form, "token")
        owner = await server.records.refresh_owner(presented)
        if owner is not None:
            if owner == client.client_id:
                await server.records.revoke_refresh(presented)
        elif presented.count(".") == 2:
            await _revoke_access_token(server, client, presented)
        return {}  # RFC 7009 2.2: the same answer whether or not the token was known

    await _answer_client(server, scope, receive, send, revocation)


async def _revoke_access_token(
    server: AuthorizationServer, client: RegisteredClient, presented: str
) -> None:
    try:
        verified = await server.verifier.verify(presented)
    except InvalidToken:
        return  # RFC 7009 2.2: an invalid token is no error
    login = verified.claims.get("sid")
    if verified.client_id == client.client_id and isinstance(login, str):
        await server.records.revoke_login(login)


async def registration(
    server: AuthorizationServer, scope: Scope, receive: Receive, send: Send
) -> None:
    request = WebRequest(scope, receive)
    if request.method != "POST":
        await send_method_not_allowed(send, "POST")
        return
    try:
        count = await server.records.registrations_from(request.client_address)
        if count > server.registrations_per_minute:
            answer = {
                "error": "too_many_requests",
                "error_description": "Too many registrations from this address; wait a minute",
            }
            await send_json(send, 429, answer, [(b"retry-after", b"60")])
            return
        body = await request.body()
        client = register(body)
        server.check_allowed(client.redirect_uris)
        await server.records.save_client(client)
    except TooLarge as exc:
        await send_json(
            send, 413, AuthorizationError("invalid_client_metadata", str(exc)).to_json()
        )
        return
    except AuthorizationError as exc:
        await send_json(send, 400, exc.to_json())
        return
    await send_json(send, 201, client.to_json())


async def metadata(server: AuthorizationServer, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await send_method_not_allowed(send, "GET")
        return
    await send_json(send, 200, server.metadata())


async def jwks(server: AuthorizationServer, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await send_method_not_allowed(send, "GET")
        return
    await send_json(send, 200, server.tokens.keys.jwks)
