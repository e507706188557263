"""What the authorization server remembers, and for how long: its records on the shared store.

Every step of a login may reach a different instance behind the load balancer, so nothing
lives in one process: each record is on the :class:`~mcpserve.backends.keyvalue.KeyValueStore`
(the shared Redis, SQLite, or memory for one process), with a life of its own:

=========================  ===============================  ==========================
record                     key                              life
=========================  ===============================  ==========================
registered client          ``client:<client_id>``           ``client_ttl`` (1 year)
pending authorization      ``pending:<id>``                 10 minutes
authorization code         ``code:<sha256>``                ``code_ttl`` (2 minutes)
a code already used        ``code-used:<sha256>``           ``refresh_ttl``
refresh token              ``refresh:<sha256>``             ``refresh_ttl`` (30 days)
a refresh token rotated    ``refresh-used:<sha256>``        ``refresh_ttl``
revoked login              ``revoked:<login>``              ``refresh_ttl``
consent of a browser       ``consent:<browser>:<client>``   ``consent_ttl`` (30 days)
upstream tokens            ``upstream:<login>``             ``refresh_ttl``
upstream refresh lock      ``upstream-lock:<login>``        30 seconds
registrations per address  ``registrations:<address>``      1 minute
=========================  ===============================  ==========================

Codes and refresh tokens are kept under their SHA-256, never as themselves: whoever reads
the store cannot use what it finds. A code and a refresh token are *taken* (read and deleted
in one step), so each is used once even when two instances are asked at the same moment;
what was taken leaves a marker behind, so that a second use is told apart from a token that
never existed and revokes the whole login (RFC 6749 4.1.2, OAuth 2.1 4.3.1: reuse of a
rotated refresh token means it was stolen).

A *login* is what one user's authorization of one client started: its codes, its refresh
tokens (a family, each rotation a new member) and the upstream tokens it obtained share its
id, which the access tokens carry as ``sid``.

Upstream tokens are sealed with AES-GCM under a key derived from the state key ring
(:class:`TokenCipher`), the login's id bound into each seal, so a record moved to another
login does not open.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from collections.abc import Sequence
from typing import Any, cast

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..._types import JSONDict
from ...backends.keyvalue import KeyValueStore
from .registration import RegisteredClient, stored_client

PENDING_TTL = 600.0
LOCK_TTL = 30.0
RATE_WINDOW = 60.0
_LABEL = b"mcpserve upstream token sealing key (AES-256-GCM), v1"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_secret() -> str:
    """A code, refresh token or id: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


class TokenCipher:
    """Seals upstream tokens with AES-GCM keys derived from a key ring, newest first."""

    def __init__(self, ring: Sequence[tuple[str, bytes]]) -> None:
        if not ring:
            raise ValueError("the key ring holds no keys")
        self._sealing = ring[0][0]
        self._keys = {
            kid: AESGCM(HKDF(hashes.SHA256(), 32, None, _LABEL).derive(secret))
            for kid, secret in ring
        }

    def seal(self, plain: bytes, bound_to: str) -> bytes:
        nonce = os.urandom(12)
        sealed = self._keys[self._sealing].encrypt(nonce, plain, bound_to.encode())
        return self._sealing.encode() + b"." + base64.urlsafe_b64encode(nonce + sealed)

    def open(self, sealed: bytes, bound_to: str) -> bytes | None:
        """The plain bytes, or None for a seal of an unknown key or one that was altered."""
        kid, _, body = sealed.partition(b".")
        key = self._keys.get(kid.decode("latin-1"))
        if key is None:
            return None
        try:
            raw = base64.urlsafe_b64decode(body)
            return key.decrypt(raw[:12], raw[12:], bound_to.encode())
        except (InvalidTag, ValueError):
            return None


def _loads(value: bytes | None) -> JSONDict | None:
    if value is None:
        return None
    document = orjson.loads(value)
    return cast(JSONDict, document) if isinstance(document, dict) else None


class Records:
    """The authorization server's records on ``store`` (see the module's table)."""

    def __init__(
        self,
        store: KeyValueStore,
        cipher: TokenCipher,
        *,
        code_ttl: float,
        refresh_ttl: float,
        client_ttl: float,
        consent_ttl: float,
    ) -> None:
        self.store = store
        self.cipher = cipher
        self.code_ttl = code_ttl
        self.refresh_ttl = refresh_ttl
        self.client_ttl = client_ttl
        self.consent_ttl = consent_ttl

    # -- clients -----------------------------------------------------------------------------

    async def save_client(self, client: RegisteredClient) -> None:
        document = client.to_json()
        if client.client_secret is not None:
            document["client_secret"] = client.client_secret
        await self.store.put(f"client:{client.client_id}", orjson.dumps(document), self.client_ttl)

    async def client(self, client_id: str) -> RegisteredClient | None:
        document = _loads(await self.store.get(f"client:{client_id}"))
        return None if document is None else stored_client(document)

    async def registrations_from(self, address: str) -> int:
        """Count one more registration from ``address`` in this minute; the count."""
        return await self.store.incr(f"registrations:{address}", RATE_WINDOW)

    async def sign_ins_from(self, address: str) -> int:
        """Count one more pending sign-in from ``address`` in this minute; the count."""
        return await self.store.incr(f"sign-ins:{address}", RATE_WINDOW)

    # -- pending authorizations -------------------------------------------------------------

    async def save_pending(self, pending: JSONDict) -> str:
        key = new_secret()
        await self.store.put(f"pending:{key}", orjson.dumps(pending), PENDING_TTL)
        return key

    async def pending(self, key: str) -> JSONDict | None:
        return _loads(await self.store.get(f"pending:{key}"))

    async def update_pending(self, key: str, pending: JSONDict) -> None:
        await self.store.put(f"pending:{key}", orjson.dumps(pending), PENDING_TTL)

    async def take_pending(self, key: str) -> JSONDict | None:
        return _loads(await self.store.take(f"pending:{key}"))

    # -- codes ------------------------------------------------------------------------------

    async def issue_code(self, grant: JSONDict) -> str:
        code = new_secret()
        await self.store.put(f"code:{digest(code)}", orjson.dumps(grant), self.code_ttl)
        return code

    async def redeem_code(self, code: str) -> tuple[JSONDict | None, str | None]:
        """The grant of ``code``, once: ``(grant, None)``; on a second use ``(None, login)``
        (the login it started, to revoke); ``(None, None)`` for a code never issued."""
        hashed = digest(code)
        grant = _loads(await self.store.take(f"code:{hashed}"))
        if grant is None:
            used = await self.store.get(f"code-used:{hashed}")
            return None, None if used is None else used.decode()
        login = str(grant["login"])
        await self.store.put(f"code-used:{hashed}", login.encode(), self.refresh_ttl)
        return grant, None

    # -- refresh tokens and logins ----------------------------------------------------------

    async def issue_refresh(self, grant: JSONDict) -> str:
        token = new_secret()
        await self.store.put(f"refresh:{digest(token)}", orjson.dumps(grant), self.refresh_ttl)
        return token

    async def rotate_refresh(self, token: str) -> tuple[JSONDict | None, str | None]:
        """The grant of ``token``, which can never be used again: ``(grant, None)``; a token
        used before gives ``(None, login)``, one never issued ``(None, None)``."""
        hashed = digest(token)
        grant = _loads(await self.store.take(f"refresh:{hashed}"))
        if grant is None:
            used = await self.store.get(f"refresh-used:{hashed}")
            return None, None if used is None else used.decode()
        login = str(grant["login"])
        await self.store.put(f"refresh-used:{hashed}", login.encode(), self.refresh_ttl)
        return grant, None

    async def revoke_login(self, login: str) -> None:
        """No refresh token of ``login`` works again, and its upstream tokens are dropped."""
        await self.store.put(f"revoked:{login}", b"1", self.refresh_ttl)
        await self.store.delete(f"upstream:{login}")

    async def revoke_refresh(self, token: str) -> str | None:
        """Revoke the login of refresh token ``token`` (used or not); its login, if known."""
        hashed = digest(token)
        grant = _loads(await self.store.get(f"refresh:{hashed}"))
        if grant is not None:
            login: str | None = str(grant["login"])
        else:
            used = await self.store.get(f"refresh-used:{hashed}")
            login = None if used is None else used.decode()
        if login is not None:
            await self.revoke_login(login)
            await self.store.delete(f"refresh:{hashed}")
        return login

    async def revoked(self, login: str) -> bool:
        return await self.store.get(f"revoked:{login}") is not None

    async def refresh_owner(self, token: str) -> str | None:
        """The client a live refresh token was issued to (for revocation's check)."""
        grant = _loads(await self.store.get(f"refresh:{digest(token)}"))
        return None if grant is None else str(grant["client_id"])

    # -- consents ---------------------------------------------------------------------------

    async def consent(self, browser: str, client_id: str) -> JSONDict | None:
        return _loads(await self.store.get(f"consent:{browser}:{client_id}"))

    async def remember_consent(
        self, browser: str, client_id: str, redirect_uri: str, scopes: list[str]
    ) -> None:
        document = {"redirect_uri": redirect_uri, "scopes": sorted(scopes)}
        await self.store.put(
            f"consent:{browser}:{client_id}", orjson.dumps(document), self.consent_ttl
        )

    # -- upstream tokens --------------------------------------------------------------------

    async def save_upstream(self, login: str, tokens: JSONDict) -> None:
        sealed = self.cipher.seal(orjson.dumps(tokens), login)
        await self.store.put(f"upstream:{login}", sealed, self.refresh_ttl)

    async def upstream(self, login: str) -> JSONDict | None:
        sealed = await self.store.get(f"upstream:{login}")
        if sealed is None:
            return None
        return _loads(self.cipher.open(sealed, login))

    async def lock_upstream(self, login: str) -> bool:
        return await self.store.add(f"upstream-lock:{login}", b"1", LOCK_TTL)

    async def unlock_upstream(self, login: str) -> None:
        await self.store.delete(f"upstream-lock:{login}")


def json_list(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []
