"""The endpoints a person's browser visits during a login: ``/authorize``, the consent page
and the identity provider's callback.

::

    MCP client      browser           this server                       identity provider
        |  opens  --->  GET /authorize ---> checks the request, keeps it pending
        |               <--- consent page (unless this browser allowed this client before)
        |               POST /auth/consent (Allow) ---> 303 to the provider, with the
        |                                               server's own client, PKCE, nonce
        |               <------------------------------------------- user logs in there
        |               GET /auth/callback?code&state ---> provider's code exchanged,
        |                                                  identity read, own code issued
        |  <--- 303 redirect_uri?code&state&iss
        |  POST /token (code, verifier) ---> access and refresh tokens (backchannel.py)

Until the redirect URI is known to be the client's, an error is a page here (sending the user
to an unchecked address would make this server an open redirector); after, it goes back to
the client as RFC 6749 4.1.2.1 says, with ``state`` and ``iss`` (RFC 9207).
"""

from __future__ import annotations

import logging
import secrets
from urllib.parse import urlencode

from ..._types import JSONDict, Receive, Scope, Send
from .authorization_server import AuthorizationServer, upstream_record
from .consent import (
    BROWSER_COOKIE,
    browser_cookie,
    consent_page,
    csrf_token,
    csrf_valid,
    message_page,
)
from .errors import AuthorizationError
from .pkce import check_challenge
from .records import json_list
from .redirects import matches
from .upstream import UpstreamFailed, pkce_pair
from .web import Malformed, WebRequest, send_html, send_method_not_allowed, send_redirect

logger = logging.getLogger("mcpserve.auth")

#: Upstream errors passed on to the client as they are; any other is ``server_error``.
_PASSED_ON = frozenset({"access_denied", "temporarily_unavailable"})


def _back_to_client(
    server: AuthorizationServer, redirect_uri: str, state: str | None, answer: dict[str, str]
) -> str:
    query = dict(answer)
    if state is not None:
        query["state"] = state
    query["iss"] = server.issuer
    return f"{redirect_uri}{'&' if '?' in redirect_uri else '?'}{urlencode(query)}"


async def _refuse_page(send: Send, status: int, title: str, message: str) -> None:
    await send_html(send, status, message_page(title, message))


async def _visit(
    scope: Scope, receive: Receive, send: Send, malformed: str
) -> tuple[WebRequest, dict[str, str]] | None:
    """A browser's GET and its query; None once the answer is sent (another method, or a
    query that cannot be read, shown as the page ``malformed``)."""
    request = WebRequest(scope, receive)
    if request.method not in ("GET", "HEAD"):
        await send_method_not_allowed(send, "GET")
        return None
    try:
        return request, request.query()
    except Malformed as exc:
        await _refuse_page(send, 400, malformed, str(exc))
        return None


async def authorize(
    server: AuthorizationServer, scope: Scope, receive: Receive, send: Send
) -> None:
    visit = await _visit(scope, receive, send, "This sign-in request is malformed")
    if visit is None:
        return
    request, params = visit
    try:
        client = await server.client(params.get("client_id", ""))
    except AuthorizationError as exc:
        await _refuse_page(send, 400, "Unknown application", exc.description)
        return
    redirect_uri = params.get("redirect_uri")
    redirect_uri_sent = redirect_uri is not None
    if redirect_uri is None and len(client.redirect_uris) == 1:
        redirect_uri = client.redirect_uris[0]
    if redirect_uri is None or not any(matches(r, redirect_uri) for r in client.redirect_uris):
        message = "The address to return to is not one this application registered."
        await _refuse_page(send, 400, "This sign-in request is not valid", message)
        return
    state = params.get("state")
    try:
        if params.get("response_type") != "code":
            raise AuthorizationError("unsupported_response_type", "response_type must be code")
        check_challenge(params.get("code_challenge_method"), params.get("code_challenge"))
        server.check_resource(params.get("resource"))
    except AuthorizationError as exc:
        await send_redirect(send, _back_to_client(server, redirect_uri, state, exc.to_json()))
        return
    # Each sign-in begun is kept ten minutes: one address may not fill the store with them.
    if await server.records.sign_ins_from(request.client_address) > server.sign_ins_per_minute:
        message = "Too many sign-ins from this address; wait a minute and try again."
        await send_html(
            send, 429, message_page("Too many sign-ins", message), [(b"retry-after", b"60")]
        )
        return
    scopes = server.granted_scopes(params.get("scope"))
    cookie_headers = []
    browser = request.cookie(BROWSER_COOKIE)
    if not browser or len(browser) > 64:
        browser = secrets.token_urlsafe(32)
        cookie_headers.append(browser_cookie(browser, secure=server.secure_cookies, path="/"))
    pending: JSONDict = {
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "redirect_uri_sent": redirect_uri_sent,
        "state": state,
        "challenge": params["code_challenge"],
        "scopes": scopes,
        "browser": browser,
    }
    key = await server.records.save_pending(pending)
    remembered = await server.records.consent(browser, client.client_id)
    if (
        remembered is not None
        and remembered.get("redirect_uri") == redirect_uri
        and set(scopes) <= set(json_list(remembered.get("scopes")))
    ):
        await _to_provider(server, key, pending, send, cookie_headers)
        return
    page = consent_page(
        action=server.consent_url,
        pending=key,
        csrf=csrf_token(server.csrf_key, browser, key),
        client_name=client.client_name,
        client_id=client.client_id,
        redirect_uri=redirect_uri,
        scopes=scopes,
        server_name=server.server_name,
    )
    await send_html(send, 200, page, cookie_headers)


async def consent(server: AuthorizationServer, scope: Scope, receive: Receive, send: Send) -> None:
    request = WebRequest(scope, receive)
    if request.method != "POST":
        await send_method_not_allowed(send, "POST")
        return
    try:
        form = await request.form()
    except Malformed as exc:
        await _refuse_page(send, 400, "This answer is malformed", str(exc))
        return
    key = form.get("pending", "")
    pending = await server.records.pending(key) if key else None
    if pending is None:
        message = "It took too long, or it was already answered. Start again from the application."
        await _refuse_page(send, 400, "This sign-in has expired", message)
        return
    browser = request.cookie(BROWSER_COOKIE)
    if (
        browser != pending.get("browser")
        or not csrf_valid(server.csrf_key, browser, key, form.get("csrf"))
        or pending.get("consented")
    ):
        message = "This answer did not come from the page this browser was shown."
        await _refuse_page(send, 403, "This answer cannot be accepted", message)
        return
    if form.get("decision") != "allow":
        await server.records.take_pending(key)
        refusal = {"error": "access_denied", "error_description": "The user denied access"}
        location = _back_to_client(server, str(pending["redirect_uri"]), _state(pending), refusal)
        await send_redirect(send, location)
        return
    await server.records.remember_consent(
        str(browser),
        str(pending["client_id"]),
        str(pending["redirect_uri"]),
        json_list(pending["scopes"]),
    )
    await _to_provider(server, key, pending, send, [])


async def _to_provider(
    server: AuthorizationServer,
    key: str,
    pending: JSONDict,
    send: Send,
    headers: list[tuple[bytes, bytes]],
) -> None:
    verifier, challenge = pkce_pair()
    nonce = secrets.token_urlsafe(16)
    await server.records.update_pending(
        key, {**pending, "consented": True, "verifier": verifier, "nonce": nonce}
    )
    try:
        location = await server.upstream.authorization_url(
            redirect_uri=server.callback_url, state=key, challenge=challenge, nonce=nonce
        )
    except UpstreamFailed as exc:
        logger.warning("The identity provider cannot be reached: %s", exc)
        await server.records.take_pending(key)
        failed = {"error": "temporarily_unavailable", "error_description": "Try again later"}
        location = _back_to_client(server, str(pending["redirect_uri"]), _state(pending), failed)
    await send_redirect(send, location, headers)


async def callback(server: AuthorizationServer, scope: Scope, receive: Receive, send: Send) -> None:
    visit = await _visit(scope, receive, send, "The identity provider's answer is malformed")
    if visit is None:
        return
    request, params = visit
    key = params.get("state", "")
    pending = await server.records.take_pending(key) if key else None
    if pending is None or not pending.get("consented"):
        message = "This sign-in is unknown or has expired. Start again from the application."
        await _refuse_page(send, 400, "This sign-in cannot be completed", message)
        return
    if request.cookie(BROWSER_COOKIE) != pending.get("browser"):
        message = "This sign-in was started in another browser. Start again from the application."
        await _refuse_page(send, 403, "This sign-in cannot be completed", message)
        return
    redirect_uri, state = str(pending["redirect_uri"]), _state(pending)
    if "error" in params or "code" not in params:
        error = params.get("error", "server_error")
        answer = {
            "error": error if error in _PASSED_ON else "server_error",
            "error_description": "The sign-in at the identity provider did not succeed",
        }
        await send_redirect(send, _back_to_client(server, redirect_uri, state, answer))
        return
    try:
        tokens = await server.upstream.exchange(
            code=params["code"], redirect_uri=server.callback_url, verifier=str(pending["verifier"])
        )
        subject, claims = await server.upstream.identity(tokens, str(pending["nonce"]))
    except UpstreamFailed as exc:
        logger.warning("A sign-in at the identity provider failed: %s", exc)
        answer = {
            "error": "server_error",
            "error_description": "The sign-in at the identity provider failed",
        }
        await send_redirect(send, _back_to_client(server, redirect_uri, state, answer))
        return
    login = secrets.token_urlsafe(24)
    await server.records.save_upstream(login, upstream_record(tokens))
    code = await server.records.issue_code(
        {
            "login": login,
            "client_id": pending["client_id"],
            "redirect_uri": redirect_uri,
            "redirect_uri_sent": pending.get("redirect_uri_sent", True),
            "challenge": pending["challenge"],
            "scopes": pending["scopes"],
            "subject": subject,
            "claims": claims,
        }
    )
    await send_redirect(send, _back_to_client(server, redirect_uri, state, {"code": code}))


def _state(pending: JSONDict) -> str | None:
    state = pending.get("state")
    return state if isinstance(state, str) else None
