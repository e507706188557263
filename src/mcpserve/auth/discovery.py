"""An issuer's metadata (RFC 8414, OpenID Connect Discovery), and how this package asks for JSON.

:func:`discover` tries the addresses the MCP authorization spec lists, in its order: the
RFC 8414 address with the well-known segment inserted before the issuer's path, then the
OpenID Connect address inserted the same way, then the OpenID Connect address appended to
the issuer (for an issuer without a path the two OIDC forms are one). A document counts
only when its ``issuer`` is the configured issuer exactly (RFC 8414 section 3.3): otherwise
whoever serves it could point this server at keys of their choosing. A missing document,
an unreadable one or one for another issuer moves on to the next address; a failure to
reach the host at all ends the search, since every address is on that host.

:func:`request_json` is the one way the package makes a request: bounded in size, and only
a 200 with a JSON body counts. Its callers bound it in total time, with an ``asyncio``
deadline over connecting, waiting and reading (which a server trickling bytes cannot
stretch, as it can each of httpx2's per-operation timeouts). :class:`FetchFailed` says why
for the operator's log; what a client is told is for the caller to say.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from .._types import JSONDict

logger = logging.getLogger("mcpserve.auth")

#: Metadata and key sets are a few kilobytes; a larger answer is not one of them.
MAX_DOCUMENT_BYTES = 1024 * 1024

_OAUTH = "/.well-known/oauth-authorization-server"
_OIDC = "/.well-known/openid-configuration"


class FetchFailed(Exception):
    """A request did not produce a JSON document; the message is for the operator's log."""

    def __init__(self, reason: str, *, reachable: bool = True) -> None:
        super().__init__(reason)
        self.reachable = reachable  # False: the host itself did not answer


async def request_json(client: httpx2.AsyncClient, method: str, url: str, **options: Any) -> Any:
    """The JSON body of a 200 answer to one request, read up to :data:`MAX_DOCUMENT_BYTES`.

    The caller bounds the time, the whole exchange under one ``asyncio.timeout``.
    """
    body = bytearray()
    try:
        async with client.stream(method, url, **options) as response:
            if response.status_code != 200:
                raise FetchFailed(f"{url} answered {response.status_code}")
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise FetchFailed(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
    except (httpx2.HTTPError, httpx2.InvalidURL) as error:
        raise FetchFailed(f"{url} could not be fetched: {error!r}", reachable=False) from None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise FetchFailed(f"{url} did not answer with JSON") from None


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order they are tried."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")  # RFC 8414 3.1: a terminating "/" is removed first

    def at(well_known_path: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, well_known_path, "", ""))

    urls = [at(_OAUTH + path), at(_OIDC + path)]
    if path:
        urls.append(at(path + _OIDC))
    return urls


async def discover(issuer: str, client: httpx2.AsyncClient) -> JSONDict:
    """The issuer's metadata document, or :class:`FetchFailed` saying why there is none.

    The caller bounds the time the whole search may take, however many addresses it tries.
    """
    for url in metadata_urls(issuer):
        try:
            document = await request_json(client, "GET", url)
        except FetchFailed as failure:
            if not failure.reachable:
                raise
            logger.debug("No metadata for %s: %s", issuer, failure)
            continue
        if isinstance(document, dict) and document.get("issuer") == issuer:
            return document
        logger.warning("%s is not the metadata of %s: its issuer differs", url, issuer)
    raise FetchFailed(f"no metadata document of {issuer} was found")
