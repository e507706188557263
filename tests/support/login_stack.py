"""The stack of a login test: oidc-provider as the identity provider (one static client, no
dynamic registration, as GitHub and Google have it) and ``tests/support/servers/
oidc_login.py``, an mcpserve server with ``auth=OIDCProxy(...)`` in front of it.

The MCP server's port is chosen first, so the provider can be started with the server's
callback registered as its client's redirect URI, and the provider's port too, so the
server can be started knowing its issuer (it reads the discovery document at the first
login). :class:`LoginUser` is the person at the browser: it follows the authorization URL
through mcpserve's consent page and the provider's login (``oidc_server.drive_login``).
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from oidc_server import AuthorizationServer, OAuthClient, authorization_server, drive_login
from wire_helpers import SERVERS, TIMEOUT, HTTPServerProcess, free_port, http_server_process

LOGIN_SERVER = SERVERS / "oidc_login.py"
#: Where the MCP clients of the tests are sent back to. Nobody listens: the login is driven
#: headlessly and stops at the redirect.
REDIRECT = "http://127.0.0.1:49152/callback"


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


@dataclass
class LoginStack:
    server: HTTPServerProcess
    provider: AuthorizationServer
    base_url: str

    @property
    def url(self) -> str:
        return f"{self.base_url}/mcp"


@asynccontextmanager
async def login_stack(
    tmp_path: Path, *, env: dict[str, str] | None = None, access_token_ttl: int = 600
) -> AsyncIterator[LoginStack]:
    provider_port = free_port()
    client = OAuthClient("mcpserve-notes", secrets.token_urlsafe(24))
    settings = {
        "MCPSERVE_TEST_ISSUER": f"http://127.0.0.1:{provider_port}",
        "MCPSERVE_TEST_CLIENT_ID": client.client_id,
        "MCPSERVE_TEST_CLIENT_SECRET": str(client.client_secret),
        **(env or {}),
    }
    args = [sys.executable, str(LOGIN_SERVER)]
    with http_server_process(tmp_path, args=args, env=settings) as server:
        base_url = f"http://127.0.0.1:{server.port}"
        async with authorization_server(
            ["http://127.0.0.1/unused"],
            ["notes:read"],
            port=provider_port,
            registration=False,
            upstream=client,
            upstream_redirect_uris=[f"{base_url}/auth/callback"],
            access_token_ttl=access_token_ttl,
        ) as provider:
            yield LoginStack(server, provider, base_url)


@dataclass
class LoginUser:
    """The person at the browser: logs in as ``username`` and presses ``decision``."""

    username: str = "alice"
    decision: str = "allow"
    authorization_urls: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    callbacks: list[dict[str, str]] = field(default_factory=list)
    browser: httpx2.AsyncClient | None = None

    async def follow(self, authorization_url: str, redirect_uri: str = REDIRECT) -> dict[str, str]:
        """The parameters the client gets back at ``redirect_uri``."""
        self.authorization_urls.append(authorization_url)
        final = await drive_login(
            authorization_url,
            redirect_uri,
            username=self.username,
            decision=self.decision,
            pages=self.pages,
            browser=self.browser,
        )
        answer = query_of(final)
        self.callbacks.append(answer)
        return answer

    def consent_pages(self) -> Sequence[str]:
        return [page for page in self.pages if 'name="decision"' in page]


@dataclass
class MemoryStorage:
    """The SDK's ``TokenStorage``: in memory, remembering every token it was given."""

    client_info: OAuthClientInformationFull | None = None
    tokens: OAuthToken | None = None
    saved: list[OAuthToken] = field(default_factory=list)

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.saved.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@asynccontextmanager
async def python_client(
    stack: LoginStack | Any, user: LoginUser, storage: MemoryStorage
) -> AsyncIterator[Client]:
    async def redirect(url: str) -> None:
        await user.follow(url)

    async def callback() -> AuthorizationCodeResult:
        answer = user.callbacks[-1]
        assert "code" in answer, answer
        return AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )

    provider = OAuthClientProvider(
        stack.url,
        OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="Notes for Python"),
        storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(TIMEOUT), trust_env=False) as http,
        Client(
            streamable_http_client(stack.url, http_client=http),
            read_timeout_seconds=TIMEOUT,
            cache=None,
        ) as client,
    ):
        yield client
