"""The MCP server as an OAuth 2.1 resource server: who may call, and what it tells those
who may not.

A :class:`ResourceServer` holds a token verifier and the facts clients discover:

* the **protected resource metadata** (RFC 9728): this server's canonical URI
  (``resource``), the authorization servers that issue its tokens, and the scopes a client
  should ask for first. It is served without a token at
  ``/.well-known/oauth-protected-resource`` followed by the endpoint's path, and at the
  bare ``/.well-known/oauth-protected-resource``;
* the **challenge** of every refusal, a ``WWW-Authenticate: Bearer`` header naming that
  document (``resource_metadata``), the scopes needed (``scope``) and what went wrong.

The scopes a client should ask for first (``scopes_supported``, and the ``scope`` of a 401)
are the ones given, or by default ``required_scopes`` and every scope the server's tools,
resources, templates and prompts declare, so that one authorization covers everything the
server offers (``docs/decisions.md``, "The scopes a client is told to ask for"). The server
hands that set down as a function (:meth:`ResourceServer.with_declared_scopes`); it returns
the same object until the registry changes, so the document and the challenge are rebuilt
only then, not per request. ``offline_access`` is never published.

:meth:`ResourceServer.authenticate` reads one request's ``Authorization`` header and
returns the caller's :class:`~mcpserve.Auth`, or a :class:`Refusal`: the HTTP status,
challenge and JSON-RPC error to answer with instead:

====================================================  ======  ========================
the request                                           status  ``error``
====================================================  ======  ========================
no ``Authorization`` header, another scheme           401     ``invalid_token``
a Bearer value that is not one token68 (RFC 6750)     400     ``invalid_request``
a token the verifier refuses (expired, foreign, ...)  401     ``invalid_token``
the verifier cannot decide (keys unreachable)         503     (none: retry later)
a token without the scopes every request needs        403     ``insufficient_scope``
====================================================  ======  ========================

Scopes a single tool, resource or prompt needs are checked later, in the request pipeline,
and refused with the same 403 challenge (:meth:`ResourceServer.insufficient_scope`).
A broader scope can imply narrower ones (``scope_hierarchy``): a token granted ``notes``
is treated as granted everything ``notes`` implies.

Nothing in a refusal repeats the token, a key or a claim: the ``error_description`` is the
verifier's fixed sentence.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from .._types import JSONDict
from ..protocol.core import Auth
from ..protocol.errors import (
    InsufficientScope,
    InternalError,
    InvalidRequest,
    MCPError,
    new_ref,
)
from .resource_uri import canonical_resource
from .tokens import AccessToken, InvalidToken, TokenVerifier, VerifierUnavailable

logger = logging.getLogger("mcpserve.auth")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
#: A refresh token is the client's business, never a resource's requirement.
_NEVER_ADVERTISED = frozenset({"offline_access"})
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_MAX_TOKEN_CHARS = 16 * 1024
_NOTHING_DECLARED: frozenset[str] = frozenset()

#: The scopes a server's entries declare at the moment of the call (the same object while
#: they are unchanged).
DeclaredScopes = Callable[[], frozenset[str]]


class Refusal(Exception):
    """An HTTP answer instead of the request: ``status``, ``headers`` (the challenge) and
    ``error``, the JSON-RPC error of the body, which says the same in words."""

    def __init__(self, status: int, error: MCPError, headers: list[tuple[bytes, bytes]]) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error
        self.headers = headers


def _quoted(value: str) -> str:
    # Our own sentences and URLs: no quote or backslash to escape, but never trust that.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ResourceServer:
    """Bearer-token protection for a server's HTTP endpoint.

    ::

        auth = ResourceServer(
            JWTVerifier(issuer="https://auth.example.com", audience="https://mcp.example.com/mcp"),
            scopes_supported=["notes:read"],
        )
        server = Server("notes", auth=auth)

    ``resource`` is the URL clients reach the endpoint at (default: the verifier's
    ``audience``); ``authorization_servers`` default to the verifier's ``issuer``.
    ``required_scopes`` are needed for every request; ``scopes_supported`` are what a
    client should ask for first (default: ``required_scopes`` and every scope the server's
    tools, resources, templates and prompts declare). ``scope_hierarchy`` maps a scope to
    the narrower scopes it implies.
    """

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        resource: str | None = None,
        authorization_servers: Sequence[str] | None = None,
        required_scopes: Iterable[str] = (),
        scopes_supported: Iterable[str] | None = None,
        scope_hierarchy: Mapping[str, Iterable[str]] | None = None,
        resource_name: str | None = None,
        resource_documentation: str | None = None,
    ) -> None:
        self.verifier = verifier
        resource = resource or _single(getattr(verifier, "audience", None))
        if not resource:
            raise ValueError(
                "ResourceServer needs resource=: the URL clients reach this server's MCP "
                "endpoint at (tokens must be issued for it), e.g. https://mcp.example.com/mcp"
            )
        self.resource = canonical_resource(resource)
        servers = authorization_servers
        if servers is None:
            issuer = getattr(verifier, "issuer", None)
            servers = [issuer] if isinstance(issuer, str) and issuer else []
        if not servers:
            raise ValueError("ResourceServer needs at least one of authorization_servers=")
        self.authorization_servers = list(servers)
        self.required_scopes = frozenset(required_scopes)
        #: ``scopes_supported`` as given; ``None``: the default, which follows the server.
        self.scopes_given = None if scopes_supported is None else frozenset(scopes_supported)
        self._implied = _closure(scope_hierarchy or {})
        self._expanded: dict[frozenset[str], frozenset[str]] = {}
        parts = urlsplit(self.resource)
        path = parts.path.rstrip("/")
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"
        #: Where the metadata is served: after the endpoint's path, and bare.
        self.metadata_paths = frozenset({WELL_KNOWN + path, WELL_KNOWN})
        self._document: JSONDict = {
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        }
        if resource_name:
            self._document["resource_name"] = resource_name
        if resource_documentation:
            self._document["resource_documentation"] = resource_documentation
        self._declared: DeclaredScopes | None = None
        self._publish(_NOTHING_DECLARED)

    def with_declared_scopes(self, declared: DeclaredScopes) -> ResourceServer:
        """This resource server for an endpoint whose entries declare the scopes
        ``declared()`` returns, published by default (see the module's text).

        Called on each metadata request and 401, so it must be cheap, and it should return
        the same object while the scopes are unchanged. Given ``scopes_supported=``, there is
        nothing to follow: ``self`` is returned. Otherwise a copy, so that one
        ``ResourceServer`` may protect several servers, each publishing its own scopes.
        """
        if self.scopes_given is not None:
            return self
        bound = copy.copy(self)
        bound._declared = declared
        bound._publish(declared())
        return bound

    def _publish(self, declared: frozenset[str]) -> None:
        """Build what tells clients which scopes to ask for, from ``declared``."""
        self._published_for = declared
        given = self.scopes_given
        supported = self.required_scopes | declared if given is None else given
        self._scopes_supported = sorted(supported - _NEVER_ADVERTISED)
        document = dict(self._document)
        if self._scopes_supported:
            document["scopes_supported"] = self._scopes_supported
        self._metadata = document
        self._metadata_body = orjson.dumps(document)
        if given is None:  # the default: everything the server declares, required included
            challenged = frozenset(self._scopes_supported)
        else:  # the operator's choice: least privilege first, the rest by step-up
            challenged = self.required_scopes or frozenset(self._scopes_supported)
        self._unauthorized_scope = " ".join(sorted(challenged - _NEVER_ADVERTISED))

    def _current(self) -> None:
        declared = self._declared
        if declared is not None:
            scopes = declared()
            # The same object: nothing changed (the common case, one comparison).
            if scopes is not self._published_for:
                if scopes == self._published_for:
                    self._published_for = scopes  # an equal set: next time, by identity
                else:
                    self._publish(scopes)

    @property
    def scopes_supported(self) -> list[str]:
        """The scopes a client should ask for first, as the metadata publishes them now."""
        self._current()
        return self._scopes_supported

    @property
    def metadata(self) -> JSONDict:
        """The protected resource metadata document, as it is served now."""
        self._current()
        return self._metadata

    @property
    def metadata_body(self) -> bytes:
        """:attr:`metadata` serialized, as the well-known paths answer it."""
        self._current()
        return self._metadata_body

    async def aclose(self) -> None:
        """Close what the verifier holds open (its HTTP client), when it has an ``aclose``."""
        close = getattr(self.verifier, "aclose", None)
        if close is not None:
            await close()

    # -- one request ------------------------------------------------------------------------

    async def authenticate(self, authorization: str | None) -> Auth | Refusal:
        """The caller of a request with this ``Authorization`` header, or the refusal to
        answer with (returned, not raised: refusals are common and cheap to hand back)."""
        try:
            return await self._authenticate(authorization)
        except Refusal as refusal:
            return refusal

    async def _authenticate(self, authorization: str | None) -> Auth:
        token = self._bearer_token(authorization)
        try:
            verified = await self.verifier.verify(token)
        except InvalidToken as exc:
            raise self._unauthorized(exc.description) from None
        except VerifierUnavailable as exc:
            headers = [(b"retry-after", str(exc.retry_after).encode())]
            unavailable = InternalError(f"Service unavailable: {exc.description}")
            raise Refusal(503, unavailable, headers) from None
        except Exception:  # a verifier's bug: logged with a reference, never the token
            ref = new_ref()
            logger.exception("The token verifier failed (ref %s)", ref)
            raise self._unauthorized(
                f"The access token could not be verified (ref {ref})"
            ) from None
        scopes = self.granted(verified.scopes)
        missing = self.required_scopes - scopes
        if missing:
            error = InsufficientScope(self.required_scopes, missing)
            raise Refusal(403, error, [self.insufficient_scope(self.required_scopes)])
        return _auth_of(verified, scopes)

    def _bearer_token(self, authorization: str | None) -> str:
        if not authorization:
            raise self._unauthorized("No access token was sent")
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            raise self._unauthorized("The Authorization header must use the Bearer scheme")
        value = value.strip()
        if len(value) > _MAX_TOKEN_CHARS:
            raise self._unauthorized("The access token is too long")
        if not _TOKEN68.fullmatch(value):
            error = InvalidRequest(
                "Bad request: the Authorization header must be Bearer and one token"
            )
            challenge = self._challenge("invalid_request", "The Authorization header is malformed")
            raise Refusal(400, error, [challenge])
        return value

    def granted(self, scopes: frozenset[str]) -> frozenset[str]:
        """``scopes`` with everything they imply under the scope hierarchy."""
        if not self._implied:
            return scopes
        expanded = self._expanded.get(scopes)
        if expanded is None:
            expanded = scopes.union(*(self._implied.get(scope, ()) for scope in scopes))
            if len(self._expanded) < 1024:  # the same few scope sets come back every time
                self._expanded[scopes] = expanded
        return expanded

    # -- challenges ------------------------------------------------------------------------

    def _unauthorized(self, description: str) -> Refusal:
        error = InvalidRequest(f"Unauthorized: {description}")
        return Refusal(401, error, [self._challenge("invalid_token", description)])

    def _challenge(
        self, error: str, description: str, scope: str | None = None
    ) -> tuple[bytes, bytes]:
        if scope is None:
            self._current()
            scope = self._unauthorized_scope
        parts = [
            f"error={_quoted(error)}",
            f"error_description={_quoted(description)}",
            f"resource_metadata={_quoted(self.metadata_url)}",
        ]
        if scope:
            parts.append(f"scope={_quoted(scope)}")
        return b"www-authenticate", ("Bearer " + ", ".join(parts)).encode()

    def insufficient_scope(self, needed: Iterable[str]) -> tuple[bytes, bytes]:
        """The 403 challenge for an operation that needs ``needed`` (every scope of it)."""
        scope = " ".join(sorted(set(needed) | self.required_scopes))
        return self._challenge("insufficient_scope", f"This request needs the scope {scope}", scope)


def as_resource_server(auth: ResourceServer | TokenVerifier) -> ResourceServer:
    """``auth=`` as given: a :class:`ResourceServer`, or a verifier to make one around (its
    audience is the resource, its issuer the authorization server)."""
    if isinstance(auth, ResourceServer):
        return auth
    if not callable(getattr(auth, "verify", None)):
        raise TypeError(f"auth= takes a ResourceServer or a token verifier, not {auth!r}")
    return ResourceServer(auth)


def insufficient_scope_challenge(needed: Iterable[str]) -> tuple[bytes, bytes]:
    """The 403 challenge when the server authenticates with its own hook (no metadata)."""
    scope = " ".join(sorted(set(needed)))
    return b"www-authenticate", (
        f'Bearer error="insufficient_scope", scope={_quoted(scope)}'
    ).encode()


def _auth_of(verified: AccessToken, scopes: frozenset[str]) -> Auth:
    return Auth(verified.principal, scopes, verified.claims)


def _single(audience: Any) -> str | None:
    if isinstance(audience, str):
        return audience
    if isinstance(audience, Sequence) and len(audience) == 1 and isinstance(audience[0], str):
        return audience[0]
    return None


def _closure(hierarchy: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """Each scope mapped to every scope it implies, directly or through others."""
    direct = {scope: frozenset(implied) for scope, implied in hierarchy.items()}
    closed: dict[str, frozenset[str]] = {}
    for scope in direct:
        seen: set[str] = set()
        pending = list(direct[scope])
        while pending:
            implied = pending.pop()
            if implied not in seen:
                seen.add(implied)
                pending.extend(direct.get(implied, ()))
        closed[scope] = frozenset(seen)
    return closed
