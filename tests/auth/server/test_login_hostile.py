"""What an ``OIDCProxy`` does with requests no well-behaved client sends, over real HTTP, with
a real OpenID provider behind it (``login_stack.py``), driven by hand (``login_client.py``).

Each refusal is the RFC's error code with the status it prescribes, never a 5xx, and no step
sends the user anywhere the client did not register. At the end of each test the server's
whole log is read: no code, token or secret the test saw is in it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest

from login_client import HandClient, Login, pkce_pair
from login_stack import REDIRECT, LoginStack, LoginUser, login_stack, query_of

pytestmark = [pytest.mark.subprocess, pytest.mark.node]


@asynccontextmanager
async def hand(tmp_path: Path, **env: str) -> AsyncIterator[tuple[LoginStack, HandClient]]:
    async with (
        login_stack(tmp_path, env=env) as stack,
        httpx2.AsyncClient(trust_env=False, timeout=30) as http,
    ):
        client = HandClient(stack, http)
        yield stack, client
        assert "Traceback" not in stack.server.log.read_text()
        assert '" 50' not in stack.server.log.read_text()  # no 5xx in the access log


def assert_not_logged(stack: LoginStack, *secrets: str) -> None:
    log = stack.server.log.read_text()
    for secret in secrets:
        assert secret
        assert secret not in log, "the server logged a code, token or secret"


def error_of(response: httpx2.Response) -> str:
    return str(response.json()["error"])


async def logged_in(client: HandClient, user: LoginUser | None = None) -> dict[str, Any]:
    """Register, log in and exchange the code: the token answer."""
    assert (await client.register()).status_code == 201
    login = await client.login(user or LoginUser())
    answer = await client.exchange(login)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


# -- the happy path, by hand, to know the refusals below are refusals of this -------------------


async def test_a_login_by_hand_gives_tokens_that_call_tools_and_a_refresh_that_rotates(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (stack, client):
        tokens = await logged_in(client)
        assert tokens["token_type"] == "Bearer"
        assert tokens["expires_in"] == 3600
        assert tokens["scope"] == "notes:read notes:write"
        called = await client.call_tool(tokens["access_token"], "whoami")
        assert called.status_code == 200
        assert called.json()["result"]["structuredContent"]["principal"] == "alice"

        renewed = await client.refresh(tokens["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        second = renewed.json()
        assert second["refresh_token"] != tokens["refresh_token"]
        assert second["access_token"] != tokens["access_token"]
        assert (await client.call_tool(second["access_token"], "whoami")).status_code == 200

        narrowed = await client.refresh(second["refresh_token"], scope="notes:read")
        assert narrowed.status_code == 200
        assert narrowed.json()["scope"] == "notes:read"
        assert_not_logged(
            stack,
            tokens["access_token"],
            tokens["refresh_token"],
            str(stack.provider.upstream and stack.provider.upstream.client_secret),
        )


async def test_a_narrow_token_is_refused_a_wider_tool_and_steps_up_with_a_new_consent(
    tmp_path: Path,
) -> None:
    async with (
        hand(tmp_path) as (_, client),
        httpx2.AsyncClient(trust_env=False, timeout=30) as browser,
    ):
        assert (await client.register()).status_code == 201
        user = LoginUser(browser=browser)
        narrow = (await client.exchange(await client.login(user, scope="notes:read"))).json()
        assert narrow["scope"] == "notes:read"
        refused = await client.call_tool(narrow["access_token"], "add_note", {"text": "hi"})
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge
        assert 'scope="notes:write"' in challenge
        wide = await client.exchange(await client.login(user, scope="notes:read notes:write"))
        assert len(user.consent_pages()) == 2  # a new scope is asked for again
        added = await client.call_tool(wide.json()["access_token"], "add_note", {"text": "hi"})
        assert added.status_code == 200
        assert added.json()["result"]["structuredContent"] == {"author": "alice", "count": 1}


# -- redirect URIs ---------------------------------------------------------------------------


async def test_an_unregistered_redirect_uri_is_refused_with_a_page_and_no_redirect(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (_, client):
        assert (await client.register()).status_code == 201
        for elsewhere in ("https://attacker.example/cb", f"{REDIRECT}/more", None):
            overrides: dict[str, str | None] = {"redirect_uri": elsewhere}
            if elsewhere is None:  # registering two makes a missing one ambiguous
                client.redirect_uris = [REDIRECT, "http://127.0.0.1:49153/callback"]
                assert (await client.register()).status_code == 201
            url, _, _ = client.authorization_url(**overrides)
            response = await client.http.get(url)
            assert response.status_code == 400
            assert "location" not in response.headers
            assert "not one this application registered" in response.text


async def test_a_loopback_redirect_may_change_its_port_but_nothing_else(tmp_path: Path) -> None:
    async with hand(tmp_path) as (_, client):
        assert (await client.register()).status_code == 201
        other_port = "http://127.0.0.1:50001/callback"
        login = await client.login(LoginUser(), redirect_uri=other_port)
        # The code is bound to the redirect URI the request named, port and all.
        refused = await client.exchange(login, redirect_uri=REDIRECT)
        assert refused.status_code == 400
        assert error_of(refused) == "invalid_grant"
        login = await client.login(LoginUser(), redirect_uri=other_port)
        assert (await client.exchange(login)).status_code == 200
        url, _, _ = client.authorization_url(redirect_uri="http://127.0.0.1:50001/other")
        assert (await client.http.get(url)).status_code == 400


async def test_a_redirect_uri_named_in_the_request_must_be_repeated_and_only_then(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (_, client):
        assert (await client.register()).status_code == 201

        async def exchange_without_redirect(login: Login) -> httpx2.Response:
            return await client.token(
                grant_type="authorization_code", code=login.code, code_verifier=login.verifier
            )

        # Left out (one is registered): it is that one, and the exchange leaves it out too.
        unnamed = await client.login(LoginUser(), redirect_uri=None)
        assert (await exchange_without_redirect(unnamed)).status_code == 200
        # Named: the exchange must name it again (OAuth 2.1 4.1.3).
        named = await client.login(LoginUser())
        refused = await exchange_without_redirect(named)
        assert refused.status_code == 400
        assert error_of(refused) == "invalid_grant"


async def test_registration_refuses_redirect_uris_outside_the_allowed_patterns(
    tmp_path: Path,
) -> None:
    allowed = "http://127.0.0.1:*/callback,https://claude.ai/api/mcp/auth_callback"
    async with hand(tmp_path, MCPSERVE_TEST_ALLOWED_REDIRECTS=allowed) as (_, client):
        assert (await client.register()).status_code == 201
        client.redirect_uris = ["https://evil.example/api/mcp/auth_callback"]
        refused = await client.register()
        assert refused.status_code == 400
        assert error_of(refused) == "invalid_redirect_uri"
        assert "not an allowed redirect URI" in refused.json()["error_description"]


# -- PKCE --------------------------------------------------------------------------------------


async def test_a_missing_or_downgraded_pkce_challenge_goes_back_as_invalid_request(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (stack, client):
        assert (await client.register()).status_code == 201
        for overrides in (
            {"code_challenge": None, "code_challenge_method": None},
            {"code_challenge_method": "plain"},
            {"code_challenge_method": None},
        ):
            url, _, state = client.authorization_url(**overrides)
            response = await client.http.get(url)
            assert response.status_code == 303
            back = query_of(response.headers["location"])
            assert response.headers["location"].startswith(REDIRECT + "?")
            assert back["error"] == "invalid_request"
            assert back["state"] == state
            assert back["iss"] == stack.base_url


async def test_a_wrong_code_verifier_is_invalid_grant(tmp_path: Path) -> None:
    async with hand(tmp_path) as (_, client):
        assert (await client.register()).status_code == 201
        login = await client.login(LoginUser())
        other_verifier, _ = pkce_pair()
        refused = await client.exchange(login, code_verifier=other_verifier)
        assert refused.status_code == 400
        assert error_of(refused) == "invalid_grant"
        missing = await client.token(
            grant_type="authorization_code", code=login.code, redirect_uri=login.redirect_uri
        )
        assert missing.status_code == 400
        assert error_of(missing) == "invalid_request"


# -- codes and refresh tokens ------------------------------------------------------------------


async def test_a_replayed_code_is_refused_and_revokes_what_it_was_issued_for(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (stack, client):
        assert (await client.register()).status_code == 201
        login = await client.login(LoginUser())
        first = await client.exchange(login)
        assert first.status_code == 200
        replayed = await client.exchange(login)
        assert replayed.status_code == 400
        assert error_of(replayed) == "invalid_grant"
        assert "used before" in replayed.json()["error_description"]
        # The refresh token the first exchange gave is revoked with it.
        after = await client.refresh(first.json()["refresh_token"])
        assert after.status_code == 400
        assert error_of(after) == "invalid_grant"
        unknown = await client.exchange(login, code="never-issued")
        assert unknown.status_code == 400
        assert "unknown" in unknown.json()["error_description"]
        assert_not_logged(stack, login.code)


async def test_a_reused_refresh_token_revokes_the_whole_family(tmp_path: Path) -> None:
    async with hand(tmp_path) as (_, client):
        tokens = await logged_in(client)
        rotated = await client.refresh(tokens["refresh_token"])
        assert rotated.status_code == 200
        stolen = await client.refresh(tokens["refresh_token"])  # the old one, again
        assert stolen.status_code == 400
        assert error_of(stolen) == "invalid_grant"
        assert "revoked" in stolen.json()["error_description"]
        legitimate = await client.refresh(rotated.json()["refresh_token"])
        assert legitimate.status_code == 400
        assert error_of(legitimate) == "invalid_grant"


async def test_a_code_or_refresh_token_of_another_client_is_refused(tmp_path: Path) -> None:
    async with hand(tmp_path) as (stack, owner):
        tokens = await logged_in(owner)
        login = await owner.login(LoginUser())
        thief = HandClient(stack, owner.http)
        assert (await thief.register()).status_code == 201
        assert error_of(await thief.exchange(login)) == "invalid_grant"
        assert error_of(await thief.refresh(tokens["refresh_token"])) == "invalid_grant"


async def test_revoking_a_refresh_token_ends_its_login(tmp_path: Path) -> None:
    async with hand(tmp_path) as (_, client):
        tokens = await logged_in(client)
        revoked = await client.revoke(tokens["refresh_token"])
        assert revoked.status_code == 200
        assert revoked.json() == {}
        assert error_of(await client.refresh(tokens["refresh_token"])) == "invalid_grant"
        # RFC 7009: an unknown token is no error.
        assert (await client.revoke("not-a-token-of-ours")).status_code == 200


async def test_revoking_an_access_token_ends_its_login_but_the_token_lives_out_its_ttl(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (_, client):
        tokens = await logged_in(client)
        assert (await client.revoke(tokens["access_token"])).status_code == 200
        assert error_of(await client.refresh(tokens["refresh_token"])) == "invalid_grant"
        # Short-lived and verified without a lookup: still accepted until it expires.
        assert (await client.call_tool(tokens["access_token"], "whoami")).status_code == 200


async def test_a_confidential_client_must_prove_its_secret(tmp_path: Path) -> None:
    async with hand(tmp_path) as (_, client):
        registered = await client.register(token_endpoint_auth_method="client_secret_basic")
        assert registered.status_code == 201
        assert client.client_secret
        login = await client.login(LoginUser())
        secret = client.client_secret
        client.client_secret = "wrong"
        refused = await client.exchange(login)
        assert refused.status_code == 401
        assert error_of(refused) == "invalid_client"
        assert refused.headers["www-authenticate"].startswith("Basic")
        client.client_secret = None  # as if public: no secret at all
        assert (await client.exchange(login)).status_code == 401
        client.client_secret = secret
        assert (await client.exchange(login)).status_code == 200


async def test_a_resource_naming_another_server_is_invalid_target(tmp_path: Path) -> None:
    async with hand(tmp_path) as (_, client):
        assert (await client.register()).status_code == 201
        url, _, _ = client.authorization_url(resource="https://other.example/mcp")
        response = await client.http.get(url)
        assert response.status_code == 303
        assert query_of(response.headers["location"])["error"] == "invalid_target"
        login = await client.login(LoginUser())
        refused = await client.exchange(login, resource="https://other.example/mcp")
        assert refused.status_code == 400
        assert error_of(refused) == "invalid_target"


async def test_a_token_the_provider_minted_is_refused_at_the_mcp_endpoint(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (stack, client):
        # A token of the provider itself, even one issued for this very endpoint.
        foreign = await stack.provider.authorization_code_token(
            "http://127.0.0.1/unused", ["notes:read"]
        )
        for token in (foreign, foreign[:-4] + "AAAA", "garbage"):
            response = await client.call_tool(token, "whoami")
            assert response.status_code == 401
            assert 'error="invalid_token"' in response.headers["www-authenticate"]


# -- state and consent -------------------------------------------------------------------------


async def test_a_forged_or_missing_state_at_the_callback_is_refused(tmp_path: Path) -> None:
    async with hand(tmp_path) as (stack, client):
        for query in ("code=abc&state=forged", "code=abc", ""):
            response = await client.http.get(f"{stack.base_url}/auth/callback?{query}")
            assert response.status_code == 400
            assert "location" not in response.headers
            assert "cannot be completed" in response.text


async def test_the_consent_page_refuses_an_answer_without_its_csrf_token_or_browser(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (stack, client):
        assert (await client.register()).status_code == 201
        async with httpx2.AsyncClient(trust_env=False, timeout=30) as browser:
            url, _, _ = client.authorization_url()
            page = await browser.get(url)
            assert page.status_code == 200
            fields = dict(re.findall(r'name="(pending|csrf)" value="([^"]+)"', page.text))
            consent = f"{stack.base_url}/auth/consent"
            without_csrf = {"pending": fields["pending"], "decision": "allow"}
            assert (await browser.post(consent, data=without_csrf)).status_code == 403
            forged = {**without_csrf, "csrf": fields["csrf"][:-2] + "xx"}
            assert (await browser.post(consent, data=forged)).status_code == 403
            # The right token from another browser (no cookie): refused too.
            with_token = {**without_csrf, "csrf": fields["csrf"]}
            assert (await client.http.post(consent, data=with_token)).status_code == 403

            # A token of this browser's page for another client does not answer this one.
            other = HandClient(stack, client.http)
            assert (await other.register()).status_code == 201
            other_url, _, _ = other.authorization_url()
            other_page = await browser.get(other_url)
            other_fields = dict(
                re.findall(r'name="(pending|csrf)" value="([^"]+)"', other_page.text)
            )
            crossed = {"pending": fields["pending"], "csrf": other_fields["csrf"]}
            assert (
                await browser.post(consent, data={**crossed, "decision": "allow"})
            ).status_code == 403

            # Its own token, from its own browser: on to the provider.
            allowed = await browser.post(consent, data={**with_token})
            assert allowed.status_code == 303
            assert allowed.headers["location"].startswith(stack.provider.authorization_endpoint)


async def test_deny_sends_the_user_back_with_access_denied(tmp_path: Path) -> None:
    async with hand(tmp_path) as (stack, client):
        assert (await client.register()).status_code == 201
        url, _, state = client.authorization_url()
        answer = await LoginUser(decision="deny").follow(url)
        assert answer == {
            "error": "access_denied",
            "error_description": "The user denied access",
            "state": state,
            "iss": stack.base_url,
        }


async def test_consent_is_remembered_per_browser_and_asked_again_for_a_new_redirect_or_scope(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (_, client):
        client.redirect_uris = [REDIRECT, "http://127.0.0.1:49153/other"]
        assert (await client.register()).status_code == 201
        async with httpx2.AsyncClient(trust_env=False, timeout=30) as browser:
            user = LoginUser(browser=browser)
            await client.login(user, scope="notes:read")
            assert len(user.consent_pages()) == 1
            await client.login(user, scope="notes:read")  # same browser, client, scope
            assert len(user.consent_pages()) == 1
            await client.login(user, scope="notes:read notes:write")  # a new scope
            assert len(user.consent_pages()) == 2
            await client.login(user, redirect_uri="http://127.0.0.1:49153/other")
            assert len(user.consent_pages()) == 3
        stranger = LoginUser()  # another browser: asked
        await client.login(stranger, scope="notes:read")
        assert len(stranger.consent_pages()) == 1


# -- registration --------------------------------------------------------------------------------


async def test_registration_refuses_oversized_malformed_and_ill_typed_bodies(
    tmp_path: Path,
) -> None:
    async with hand(tmp_path) as (stack, client):
        url = f"{stack.base_url}/register"
        huge = {"redirect_uris": [REDIRECT], "client_name": "x", "padding": "y" * 70_000}
        too_big = await client.http.post(url, json=huge)
        assert too_big.status_code == 413
        assert error_of(too_big) == "invalid_client_metadata"
        for body in (b"{not json", b"[]", b'{"redirect_uris": "one"}', b"[" * 10_000):
            refused = await client.http.post(
                url, content=body, headers={"content-type": "application/json"}
            )
            assert refused.status_code == 400
            assert error_of(refused) in ("invalid_client_metadata", "invalid_redirect_uri")
        many = {"redirect_uris": [f"http://127.0.0.1/{n}" for n in range(21)]}
        assert error_of(await client.http.post(url, json=many)) == "invalid_redirect_uri"


async def test_registration_floods_are_rate_limited_per_address(tmp_path: Path) -> None:
    async with hand(tmp_path) as (stack, client):
        url = f"{stack.base_url}/register"
        body = {"redirect_uris": [REDIRECT]}
        statuses = [(await client.http.post(url, json=body)).status_code for _ in range(101)]
        assert statuses[:100] == [201] * 100
        assert statuses[100] == 429
        limited = await client.http.post(url, json=body)
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "60"


async def test_sign_ins_begun_from_one_address_are_rate_limited(tmp_path: Path) -> None:
    async with hand(tmp_path) as (_stack, client):
        assert (await client.register()).status_code == 201
        url, _, _ = client.authorization_url()
        statuses = [(await client.http.get(url)).status_code for _ in range(61)]
        assert statuses[:60] == [200] * 60  # the consent page, each sign-in kept pending
        assert statuses[60] == 429
        limited = await client.http.get(url)
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "60"
        assert "Too many sign-ins from this address" in limited.text


# -- client ID metadata documents --------------------------------------------------------------


@contextmanager
def document_server(
    documents: dict[str, tuple[int, dict[str, str], bytes]], requested: list[str] | None = None
) -> Iterator[str]:
    """A plain HTTP server on 127.0.0.1 answering each path with (status, headers, body),
    each path asked for appended to ``requested``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if requested is not None:
                requested.append(self.path)
            status, headers, body = documents.get(self.path, (404, {}, b""))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_a_client_metadata_document_names_a_client_without_registration(
    tmp_path: Path,
) -> None:
    documents: dict[str, tuple[int, dict[str, str], bytes]] = {}
    requested: list[str] = []
    with document_server(documents, requested) as origin:
        client_id = f"{origin}/client.json"
        document = {
            "client_id": client_id,
            "client_name": "Documented",
            "redirect_uris": [REDIRECT],
        }
        documents["/client.json"] = (
            200,
            {"content-type": "application/json"},
            json.dumps(document).encode(),
        )
        documents["/moved.json"] = (302, {"location": f"{origin}/client.json"}, b"")
        documents["/wrong-id.json"] = (
            200,
            {},
            json.dumps({**document, "client_id": "other"}).encode(),
        )
        async with hand(tmp_path, MCPSERVE_TEST_TRUSTED_HOSTS="127.0.0.1") as (_, client):
            client.client_id = client_id
            user = LoginUser()
            login = await client.login(user)
            assert "Documented" in user.consent_pages()[0]
            assert (await client.exchange(login)).status_code == 200
            again, _, _ = client.authorization_url()
            assert (await client.http.get(again)).status_code == 200  # the consent page
            assert requested.count("/client.json") == 1  # fetched once, then cached
            for path in ("/moved.json", "/wrong-id.json", "/missing.json"):
                client.client_id = f"{origin}{path}"
                url, _, _ = client.authorization_url()
                refused = await client.http.get(url)
                assert refused.status_code == 400
                assert "location" not in refused.headers
                assert "client metadata document" in refused.text


async def test_a_client_metadata_document_on_a_private_address_is_never_fetched(
    tmp_path: Path,
) -> None:
    fetched: list[str] = []
    requested: list[str] = []
    document = b'{"client_id": "x", "redirect_uris": ["http://127.0.0.1/callback"]}'
    documents = {"/client.json": (200, {}, document)}
    with document_server(documents, requested) as origin:
        port = urlsplit(origin).port
        async with hand(tmp_path) as (_, client):  # no trusted host
            for client_id in (
                f"https://127.0.0.1:{port}/client.json",
                f"https://localhost:{port}/client.json",
                "https://10.0.0.1/client.json",
                "https://[::1]/client.json",
                "https://169.254.169.254/latest/meta-data.json",
                f"{origin}/client.json",  # plain http
            ):
                client.client_id = client_id
                url, _, _ = client.authorization_url()
                refused = await client.http.get(url)
                assert refused.status_code == 400, client_id
                assert "location" not in refused.headers
                fetched.append(refused.text)
    assert all("not public" in page or "must be https" in page for page in fetched), fetched
    assert requested == []  # nothing was ever fetched
