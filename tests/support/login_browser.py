"""A stand-in for the user's browser, for ``mcpserve ... --oauth`` in a child process.

Named by ``BROWSER`` (``python login_browser.py %s``), so Python's ``webbrowser`` runs it
with the authorization URL the CLI would open. It logs the test user in and consents at
the authorization server (:func:`oidc_server.drive_login`), then follows the redirect back
to the CLI's loopback listener, as a browser would. Each run appends the URL it got to
``$LOGIN_LOG``, so a test can tell whether the CLI asked for a login at all.
"""

from __future__ import annotations

import asyncio
import os
import sys
from urllib.parse import parse_qs, urlsplit

import httpx2

from oidc_server import drive_login


async def main(url: str) -> None:
    redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    back = await drive_login(url, redirect_uri)
    async with httpx2.AsyncClient(trust_env=False, timeout=10) as browser:
        (await browser.get(back)).raise_for_status()


if __name__ == "__main__":
    with open(os.environ["LOGIN_LOG"], "a") as log:
        log.write(sys.argv[1] + "\n")
    asyncio.run(main(sys.argv[1]))
