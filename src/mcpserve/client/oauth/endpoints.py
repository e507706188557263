"""Requests to an authorization server's endpoints: registration (RFC 7591) and tokens.

**Client authentication** at the token endpoint is the registration's
``token_endpoint_auth_method`` when it has one; otherwise :func:`choose_auth_method` picks
from the server's ``token_endpoint_auth_methods_supported``: a client with a secret uses
``client_secret_basic`` if offered, else ``client_secret_post``; a client without one is
public (``none``, its ``client_id`` in the form). For Basic, the id and secret are
form-urlencoded before base64, as RFC 6749 section 2.3.1 says. A client with a private key
uses ``private_key_jwt``: a signed assertion whose audience is the issuer (:mod:`.assertion`).

**Registration** sends the client's metadata: its name, redirect URIs, grant and response
types, the authentication method it wants (``none`` when the server allows public clients,
else the first secret-based method it offers) and ``application_type`` (``native`` for a
loopback redirect, else ``web``). No ``scope`` is sent: several authorization servers then
limit the client to those scopes forever, and step-up would be refused (docs/decisions.md,
"Dynamic registration without scope").

**Answers.** A token answer must be JSON with a string ``access_token`` and a
``token_type`` of ``Bearer`` (any case), or ``DPoP`` when the request carried a DPoP proof
(:mod:`.dpop`; a refusal for the proof's nonce is answered once, with the nonce given); an
OAuth error answer (``{"error": ...}``) becomes :class:`OAuthError` with its code and
description; anything else says what came back (status and size), never the body, which
may hold a secret.
"""

from __future__ import annotations

import base64
import logging
import time
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2

from ...auth.discovery import MAX_DOCUMENT_BYTES
from ...protocol.jsonrpc import loads
from .assertion import ASSERTION_TYPE
from .dpop import DPoPProofs, asks_for_nonce
from .errors import OAuthError
from .metadata import IssuerMetadata, is_loopback
from .tokens import ClientRegistration, Tokens

logger = logging.getLogger("mcpserve.client.oauth")

_SECRET_METHODS = ("client_secret_basic", "client_secret_post")
_KEY_METHOD = "private_key_jwt"
_SUPPORTED_METHODS = (*_SECRET_METHODS, _KEY_METHOD, "none")


def choose_auth_method(issuer: IssuerMetadata, client: ClientRegistration) -> str:
    """How ``client`` authenticates at the token endpoint of ``issuer``."""
    method = client.token_endpoint_auth_method
    if method is not None:
        if method not in _SUPPORTED_METHODS:
            raise OAuthError(
                f"The client authentication method {method!r} is not supported "
                f"(supported: {', '.join(_SUPPORTED_METHODS)})"
            )
        return method
    if client.client_assertion is not None:
        return _KEY_METHOD
    if client.client_secret is None:
        return "none"
    offered = issuer.token_endpoint_auth_methods_supported
    return next((m for m in _SECRET_METHODS if m in offered), "client_secret_basic")


def authenticate(
    form: dict[str, str],
    headers: dict[str, str],
    client: ClientRegistration,
    method: str,
    audience: str,
) -> None:
    """Put ``client``'s credentials into a token request, the way ``method`` says
    (``audience``: the issuer, which a ``private_key_jwt`` assertion names)."""
    if method == _KEY_METHOD:
        if client.client_assertion is None:
            raise OAuthError(
                f"The client {client.client_id!r} must authenticate with "
                "private_key_jwt, but was given no private_key"
            )
        form["client_id"] = client.client_id
        form["client_assertion_type"] = ASSERTION_TYPE
        form["client_assertion"] = client.client_assertion.assertion(client.client_id, audience)
        return
    if method == "client_secret_basic" and client.client_secret is not None:
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        return
    if client.client_id:  # a grant that needs no client (JWT bearer) may name none
        form["client_id"] = client.client_id
    if method == "client_secret_post" and client.client_secret is not None:
        form["client_secret"] = client.client_secret


def registration_auth_method(issuer: IssuerMetadata) -> str:
    offered = issuer.token_endpoint_auth_methods_supported
    if "none" in offered:
        return "none"
    return next((m for m in _SECRET_METHODS if m in offered), "client_secret_basic")


async def fetch_answer(
    http: httpx2.AsyncClient, method: str, url: str, what: str, **options: Any
) -> tuple[int, Any, httpx2.Headers]:
    """The status, JSON body (``None`` if not JSON) and headers of one bounded request."""
    body = bytearray()
    try:
        async with http.stream(method, url, **options) as response:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise OAuthError(
                        f"{what} at {url} answered more than {MAX_DOCUMENT_BYTES} bytes"
                    )
            status, headers = response.status_code, response.headers
    except httpx2.HTTPError as exc:
        raise OAuthError(f"{what} at {url} failed: {exc!r}") from None
    try:
        return status, loads(bytes(body), exact_integers=False) if body else None, headers
    except Exception:  # not JSON: said below, by status and size only
        return status, None, headers


def refusal(what: str, url: str, status: int, answer: Any) -> OAuthError:
    """The error for an answer that is not the one asked for: the server's OAuth error
    when it sent one, else its status (never its body, which may hold a secret)."""
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        code = answer["error"]
        description = answer.get("error_description")
        said = f": {description}" if isinstance(description, str) and description else ""
        return OAuthError(f"{what} was refused by {url} ({status} {code}){said}", error=code)
    return OAuthError(f"{what} at {url} answered HTTP {status} without an OAuth answer")


async def request_tokens(
    http: httpx2.AsyncClient,
    issuer: IssuerMetadata,
    client: ClientRegistration,
    form: dict[str, str],
    *,
    resource: str,
    requested: tuple[str, ...] | None,
    http_timeout: float,
    dpop: DPoPProofs | None = None,
) -> Tokens:
    """POST ``form`` (a grant) to the token endpoint as ``client``: the tokens it answers.
    With ``dpop``, each attempt carries a proof, and a refusal for the proof's nonce is
    answered once, with the nonce the server gave (RFC 9449 section 8)."""
    method = choose_auth_method(issuer, client)
    endpoint = issuer.token_endpoint
    what = f"The {form['grant_type']} token request"
    if dpop is not None:
        dpop.check_algorithms(issuer.issuer, issuer.dpop_signing_alg_values_supported)
    for attempt in (1, 2):
        headers = {"Accept": "application/json"}
        sent = {**form, "resource": resource}
        authenticate(sent, headers, client, method, issuer.issuer)  # a fresh assertion each time
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", endpoint)
        logger.debug("%s to %s as %s (%s)", what, endpoint, client.client_id, method)
        status, answer, answered = await fetch_answer(
            http, "POST", endpoint, what, data=sent, headers=headers, timeout=http_timeout
        )
        if dpop is None:
            break
        renewed = dpop.remember(endpoint, answered.get("dpop-nonce"))
        if not (attempt == 1 and renewed and asks_for_nonce(status, answer, ())):
            break
        logger.debug("%s: the server wants a DPoP nonce; sending it again with it", what)
    if status != 200 or not isinstance(answer, dict) or "error" in answer:
        raise refusal(what, endpoint, status, answer)
    token, kind = answer.get("access_token"), answer.get("token_type")
    if not isinstance(token, str) or not token or not isinstance(kind, str):
        raise OAuthError(f"{what} at {endpoint} answered no access token")
    if kind.lower() == "dpop" and dpop is not None:
        kind = "DPoP"
    elif kind.lower() == "bearer":
        kind = "Bearer"  # also when a proof was sent: the server does not bind its tokens
    else:
        usable = "Bearer and DPoP tokens" if dpop is not None else "Bearer tokens"
        raise OAuthError(f"{what} answered a {kind!r} token; this client uses {usable} only")
    lifetime = answer.get("expires_in")
    granted = answer.get("scope")
    refresh = answer.get("refresh_token")
    return Tokens(
        access_token=token,
        token_type=kind,
        expires_at=(
            time.time() + float(lifetime)
            if isinstance(lifetime, int | float) and not isinstance(lifetime, bool)
            else None
        ),
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        scopes=tuple(granted.split()) if isinstance(granted, str) else requested,
        requested_scopes=requested,
        issuer=issuer.issuer,
        resource=resource,
    )


async def register_client(
    http: httpx2.AsyncClient,
    issuer: IssuerMetadata,
    *,
    client_name: str,
    redirect_uri: str,
    grant_types: tuple[str, ...],
    http_timeout: float,
) -> ClientRegistration:
    """Register a client dynamically (RFC 7591) at ``issuer``."""
    endpoint = issuer.registration_endpoint
    if endpoint is None:
        raise OAuthError(f"The authorization server {issuer.issuer} offers no registration")
    method = registration_auth_method(issuer)
    metadata = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": list(grant_types),
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native" if is_loopback(urlsplit(redirect_uri).hostname) else "web",
    }
    what = "Registering the client"
    status, answer, _ = await fetch_answer(
        http,
        "POST",
        endpoint,
        what,
        json=metadata,
        headers={"Accept": "application/json"},
        timeout=http_timeout,
    )
    if status not in (200, 201) or not isinstance(answer, dict) or "error" in answer:
        raise refusal(what, endpoint, status, answer)
    client_id = answer.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise OAuthError(f"{what} at {endpoint} answered no client_id")
    secret = answer.get("client_secret")
    secret = secret if isinstance(secret, str) and secret else None
    answered_method = answer.get("token_endpoint_auth_method")
    if not isinstance(answered_method, str):
        # Not said: a secret was issued (choose among the offered methods), or none was.
        answered_method = None if secret is not None else "none"
    expires = answer.get("client_secret_expires_at")
    uris = answer.get("redirect_uris")
    logger.debug("Registered the client %s at %s", client_id, issuer.issuer)
    return ClientRegistration(
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method=answered_method,
        redirect_uris=(
            tuple(u for u in uris if isinstance(u, str))
            if isinstance(uris, list)
            else (redirect_uri,)
        ),
        client_secret_expires_at=(
            float(expires) if isinstance(expires, int | float) and expires else None
        ),
    )
