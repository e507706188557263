"""Client ID metadata documents: a client whose ``client_id`` is an HTTPS URL describes itself
in the JSON document at that URL, and needs no registration.

Fetching a URL a stranger chose is a way into the server's network (server-side request
forgery), so the fetch is narrow:

* the URL is ``https``, with a path, no user information, no fragment, at most 2,048 bytes;
* its host resolves only to public addresses (:func:`ipaddress.ip_address(...).is_global`),
  and the connection goes to the address that was checked, the host name kept for TLS and
  ``Host`` (so a name that resolves differently a moment later, DNS rebinding, reaches
  nothing new);
* no redirect is followed, the answer is at most :data:`MAX_DOCUMENT_BYTES`, and the whole
  fetch takes at most ``timeout`` seconds.

The document must be a JSON object whose ``client_id`` is the URL itself, with redirect URIs
that may be registered (as for ``/register``) and, being public, ``none`` for the token
endpoint. Documents are kept in this process for their ``Cache-Control: max-age`` (between
one minute and a day; an hour when not said), refusals for a minute.

``trusted_hosts`` names hosts exempt from the network rules (plain HTTP, private addresses):
for development against a client on your own machine, never for a server facing the
Internet.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import time
from collections import OrderedDict
from collections.abc import Collection
from urllib.parse import urlsplit

import httpx2
import orjson

from .errors import AuthorizationError
from .registration import RegisteredClient, register_document

MAX_DOCUMENT_BYTES = 16 * 1024
MAX_URL_LENGTH = 2048
MIN_AGE, MAX_AGE, DEFAULT_AGE, REFUSAL_AGE = 60.0, 86400.0, 3600.0, 60.0
_MAX_AGE = re.compile(r"max-age=(\d+)")


def is_metadata_url(client_id: str) -> bool:
    return client_id.startswith(("https://", "http://"))


def _refused(description: str) -> AuthorizationError:
    return AuthorizationError("invalid_client", f"client metadata document: {description}")


class ClientMetadataDocuments:
    """Fetches, checks and caches client ID metadata documents."""

    def __init__(
        self,
        *,
        trusted_hosts: Collection[str] = (),
        timeout: float = 5.0,
        max_entries: int = 1000,
    ) -> None:
        self.trusted_hosts = frozenset(host.lower() for host in trusted_hosts)
        self.timeout = timeout
        self.max_entries = max_entries
        self._cache: OrderedDict[str, tuple[float, RegisteredClient | AuthorizationError]] = (
            OrderedDict()
        )
        self._http: httpx2.AsyncClient | None = None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def client(self, url: str) -> RegisteredClient:
        """The client the document at ``url`` describes, or ``invalid_client`` saying why not."""
        cached = self._cache.get(url)
        if cached is not None and cached[0] > time.monotonic():
            if isinstance(cached[1], AuthorizationError):
                raise cached[1]
            return cached[1]
        try:
            client, age = await asyncio.wait_for(self._fetch(url), self.timeout)
        except AuthorizationError as refusal:
            self._keep(url, REFUSAL_AGE, refusal)
            raise
        except TimeoutError:
            late = _refused(f"no answer within {self.timeout:g} seconds")
            self._keep(url, REFUSAL_AGE, late)
            raise late from None
        self._keep(url, age, client)
        return client

    def _keep(self, url: str, age: float, entry: RegisteredClient | AuthorizationError) -> None:
        self._cache[url] = (time.monotonic() + age, entry)
        self._cache.move_to_end(url)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)

    async def _fetch(self, url: str) -> tuple[RegisteredClient, float]:
        if len(url) > MAX_URL_LENGTH:
            raise _refused("the URL is too long")
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise _refused("the client_id is not a URL") from None
        host = (parts.hostname or "").lower()
        trusted = host in self.trusted_hosts
        if parts.scheme != "https" and not (trusted and parts.scheme == "http"):
            raise _refused("the URL must be https")
        if not host or "@" in parts.netloc or parts.fragment or parts.path in ("", "/"):
            raise _refused("the URL must be absolute, with a path, without user or fragment")
        address = await self._public_address(host, port, trusted)
        target = f"[{address}]" if ":" in address else address
        fetched = parts._replace(netloc=f"{target}:{port}").geturl()
        if self._http is None:
            self._http = httpx2.AsyncClient(follow_redirects=False, trust_env=False)
        try:
            async with self._http.stream(
                "GET",
                fetched,
                headers={"host": parts.netloc.rpartition("@")[2], "accept": "application/json"},
                extensions={"sni_hostname": host},
            ) as response:
                if response.is_redirect:
                    raise _refused("the URL answered with a redirect, which is not followed")
                if response.status_code != 200:
                    raise _refused(f"the URL answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise _refused(f"the document is larger than {MAX_DOCUMENT_BYTES} bytes")
                cache_control = response.headers.get("cache-control", "")
        except httpx2.HTTPError as exc:
            raise _refused(f"the URL cannot be fetched ({type(exc).__name__})") from None
        try:
            document = orjson.loads(bytes(body))
        except orjson.JSONDecodeError:
            raise _refused("the document is not JSON") from None
        if not isinstance(document, dict) or document.get("client_id") != url:
            raise _refused("the document's client_id must be its own URL")
        method = document.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise _refused("a client described by a document is public: token auth none")
        try:
            client = register_document(document, client_id=url)
        except AuthorizationError as exc:
            raise _refused(exc.description) from None
        return client, _age(cache_control)

    async def _public_address(self, host: str, port: int, trusted: bool) -> str:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [literal]
        else:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, port, type=socket.SOCK_STREAM
                )
            except OSError:
                raise _refused("the host name does not resolve") from None
            addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        if not addresses:
            raise _refused("the host name does not resolve")
        if not trusted and not all(address.is_global for address in addresses):
            raise _refused("the host resolves to an address that is not public")
        return str(addresses[0])


def _age(cache_control: str) -> float:
    if "no-store" in cache_control or "no-cache" in cache_control:
        return MIN_AGE
    found = _MAX_AGE.search(cache_control)
    if found is None:
        return DEFAULT_AGE
    return min(MAX_AGE, max(MIN_AGE, float(found.group(1))))
