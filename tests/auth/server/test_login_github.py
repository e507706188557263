"""The ``GitHub`` preset through a whole login, against a stand-in for github.com's three
OAuth endpoints (this machine has no internet): GitHub is not an OpenID provider, so the
user is who its user API says, and the principal is their numeric id.

The stand-in behaves as GitHub documents it: the authorize page redirects back at once (the
user already allowed the app), the token endpoint takes the client's id and secret in the
form and answers JSON when asked, with a 200 and an ``error`` member for a bad code, and
``GET /user`` needs the token as a Bearer.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest

from login_client import HandClient
from login_stack import LOGIN_SERVER, LoginStack, LoginUser
from wire_helpers import http_server_process

pytestmark = [pytest.mark.subprocess]

CLIENT_ID = "Iv1.mcpserve"
CLIENT_SECRET = secrets.token_urlsafe(24)


@dataclass
class StandIn:
    url: str
    tokens: list[str] = field(default_factory=list)
    token_forms: list[dict[str, str]] = field(default_factory=list)
    refuse_codes: bool = False


@contextmanager
def github_stand_in() -> Iterator[StandIn]:
    state = StandIn("")

    class Handler(BaseHTTPRequestHandler):
        def _json(self, status: int, document: Any) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            if parts.path == "/login/oauth/authorize":
                assert query["client_id"] == CLIENT_ID
                back = {"code": "gh-code-" + secrets.token_hex(4), "state": query["state"]}
                self.send_response(302)
                self.send_header("location", f"{query['redirect_uri']}?{urlencode(back)}")
                self.send_header("content-length", "0")
                self.end_headers()
            elif parts.path == "/user":
                if self.headers.get("authorization") in [f"Bearer {t}" for t in state.tokens]:
                    self._json(200, {"id": 583231, "login": "octocat", "name": "The Octocat"})
                else:
                    self._json(401, {"message": "Bad credentials"})
            else:
                self._json(404, {"message": "Not Found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            state.token_forms.append(form)
            good = form.get("client_secret") == CLIENT_SECRET and form.get("code", "").startswith(
                "gh-code-"
            )
            if state.refuse_codes or not good:
                self._json(200, {"error": "bad_verification_code"})  # GitHub's way
                return
            token = "gho_" + secrets.token_hex(16)
            state.tokens.append(token)
            self._json(200, {"access_token": token, "token_type": "bearer", "scope": "read:user"})

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_a_github_login_makes_the_user_id_the_principal_and_keeps_the_github_token(
    tmp_path: Path,
) -> None:
    with github_stand_in() as github:
        env = {
            "MCPSERVE_TEST_GITHUB_URL": github.url,
            "MCPSERVE_TEST_CLIENT_ID": CLIENT_ID,
            "MCPSERVE_TEST_CLIENT_SECRET": CLIENT_SECRET,
        }
        args = [sys.executable, str(LOGIN_SERVER)]
        with http_server_process(tmp_path, args=args, env=env) as process:
            stack = LoginStack(process, None, f"http://127.0.0.1:{process.port}")  # type: ignore[arg-type]
            async with httpx2.AsyncClient(trust_env=False, timeout=30) as http:
                client = HandClient(stack, http)
                assert (await client.register()).status_code == 201
                login = await client.login(LoginUser())
                tokens = (await client.exchange(login)).json()
                me = await client.call_tool(tokens["access_token"], "whoami")
                digest = await client.call_tool(tokens["access_token"], "upstream_token_sha256")

                github.refuse_codes = True
                url, _, state = client.authorization_url()
                refused = await LoginUser().follow(url)

    assert me.json()["result"]["structuredContent"]["principal"] == "583231"
    assert github.token_forms[0]["client_id"] == CLIENT_ID  # client_secret_post, as GitHub wants
    assert github.token_forms[0]["redirect_uri"] == f"{stack.base_url}/auth/callback"
    assert "code_verifier" in github.token_forms[0]
    expected = hashlib.sha256(github.tokens[0].encode()).hexdigest()
    assert digest.json()["result"]["content"] == [{"type": "text", "text": expected}]
    assert refused == {
        "error": "server_error",
        "error_description": "The sign-in at the identity provider failed",
        "state": state,
        "iss": stack.base_url,
    }
    log = process.log.read_text()
    assert "bad_verification_code" in log  # the reason is logged for the operator
    assert github.tokens[0] not in log
    assert CLIENT_SECRET not in log
