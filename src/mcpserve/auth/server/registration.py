"""Dynamic client registration (RFC 7591): the checks of a client's metadata, and the client
it makes.

An MCP client registers itself before it logs a user in. What it sends is checked here,
whole, before anything is stored: a JSON object of at most :data:`MAX_BODY_BYTES`, with
1 to :data:`MAX_REDIRECT_URIS` redirect URIs that may be registered (``redirects.py``), the
authorization code grant (and refresh tokens), ``code`` responses, and a client that is
public (``none``: PKCE is its proof) or holds a secret (``client_secret_basic`` or
``client_secret_post``). A registration that asks for anything else is refused with RFC
7591's ``invalid_client_metadata`` or ``invalid_redirect_uri``, naming the field.

The client's own words (``client_name``, ``client_uri``, ``logo_uri``) are kept for the
consent page, which shows them as the client's claims, never as facts.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping

import orjson

from ...protocol.records import Record
from .errors import AuthorizationError
from .redirects import check_registered

MAX_BODY_BYTES = 64 * 1024
MAX_REDIRECT_URIS = 20
MAX_NAME_LENGTH = 200
GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
AUTH_METHODS = frozenset({"none", "client_secret_basic", "client_secret_post"})


class RegisteredClient(Record):
    """A client the server registered: what it said of itself, checked, and its id."""

    __slots__ = (
        "client_id",
        "client_name",
        "client_secret",
        "client_uri",
        "grant_types",
        "issued_at",
        "redirect_uris",
        "token_endpoint_auth_method",
    )

    def __init__(
        self,
        client_id: str,
        redirect_uris: list[str],
        *,
        token_endpoint_auth_method: str = "none",
        grant_types: list[str] | None = None,
        client_name: str | None = None,
        client_uri: str | None = None,
        client_secret: str | None = None,
        issued_at: int = 0,
    ) -> None:
        self.client_id = client_id
        self.redirect_uris = redirect_uris
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.grant_types = grant_types or ["authorization_code"]
        self.client_name = client_name
        self.client_uri = client_uri
        self.client_secret = client_secret
        self.issued_at = issued_at

    def to_json(self) -> dict[str, object]:
        """The registration response (RFC 7591 §3.2.1): the metadata as registered."""
        answer: dict[str, object] = {
            "client_id": self.client_id,
            "client_id_issued_at": self.issued_at,
            "redirect_uris": list(self.redirect_uris),
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "grant_types": list(self.grant_types),
            "response_types": ["code"],
        }
        if self.client_secret is not None:
            answer["client_secret"] = self.client_secret
            answer["client_secret_expires_at"] = 0
        if self.client_name is not None:
            answer["client_name"] = self.client_name
        if self.client_uri is not None:
            answer["client_uri"] = self.client_uri
        return answer


def _invalid(description: str) -> AuthorizationError:
    return AuthorizationError("invalid_client_metadata", description)


def _strings(metadata: Mapping[str, object], field: str, default: list[str]) -> list[str]:
    value = metadata.get(field, default)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _invalid(f"{field} must be a list of strings")
    return value


def _optional_text(metadata: Mapping[str, object], field: str) -> str | None:
    value = metadata.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME_LENGTH:
        raise _invalid(f"{field} must be a string of at most {MAX_NAME_LENGTH} characters")
    return value


def register(body: bytes, *, now: float | None = None) -> RegisteredClient:
    """The client ``body`` (a registration request's JSON) registers, with a new id (and a
    secret when it asks to authenticate with one), or the RFC's error saying why not."""
    if len(body) > MAX_BODY_BYTES:
        raise _invalid(f"the registration is larger than {MAX_BODY_BYTES} bytes")
    try:
        metadata = orjson.loads(body)
    except orjson.JSONDecodeError as exc:  # malformed, too deep, or a number past 64 bits
        raise _invalid(f"the registration is not JSON that can be read: {exc.msg}") from None
    if not isinstance(metadata, dict):
        raise _invalid("the registration must be a JSON object")
    return register_document(metadata, now=now)


def register_document(
    metadata: Mapping[str, object], *, client_id: str | None = None, now: float | None = None
) -> RegisteredClient:
    """The client ``metadata`` describes: registered (a new id, and a secret when it asks to
    authenticate with one), or named by its own ``client_id`` (a metadata document)."""
    uris = _strings(metadata, "redirect_uris", [])
    if not uris:
        raise AuthorizationError("invalid_redirect_uri", "redirect_uris must name at least one")
    if len(uris) > MAX_REDIRECT_URIS:
        raise AuthorizationError(
            "invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect_uris may be registered"
        )
    redirect_uris = [check_registered(uri) for uri in dict.fromkeys(uris)]
    grants = _strings(metadata, "grant_types", ["authorization_code"])
    if not set(grants) <= GRANT_TYPES or "authorization_code" not in grants:
        raise _invalid("grant_types must be authorization_code, with refresh_token if wanted")
    if not set(_strings(metadata, "response_types", ["code"])) <= {"code"}:
        raise _invalid('response_types must be ["code"]')
    method = metadata.get("token_endpoint_auth_method", "none")
    if method not in AUTH_METHODS:
        raise _invalid(f"token_endpoint_auth_method must be one of {sorted(AUTH_METHODS)}")
    assert isinstance(method, str)
    return RegisteredClient(
        client_id or secrets.token_urlsafe(24),
        redirect_uris,
        token_endpoint_auth_method=method,
        grant_types=list(dict.fromkeys(grants)),
        client_name=_optional_text(metadata, "client_name"),
        client_uri=_optional_text(metadata, "client_uri"),
        client_secret=None if method == "none" or client_id else secrets.token_urlsafe(32),
        issued_at=int(time.time() if now is None else now),
    )


def stored_client(data: Mapping[str, object]) -> RegisteredClient:
    """A client as :meth:`RegisteredClient.to_json` wrote it (the record's own store)."""

    def text(name: str) -> str | None:
        value = data.get(name)
        return value if isinstance(value, str) else None

    uris = data.get("redirect_uris")
    grants = data.get("grant_types")
    issued = data.get("client_id_issued_at")
    return RegisteredClient(
        str(data["client_id"]),
        [str(uri) for uri in uris] if isinstance(uris, list) else [],
        token_endpoint_auth_method=text("token_endpoint_auth_method") or "none",
        grant_types=[str(grant) for grant in grants] if isinstance(grants, list) else None,
        client_name=text("client_name"),
        client_uri=text("client_uri"),
        client_secret=text("client_secret"),
        issued_at=issued if isinstance(issued, int) else 0,
    )
