"""A person at headless Chromium logs in through an ``OIDCProxy``: mcpserve's consent page,
then the OpenID provider's login and consent (``login_stack.py``), back to the MCP client's
redirect URI with a code the client exchanges.

The consent page is used as a person would use it: read (the client's name, the redirect
URI, the scopes, and exactly two buttons, "Allow" and "Deny"), then the button clicked. The
page runs no script (its policy forbids any), so the form alone carries the answer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from browser import INSTALL_HINT, Browser, find_chromium
from login_client import HandClient, Login
from login_stack import login_stack, query_of

pytestmark = [pytest.mark.subprocess, pytest.mark.node, pytest.mark.browser]


@pytest.fixture
def browser() -> Iterator[Browser]:
    if find_chromium() is None:
        pytest.fail(f"These tests drive headless Chromium, which is not installed: {INSTALL_HINT}",
                    pytrace=False)  # fmt: skip
    with Browser.launch() as launched:
        yield launched


@contextmanager
def loopback_listener() -> Iterator[tuple[str, list[str]]]:
    """What a native MCP client runs to receive its code: a one-page HTTP server on a free
    127.0.0.1 port. Yields its redirect URI and the paths it was sent to."""
    received: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.append(self.path)
            body = b"<!doctype html><title>Signed in</title><h1>You may close this tab</h1>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/callback", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_a_person_in_chromium_allows_the_client_and_logs_in(
    tmp_path: Path, browser: Browser
) -> None:
    async with (
        login_stack(tmp_path) as stack,
        httpx2.AsyncClient(trust_env=False, timeout=30) as http,
    ):
        with loopback_listener() as (redirect, received):
            await login_in_chromium(stack, HandClient(stack, http, redirect_uris=[redirect]),
                                    browser, redirect, received)  # fmt: skip


async def login_in_chromium(
    stack: Any, client: HandClient, browser: Browser, redirect: str, received: list[str]
) -> None:
    assert (await client.register(client_name="Notes <b>Desktop</b>")).status_code == 201
    url, verifier, state = client.authorization_url(scope="notes:read")

    browser.navigate(url)
    browser.wait_for_selector("button[value=allow]")
    assert browser.texts("button") == ["Allow", "Deny"]
    assert browser.text("#client-name") == "Notes <b>Desktop</b>"  # shown, not rendered
    assert browser.text("#redirect-uri") == redirect
    assert browser.texts("li code") == ["notes:read"]
    assert browser.evaluate("document.scripts.length") == 0
    browser.click("button[value=allow]")

    # The provider's own pages (oidc-provider's development login, then its consent).
    browser.wait_for("document.querySelector('input[name=login]') !== null",
                         what="the provider's login page")  # fmt: skip
    browser.fill("input[name=login]", "dana")
    browser.fill("input[name=password]", "any password")
    browser.click("button[type=submit]")
    browser.wait_for(
        f"location.href.startsWith({redirect!r}) || "
        "document.querySelector('form button[type=submit]') !== null",
        what="the provider's consent page or the redirect back",
    )
    if not browser.evaluate(f"location.href.startsWith({redirect!r})"):
        browser.click("form button[type=submit]")
    back = browser.wait_for(
        f"location.href.startsWith({redirect!r}) && location.href",
        what="the redirect back to the client",
    )
    assert browser.text("h1") == "You may close this tab"
    callbacks = [path for path in received if path.startswith("/callback?")]
    assert len(callbacks) == 1  # (and the browser's own /favicon.ico)

    answer = query_of(back)
    assert answer["state"] == state
    assert answer["iss"] == stack.base_url
    tokens = await client.exchange(Login(answer["code"], verifier, redirect, state))
    assert tokens.status_code == 200, tokens.text
    assert tokens.json()["scope"] == "notes:read"
    called = await client.call_tool(tokens.json()["access_token"], "whoami")
    assert called.json()["result"]["structuredContent"]["principal"] == "dana"
