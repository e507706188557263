"""How the identity provider's ID tokens are read (``auth/server/upstream.py``), against a
small provider served from this process (its discovery document and keys on 127.0.0.1):
the signature, the audience (the server's client id), the nonce of this login, and the
issuer, with the two spellings providers really use: Google's ID tokens may name their
issuer without the scheme, and Entra's multi-tenant discovery names a placeholder that the
token's own tenant fills in.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from mcpserve.auth.server.upstream import Upstream, UpstreamFailed

pytestmark = [pytest.mark.subprocess]  # a thread serving HTTP on 127.0.0.1

KEY = ec.generate_private_key(ec.SECP256R1())
JWK = {**ECAlgorithm.to_jwk(KEY.public_key(), as_dict=True), "kid": "k", "alg": "ES256"}


@contextmanager
def provider(issuer_in_discovery: str) -> Iterator[str]:
    """Serves ``/<path>/.well-known/openid-configuration`` and ``/keys``; yields its origin."""
    origin: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith("/.well-known/openid-configuration"):
                document: Any = {
                    "issuer": issuer_in_discovery.replace("ORIGIN", origin[0]),
                    "authorization_endpoint": f"{origin[0]}/authorize",
                    "token_endpoint": f"{origin[0]}/token",
                    "jwks_uri": f"{origin[0]}/keys",
                }
            elif self.path == "/keys":
                document = {"keys": [JWK]}
            else:
                self.send_response(404)
                self.end_headers()
                return
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    origin.append(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield origin[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def id_token(**claims: Any) -> str:
    now = int(time.time())
    body = {"sub": "u-1", "aud": "mcp-app", "iat": now, "exp": now + 300, "nonce": "n-1"}
    return jwt.encode({**body, **claims}, KEY, algorithm="ES256", headers={"kid": "k"})


async def identity(upstream: Upstream, token: str, nonce: str = "n-1") -> tuple[str, Any]:
    try:
        return await upstream.identity({"access_token": "a", "id_token": token}, nonce)
    finally:
        await upstream.aclose()


async def test_an_id_token_gives_its_subject_once_signature_audience_issuer_and_nonce_hold() -> (
    None
):
    with provider("ORIGIN") as origin:

        def upstream() -> Upstream:
            return Upstream(
                issuer=origin, client_id="mcp-app", client_secret="s", scopes=["openid"]
            )

        subject, claims = await identity(upstream(), id_token(iss=origin, name="Ann"))
        assert (subject, claims) == ("u-1", {"sub": "u-1", "name": "Ann"})
        for bad, why in (
            (id_token(iss=origin, aud="another-app"), "refused"),
            (id_token(iss="https://elsewhere.example"), "refused"),
            (id_token(iss=origin, exp=int(time.time()) - 3600), "refused"),
            (id_token(iss=origin, nonce="n-2"), "nonce"),
            (id_token(iss=origin)[:-4] + "AAAA", "refused"),
        ):
            with pytest.raises(UpstreamFailed, match=why):
                await identity(upstream(), bad)


async def test_an_issuer_alias_is_accepted_and_still_verified() -> None:
    with provider("ORIGIN") as origin:
        alias = origin.removeprefix("http://")

        def upstream() -> Upstream:
            return Upstream(
                issuer=origin,
                client_id="mcp-app",
                client_secret="s",
                scopes=["openid"],
                issuer_aliases=[alias],
            )

        assert (await identity(upstream(), id_token(iss=alias)))[0] == "u-1"
        assert (await identity(upstream(), id_token(iss=origin)))[0] == "u-1"
        with pytest.raises(UpstreamFailed):
            await identity(upstream(), id_token(iss=alias, aud="another-app"))


async def test_a_multi_tenant_issuer_is_the_tokens_own_tenant() -> None:
    with provider("ORIGIN/{tenantid}/v2.0") as origin:

        def upstream() -> Upstream:
            return Upstream(
                issuer=f"{origin}/organizations/v2.0",
                client_id="mcp-app",
                client_secret="s",
                scopes=["openid"],
            )

        tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
        token = id_token(iss=f"{origin}/{tenant}/v2.0", tid=tenant)
        subject, claims = await identity(upstream(), token)
        assert subject == "u-1"
        assert claims["tid"] == tenant
        forged = id_token(iss=f"{origin}/{tenant}/v2.0", tid="another-tenant")
        with pytest.raises(UpstreamFailed):
            await identity(upstream(), forged)
        with pytest.raises(UpstreamFailed, match="no tenant"):
            await identity(upstream(), id_token(iss=f"{origin}/x/v2.0", tid="../evil"))
