"""Finding the authorization server of an MCP server: RFC 9728, then RFC 8414 or OIDC.

**Protected resource metadata.** The 401's ``resource_metadata`` URL is read when the
challenge names one; otherwise, and when that URL yields nothing, the well-known URIs built
from the endpoint are tried in the spec's order: the path-suffixed one
(``/.well-known/oauth-protected-resource/mcp``), then the root one. A document counts when
it is a JSON object with a ``resource`` and at least one authorization server. Its
``resource`` must name the server the client is talking to (:func:`resource_covers`: the
same origin, and the endpoint's path at or below the resource's); a document for another
resource is refused at once, not skipped: whoever answered it would otherwise choose where
the client sends its credentials and for which audience it asks for tokens.

**Authorization server metadata.** For an issuer, the RFC 8414 URI with the path inserted
is tried first, then OpenID Connect discovery inserted, then appended (for an issuer
without a path the two OIDC forms are one). A document is used only when its ``issuer`` is
the issuer identifier exactly: a document naming another issuer is not used (RFC 8414
section 3.3), and the next address is tried. Every endpoint it names, and the issuer
itself, must be ``https`` (plain ``http`` only on a loopback host, for development).

Every failure says, for each address tried, what it answered: a status, "not JSON",
"names another issuer", so a broken deployment is diagnosed from the message alone.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from ..._types import JSONDict
from ...auth.discovery import FetchFailed, metadata_urls, request_json
from ...auth.resource_uri import canonical_resource
from .errors import OAuthError

_PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource"
_JSON = {"Accept": "application/json"}


@dataclass(frozen=True)
class ResourceMetadata:
    """An MCP server's protected resource metadata (RFC 9728)."""

    #: The resource identifier exactly as published: the ``resource`` of token requests.
    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    #: Where the document was read.
    url: str
    document: JSONDict = field(repr=False, compare=False)


@dataclass(frozen=True)
class IssuerMetadata:
    """An authorization server's metadata (RFC 8414, or OpenID Connect discovery)."""

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None
    registration_endpoint: str | None
    scopes_supported: tuple[str, ...] | None
    code_challenge_methods_supported: tuple[str, ...] | None
    #: RFC 8414's default when the document lists none: ``client_secret_basic``.
    token_endpoint_auth_methods_supported: tuple[str, ...]
    grant_types_supported: tuple[str, ...] | None
    #: RFC 9207: the authorization response carries ``iss``.
    authorization_response_iss_parameter_supported: bool
    client_id_metadata_document_supported: bool
    #: RFC 9449: the algorithms of DPoP proofs it checks; ``None``: not said.
    dpop_signing_alg_values_supported: tuple[str, ...] | None
    #: Where the document was read.
    url: str
    document: JSONDict = field(repr=False, compare=False)


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_secure(url: str, what: str) -> None:
    """Refuse an authorization server URL that is not ``https`` (``http`` on loopback is
    allowed, for development)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and is_loopback(parts.hostname):
        return
    raise OAuthError(f"{what} {url!r} is not an https URL (plain http only on a loopback host)")


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether the resource identifier ``resource`` names the endpoint ``server_url``: the
    same origin (compared canonically), and the endpoint's path is the resource's or below
    it. A metadata document at the root may name the whole origin."""
    published = urlsplit(canonical_resource(resource))
    endpoint = urlsplit(canonical_resource(server_url))
    if not published.scheme or not published.netloc or published.fragment:
        return False
    if (published.scheme, published.netloc) != (endpoint.scheme, endpoint.netloc):
        return False
    base = published.path.rstrip("/")
    return endpoint.path == base or endpoint.path.startswith(base + "/")


def resource_metadata_urls(server_url: str) -> list[str]:
    """The well-known addresses of an endpoint's metadata, in the order they are tried."""
    parts = urlsplit(server_url)
    path = parts.path.rstrip("/")

    def at(well_known: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, well_known, "", ""))

    return (
        [at(_PROTECTED_RESOURCE + path), at(_PROTECTED_RESOURCE)]
        if path
        else [at(_PROTECTED_RESOURCE)]
    )


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


async def fetch_resource_metadata(
    http: httpx2.AsyncClient, server_url: str, challenge_url: str | None, http_timeout: float
) -> ResourceMetadata:
    """The protected resource metadata of the endpoint ``server_url`` (the caller bounds
    the total time); :class:`OAuthError` saying what each address answered otherwise."""
    candidates = resource_metadata_urls(server_url)
    if challenge_url is not None:
        candidates = [challenge_url, *(url for url in candidates if url != challenge_url)]
    failures: list[str] = []
    for url in candidates:
        try:
            document = await request_json(http, "GET", url, headers=_JSON, timeout=http_timeout)
        except FetchFailed as failure:
            failures.append(str(failure))
            continue
        resource = document.get("resource") if isinstance(document, dict) else None
        servers = _strings(document.get("authorization_servers")) if resource else None
        if not isinstance(resource, str) or not servers:
            failures.append(
                f"{url} is not protected resource metadata (it needs a resource "
                "and authorization_servers)"
            )
            continue
        if not resource_covers(resource, server_url):
            raise OAuthError(
                f"The protected resource metadata at {url} is for {resource!r}, not for "
                f"{server_url}: refusing to authorize with it"
            )
        return ResourceMetadata(
            resource=resource,
            authorization_servers=servers,
            scopes_supported=_strings(document.get("scopes_supported")),
            url=url,
            document=document,
        )
    raise OAuthError(f"No protected resource metadata for {server_url}: " + "; ".join(failures))


async def fetch_issuer_metadata(
    http: httpx2.AsyncClient, issuer: str, http_timeout: float
) -> IssuerMetadata:
    """The metadata of the authorization server ``issuer``, checked (the caller bounds the
    total time); :class:`OAuthError` saying what each address answered otherwise."""
    check_secure(issuer, "The authorization server")
    parts = urlsplit(issuer)
    if parts.query or parts.fragment:
        raise OAuthError(f"The issuer {issuer!r} has a query or fragment, which RFC 8414 forbids")
    failures: list[str] = []
    for url in metadata_urls(issuer):
        try:
            document = await request_json(http, "GET", url, headers=_JSON, timeout=http_timeout)
        except FetchFailed as failure:
            failures.append(str(failure))
            continue
        if not isinstance(document, dict):
            failures.append(f"{url} is not a JSON object")
            continue
        if document.get("issuer") != issuer:
            failures.append(f"{url} names the issuer {document.get('issuer')!r}, not {issuer!r}")
            continue
        return _issuer_metadata(document, url)
    raise OAuthError(
        f"No usable metadata for the authorization server {issuer}: " + "; ".join(failures)
    )


def _issuer_metadata(document: JSONDict, url: str) -> IssuerMetadata:
    def endpoint(name: str, *, required: bool = False) -> str | None:
        value = document.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value:
            raise OAuthError(f"The authorization server metadata at {url} has no valid {name}")
        check_secure(value, f"The authorization server's {name}")
        return value

    token_endpoint = endpoint("token_endpoint", required=True)
    assert token_endpoint is not None
    methods = _strings(document.get("token_endpoint_auth_methods_supported"))
    return IssuerMetadata(
        issuer=document["issuer"],
        token_endpoint=token_endpoint,
        authorization_endpoint=endpoint("authorization_endpoint"),
        registration_endpoint=endpoint("registration_endpoint"),
        scopes_supported=_strings(document.get("scopes_supported")),
        code_challenge_methods_supported=_strings(document.get("code_challenge_methods_supported")),
        token_endpoint_auth_methods_supported=methods or ("client_secret_basic",),
        grant_types_supported=_strings(document.get("grant_types_supported")),
        authorization_response_iss_parameter_supported=(
            document.get("authorization_response_iss_parameter_supported") is True
        ),
        client_id_metadata_document_supported=(
            document.get("client_id_metadata_document_supported") is True
        ),
        dpop_signing_alg_values_supported=_strings(
            document.get("dpop_signing_alg_values_supported")
        ),
        url=url,
        document=document,
    )
