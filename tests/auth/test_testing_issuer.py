"""``mcpserve.testing.TestIssuer``: tokens for testing a protected server, without Node.

A protected server under test runs for real (``serve_http``: uvicorn on a loopback port),
its ``auth=`` a real ``JWTVerifier`` from ``issuer.verifier()``; the client is
``Client.http`` with the token as a fixed ``Authorization`` header. The issuer's name is in
the ``.test`` domain, which no resolver answers for: every verification here succeeds or
fails without the network. A user's project is played with ``pytester``: the plugin's
fixtures, ``TestIssuer`` imported into a test module, and the cost of loading the plugin.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import jwt
import pytest

from mcpserve import Client, Context, MCPError, Server
from mcpserve.auth import InvalidToken, JWTVerifier
from mcpserve.auth.jwks import PinnedKeys
from mcpserve.testing import TestIssuer, serve_http
from wire_helpers import TIMEOUT

pytest_plugins = ["pytester"]

READ, WRITE = "notes:read", "notes:write"


def notes_server(issuer: TestIssuer, **verifier_options: Any) -> Server:
    server = Server("notes", auth=issuer.verifier(**verifier_options))

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        return {"principal": ctx.principal, "scopes": sorted(ctx.scopes),
                "client_id": ctx.auth.claims.get("client_id"),
                "team": ctx.auth.claims.get("team")}  # fmt: skip

    @server.tool(scopes=[READ])
    def list_notes() -> list[str]:
        return ["first"]

    @server.tool(scopes=[WRITE])
    def add_note(text: str) -> str:
        return f"added {text}"

    return server


@pytest.fixture
def issuer() -> TestIssuer:
    return TestIssuer()


@pytest.fixture
def url(issuer: TestIssuer) -> Iterator[str]:
    with serve_http(notes_server(issuer)) as served:
        yield served


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def refusal(url: str, token: str) -> httpx2.Response:
    """What the endpoint answers a request carrying ``token``: the raw HTTP response."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    headers = {**bearer(token), "content-type": "application/json"}
    return httpx2.post(url, content=body, headers=headers, timeout=TIMEOUT, trust_env=False)


async def test_a_token_is_accepted_over_http_and_the_handler_sees_its_claims(
    issuer: TestIssuer, url: str
) -> None:
    token = issuer.token(subject="ada", scopes=[READ], claims={"team": "blue"})
    async with Client.http(url, headers=bearer(token), timeout=TIMEOUT) as client:
        me = await client.call_tool("whoami")
        notes = await client.call_tool("list_notes")
    assert me["structuredContent"] == {
        "principal": "ada",
        "scopes": [READ],
        "client_id": "test-client",
        "team": "blue",
    }
    assert notes["structuredContent"] == ["first"]


async def test_scopes_are_enforced_per_tool_through_the_wire(issuer: TestIssuer, url: str) -> None:
    reader = issuer.token(scopes=READ)  # one space-separated string works too
    writer = issuer.token(scopes=[READ, WRITE])
    async with Client.http(url, headers=bearer(reader), timeout=TIMEOUT) as client:
        read_only = [tool["name"] for tool in await client.list_tools()]
        with pytest.raises(MCPError) as refused:
            await client.call_tool("add_note", {"text": "no"})
    async with Client.http(url, headers=bearer(writer), timeout=TIMEOUT) as client:
        everything = [tool["name"] for tool in await client.list_tools()]
        added = await client.call_tool("add_note", {"text": "yes"})
    assert read_only == ["whoami", "list_notes"]
    assert refused.value.code == -32010
    assert refused.value.data == {"requiredScopes": [WRITE]}
    assert everything == ["whoami", "list_notes", "add_note"]
    assert added["content"] == [{"type": "text", "text": "added yes"}]


@pytest.mark.parametrize(
    ("make", "description"),
    [
        (
            lambda issuer: issuer.token(audience="https://other.test/mcp"),
            "The access token is not for this server",
        ),
        (lambda issuer: issuer.token(expires_in=-120), "The access token has expired"),
        (
            lambda issuer: TestIssuer().token(),  # same name, another key
            "The access token is signed with a key the issuer does not publish",
        ),
        (
            lambda issuer: issuer.token(claims={"iss": "https://elsewhere.test"}),
            "The access token was not issued by the expected issuer",
        ),
        (
            lambda issuer: issuer.token(claims={"exp": None}),
            "The access token does not say when it expires",
        ),
    ],
    ids=["wrong-audience", "expired", "another-issuers-key", "another-iss", "no-exp"],
)
def test_a_token_the_verifier_must_refuse_is_answered_401(
    issuer: TestIssuer, url: str, make: Any, description: str
) -> None:
    response = refusal(url, make(issuer))
    assert response.status_code == 401
    assert f'error_description="{description}"' in response.headers["www-authenticate"]
    assert response.json()["error"]["message"] == f"Unauthorized: {description}"


async def test_the_client_sees_the_401_as_an_error_naming_the_reason(
    issuer: TestIssuer, url: str
) -> None:
    expired = issuer.token(expires_in=-120)
    with pytest.raises(MCPError, match="Unauthorized: The access token has expired"):
        async with Client.http(url, headers=bearer(expired), timeout=TIMEOUT) as client:
            await client.call_tool("whoami")


async def test_a_token_names_everything_an_authorization_server_would(issuer: TestIssuer) -> None:
    token = issuer.token(subject="ada", scopes=[READ, WRITE], expires_in=60)
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert header == {"alg": "ES256", "kid": issuer.key_id, "typ": "at+jwt"}
    assert set(claims) == {"iss", "sub", "aud", "client_id", "iat", "exp", "jti", "scope"}
    assert (claims["iss"], claims["sub"], claims["aud"]) == (
        "https://issuer.test",
        "ada",
        "https://mcp.test/mcp",
    )
    assert claims["scope"] == f"{READ} {WRITE}"
    assert claims["exp"] - claims["iat"] == 60
    assert issuer.token() != issuer.token()  # a fresh jti each time
    assert "scope" not in jwt.decode(issuer.token(), options={"verify_signature": False})


async def test_the_verifier_is_a_jwt_verifier_with_the_key_given_and_nothing_to_fetch(
    issuer: TestIssuer,
) -> None:
    verifier = issuer.verifier(audience="https://notes.test/mcp")
    assert isinstance(verifier, JWTVerifier)
    assert isinstance(verifier.keys, PinnedKeys)
    verified = await verifier.verify(issuer.token(audience="https://notes.test/mcp"))
    assert verified.principal == "test-user"
    with pytest.raises(InvalidToken, match="not for this server"):
        await verifier.verify(issuer.token())  # the issuer's default audience
    assert "PRIVATE" not in repr(issuer.jwks)
    assert set(issuer.jwks["keys"][0]) == {"kty", "crv", "x", "y", "kid", "use", "alg"}


# ---------------------------------------------------------------------- a user's project


@pytest.mark.subprocess
def test_a_users_pytest_tests_a_protected_server_with_the_plugin_and_a_test_issuer(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\npythonpath = .\n"
    )
    pytester.makepyfile(
        app="""
        from mcpserve import Context, Server
        from mcpserve.testing import TestIssuer

        issuer = TestIssuer()
        server = Server("app", auth=issuer.verifier())

        @server.tool(scopes=["notes:write"])
        def add_note(text: str, ctx: Context) -> str:
            return f"{ctx.principal} added {text}"
        """,
        test_app="""
        import pytest
        from mcpserve import Client, MCPError
        from mcpserve.testing import TestIssuer
        from app import issuer

        pytestmark = pytest.mark.mcp_server("app:server")

        async def test_with_the_scope(mcp_http_url):
            token = issuer.token(subject="ada", scopes=["notes:write"])
            headers = {"Authorization": f"Bearer {token}"}
            async with Client.http(mcp_http_url, headers=headers) as client:
                result = await client.call_tool("add_note", {"text": "hi"})
            assert result["content"] == [{"type": "text", "text": "ada added hi"}]

        async def test_without_it(mcp_http_url):
            headers = {"Authorization": f"Bearer {issuer.token()}"}
            async with Client.http(mcp_http_url, headers=headers) as client:
                with pytest.raises(MCPError, match="notes:write"):
                    await client.call_tool("add_note", {"text": "hi"})
        """,
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "TestIssuer" not in result.stdout.str()  # not collected as a class of tests


@pytest.mark.subprocess
def test_loading_the_plugin_does_not_load_pyjwt_until_the_issuer_is_used() -> None:
    probe = (
        "import sys, mcpserve.testing as testing; "
        "before = 'jwt' in sys.modules; "
        "testing.TestIssuer().token(); "
        "print(before, 'jwt' in sys.modules)"
    )
    output = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert output.stdout.split() == ["False", "True"]
