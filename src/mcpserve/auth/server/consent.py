"""The consent page: the user, not the server, lets a newly registered client in.

The server is one client at the identity provider, shared by every MCP client that registers
with it, so the provider's own consent ("allow mcpserve-notes to read your profile?") says
nothing about *which* MCP client is asking. Without a page of its own, anyone could register
a client with their own redirect URI, send a user a link, and receive a code for them once the
provider remembers the user's earlier yes: the confused deputy of the specification's security
best practices. So before the provider, the server asks, naming the client (in its own words,
marked as such), where the user will be sent back, and the scopes.

The page is a plain HTML form (no script) with two buttons, "Allow" and "Deny". Its CSRF token
is an HMAC of the pending login *and the browser's own cookie* (:func:`csrf_token`): a form
posted from another browser, without the cookie, or with the token of another pending login
(another client) is refused. The browser cookie is random, HttpOnly, ``SameSite=Lax`` (a
cross-site POST carries none) and Secure on HTTPS.

A yes is remembered per browser and client, for the redirect URI and scopes it was given for:
a request for another redirect URI, or for a scope beyond those, asks again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from html import escape

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

BROWSER_COOKIE = "mcpserve_browser"
BROWSER_COOKIE_AGE = 365 * 86400
_LABEL = b"mcpserve consent CSRF key (HMAC-SHA256), v1"


def csrf_key(secret: bytes) -> bytes:
    """The key CSRF tokens are made with, derived from the newest key of the ring."""
    return HKDF(hashes.SHA256(), 32, None, _LABEL).derive(secret)


def csrf_token(key: bytes, browser: str, pending: str) -> str:
    mac = hmac.new(key, f"{browser}\n{pending}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def csrf_valid(key: bytes, browser: str | None, pending: str, token: str | None) -> bool:
    if not browser or not token:
        return False
    return hmac.compare_digest(csrf_token(key, browser, pending), token)


def browser_cookie(value: str, *, secure: bool, path: str) -> tuple[bytes, bytes]:
    attributes = f"Path={path or '/'}; Max-Age={BROWSER_COOKIE_AGE}; HttpOnly; SameSite=Lax"
    if secure:
        attributes += "; Secure"
    return b"set-cookie", f"{BROWSER_COOKIE}={value}; {attributes}".encode()


def consent_page(
    *,
    action: str,
    pending: str,
    csrf: str,
    client_name: str | None,
    client_id: str,
    redirect_uri: str,
    scopes: Sequence[str],
    server_name: str,
) -> str:
    """The page (everything the client said of itself escaped)."""
    name = escape(client_name or client_id)
    shown_scopes = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes)
    scope_text = f"<ul>{shown_scopes}</ul>" if scopes else "<p>No particular scope.</p>"
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Allow {name} to use {escape(server_name)}?</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 34rem; margin: 3rem auto; padding: 0 1rem; }}
.claim {{ color: #555; }} button {{ font-size: 1rem; padding: .5rem 1.5rem; margin-right: 1rem; }}
code {{ word-break: break-all; }}
</style>
</head>
<body>
<h1>Allow <span id="client-name">{name}</span> to use {escape(server_name)}?</h1>
<p class="claim">The application calls itself “{name}” (client id <code>{escape(client_id)}</code>);
that is its own claim.</p>
<p>After you sign in, you will be sent back to:<br>
<code id="redirect-uri">{escape(redirect_uri)}</code></p>
<p>It asks for:</p>
{scope_text}
<p>Only allow it if you started this sign-in and know this address.</p>
<form method="post" action="{escape(action)}">
<input type="hidden" name="pending" value="{escape(pending)}">
<input type="hidden" name="csrf" value="{escape(csrf)}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
</body>
</html>
"""


def message_page(title: str, message: str) -> str:
    """A page for a login that cannot go on (nowhere safe to send the user back to)."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 34rem; margin: 3rem auto;">
<h1>{escape(title)}</h1><p>{escape(message)}</p></body></html>
"""
