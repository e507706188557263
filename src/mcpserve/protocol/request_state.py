"""Sealed ``requestState``: what a multi round-trip request carries between its rounds.

``requestState`` travels through the client, so it is attacker-controlled input
(``docs/decisions.md``, "Sealed requestState"). mcpserve seals it with AES-256-GCM
(authenticated encryption): the client can neither read nor alter it. The sealed payload
binds the state to:

* the method and its target (tool or prompt name, resource URI),
* a SHA-256 digest of the original arguments,
* the authenticated principal,
* an expiry, and a round counter (capped).

Wire format: ``v1.<key id>.<base64url(12-byte nonce || ciphertext || tag)>``, with the
version and key id also bound as associated data. Keys rotate: every configured key can
open state, the first (newest) one seals. Anything that fails to open or to match its
binding raises :class:`StateRejected`, whose reason is for the server log only; the peer
just sees -32602.

This module stays importable without ``cryptography``; it is imported on first use.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import _environment as environment
from .._types import JSONDict
from .jsonrpc import encode, loads

logger = logging.getLogger("mcpserve.state")

VERSION = "v1"
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
MAX_STATE_CHARS = 256 * 1024


class StateRejected(Exception):
    """A ``requestState`` that must not be trusted; the message says why (log it only)."""


@dataclass(frozen=True, slots=True)
class Binding:
    """What a state is valid for: the request it was issued on and who issued it."""

    method: str
    target: str
    digest: str
    principal: str

    @classmethod
    def of(cls, method: str, target: str, arguments: Any, principal: str | None) -> Binding:
        digest = hashlib.sha256(encode(arguments, sort_keys=True)).hexdigest()
        return cls(method, target, digest, principal or "")


def parse_keys(spec: str) -> list[tuple[str, bytes]]:
    """Parse ``"kid:base64key,kid2:base64key"`` (first = newest) into (id, 32-byte key)."""
    keys = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        kid, sep, encoded = item.partition(":")
        if not sep or not kid.isalnum():
            raise ValueError(
                f"{environment.STATE_KEYS}: expected 'id:base64key' items, got {kid!r}"
            )
        padded = encoded + "=" * (-len(encoded) % 4)
        try:
            key = base64.b64decode(padded, validate=True)
        except binascii.Error:
            try:
                key = base64.urlsafe_b64decode(padded)
            except (binascii.Error, ValueError):
                raise ValueError(
                    f"{environment.STATE_KEYS}: key {kid!r} is not valid base64"
                ) from None
        if len(key) != 32:
            raise ValueError(
                f"{environment.STATE_KEYS}: key {kid!r} must be 32 bytes (base64), not {len(key)}"
            )
        keys.append((kid, key))
    if not keys:
        raise ValueError(f"{environment.STATE_KEYS} holds no keys")
    return keys


def generate_key() -> str:
    """A fresh key in the ``id:base64key`` form, e.g. for ``MCPSERVE_STATE_KEYS``."""
    return f"{secrets.token_hex(4)}:{base64.b64encode(os.urandom(32)).decode()}"


class StateSealer:
    """Seals and opens request states with a ring of AES-GCM keys."""

    def __init__(
        self,
        keys: Sequence[tuple[str, bytes]] | None = None,
        *,
        ttl_seconds: float = 300.0,
        max_rounds: int = 10,
    ) -> None:
        configured = environment.read(environment.STATE_KEYS)
        if keys is None and configured is not None:
            keys = parse_keys(configured)
        self.configured = keys is not None
        if keys is None:
            # One process can seal and open its own state; several processes cannot share it.
            keys = [(secrets.token_hex(4), os.urandom(32))]
        for kid, key in keys:
            if not kid.isalnum() or len(key) != 32:
                raise ValueError(f"State key {kid!r}: ids are alphanumeric, keys 32 bytes")
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        #: The key ring, newest first: other keys derive from it (``auth/server/``).
        self.ring: list[tuple[str, bytes]] = list(keys)
        self._sealing_id = keys[0][0]
        self._ciphers = {kid: AESGCM(key) for kid, key in keys}
        self.ttl_seconds = ttl_seconds
        self.max_rounds = max_rounds

    def seal(self, binding: Binding, payload: JSONDict, *, round_number: int) -> str:
        body = {
            "m": binding.method,
            "t": binding.target,
            "d": binding.digest,
            "p": binding.principal,
            "e": int((time.time() + self.ttl_seconds) * 1000),
            "r": round_number,
            "x": payload,
        }
        nonce = os.urandom(12)
        header = f"{VERSION}.{self._sealing_id}"
        sealed = self._ciphers[self._sealing_id].encrypt(nonce, encode(body), header.encode())
        token = base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")
        return f"{header}.{token}"

    def open(self, state: object, binding: Binding) -> tuple[JSONDict, int]:
        """The payload and round number sealed in ``state``; raises :class:`StateRejected`."""
        if type(state) is not str or not state or len(state) > MAX_STATE_CHARS:
            raise StateRejected("not a string of acceptable size")
        version, _, rest = state.partition(".")
        kid, _, token = rest.partition(".")
        if version != VERSION:
            raise StateRejected(f"unknown format version {version[:8]!r}")
        cipher = self._ciphers.get(kid)
        if cipher is None:
            raise StateRejected(f"unknown key id {kid[:16]!r}")
        # Only the exact text we issued opens: canonical unpadded base64url, nothing else.
        if not _BASE64URL.fullmatch(token):
            raise StateRejected("not base64url")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            raise StateRejected("not base64url") from None
        if base64.urlsafe_b64encode(raw).decode().rstrip("=") != token:
            raise StateRejected("not canonical base64url")
        if len(raw) < 12 + 16:
            raise StateRejected("truncated")
        from cryptography.exceptions import InvalidTag

        try:
            plain = cipher.decrypt(raw[:12], raw[12:], f"{version}.{kid}".encode())
        except InvalidTag:
            raise StateRejected("authentication failed (tampered or wrong key)") from None
        body = loads(plain)
        if body["e"] < time.time() * 1000:
            raise StateRejected("expired")
        if body["p"] != binding.principal:
            raise StateRejected("issued to another principal")
        if (body["m"], body["t"], body["d"]) != (binding.method, binding.target, binding.digest):
            raise StateRejected("issued for another request")
        return body["x"], body["r"]
