"""The OAuth resource server on the wire: metadata, challenges, scopes per primitive.

The verifier here is a table of tokens written for the test (any object with an async
``verify`` is a verifier, as users write for schemes of their own); what is under test is
everything around it: the HTTP statuses, the ``WWW-Authenticate`` challenges, the metadata
documents, scopes per tool, resource, template and prompt, lists filtered by scope, runtime
step-up, and the principal reaching handlers, sealed state and tasks. Tokens from a real
authorization server are in ``test_auth_oidc.py``.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from legacy_schema import initialize_message
from mcpserve import Auth, Context, Server
from mcpserve.auth import AccessToken, InvalidToken, ResourceServer, VerifierUnavailable
from redis_server import RedisServer
from wire_helpers import Reply, asgi_client, call, mcp_headers, post, request

RESOURCE = "http://127.0.0.1/mcp"
ISSUER = "https://auth.example.com"
METADATA_URL = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"


class TableVerifier:
    """Tokens this test hands out, each with its meaning."""

    issuer = ISSUER
    audience = RESOURCE

    def __init__(self, tokens: dict[str, AccessToken]) -> None:
        self.tokens = tokens
        self.failure: Exception | None = None

    async def verify(self, token: str) -> AccessToken:
        if self.failure is not None:
            raise self.failure
        found = self.tokens.get(token)
        if found is None:
            raise InvalidToken("The access token has expired")
        return found


def token(principal: str, *scopes: str) -> AccessToken:
    claims = {"sub": principal, "scope": " ".join(scopes), "iss": ISSUER, "aud": RESOURCE}
    return AccessToken(principal, frozenset(scopes), claims)


TOKENS = {
    "reader": token("alice", "notes:read"),
    "writer": token("alice", "notes:read", "notes:write"),
    "bob": token("bob", "notes:read", "notes:write"),
    "broad": token("carol", "notes"),
    "none": token("dave"),
}


TOKENS_AUTH = {name: Auth(t.principal, t.scopes, t.claims) for name, t in TOKENS.items()}


def notes_server(redis_url: str | None = None, **auth_options: Any) -> tuple[Server, list[str]]:
    ran: list[str] = []
    options = {"scopes_supported": ["notes:read", "offline_access"], **auth_options}
    auth = ResourceServer(TableVerifier(TOKENS), **options)
    server = Server("notes", auth=auth, redis_url=redis_url)

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        ran.append("whoami")
        return {"principal": ctx.principal, "scopes": sorted(ctx.scopes),
                "sub": ctx.auth.claims.get("sub"), "checked": ctx.auth.checked}  # fmt: skip

    @server.tool(scopes=["notes:write"])
    def add_note(text: str) -> str:
        ran.append("add_note")
        return f"added {text}"

    @server.tool
    def purge(ctx: Context) -> str:
        ctx.require_scopes("notes:admin")
        ran.append("purge")
        return "purged"

    @server.resource("notes://secret", scopes=["notes:write"])
    def secret() -> str:
        return "s3cret"

    @server.resource("notes://{id}", scopes="notes:read")
    def note(id: str) -> str:
        return f"note {id}"

    @server.prompt(scopes=["notes:write"])
    def draft(topic: str) -> str:
        return f"Write about {topic}"

    @server.completion(prompt="draft", argument="topic")
    def topics(value: str) -> list[str]:
        return ["cats", "dogs"]

    return server, ran


def bearer(method: str, name: str | None, credential: str | None) -> dict[str, str]:
    headers = mcp_headers(method, name)
    if credential is not None:
        headers["authorization"] = f"Bearer {credential}"
    return headers


def challenge(reply: Reply | httpx2.Response) -> str:
    return reply.headers["www-authenticate"]


def assert_refused(reply: Reply, status: int, code: int, message: str) -> None:
    assert reply.status == status, (reply.status, reply.body[:300])
    assert reply.error == {"code": code, "message": message}
    assert "id" not in reply.message


# ---------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
async def test_metadata_is_served_without_a_token_at_both_well_known_paths(path: str) -> None:
    server, _ = notes_server()
    async with asgi_client(server.http_app()) as http:
        response = await http.get(path, headers={"origin": "https://inspector.example"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.json() == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["notes:read"],  # offline_access is never advertised
    }


async def test_metadata_answers_a_cors_preflight_and_refuses_other_methods() -> None:
    server, _ = notes_server()
    path = "/.well-known/oauth-protected-resource/mcp"
    async with asgi_client(server.http_app()) as http:
        preflight = await http.options(
            path,
            headers={"origin": "https://inspector.example",
                     "access-control-request-method": "GET",
                     "access-control-request-headers": "mcp-protocol-version"},
        )  # fmt: skip
        posted = await http.post(path, content=b"{}")
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert preflight.headers["access-control-allow-methods"] == "GET, OPTIONS"
    assert posted.status_code == 405
    assert posted.headers["allow"] == "GET, OPTIONS"


async def test_metadata_names_the_documented_resource_and_its_documentation() -> None:
    server, _ = notes_server(
        resource="HTTPS://MCP.Example.com/mcp/",
        authorization_servers=["https://a.example", "https://b.example"],
        resource_name="Notes",
        resource_documentation="https://docs.example.com/notes",
    )
    async with asgi_client(server.http_app(), host="mcp.example.com") as http:
        response = await http.get("/.well-known/oauth-protected-resource/mcp")
        refused = await post(http, call(1, "whoami", {}), bearer("tools/call", "whoami", None))
    assert response.json() == {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": ["https://a.example", "https://b.example"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["notes:read"],
        "resource_name": "Notes",
        "resource_documentation": "https://docs.example.com/notes",
    }
    # The resource's own host is allowed: it is the URL clients use.
    assert refused.status == 401
    assert (
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
        in (challenge(refused))
    )


async def test_metadata_is_served_when_the_app_is_mounted_under_a_prefix() -> None:
    server, _ = notes_server(resource="http://127.0.0.1/api/mcp")
    app = server.http_app()
    parent = Starlette(routes=[Mount("/api", app=app), Mount("/.well-known", app=app)])
    async with asgi_client(parent) as http:
        metadata = await http.get("/.well-known/oauth-protected-resource/api/mcp")
        refused = await post(http, call(1, "whoami", {}), bearer("tools/call", "whoami", None),
                             path="/api/mcp")  # fmt: skip
        answered = await post(http, call(2, "whoami", {}), bearer("tools/call", "whoami", "reader"),
                              path="/api/mcp")  # fmt: skip
        elsewhere = await http.get("/.well-known/oauth-protected-resource/other")
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == "http://127.0.0.1/api/mcp"
    assert refused.status == 401
    expected = "http://127.0.0.1/.well-known/oauth-protected-resource/api/mcp"
    assert f'resource_metadata="{expected}"' in challenge(refused)
    assert answered.status == 200
    assert elsewhere.status_code == 404


def test_a_resource_server_needs_to_know_its_resource_and_an_authorization_server() -> None:
    class Bare:
        async def verify(self, token: str) -> AccessToken:
            raise InvalidToken("no")

    with pytest.raises(ValueError, match="needs resource="):
        ResourceServer(Bare())
    with pytest.raises(ValueError, match="authorization_servers"):
        ResourceServer(Bare(), resource=RESOURCE)
    with pytest.raises(TypeError, match="not both"):
        Server("x", auth=ResourceServer(Bare(), resource=RESOURCE, authorization_servers=[ISSUER])
               ).http_app(authenticate=lambda headers: None)  # fmt: skip


# ---------------------------------------------------------------------------- 401, 400, 503


async def test_a_request_without_a_token_gets_the_challenge_naming_the_metadata() -> None:
    server, ran = notes_server()
    async with asgi_client(server.http_app()) as http:
        reply = await post(http, call(1, "whoami", {}), bearer("tools/call", "whoami", None))
    assert_refused(reply, 401, -32600, "Unauthorized: No access token was sent")
    assert challenge(reply) == (
        'Bearer error="invalid_token", error_description="No access token was sent", '
        f'resource_metadata="{METADATA_URL}", scope="notes:read"'
    )
    assert ran == []


@pytest.mark.parametrize(
    ("credential", "description"),
    [
        ("Bearer expired-or-unknown", "The access token has expired"),
        ("Basic YWxpY2U6c2VjcmV0", "The Authorization header must use the Bearer scheme"),
        ("bearer " + "a" * 17_000, "The access token is too long"),
    ],
)
async def test_a_refused_token_is_401_with_the_reason(credential: str, description: str) -> None:
    server, ran = notes_server()
    headers = {**mcp_headers("tools/call", "whoami"), "authorization": credential}
    async with asgi_client(server.http_app()) as http:
        reply = await post(http, call(1, "whoami", {}), headers)
    assert_refused(reply, 401, -32600, f"Unauthorized: {description}")
    assert f'error="invalid_token", error_description="{description}"' in challenge(reply)
    assert "expired-or-unknown" not in reply.body.decode()
    assert ran == []


@pytest.mark.parametrize(
    "credential",
    [
        "Bearer",
        "Bearer ",
        "Bearer two tokens",
        "Bearer a,b",
        "Bearer a;b",
        'Bearer "quoted"',
        "Bearer =x",
    ],
)
async def test_a_malformed_authorization_header_is_400(credential: str) -> None:
    server, ran = notes_server()
    headers = {**mcp_headers("tools/call", "whoami"), "authorization": credential}
    async with asgi_client(server.http_app()) as http:
        reply = await post(http, call(1, "whoami", {}), headers)
    assert_refused(
        reply, 400, -32600, "Bad request: the Authorization header must be Bearer and one token"
    )
    assert challenge(reply).startswith(
        'Bearer error="invalid_request", error_description="The Authorization header is malformed"'
    )
    assert ran == []


async def test_two_authorization_headers_are_400() -> None:
    server, _ = notes_server()
    headers = [(key, value) for key, value in mcp_headers("tools/call", "whoami").items()]
    headers += [("authorization", "Bearer reader"), ("authorization", "Bearer writer")]
    async with asgi_client(server.http_app()) as http:
        response = await http.post("/mcp", json=call(1, "whoami", {}), headers=headers)
    assert response.status_code == 400
    assert response.headers["www-authenticate"].startswith('Bearer error="invalid_request"')


async def test_a_verifier_that_cannot_decide_answers_503_with_retry_after() -> None:
    server, _ = notes_server()
    assert server.auth is not None
    verifier = server.auth.verifier  # type: ignore[union-attr]
    verifier.failure = VerifierUnavailable("the issuer's keys could not be fetched", retry_after=7)
    async with asgi_client(server.http_app()) as http:
        reply = await post(http, call(1, "whoami", {}), bearer("tools/call", "whoami", "reader"))
    assert_refused(
        reply, 503, -32603, "Service unavailable: the issuer's keys could not be fetched"
    )
    assert reply.headers["retry-after"] == "7"
    assert "www-authenticate" not in reply.headers


async def test_a_failing_verifier_is_a_401_with_a_reference_and_the_token_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = notes_server()
    verifier = server.auth.verifier  # type: ignore[union-attr]
    verifier.failure = RuntimeError("boom with secret-token-value")
    async with asgi_client(server.http_app()) as http:
        with caplog.at_level(logging.ERROR, logger="mcpserve.auth"):
            headers = bearer("tools/call", "whoami", "secret-token-value")
            reply = await post(http, call(1, "whoami", {}), headers)
    assert reply.status == 401
    message = reply.error["message"]
    assert message.startswith("Unauthorized: The access token could not be verified (ref ")
    ref = message.rsplit("ref ", 1)[1].rstrip(")")
    assert f"ref {ref}" in caplog.text
    assert "secret-token-value" not in reply.body.decode()
    # The exception names the token here (a verifier's bug); the log line itself does not.
    assert all("secret-token-value" not in record.getMessage() for record in caplog.records)


# ---------------------------------------------------------------------------- who is calling


async def test_the_verified_identity_reaches_the_handler() -> None:
    server, _ = notes_server()
    async with asgi_client(server.http_app()) as http:
        reply = await post(http, call(1, "whoami", {}), bearer("tools/call", "whoami", "writer"))
    assert reply.status == 200
    assert reply.result["structuredContent"] == {
        "principal": "alice", "scopes": ["notes:read", "notes:write"], "sub": "alice",
        "checked": True,
    }  # fmt: skip


async def test_required_scopes_refuse_a_token_without_them_with_403() -> None:
    server, ran = notes_server(required_scopes=["notes:read"])
    async with asgi_client(server.http_app()) as http:
        reply = await post(http, call(1, "whoami", {}), bearer("tools/call", "whoami", "none"))
        allowed = await post(http, call(2, "whoami", {}), bearer("tools/call", "whoami", "reader"))
    assert reply.status == 403
    assert reply.error == {
        "code": -32010,
        "message": "Insufficient scope: this request needs the scope notes:read",
        "data": {"requiredScopes": ["notes:read"]},
    }
    assert challenge(reply) == (
        'Bearer error="insufficient_scope", error_description="This request needs the scope '
        f'notes:read", resource_metadata="{METADATA_URL}", scope="notes:read"'
    )
    assert allowed.status == 200
    assert ran == ["whoami"]


# ---------------------------------------------------------------------------- scopes per primitive


async def test_a_tool_needing_a_scope_is_refused_with_403_before_it_runs() -> None:
    server, ran = notes_server(required_scopes=["notes:read"])
    async with asgi_client(server.http_app()) as http:
        message = call(1, "add_note", {"text": "hi"})
        refused = await post(http, message, bearer("tools/call", "add_note", "reader"))
        allowed = await post(http, message, bearer("tools/call", "add_note", "writer"))
    assert refused.status == 403
    assert refused.message["id"] == 1
    assert refused.error == {
        "code": -32010,
        "message": "Insufficient scope: this request needs the scope notes:write",
        "data": {"requiredScopes": ["notes:write"]},
    }
    # Every scope the operation needs, the server-wide ones included: one step-up suffices.
    assert 'error="insufficient_scope"' in challenge(refused)
    assert 'scope="notes:read notes:write"' in challenge(refused)
    assert f'resource_metadata="{METADATA_URL}"' in challenge(refused)
    assert allowed.status == 200
    assert allowed.result["content"] == [{"type": "text", "text": "added hi"}]
    assert ran == ["add_note"]


async def test_a_broader_scope_implies_the_narrower_ones() -> None:
    server, ran = notes_server(scope_hierarchy={"notes": ["notes:read", "notes:write"]})
    async with asgi_client(server.http_app()) as http:
        reply = await post(http, call(1, "add_note", {"text": "x"}),
                           bearer("tools/call", "add_note", "broad"))  # fmt: skip
        who = await post(http, call(2, "whoami", {}), bearer("tools/call", "whoami", "broad"))
    assert reply.status == 200
    assert ran == ["add_note", "whoami"]
    assert who.result["structuredContent"]["scopes"] == ["notes", "notes:read", "notes:write"]


async def test_lists_show_only_what_the_callers_scopes_allow() -> None:
    server, _ = notes_server()
    async with asgi_client(server.http_app()) as http:

        async def names(method: str, key: str, credential: str) -> tuple[list[str], str]:
            reply = await post(http, request(1, method), bearer(method, None, credential))
            assert reply.status == 200
            field = (
                "uri"
                if key == "resources"
                else "uriTemplate"
                if key == "resourceTemplates"
                else "name"
            )
            return [entry[field] for entry in reply.result[key]], reply.result["cacheScope"]

        assert await names("tools/list", "tools", "none") == (["whoami", "purge"], "private")
        assert await names("tools/list", "tools", "writer") == (
            ["whoami", "add_note", "purge"],
            "private",
        )
        assert await names("resources/list", "resources", "reader") == ([], "private")
        assert await names("resources/list", "resources", "writer") == (
            ["notes://secret"],
            "private",
        )
        assert await names("resources/templates/list", "resourceTemplates", "none") == (
            [],
            "private",
        )
        assert await names("resources/templates/list", "resourceTemplates", "reader") == (
            ["notes://{id}"],
            "private",
        )
        assert await names("prompts/list", "prompts", "reader") == ([], "private")
        assert await names("prompts/list", "prompts", "bob") == (["draft"], "private")


async def test_resources_templates_prompts_and_completions_need_their_scopes() -> None:
    server, _ = notes_server()
    secret = request(1, "resources/read", {"uri": "notes://secret"})
    note = request(2, "resources/read", {"uri": "notes://7"})
    draft = request(3, "prompts/get", {"name": "draft", "arguments": {"topic": "cats"}})
    complete = request(4, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "draft"},
        "argument": {"name": "topic", "value": "c"},
    })  # fmt: skip
    async with asgi_client(server.http_app()) as http:
        for message, name, needs in [
            (secret, "notes://secret", "notes:write"),
            (note, "notes://7", "notes:read"),
            (draft, "draft", "notes:write"),
            (complete, None, "notes:write"),
        ]:
            method = message["method"]
            refused = await post(http, message, bearer(method, name, "none"))
            assert refused.status == 403, (method, refused.body)
            assert refused.error["data"] == {"requiredScopes": [needs]}
            assert f'scope="{needs}"' in challenge(refused)
            allowed = await post(http, message, bearer(method, name, "bob"))
            assert allowed.status == 200, (method, allowed.body)
    assert allowed.result["completion"]["values"] == ["cats", "dogs"]


async def test_a_handler_can_demand_more_scope_at_runtime() -> None:
    server, ran = notes_server()
    admin = {"admin": token("erin", "notes:admin")}
    server.auth.verifier.tokens.update(admin)  # type: ignore[union-attr]
    async with asgi_client(server.http_app()) as http:
        refused = await post(http, call(1, "purge", {}), bearer("tools/call", "purge", "writer"))
        allowed = await post(http, call(2, "purge", {}), bearer("tools/call", "purge", "admin"))
    assert refused.status == 403
    assert refused.error == {
        "code": -32010,
        "message": "Insufficient scope: this request needs the scope notes:admin",
        "data": {"requiredScopes": ["notes:admin"]},
    }
    assert 'scope="notes:admin"' in challenge(refused)
    assert allowed.status == 200
    assert ran == ["purge"]


async def test_a_handshake_era_session_gets_the_same_403_step_up() -> None:
    server, ran = notes_server()
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with asgi_client(server.http_app()) as http:
        anonymous = await http.post("/mcp", json=initialize_message(), headers=legacy)
        headers = {**legacy, "authorization": "Bearer reader"}
        started = await http.post("/mcp", json=initialize_message(), headers=headers)
        session = started.headers["mcp-session-id"]
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers=headers)  # fmt: skip
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "add_note", "arguments": {"text": "x"}}}  # fmt: skip
        refused = await http.post("/mcp", json=message, headers=headers)
        headers["authorization"] = "Bearer writer"
        allowed = await http.post("/mcp", json={**message, "id": 3}, headers=headers)
    assert anonymous.status_code == 401
    assert started.status_code == 200
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == -32010
    assert 'scope="notes:write"' in refused.headers["www-authenticate"]
    assert allowed.status_code == 200
    assert ran == ["add_note"]


async def test_scopes_restrict_nothing_on_a_server_without_authentication() -> None:
    server, ran = notes_server()
    server.auth = None
    async with asgi_client(server.http_app()) as http:
        reply = await post(
            http, call(1, "add_note", {"text": "x"}), mcp_headers("tools/call", "add_note")
        )
        listed = await post(http, request(2, "tools/list"), mcp_headers("tools/list"))
    assert reply.status == 200
    assert [tool["name"] for tool in listed.result["tools"]] == ["whoami", "add_note", "purge"]
    assert ran == ["add_note"]


# ------------------------------------------------------------------ bound to the principal


async def test_a_request_state_issued_to_one_principal_is_refused_to_another() -> None:
    server = Server("asks", auth=ResourceServer(TableVerifier(TOKENS)))

    @server.tool
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {}})
        return f"{ctx.principal} said {answer.action}"

    capabilities = {"elicitation": {"form": {}}}
    first = call(1, "confirm", {}, **{"io.modelcontextprotocol/clientCapabilities": capabilities})
    async with asgi_client(server.http_app()) as http:
        asked = await post(http, first, bearer("tools/call", "confirm", "writer"))
        assert asked.result["resultType"] == "input_required"
        key = next(iter(asked.result["inputRequests"]))
        retry = call(
            2, "confirm", {}, **{"io.modelcontextprotocol/clientCapabilities": capabilities}
        )
        retry["params"]["requestState"] = asked.result["requestState"]
        retry["params"]["inputResponses"] = {key: {"action": "accept", "content": {}}}
        stolen = await post(http, retry, bearer("tools/call", "confirm", "bob"))
        owned = await post(http, retry, bearer("tools/call", "confirm", "writer"))
    assert stolen.status == 200
    assert stolen.error["code"] == -32602
    assert owned.result["content"] == [{"type": "text", "text": "alice said accept"}]


async def test_a_listen_leaves_out_resources_the_caller_may_not_read() -> None:
    server, _ = notes_server()
    requested = {"resourceSubscriptions": ["notes://secret", "notes://7"]}
    reader = server.subscriptions.honoured(requested, TOKENS_AUTH["reader"])
    writer = server.subscriptions.honoured(requested, TOKENS_AUTH["writer"])
    assert reader == {"resourceSubscriptions": ["notes://7"]}
    assert writer == requested


async def test_a_handshake_era_subscribe_needs_the_resources_scopes() -> None:
    server, _ = notes_server()
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream",
              "authorization": "Bearer reader"}  # fmt: skip
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(), headers=legacy)
        headers = {**legacy, "mcp-session-id": started.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}  # fmt: skip
        subscribe = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                     "params": {"uri": "notes://secret"}}  # fmt: skip
        refused = await http.post("/mcp", json=subscribe, headers=headers)
        allowed = await http.post("/mcp", json={**subscribe, "id": 3, "params": {"uri": "notes://7"}},
                                  headers=headers)  # fmt: skip
    assert refused.status_code == 403
    assert refused.json()["error"]["data"] == {"requiredScopes": ["notes:write"]}
    assert allowed.status_code == 200
    assert allowed.json()["result"] == {}


async def test_a_task_belongs_to_the_principal_whose_token_started_it() -> None:
    server = Server("tasks", auth=ResourceServer(TableVerifier(TOKENS)))

    @server.tool(task="optional", scopes=["notes:write"])
    async def export(ctx: Context) -> str:
        return f"exported for {ctx.principal}"

    capabilities = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    declared = {"io.modelcontextprotocol/clientCapabilities": capabilities}
    start = call(1, "export", {}, **declared)
    async with server.running(), asgi_client(server.http_app()) as http:
        refused = await post(http, start, bearer("tools/call", "export", "reader"))
        created = await post(http, start, bearer("tools/call", "export", "writer"))
        task_id = created.result["taskId"]
        get = request(2, "tasks/get", {"taskId": task_id}, **declared)
        other = await post(http, get, bearer("tasks/get", task_id, "bob"))
        own = await post(http, get, bearer("tasks/get", task_id, "writer"))
    assert refused.status == 403  # no task is made for a caller that may not call the tool
    assert other.error == {
        "code": -32602,
        "message": "Task not found (unknown, expired, or not yours)",
    }
    assert own.result["taskId"] == task_id


async def test_the_verifier_is_closed_when_the_app_shuts_down() -> None:
    closed: list[bool] = []

    class Closing(TableVerifier):
        async def aclose(self) -> None:
            closed.append(True)

    server = Server("closing", auth=ResourceServer(Closing(TOKENS)))
    app = server.http_app()
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan"}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert closed == [True]


async def test_a_handshake_era_session_belongs_to_the_principal_that_started_it() -> None:
    server, ran = notes_server()
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream",
              "mcp-protocol-version": "2025-11-25"}  # fmt: skip
    async with asgi_client(server.http_app()) as http:
        started = await http.post("/mcp", json=initialize_message(),
                                  headers={**legacy, "authorization": "Bearer writer"})  # fmt: skip
        session = {"mcp-session-id": started.headers["mcp-session-id"]}
        alice = {**legacy, **session, "authorization": "Bearer writer"}
        bob = {**legacy, **session, "authorization": "Bearer bob"}
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "add_note", "arguments": {"text": "x"}}}  # fmt: skip
        stolen = await http.post("/mcp", json=message, headers=bob)
        stolen_get = await http.get("/mcp", headers=bob)
        stolen_delete = await http.delete("/mcp", headers=bob)
        own = await http.post("/mcp", json={**message, "id": 3}, headers=alice)
    not_found = "Session not found: send initialize to start a new one"
    assert stolen.status_code == 404
    assert stolen.json()["error"] == {"code": -32600, "message": not_found}
    assert stolen_get.status_code == 404
    assert stolen_delete.status_code == 404
    assert own.status_code == 200  # the DELETE by another principal ended nothing
    assert ran == ["add_note"]


async def test_a_shared_session_keeps_its_principal_on_another_instance(
    redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPSERVE_REDIS_URL", raising=False)
    first, _ = notes_server(redis.url)
    second, ran = notes_server(redis.url)
    legacy = {"content-type": "application/json", "accept": "application/json, text/event-stream",
              "mcp-protocol-version": "2025-11-25"}  # fmt: skip
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "add_note", "arguments": {"text": "x"}}}  # fmt: skip
    apps = [first.http_app(), second.http_app()]
    async with (
        first.running(),
        second.running(),
        asgi_client(apps[0]) as one,
        asgi_client(apps[1]) as two,
    ):
        started = await one.post("/mcp", json=initialize_message(),
                                 headers={**legacy, "authorization": "Bearer writer"})  # fmt: skip
        session = {"mcp-session-id": started.headers["mcp-session-id"]}
        bob = {**legacy, **session, "authorization": "Bearer bob"}
        alice = {**legacy, **session, "authorization": "Bearer writer"}
        stolen = await two.post("/mcp", json=message, headers=bob)
        own = await two.post("/mcp", json={**message, "id": 3}, headers=alice)
        for app in apps:  # what the ASGI lifespan's shutdown does: closes the Redis client
            await app.handshake.aclose()  # type: ignore[attr-defined]
    assert stolen.status_code == 404
    assert own.status_code == 200
    assert ran == ["add_note"]
