"""An MCP client's side of an ``OIDCProxy`` login, by hand, one HTTP request at a time: for the
tests that need to send what no well-behaved client would (``tests/auth/server/``).

:class:`HandClient` registers, builds authorization requests, lets a :class:`LoginUser`
(``login_stack.py``) follow them, and trades codes and refresh tokens at ``/token``. Each
step returns the raw ``httpx2.Response`` or the parameters sent back, so a test asserts the
status, the error code and the headers itself.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx2

from login_stack import REDIRECT, LoginStack, LoginUser
from wire_helpers import call, encode, mcp_headers


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass
class Login:
    """What one completed authorization gave: the code, and what proves it is ours."""

    code: str
    verifier: str
    redirect_uri: str
    state: str


@dataclass
class HandClient:
    stack: LoginStack
    http: httpx2.AsyncClient
    client_id: str = ""
    client_secret: str | None = None
    redirect_uris: list[str] = field(default_factory=lambda: [REDIRECT])

    async def register(self, **metadata: Any) -> httpx2.Response:
        body = {"redirect_uris": self.redirect_uris, "client_name": "Hand client", **metadata}
        response = await self.http.post(f"{self.stack.base_url}/register", json=body)
        if response.status_code == 201:
            self.client_id = response.json()["client_id"]
            self.client_secret = response.json().get("client_secret")
        return response

    def authorization_url(self, **overrides: str | None) -> tuple[str, str, str]:
        """``(url, verifier, state)`` of an authorization request; an override of None
        leaves that parameter out."""
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(12)
        params: dict[str, str | None] = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uris[0],
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "scope": "notes:read notes:write",
            "resource": self.stack.url,
            **overrides,
        }
        query = {name: value for name, value in params.items() if value is not None}
        return f"{self.stack.base_url}/authorize?{urlencode(query)}", verifier, state

    async def login(self, user: LoginUser, **overrides: str | None) -> Login:
        """A whole authorization, ``user`` at the browser; asserts it gave a code."""
        url, verifier, state = self.authorization_url(**overrides)
        redirect_uri = overrides.get("redirect_uri") or self.redirect_uris[0]
        answer = await user.follow(url, redirect_uri)
        assert "code" in answer, answer
        assert answer["state"] == state
        return Login(answer["code"], verifier, redirect_uri, state)

    def _credentials(self) -> tuple[dict[str, str], Any]:
        if self.client_secret is None:
            return {"client_id": self.client_id}, httpx2.USE_CLIENT_DEFAULT
        return {}, httpx2.BasicAuth(self.client_id, self.client_secret)

    async def token(self, **form: str) -> httpx2.Response:
        credentials, auth = self._credentials()
        return await self.http.post(
            f"{self.stack.base_url}/token", data={**credentials, **form}, auth=auth
        )

    async def exchange(self, login: Login, **overrides: str) -> httpx2.Response:
        form = {
            "grant_type": "authorization_code",
            "code": login.code,
            "redirect_uri": login.redirect_uri,
            "code_verifier": login.verifier,
            "resource": self.stack.url,
            **overrides,
        }
        return await self.token(**form)

    async def refresh(self, refresh_token: str, **overrides: str) -> httpx2.Response:
        return await self.token(
            grant_type="refresh_token", refresh_token=refresh_token, **overrides
        )

    async def revoke(self, token: str) -> httpx2.Response:
        credentials, auth = self._credentials()
        return await self.http.post(
            f"{self.stack.base_url}/revoke", data={**credentials, "token": token}, auth=auth
        )

    async def call_tool(
        self, access_token: str, name: str, arguments: dict[str, Any] | None = None
    ) -> httpx2.Response:
        """``tools/call`` of ``name`` at the MCP endpoint with ``access_token``."""
        return await self.http.post(
            self.stack.url,
            content=encode(call(1, name, arguments or {})),
            headers={**mcp_headers("tools/call", name), "authorization": f"Bearer {access_token}"},
        )
