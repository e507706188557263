"""Streamable HTTP on the wire: every check of ``transports/http.py``, valid and hostile.

Most cases go through ``httpx2.ASGITransport`` (fast, in process); a smaller set runs against
a real uvicorn subprocess on 127.0.0.1. Every JSON body and SSE event received is validated
against the official 2026-07-28 schema (``wire_helpers.decode_reply``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcpserve import Auth, Server
from servers.basic import server
from wire_helpers import (
    BASIC,
    TIMEOUT,
    VERSION,
    HTTPServerProcess,
    Reply,
    asgi_client,
    asgi_raw,
    call,
    decode_reply,
    encode,
    http_server_process,
    mcp_headers,
    meta,
    parse_sse,
    post,
    request,
    same_id,
    wait_for_file,
)
from wire_schema import check, check_response


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def text_of(reply: Reply) -> str:
    return reply.result["content"][0]["text"]  # type: ignore[no-any-return]


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with asgi_client(server.http_app()) as http:
        yield http


@pytest.fixture
def markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MCPSERVE_TEST_MARKER_DIR", str(tmp_path))
    return tmp_path


ECHO = call(1, "echo", {"text": "hi"})


def assert_error(
    reply: Reply, status: int, code: int, *, request_id: Any = None, has_id: bool = True
) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body[:500])
    assert reply.headers["content-type"].startswith("application/json")
    error = reply.error
    assert error["code"] == code, error
    if has_id:
        assert same_id(reply.message.get("id"), request_id), reply.message
    else:
        assert "id" not in reply.message, reply.message
    if code == -32020:
        check("HeaderMismatchError", reply.message)
    elif code == -32021:
        check("MissingRequiredClientCapabilityError", reply.message)
    elif code == -32022:
        check("UnsupportedProtocolVersionError", reply.message)
    return error  # type: ignore[no-any-return]


# =========================================================================== the happy path


async def test_discover_and_list_over_http(client: httpx2.AsyncClient) -> None:
    reply = await post(client, request("d", "server/discover"))
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert int(reply.headers["content-length"]) == len(reply.body)
    assert VERSION in reply.result["supportedVersions"]
    assert reply.result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "wire-test"

    reply = await post(client, request(1, "tools/list"))
    names = [tool["name"] for tool in reply.result["tools"]]
    assert "add" in names
    assert "execute_sql" in names


async def test_plain_tool_answers_json(client: httpx2.AsyncClient) -> None:
    reply = await post(client, call(2, "add", {"a": 1, "b": 2}))
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert not reply.is_sse
    assert reply.result["structuredContent"] == {"total": 3}
    assert reply.message["id"] == 2


async def test_resources_prompts_completion(client: httpx2.AsyncClient) -> None:
    reply = await post(client, request(1, "resources/read", {"uri": "file:///a.txt"}))
    assert reply.result["contents"][0]["text"] == "hello from a.txt"
    reply = await post(client, request(2, "resources/templates/list"))
    assert reply.result["resourceTemplates"][0]["uriTemplate"] == "notes://{note_id}"
    reply = await post(
        client, request(3, "prompts/get", {"name": "greet", "arguments": {"who": "Q"}})
    )
    assert reply.result["messages"][0]["content"]["text"] == "Hello, Q!"
    reply = await post(
        client,
        request(
            4,
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "who", "value": "b"},
            },
        ),
    )
    assert reply.result["completion"]["values"] == ["bob"]


@pytest.mark.parametrize("request_id", [0, "", "0", -7, "x" * 300, 2**64, -(10**30)])
async def test_ids_echoed_with_type(client: httpx2.AsyncClient, request_id: Any) -> None:
    reply = await post(client, call(request_id, "echo", {"text": "id"}))
    assert same_id(reply.message["id"], request_id)
    assert json.loads(reply.body)["id"] == request_id  # digit for digit, not a float


# =========================================================================== row 1: path


@pytest.mark.parametrize("path", ["/", "/mcpx", "/mcp/x", "/MCP", "/api/mcp", "/mc", "/mcp.json"])
async def test_wrong_path_is_404(client: httpx2.AsyncClient, path: str) -> None:
    response = await client.post(
        path, content=encode(ECHO), headers=mcp_headers("tools/call", "echo")
    )
    assert response.status_code == 404


async def test_wrong_path_wins_over_everything(client: httpx2.AsyncClient) -> None:
    response = await client.get(
        "/nope", headers={"host": "evil.example", "origin": "https://evil.example"}
    )
    assert response.status_code == 404


async def test_trailing_slash_path_works(client: httpx2.AsyncClient) -> None:
    reply = await post(client, ECHO, path="/mcp/")
    assert reply.status == 200
    assert text_of(reply) == "hi"


async def test_custom_path() -> None:
    async with asgi_client(server.http_app("/api/v1/mcp/")) as http:
        assert text_of(await post(http, ECHO, path="/api/v1/mcp")) == "hi"
        assert text_of(await post(http, ECHO, path="/api/v1/mcp/")) == "hi"
        response = await http.post(
            "/mcp", content=encode(ECHO), headers=mcp_headers("tools/call", "echo")
        )
        assert response.status_code == 404


# =========================================================================== row 2: Host


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8000",
        "127.0.0.1",
        "127.0.0.1:1",
        "[::1]:8080",
        "[::1]",
        "LOCALHOST:9",
    ],
)
async def test_loopback_hosts_allowed(client: httpx2.AsyncClient, host: str) -> None:
    headers = {**mcp_headers("tools/call", "echo"), "host": host}
    reply = await post(client, ECHO, headers)
    assert reply.status == 200
    assert text_of(reply) == "hi"


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:80",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
        "[::2]:80",
        "10.0.0.1:8000",
        "127.0.0.1@evil.example",
    ],
)
async def test_foreign_host_is_421(client: httpx2.AsyncClient, host: str) -> None:
    headers = {**mcp_headers("tools/call", "echo"), "host": host}
    reply = await post(client, ECHO, headers)
    error = assert_error(reply, 421, -32600, has_id=False)
    assert host.lower() in error["message"]


async def test_missing_host_is_421() -> None:
    headers = [(k.encode(), v.encode()) for k, v in mcp_headers("tools/call", "echo").items()]
    status, _, body = await asgi_raw(server.http_app(), headers=headers, body=encode(ECHO))
    assert status == 421
    message = json.loads(body)
    check_response(None, message)
    assert "Host" in message["error"]["message"]


async def test_host_checked_before_method(client: httpx2.AsyncClient) -> None:
    response = await client.get("/mcp", headers={"host": "evil.example"})
    assert response.status_code == 421


async def test_allowed_hosts_replace_the_loopback_default() -> None:
    app = server.http_app(allowed_hosts=["api.example.com", "Other.Example:8443"])
    async with asgi_client(app) as http:
        for host in ("api.example.com", "api.example.com:443", "other.example"):
            reply = await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "host": host})
            assert reply.status == 200, host
        for host in ("localhost", "127.0.0.1:8000", "evil.example"):
            reply = await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "host": host})
            assert reply.status == 421, host


async def test_public_url_adds_its_host_and_origin() -> None:
    app = server.http_app(public_url="https://mcp.example.com/mcp")
    async with asgi_client(app) as http:
        headers = {**mcp_headers("tools/call", "echo"), "host": "mcp.example.com"}
        assert (await post(http, ECHO, headers)).status == 200
        headers["origin"] = "https://mcp.example.com"
        assert (await post(http, ECHO, headers)).status == 200
        headers["origin"] = "https://evil.example"
        assert (await post(http, ECHO, headers)).status == 403
        assert (
            await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "host": "localhost"})
        ).status == 200
        assert (
            await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "host": "x.example"})
        ).status == 421


def test_public_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="public_url"):
        server.http_app(public_url="ftp://files.example")


async def test_bind_host_is_allowed() -> None:
    async with asgi_client(server.http_app(bind_host="10.1.2.3")) as http:
        headers = {**mcp_headers("tools/call", "echo"), "host": "10.1.2.3:8000"}
        assert (await post(http, ECHO, headers)).status == 200


async def test_env_allowed_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPSERVE_ALLOWED_HOSTS", " api.example.com , other.example ")
    app = server.http_app()
    async with asgi_client(app) as http:
        for host, status in (
            ("api.example.com", 200),
            ("other.example:1", 200),
            ("localhost", 421),
        ):
            reply = await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "host": host})
            assert reply.status == status, host
    # An explicit argument beats the environment.
    async with asgi_client(server.http_app(allowed_hosts=["localhost"])) as http:
        reply = await post(
            http, ECHO, {**mcp_headers("tools/call", "echo"), "host": "api.example.com"}
        )
        assert reply.status == 421


async def test_env_wildcard_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPSERVE_ALLOWED_HOSTS", "*")
    async with asgi_client(server.http_app()) as http:
        reply = await post(
            http, ECHO, {**mcp_headers("tools/call", "echo"), "host": "anything.example"}
        )
        assert reply.status == 200


async def test_env_public_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPSERVE_PUBLIC_URL", "https://public.example/mcp")
    async with asgi_client(server.http_app()) as http:
        reply = await post(
            http, ECHO, {**mcp_headers("tools/call", "echo"), "host": "public.example"}
        )
        assert reply.status == 200


# =========================================================================== row 3: Origin


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:5173", "http://127.0.0.1", "https://localhost", "http://[::1]:3000"],
)
async def test_loopback_origins_allowed(client: httpx2.AsyncClient, origin: str) -> None:
    reply = await post(client, ECHO, {**mcp_headers("tools/call", "echo"), "origin": origin})
    assert reply.status == 200
    assert text_of(reply) == "hi"


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example:80",
        "file://localhost",
        "chrome-extension://abcdef",
        "",
        "https://evil.example:443",
        # No browser sends these; each names a loopback host somewhere in it.
        "http://127.0.0.1, https://evil.example",
        "http://localhost:5173,http://localhost",
        "http://evil@127.0.0.1:8000",
        "http://localhost/path",
        "http://localhost/",
        "http://localhost?x=1",
        "http://[::1",
    ],
)
async def test_foreign_origin_is_403_naming_it(client: httpx2.AsyncClient, origin: str) -> None:
    reply = await post(client, ECHO, {**mcp_headers("tools/call", "echo"), "origin": origin})
    error = assert_error(reply, 403, -32600, has_id=False)
    assert repr(origin) in error["message"] or origin in error["message"]
    assert error["message"].startswith("Forbidden")


async def test_origin_checked_before_method(client: httpx2.AsyncClient) -> None:
    response = await client.get("/mcp", headers={"origin": "https://evil.example"})
    assert response.status_code == 403
    assert "https://evil.example" in response.json()["error"]["message"]


async def test_allowed_origins_list() -> None:
    app = server.http_app(allowed_origins=["https://app.example"])
    async with asgi_client(app) as http:
        for origin, status in (
            ("https://app.example", 200),
            ("https://app.example/", 200),
            ("http://app.example", 403),
            ("http://localhost:3000", 403),
        ):
            reply = await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "origin": origin})
            assert reply.status == status, origin


async def test_env_allowed_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPSERVE_ALLOWED_ORIGINS", "https://a.example,https://b.example")
    async with asgi_client(server.http_app()) as http:
        for origin, status in (("https://b.example", 200), ("https://c.example", 403)):
            reply = await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "origin": origin})
            assert reply.status == status, origin


async def test_wildcard_origins() -> None:
    async with asgi_client(server.http_app(allowed_origins=["*"])) as http:
        reply = await post(
            http, ECHO, {**mcp_headers("tools/call", "echo"), "origin": "https://x.example"}
        )
        assert reply.status == 200
        # The Host check still applies.
        reply = await post(http, ECHO, {**mcp_headers("tools/call", "echo"), "host": "x.example"})
        assert reply.status == 421


# =========================================================================== row 3b: auth


def _bearer(headers: Mapping[str, str]) -> Auth | None:
    if headers.get("authorization") == "Bearer good-token":
        return Auth(principal="alice", scopes=frozenset({"read", "write"}))
    return None


async def _async_bearer(headers: Mapping[str, str]) -> Auth | None:
    await asyncio.sleep(0)
    return _bearer(headers)


WHO = call(1, "principal", {})


@pytest.mark.parametrize("hook", [_bearer, _async_bearer])
async def test_authenticate_hook_accepts_and_passes_the_principal(hook: Any) -> None:
    async with asgi_client(server.http_app(authenticate=hook)) as http:
        headers = {**mcp_headers("tools/call", "principal"), "authorization": "Bearer good-token"}
        reply = await post(http, WHO, headers)
        assert reply.status == 200
        assert text_of(reply) == "alice read write"


@pytest.mark.parametrize("credentials", [None, "Bearer bad-token", "Basic Zm9vOmJhcg==", ""])
async def test_authenticate_hook_rejection_is_401(credentials: str | None) -> None:
    async with asgi_client(server.http_app(authenticate=_bearer)) as http:
        headers = mcp_headers("tools/call", "principal")
        if credentials is not None:
            headers["authorization"] = credentials
        reply = await post(http, WHO, headers)
        assert_error(reply, 401, -32600, has_id=False)
        assert reply.headers["www-authenticate"].startswith("Bearer")
        assert b"alice" not in reply.body


async def test_without_hook_callers_are_anonymous(client: httpx2.AsyncClient) -> None:
    headers = {**mcp_headers("tools/call", "principal"), "authorization": "Bearer good-token"}
    assert text_of(await post(client, WHO, headers)) == "anonymous"


async def test_auth_runs_after_host_and_origin_and_before_method() -> None:
    calls: list[str] = []

    def hook(headers: Mapping[str, str]) -> Auth | None:
        calls.append(headers.get("authorization", ""))
        return _bearer(headers)

    async with asgi_client(server.http_app(authenticate=hook)) as http:
        bad_origin = {"origin": "https://evil.example"}
        assert (await http.get("/mcp", headers=bad_origin)).status_code == 403
        assert (await http.get("/mcp", headers={"host": "evil.example"})).status_code == 421
        assert calls == []
        response = await http.get("/mcp")
        assert response.status_code == 401
        response = await http.get("/mcp", headers={"authorization": "Bearer good-token"})
        assert response.status_code == 405
        response = await http.post("/mcp", content=b"nope", headers={"content-type": "text/plain"})
        assert response.status_code == 401


# =========================================================================== row 4: method


@pytest.mark.parametrize("verb", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"])
async def test_other_methods_are_405_allow_post(client: httpx2.AsyncClient, verb: str) -> None:
    headers = {**mcp_headers("tools/list"), "accept": "text/event-stream"}
    response = await client.request(verb, "/mcp", headers=headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert "mcp-session-id" not in response.headers


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
async def test_get_and_delete_with_an_unknown_session_are_404(
    client: httpx2.AsyncClient, verb: str
) -> None:
    # A dual-era server routes GET/DELETE with a session id to the
    # handshake era, where an unknown session is 404.
    headers = {"accept": "text/event-stream", "mcp-session-id": "abc"}
    response = await client.request(verb, "/mcp", headers=headers)
    assert response.status_code == 404
    assert "mcp-session-id" not in response.headers


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
async def test_modern_only_server_answers_get_and_delete_with_a_session_id_405(
    verb: str,
) -> None:
    modern_only = Server("modern-only", legacy=False)
    async with asgi_client(modern_only.http_app()) as http:
        headers = {"accept": "text/event-stream", "mcp-session-id": "abc"}
        response = await http.request(verb, "/mcp", headers=headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


async def test_method_checked_before_content_type(client: httpx2.AsyncClient) -> None:
    response = await client.put("/mcp", content=b"<xml/>", headers={"content-type": "text/xml"})
    assert response.status_code == 405


# =========================================================================== row 5: Content-Type


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "application/jsonx",
        "application/json-seq",
        "text/json",
    ],
)
async def test_non_json_content_type_is_415(
    client: httpx2.AsyncClient, content_type: str | None
) -> None:
    headers = mcp_headers("tools/call", "echo")
    headers.pop("content-type")
    if content_type is not None:
        headers["content-type"] = content_type
    reply = await post(client, ECHO, headers)
    assert_error(reply, 415, -32600, has_id=False)


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-8",
        "Application/JSON",
        " application/json ",
        "application/json;",
    ],
)
async def test_json_content_type_variants_accepted(
    client: httpx2.AsyncClient, content_type: str
) -> None:
    reply = await post(
        client, ECHO, {**mcp_headers("tools/call", "echo"), "content-type": content_type}
    )
    assert reply.status == 200


async def test_content_type_checked_before_size() -> None:
    async with asgi_client(server.http_app(max_body_bytes=100)) as http:
        headers = {**mcp_headers("tools/call", "echo"), "content-type": "text/plain"}
        response = await http.post("/mcp", content=b"x" * 1000, headers=headers)
        assert response.status_code == 415


# =========================================================================== row 6: size


async def _chunks(data: bytes, size: int = 512) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def test_body_over_limit_with_content_length_is_413() -> None:
    async with asgi_client(server.http_app(max_body_bytes=2048)) as http:
        body = encode(call(1, "echo", {"text": "x" * 4000}))
        reply = await post(http, None, mcp_headers("tools/call", "echo"), content=body)
        error = assert_error(reply, 413, -32600, has_id=False)
        assert "2048" in error["message"]


async def test_body_over_limit_without_content_length_is_413() -> None:
    async with asgi_client(server.http_app(max_body_bytes=2048)) as http:
        body = encode(call(1, "echo", {"text": "x" * 4000}))
        response = await http.post(
            "/mcp", content=_chunks(body), headers=mcp_headers("tools/call", "echo")
        )
        assert "content-length" not in response.request.headers
        reply = decode_reply(None, response)
        assert_error(reply, 413, -32600, has_id=False)


async def test_body_exactly_at_limit_is_accepted() -> None:
    limit = 2048
    async with asgi_client(server.http_app(max_body_bytes=limit)) as http:
        body = encode(call(1, "echo", {"text": "fits"}))
        body += b" " * (limit - len(body))
        assert len(body) == limit
        reply = await post(http, call(1, "echo", {"text": "fits"}), content=body)
        assert reply.status == 200
        assert text_of(reply) == "fits"
        streamed = await http.post(
            "/mcp", content=_chunks(body, 100), headers=mcp_headers("tools/call", "echo")
        )
        assert streamed.status_code == 200
        reply = await post(http, None, mcp_headers("tools/call", "echo"), content=body + b" ")
        assert reply.status == 413


async def test_size_checked_before_parsing() -> None:
    async with asgi_client(server.http_app(max_body_bytes=100)) as http:
        response = await http.post(
            "/mcp", content=b"{" * 1000, headers=mcp_headers("tools/call", "echo")
        )
        assert response.status_code == 413


# =========================================================================== rows 7-8: body


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b'{"jsonrpc": "2.0", "id": 1', b"\xff\xfe", b"{'a': 1}", b"{} {}", b"  "],
)
async def test_unparsable_body_is_400_parse_error(client: httpx2.AsyncClient, body: bytes) -> None:
    reply = await post(client, None, mcp_headers("tools/call", "echo"), content=body)
    assert_error(reply, 400, -32700, has_id=False)


@pytest.mark.parametrize("batch", [[], [ECHO], [ECHO, call(2, "echo", {"text": "b"})]])
async def test_batch_is_400_invalid_request(client: httpx2.AsyncClient, batch: list[Any]) -> None:
    reply = await post(client, None, mcp_headers("tools/call", "echo"), content=encode(batch))
    error = assert_error(reply, 400, -32600, has_id=False)
    assert "batch" in error["message"]


@pytest.mark.parametrize(
    ("message", "echoed"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, 1),
        ({"jsonrpc": "2.0", "id": "r", "error": {"code": -1, "message": "x"}}, "r"),
        ("a string", None),
        (7, None),
        (None, None),
        ({"jsonrpc": "1.0", "id": 3, "method": "tools/list"}, 3),
        ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": False, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": [1]}, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": ["tools/list"]}, 6),
    ],
)
async def test_not_one_request_is_400_invalid_request(
    client: httpx2.AsyncClient, message: Any, echoed: Any
) -> None:
    reply = await post(client, None, mcp_headers("tools/list"), content=encode(message))
    assert_error(reply, 400, -32600, request_id=echoed, has_id=echoed is not None)


NOTIFICATION = {
    "jsonrpc": "2.0",
    "method": "notifications/cancelled",
    "params": {"requestId": 2, "reason": "User requested cancellation"},
}


@pytest.mark.parametrize("with_method_header", [True, False])
async def test_notification_is_202_with_empty_body(
    client: httpx2.AsyncClient, with_method_header: bool
) -> None:
    headers = mcp_headers("notifications/cancelled")
    if not with_method_header:
        headers.pop("mcp-method")
        headers.pop("mcp-protocol-version")
    response = await client.post("/mcp", content=encode(NOTIFICATION), headers=headers)
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize(
    "sent", ["notifications/progress", "NOTIFICATIONS/CANCELLED", "tools/call"]
)
async def test_notification_with_mismatched_method_header_is_400(
    client: httpx2.AsyncClient, sent: str
) -> None:
    reply = await post(client, NOTIFICATION, mcp_headers(sent))
    assert_error(reply, 400, -32020, has_id=False)


async def test_posted_cancel_notification_does_not_cancel(client: httpx2.AsyncClient) -> None:
    """Request ids are not unique across HTTP clients, so a POSTed cancel is ignored."""
    slow = asyncio.create_task(post(client, call(2, "sleepy", {"seconds": 0.3, "tag": "kept"})))
    await asyncio.sleep(0.05)
    response = await client.post(
        "/mcp", content=encode(NOTIFICATION), headers=mcp_headers("notifications/cancelled")
    )
    assert response.status_code == 202
    reply = await asyncio.wait_for(slow, TIMEOUT)
    assert text_of(reply) == "slept kept"


# ====================================================================== row 9: required headers


@pytest.mark.parametrize(
    "missing", [["mcp-protocol-version"], ["mcp-method"], ["mcp-protocol-version", "mcp-method"]]
)
async def test_missing_version_or_method_header_is_32020(
    client: httpx2.AsyncClient, missing: list[str]
) -> None:
    headers = mcp_headers("tools/list")
    for name in missing:
        headers.pop(name)
    reply = await post(client, request(9, "tools/list"), headers)
    error = assert_error(reply, 400, -32020, request_id=9)
    assert "missing" in error["message"]


async def test_missing_headers_checked_before_meta(client: httpx2.AsyncClient) -> None:
    headers = mcp_headers("tools/list")
    headers.pop("mcp-method")
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    assert_error(await post(client, body, headers), 400, -32020, request_id=9)


# =========================================================================== row 10: _meta


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"_meta": {}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}},
        {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": 2026,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": [],
            }
        },
        {"_meta": "2026-07-28"},
    ],
)
async def test_missing_meta_is_400_32602(client: httpx2.AsyncClient, params: Any) -> None:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    if params is not None:
        body["params"] = params
    reply = await post(client, body, mcp_headers("tools/list"))
    assert_error(reply, 400, -32602, request_id=5)


async def test_meta_checked_before_version_mismatch(client: httpx2.AsyncClient) -> None:
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}
    reply = await post(client, body, mcp_headers("tools/list", version="1999-01-01"))
    assert_error(reply, 400, -32602, request_id=5)


# =========================================================================== row 11: header = body


async def test_version_header_body_mismatch_is_32020(client: httpx2.AsyncClient) -> None:
    reply = await post(
        client, request(6, "tools/list"), mcp_headers("tools/list", version="2025-06-18")
    )
    error = assert_error(reply, 400, -32020, request_id=6)
    assert "MCP-Protocol-Version" in error["message"]


async def test_mismatch_checked_before_version_support(client: httpx2.AsyncClient) -> None:
    body = request(6, "tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
    reply = await post(client, body, mcp_headers("tools/list"))
    assert_error(reply, 400, -32020, request_id=6)


@pytest.mark.parametrize("sent", ["tools/call", "TOOLS/LIST", "tools/list/", "tools/lis", ""])
async def test_method_header_mismatch_is_32020(client: httpx2.AsyncClient, sent: str) -> None:
    reply = await post(client, request(6, "tools/list"), mcp_headers(sent))
    error = assert_error(reply, 400, -32020, request_id=6)
    assert "Mcp-Method" in error["message"]


async def test_header_values_are_trimmed(client: httpx2.AsyncClient) -> None:
    headers = mcp_headers(" tools/call\t", " \techo ", version=f"  {VERSION} ")
    reply = await post(client, ECHO, headers)
    assert reply.status == 200
    assert text_of(reply) == "hi"


# =========================================================================== row 12: version


@pytest.mark.parametrize(
    "version", ["1900-01-01", "2099-12-31", "2025-11-25", "2026-07-28 ", "latest"]
)
async def test_unsupported_version_is_32022_with_data(
    client: httpx2.AsyncClient, version: str
) -> None:
    body = request(7, "tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = version
    reply = await post(client, body, mcp_headers("tools/list", version=version))
    if version.strip() != version:
        # The header is trimmed, the body is not: that is a mismatch, reported first.
        assert_error(reply, 400, -32020, request_id=7)
        return
    error = assert_error(reply, 400, -32022, request_id=7)
    assert error["data"]["requested"] == version
    assert VERSION in error["data"]["supported"]


async def test_version_checked_before_method(client: httpx2.AsyncClient) -> None:
    body = request(7, "no/such/method")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
    reply = await post(client, body, mcp_headers("no/such/method", version="1900-01-01"))
    assert_error(reply, 400, -32022, request_id=7)


@pytest.mark.parametrize("with_headers", [False, True])
async def test_legacy_initialize_is_32022_when_legacy_is_off(with_headers: bool) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "legacy", "version": "1"},
        },
    }
    headers = (
        mcp_headers("initialize", version="2025-11-25")
        if with_headers
        else {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    )
    modern_only = Server("modern-only", legacy=False)
    async with asgi_client(modern_only.http_app()) as client:
        reply = await post(client, body, headers)
    error = assert_error(reply, 400, -32022, request_id=0)
    assert error["data"]["supported"] == [VERSION]
    assert VERSION in error["message"]


# =========================================================================== row 13: method


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("no/such/method", {}),
        ("resources/subscribe", {"uri": "file:///a.txt"}),
        ("resources/unsubscribe", {"uri": "file:///a.txt"}),
        ("ping", {}),
        ("logging/setLevel", {"level": "info"}),
        ("tasks/get", {"taskId": "t-1"}),
        ("initialize", {}),
    ],
)
async def test_unknown_method_is_404_32601(
    client: httpx2.AsyncClient, method: str, params: dict[str, Any]
) -> None:
    reply = await post(client, request(8, method, params), mcp_headers(method))
    error = assert_error(reply, 404, -32601, request_id=8)
    assert method in error["message"]


# =========================================================================== row 14: Mcp-Name


async def test_missing_mcp_name_is_32020(client: httpx2.AsyncClient) -> None:
    for message, method in (
        (ECHO, "tools/call"),
        (request(2, "prompts/get", {"name": "greet", "arguments": {"who": "x"}}), "prompts/get"),
        (request(3, "resources/read", {"uri": "file:///a.txt"}), "resources/read"),
    ):
        reply = await post(client, message, mcp_headers(method))
        error = assert_error(reply, 400, -32020, request_id=message["id"])
        assert "Mcp-Name" in error["message"]


@pytest.mark.parametrize(
    "sent", ["Echo", "ECHO", "add", "echo2", "=?BASE64?ZWNobw==?=", "=?base64?ZWNobw==", "e cho"]
)
async def test_mismatched_mcp_name_is_32020(client: httpx2.AsyncClient, sent: str) -> None:
    reply = await post(client, ECHO, mcp_headers("tools/call", sent))
    error = assert_error(reply, 400, -32020, request_id=1)
    assert "Mcp-Name" in error["message"]


@pytest.mark.parametrize(
    "sent", [" echo", "echo ", "\techo\t", "  echo  ", b64("echo"), f" {b64('echo')} "]
)
async def test_mcp_name_trimmed_and_base64_decoded(client: httpx2.AsyncClient, sent: str) -> None:
    reply = await post(client, ECHO, mcp_headers("tools/call", sent))
    assert reply.status == 200
    assert text_of(reply) == "hi"


async def test_base64_name_for_non_ascii_uri(client: httpx2.AsyncClient) -> None:
    uri = "file:///notes/café.md"
    header = "=?base64?ZmlsZTovLy9ub3Rlcy9jYWbDqS5tZA==?="
    assert header == b64(uri)
    reply = await post(
        client, request(30, "resources/read", {"uri": uri}), mcp_headers("resources/read", header)
    )
    assert reply.status == 200
    assert reply.error["code"] == -32602
    assert reply.error["data"] == {"uri": uri}
    # A template resource found through a base64 name.
    uri = "notes://café"
    reply = await post(
        client, request(31, "resources/read", {"uri": uri}), mcp_headers("resources/read", b64(uri))
    )
    assert reply.result["contents"][0]["text"] == "note café"


@pytest.mark.parametrize(
    "sent",
    [
        "=?base64?ZWNobw=?=",  # bad padding
        "=?base64?ZWNobw?=",  # no padding
        "=?base64?!!!!?=",  # not base64 characters
        "=?base64?ZWNob x==?=",  # a space inside
        "=?base64?ZWNoYw==?=",  # valid base64 but not "echo"
        "=?base64?/w==?=",  # not UTF-8
        "=?base64?ZWNobx==?=",  # non-canonical padding bits
    ],
)
async def test_bad_base64_name_is_32020(client: httpx2.AsyncClient, sent: str) -> None:
    reply = await post(client, ECHO, mcp_headers("tools/call", sent))
    assert_error(reply, 400, -32020, request_id=1)


@pytest.mark.parametrize(
    "raw",
    [
        b"echo\r\nX-Injected: 1",
        b"echo\nX-Injected: 1",
        b"echo\r",
        b"ec\x00ho",
        b"echo\x7f",
        "café".encode(),
        b"echo\x1b[31m",
    ],
)
async def test_control_characters_in_mcp_name_are_32020(raw: bytes) -> None:
    headers = [(k.encode(), v.encode()) for k, v in mcp_headers("tools/call").items()]
    headers += [(b"host", b"127.0.0.1"), (b"mcp-name", raw)]
    status, response_headers, body = await asgi_raw(
        server.http_app(), headers=headers, body=encode(ECHO)
    )
    assert status == 400
    assert "x-injected" not in response_headers
    message = json.loads(body)
    check("HeaderMismatchError", message)
    text = message["error"]["message"]
    assert "\r" not in text
    assert "\n" not in text
    assert "\x00" not in text
    assert "\x1b" not in text


async def test_name_checked_before_capabilities(client: httpx2.AsyncClient) -> None:
    reply = await post(
        client, call(3, "deploy", {"env": "prod"}), mcp_headers("tools/call", "other")
    )
    assert_error(reply, 400, -32020, request_id=3)


async def test_unknown_method_checked_before_name(client: httpx2.AsyncClient) -> None:
    reply = await post(
        client, request(8, "tasks/get", {"taskId": "t1"}), mcp_headers("tasks/get", "t2")
    )
    assert_error(reply, 404, -32601, request_id=8)


# --------------------------------------------------------------------------- Mcp-Param-*


def sql(region: Any, request_id: Any = 1) -> dict[str, Any]:
    return call(request_id, "execute_sql", {"region": region, "query": "SELECT 1"})


@pytest.mark.parametrize("sent", ["us-west1", " us-west1 ", b64("us-west1")])
async def test_param_header_present_and_equal(client: httpx2.AsyncClient, sent: str) -> None:
    reply = await post(
        client, sql("us-west1"), mcp_headers("tools/call", "execute_sql", mcp_param_region=sent)
    )
    assert reply.status == 200
    assert text_of(reply) == "us-west1: SELECT 1"


async def test_param_header_name_is_case_insensitive() -> None:
    headers = [
        (k.encode(), v.encode()) for k, v in mcp_headers("tools/call", "execute_sql").items()
    ]
    headers += [(b"host", b"localhost"), (b"MCP-PARAM-REGION", b"eu")]
    status, _, body = await asgi_raw(server.http_app(), headers=headers, body=encode(sql("eu")))
    assert status == 200
    assert json.loads(body)["result"]["content"][0]["text"] == "eu: SELECT 1"


async def test_param_header_missing_is_32020(client: httpx2.AsyncClient) -> None:
    reply = await post(client, sql("us-west1"), mcp_headers("tools/call", "execute_sql"))
    error = assert_error(reply, 400, -32020, request_id=1)
    assert "Mcp-Param-Region" in error["message"]


@pytest.mark.parametrize(
    "sent", ["us-east1", "US-WEST1", "us-west", b64("us-east1"), "=?base64?bad?=", "us-west1\x00"]
)
async def test_param_header_mismatch_is_32020(client: httpx2.AsyncClient, sent: str) -> None:
    headers = [
        (k.encode(), v.encode()) for k, v in mcp_headers("tools/call", "execute_sql").items()
    ]
    headers += [(b"host", b"localhost"), (b"mcp-param-region", sent.encode())]
    status, _, body = await asgi_raw(
        server.http_app(), headers=headers, body=encode(sql("us-west1"))
    )
    assert status == 400
    message = json.loads(body)
    check("HeaderMismatchError", message)
    assert "Mcp-Param-Region" in message["error"]["message"]


async def test_param_header_base64_for_non_ascii_value(client: httpx2.AsyncClient) -> None:
    headers = mcp_headers("tools/call", "execute_sql", mcp_param_region=b64("zürich-1"))
    reply = await post(client, sql("zürich-1"), headers)
    assert text_of(reply) == "zürich-1: SELECT 1"


async def test_param_absent_or_null_expects_no_header(client: httpx2.AsyncClient) -> None:
    # null: no header expected; argument validation then reports the bad value as a tool error.
    reply = await post(client, sql(None), mcp_headers("tools/call", "execute_sql"))
    assert reply.status == 200
    assert reply.result["isError"] is True
    absent = call(2, "execute_sql", {"query": "q"})
    headers = mcp_headers("tools/call", "execute_sql", mcp_param_region="ignored")
    reply = await post(client, absent, headers)
    assert reply.status == 200
    assert reply.result["isError"] is True


def shard_call(n: Any, flag: Any = True) -> dict[str, Any]:
    return call(4, "shard", {"n": n, "flag": flag})


@pytest.mark.parametrize("sent", ["42", "42.0", "4.2e1", "420e-1", " 42 ", b64("42")])
async def test_integer_param_compares_numerically(client: httpx2.AsyncClient, sent: str) -> None:
    headers = mcp_headers("tools/call", "shard", mcp_param_shard=sent, mcp_param_flag="true")
    reply = await post(client, shard_call(42), headers)
    assert reply.status == 200
    assert text_of(reply) == "shard 42 True"


@pytest.mark.parametrize(
    "sent", ["43", "+42", "042", "0x2a", "4_2", "42.5", "forty-two", "", "1e999999999999"]
)
async def test_integer_param_mismatch_is_32020(client: httpx2.AsyncClient, sent: str) -> None:
    headers = mcp_headers("tools/call", "shard", mcp_param_shard=sent, mcp_param_flag="true")
    reply = await post(client, shard_call(42), headers)
    assert_error(reply, 400, -32020, request_id=4)


@pytest.mark.parametrize(
    ("flag", "sent", "ok"),
    [
        (True, "true", True),
        (False, "false", True),
        (True, "True", False),
        (True, "1", False),
        (False, "true", False),
    ],
)
async def test_boolean_param(client: httpx2.AsyncClient, flag: bool, sent: str, ok: bool) -> None:
    headers = mcp_headers("tools/call", "shard", mcp_param_shard="7", mcp_param_flag=sent)
    reply = await post(client, shard_call(7, flag), headers)
    if ok:
        assert reply.status == 200
        assert text_of(reply) == f"shard 7 {flag}"
    else:
        assert_error(reply, 400, -32020, request_id=4)


async def test_string_sent_for_integer_param_matches_then_fails_validation(
    client: httpx2.AsyncClient,
) -> None:
    headers = mcp_headers("tools/call", "shard", mcp_param_shard="42", mcp_param_flag="true")
    reply = await post(client, shard_call("42"), headers)
    assert reply.status == 200
    # No header mismatch: the header mirrors the body's text. Arguments are validated in lax
    # mode, so the string "42" then arrives as the integer 42.
    assert text_of(reply) == "shard 42 True"


# =========================================================================== row 15: capabilities


async def test_missing_client_capability_is_400_32021(client: httpx2.AsyncClient) -> None:
    reply = await post(client, call(22, "deploy", {"env": "prod"}))
    error = assert_error(reply, 400, -32021, request_id=22)
    assert error["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}


async def test_declared_capability_passes(client: httpx2.AsyncClient) -> None:
    body = call(22, "deploy", {"env": "prod"})
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {
        "elicitation": {"form": {}}
    }
    reply = await post(client, body)
    assert reply.status == 200
    assert text_of(reply) == "deployed prod"


# =========================================================================== handler errors: 200


async def test_unknown_tool_is_200_32602(client: httpx2.AsyncClient) -> None:
    reply = await post(client, call(4, "invalid_tool_name", {}))
    assert_error(reply, 200, -32602, request_id=4)


async def test_resource_not_found_is_200_32602_with_uri(client: httpx2.AsyncClient) -> None:
    reply = await post(client, request(5, "resources/read", {"uri": "file:///nope.txt"}))
    error = assert_error(reply, 200, -32602, request_id=5)
    assert error["data"] == {"uri": "file:///nope.txt"}


async def test_unknown_prompt_is_200_32602(client: httpx2.AsyncClient) -> None:
    reply = await post(client, request(5, "prompts/get", {"name": "nope"}))
    assert_error(reply, 200, -32602, request_id=5)


async def test_tool_errors_are_results(client: httpx2.AsyncClient) -> None:
    reply = await post(client, call(6, "fail", {"reason": "because"}))
    assert reply.status == 200
    assert reply.result["isError"] is True
    assert text_of(reply) == "failed: because"
    reply = await post(client, call(7, "add", {"a": "one", "b": 2}))
    assert reply.status == 200
    assert reply.result["isError"] is True


@pytest.mark.parametrize("name", [42, None, True, ["echo"], {"name": "echo"}])
async def test_non_string_tool_name_is_200_32602(client: httpx2.AsyncClient, name: Any) -> None:
    """BUG for list/dict names: http.py looks the name up in a dict before validating it."""
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": name, "_meta": meta()},
    }
    reply = await post(client, body, mcp_headers("tools/call"))
    assert_error(reply, 200, -32602, request_id=9)


async def test_result_the_encoder_cannot_handle_is_a_json_rpc_answer(
    client: httpx2.AsyncClient,
) -> None:
    """orjson cannot encode integers beyond 64 bits; the standard library writes them."""
    reply = await post(client, call(1, "power", {"base": 2, "exponent": 70}))
    assert reply.headers["content-type"] == "application/json"
    assert reply.message["id"] == 1
    assert reply.result["structuredContent"] == {"value": 2**70}


@pytest.mark.parametrize("arguments", [[1, 2], "text", 3])
async def test_non_object_arguments_are_200_32602(
    client: httpx2.AsyncClient, arguments: Any
) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "execute_sql", "arguments": arguments, "_meta": meta()},
    }
    reply = await post(client, body, mcp_headers("tools/call", "execute_sql"))
    assert_error(reply, 200, -32602, request_id=9)


# =========================================================================== SSE


SSE_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}


def assert_sse_headers(headers: httpx2.Headers) -> None:
    for name, value in SSE_HEADERS.items():
        assert headers.get(name) == value, (name, headers)
    assert "content-length" not in headers


async def test_progress_makes_an_sse_response(client: httpx2.AsyncClient) -> None:
    reply = await post(client, call(40, "progressive", {"steps": 3}, progressToken="oivaizmir"))
    assert reply.status == 200
    assert reply.is_sse
    assert_sse_headers(reply.headers)
    assert [n["method"] for n in reply.notifications] == ["notifications/progress"] * 3
    assert [n["params"]["progress"] for n in reply.notifications] == [1, 2, 3]
    assert {n["params"]["progressToken"] for n in reply.notifications} == {"oivaizmir"}
    assert reply.message["id"] == 40
    assert text_of(reply) == "done after 3"
    # Every event is `data: <one line of JSON>` then a blank line; nothing after the response.
    text = reply.body.decode()
    events = [event for event in text.split("\n\n") if event]
    assert len(events) == 4
    assert all(event.startswith("data: ") and "\n" not in event for event in events)
    assert text.endswith("\n\n")


async def test_integer_progress_token(client: httpx2.AsyncClient) -> None:
    reply = await post(client, call(41, "progressive", {"steps": 1}, progressToken=41))
    assert reply.is_sse
    assert reply.notifications[0]["params"]["progressToken"] == 41


@pytest.mark.parametrize(
    "accept",
    [
        "application/json",
        "application/json;q=1",
        # q=0 means "not acceptable" (RFC 9110 § 12.5.1), and the most specific range wins.
        "application/json, text/event-stream;q=0",
        "application/json, text/event-stream; q=0.0",
        "text/event-stream;q=0, */*",
        "application/json, */*;q=0",
    ],
)
async def test_accept_without_sse_gets_json_and_no_progress(
    client: httpx2.AsyncClient, accept: str
) -> None:
    body = call(42, "progressive", {"steps": 3}, progressToken="t")
    reply = await post(client, body, mcp_headers("tools/call", "progressive", accept=accept))
    assert reply.status == 200
    assert not reply.is_sse
    assert reply.headers["content-type"] == "application/json"
    assert reply.messages == [reply.message]
    assert text_of(reply) == "done after 3"


@pytest.mark.parametrize(
    "accept", ["*/*", "text/*", "text/event-stream", "TEXT/EVENT-STREAM, application/json"]
)
async def test_lenient_accept_allows_sse(client: httpx2.AsyncClient, accept: str) -> None:
    body = call(43, "progressive", {"steps": 2}, progressToken="t")
    reply = await post(client, body, mcp_headers("tools/call", "progressive", accept=accept))
    assert reply.is_sse
    assert len(reply.notifications) == 2


async def test_missing_accept_allows_sse() -> None:
    headers = [
        (k.encode(), v.encode())
        for k, v in mcp_headers("tools/call", "progressive", accept=None).items()
    ]
    headers.append((b"host", b"localhost"))
    body = encode(call(43, "progressive", {"steps": 2}, progressToken="t"))
    status, response_headers, data = await asgi_raw(server.http_app(), headers=headers, body=body)
    assert status == 200
    assert response_headers["content-type"] == "text/event-stream"
    messages = parse_sse(data.decode())
    assert [m.get("method") for m in messages[:-1]] == ["notifications/progress"] * 2
    check_response("tools/call", messages[-1])


async def test_no_progress_token_means_json(client: httpx2.AsyncClient) -> None:
    reply = await post(client, call(44, "progressive", {"steps": 2}))
    assert not reply.is_sse
    assert text_of(reply) == "done after 2"


async def test_session_id_and_last_event_id_are_ignored(client: httpx2.AsyncClient) -> None:
    for body in (ECHO, call(2, "progressive", {"steps": 1}, progressToken="p")):
        headers = {
            **mcp_headers("tools/call", body["params"]["name"]),
            "mcp-session-id": "session-123",
            "last-event-id": "42",
        }
        reply = await post(client, body, headers)
        assert reply.status == 200
        assert "result" in reply.message
        assert "mcp-session-id" not in reply.headers
        assert b"session-123" not in reply.body
        assert b"id:" not in reply.body  # no SSE event ids


# =========================================================================== hostile sizes


@pytest.mark.parametrize(
    "header", ["mcp-name", "mcp-param-region", "mcp-method", "mcp-protocol-version"]
)
async def test_huge_header_values_get_short_errors(client: httpx2.AsyncClient, header: str) -> None:
    headers = mcp_headers("tools/call", "execute_sql", mcp_param_region="eu")
    headers[header] = "A" * 1_000_000
    reply = await post(client, sql("eu"), headers)
    error = assert_error(reply, 400, -32020, request_id=1)
    assert len(reply.body) < 2000
    assert len(error["message"]) < 600


async def test_huge_host_and_origin_get_short_errors(client: httpx2.AsyncClient) -> None:
    reply = await post(client, ECHO, {**mcp_headers("tools/call", "echo"), "host": "h" * 1_000_000})
    assert reply.status == 421
    assert len(reply.body) < 2000
    reply = await post(
        client, ECHO, {**mcp_headers("tools/call", "echo"), "origin": "http://" + "o" * 1_000_000}
    )
    assert reply.status == 403
    assert len(reply.body) < 2000


async def test_huge_unrelated_header_is_harmless(client: httpx2.AsyncClient) -> None:
    reply = await post(
        client, ECHO, {**mcp_headers("tools/call", "echo"), "x-padding": "p" * 1_000_000}
    )
    assert reply.status == 200
    assert text_of(reply) == "hi"


async def test_huge_values_in_body_are_cut_in_messages(client: httpx2.AsyncClient) -> None:
    name = "n" * 500_000
    reply = await post(client, call(1, name, {}), mcp_headers("tools/call", "other"))
    assert_error(reply, 400, -32020, request_id=1)
    assert len(reply.body) < 2000
    reply = await post(client, request(2, "m" * 500_000), mcp_headers("m" * 500_000))
    assert_error(reply, 404, -32601, request_id=2)
    assert len(reply.body) < 2000


# =========================================================================== concurrency


async def test_200_concurrent_requests_no_cross_talk(client: httpx2.AsyncClient) -> None:
    async def one(i: int) -> None:
        kind = i % 4
        if kind == 0:
            reply = await post(client, call(i, "echo", {"text": f"echo-{i}"}))
            assert text_of(reply) == f"echo-{i}"
        elif kind == 1:
            reply = await post(client, call(f"id-{i}", "add", {"a": i, "b": 1000}))
            assert reply.result["structuredContent"] == {"total": i + 1000}
        elif kind == 2:
            steps = 1 + i % 5
            reply = await post(
                client, call(i, "progressive", {"steps": steps}, progressToken=f"tok-{i}")
            )
            assert reply.is_sse
            assert {n["params"]["progressToken"] for n in reply.notifications} == {f"tok-{i}"}
            assert len(reply.notifications) == steps
            assert text_of(reply) == f"done after {steps}"
        else:
            reply = await post(
                client, call(i, "sleepy", {"seconds": (i % 7) / 100, "tag": f"s{i}"})
            )
            assert text_of(reply) == f"slept s{i}"
        expected_id = f"id-{i}" if kind == 1 else i
        assert same_id(reply.message["id"], expected_id)

    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(200))), 60)


# ====================================================================== disconnect (in process)


def _scope(headers: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in {**headers, "host": "localhost"}.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def _drive_until_disconnect(
    app: Any, body: dict[str, Any], disconnect_when: Any
) -> list[dict[str, Any]]:
    """Run one request through the ASGI app; disconnect once ``disconnect_when(sent)`` is true."""
    sent: list[dict[str, Any]] = []
    gone = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": encode(body), "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if disconnect_when(sent):
            gone.set()

    await asyncio.wait_for(app(_scope(default_headers_for(body)), receive, send), TIMEOUT)
    return sent


def default_headers_for(body: dict[str, Any]) -> dict[str, str]:
    return mcp_headers("tools/call", body["params"]["name"])


def _keepalive_tasks() -> list[asyncio.Task[Any]]:
    return [
        task
        for task in asyncio.all_tasks()
        if not task.done() and "_keep_alive" in getattr(task.get_coro(), "__qualname__", "")
    ]


async def test_disconnect_cancels_the_handler_in_process(markers: Path) -> None:
    app = server.http_app()
    body = call(1, "wait_forever", {"tag": "inproc"}, progressToken="p")
    sent = await _drive_until_disconnect(
        app, body, lambda sent: any(m.get("body", b"").startswith(b"data: ") for m in sent)
    )
    assert await wait_for_file(markers / "inproc.finally") == "cancelled=True"
    bodies = b"".join(m.get("body", b"") for m in sent)
    assert b'"id":1' not in bodies  # no final response after the client left


async def test_keepalive_comments_and_no_leak_after_disconnect(markers: Path) -> None:
    """BUG: after a disconnect the SSE keep-alive task is never cancelled (http.py _request)."""
    app = server.http_app(keepalive_seconds=0.01)
    body = call(1, "wait_forever", {"tag": "keepalive"}, progressToken="p")
    sent = await _drive_until_disconnect(
        app, body, lambda sent: any(m.get("body") == b": keep-alive\n\n" for m in sent)
    )
    await wait_for_file(markers / "keepalive.finally")
    events = parse_sse(b"".join(m.get("body", b"") for m in sent).decode())
    assert [e["method"] for e in events] == ["notifications/progress"]
    count = len(sent)
    await asyncio.sleep(0.1)  # ten keep-alive periods: a leaked task would write again
    leaked = _keepalive_tasks()
    for task in leaked:
        task.cancel()
    assert not leaked, "the keep-alive task outlived the request"
    assert len(sent) == count, "messages were sent after the client disconnected"


# =========================================================================== real uvicorn


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServerProcess]:
    with http_server_process(
        tmp_path_factory.mktemp("http-wire"), env={"MCPSERVE_TEST_KEEPALIVE": "0.2"}
    ) as srv:
        yield srv


@pytest.fixture
async def real_client(real_server: HTTPServerProcess) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{real_server.port}", timeout=TIMEOUT
    ) as http:
        yield http


@pytest.mark.subprocess
async def test_real_json_and_sse(real_client: httpx2.AsyncClient) -> None:
    reply = await post(real_client, call(1, "add", {"a": 5, "b": 6}))
    assert reply.status == 200
    assert reply.result["structuredContent"] == {"total": 11}
    assert reply.headers["content-type"] == "application/json"
    reply = await post(real_client, call(2, "progressive", {"steps": 2}, progressToken="real"))
    assert reply.is_sse
    assert_sse_headers(reply.headers)
    assert [n["params"]["progress"] for n in reply.notifications] == [1, 2]
    assert text_of(reply) == "done after 2"
    assert "mcp-session-id" not in reply.headers


@pytest.mark.subprocess
async def test_real_transport_rejections(real_client: httpx2.AsyncClient) -> None:
    response = await real_client.get("/mcp", headers={"accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    response = await real_client.delete("/mcp")
    assert response.status_code == 405
    response = await real_client.post(
        "/other", content=encode(ECHO), headers=mcp_headers("tools/call", "echo")
    )
    assert response.status_code == 404
    reply = await post(
        real_client, ECHO, {**mcp_headers("tools/call", "echo"), "host": "evil.example"}
    )
    assert_error(reply, 421, -32600, has_id=False)
    reply = await post(
        real_client, ECHO, {**mcp_headers("tools/call", "echo"), "origin": "https://evil.example"}
    )
    error = assert_error(reply, 403, -32600, has_id=False)
    assert "https://evil.example" in error["message"]
    reply = await post(
        real_client, ECHO, {**mcp_headers("tools/call", "echo"), "content-type": "text/plain"}
    )
    assert reply.status == 415
    reply = await post(real_client, None, mcp_headers("tools/call", "echo"), content=b"{nope")
    assert_error(reply, 400, -32700, has_id=False)
    reply = await post(real_client, request(8, "resources/subscribe", {"uri": "x:y"}))
    assert_error(reply, 404, -32601, request_id=8)
    reply = await post(real_client, call(22, "deploy", {"env": "x"}))
    assert_error(reply, 400, -32021, request_id=22)
    response = await real_client.post(
        "/mcp", content=encode(NOTIFICATION), headers=mcp_headers("notifications/cancelled")
    )
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.subprocess
async def test_real_body_over_default_limit_is_413(real_client: httpx2.AsyncClient) -> None:
    body = encode(call(1, "echo", {"text": "x" * (4 * 1024 * 1024 + 10)}))
    try:
        response = await real_client.post(
            "/mcp", content=body, headers=mcp_headers("tools/call", "echo")
        )
    except (httpx2.WriteError, httpx2.RemoteProtocolError, httpx2.ReadError):
        # The server may answer and close before the client finished sending.
        pass
    else:
        assert response.status_code == 413
    assert text_of(await post(real_client, ECHO)) == "hi"


def _raw_http(port: int, head: bytes, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(head + body)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            data = b"".join(chunks)
            if b"\r\n\r\n" in data:
                headers, _, rest = data.partition(b"\r\n\r\n")
                for line in headers.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:") and len(rest) >= int(
                        line.split(b":")[1]
                    ):
                        return data
        return b"".join(chunks)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "extra",
    [
        b"Mcp-Name: echo\r\nMcp-Name: evil\r\n",  # two values: neither may be picked silently
        b"Mcp-Name: evil\r\nMcp-Name: echo\r\n",
        b"Mcp-Name: echo\r\nMcp-Method: tools/list\r\n",
    ],
)
async def test_real_duplicate_routing_headers_are_rejected(
    real_server: HTTPServerProcess, extra: bytes
) -> None:
    body = encode(ECHO)
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"MCP-Protocol-Version: " + VERSION.encode() + b"\r\nMcp-Method: tools/call\r\n" + extra
        + b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )  # fmt: skip
    raw = await asyncio.to_thread(_raw_http, real_server.port, head, body)
    status_line, _, rest = raw.partition(b"\r\n")
    assert status_line.split()[1] == b"400", raw[:500]
    message = json.loads(rest.partition(b"\r\n\r\n")[2])
    check("HeaderMismatchError", message)


@pytest.mark.subprocess
async def test_real_huge_header_does_not_hurt_the_server(real_client: httpx2.AsyncClient) -> None:
    try:
        response = await real_client.post(
            "/mcp",
            content=encode(ECHO),
            headers={**mcp_headers("tools/call", "echo"), "mcp-name": "e" * 200_000},
        )
    except httpx2.HTTPError:
        pass  # the HTTP server may refuse the header block outright
    else:
        assert response.status_code in (400, 431)
    assert text_of(await post(real_client, ECHO)) == "hi"


@pytest.mark.subprocess
async def test_real_concurrent_requests(real_client: httpx2.AsyncClient) -> None:
    async def one(i: int) -> None:
        if i % 2:
            reply = await post(real_client, call(i, "echo", {"text": f"r{i}"}))
            assert text_of(reply) == f"r{i}"
        else:
            reply = await post(
                real_client, call(i, "progressive", {"steps": 2}, progressToken=f"t{i}")
            )
            assert {n["params"]["progressToken"] for n in reply.notifications} == {f"t{i}"}
        assert same_id(reply.message["id"], i)

    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(50))), 60)


@pytest.mark.subprocess
async def test_real_disconnect_during_sse_cancels_the_handler(
    real_server: HTTPServerProcess, real_client: httpx2.AsyncClient
) -> None:
    body = call(77, "wait_forever", {"tag": "real-sse"}, progressToken="real-sse")
    headers = mcp_headers("tools/call", "wait_forever")

    async def read_first_event() -> dict[str, Any]:
        async with real_client.stream(
            "POST", "/mcp", content=encode(body), headers=headers
        ) as response:
            assert response.status_code == 200
            assert_sse_headers(response.headers)
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    return json.loads(line[6:])  # type: ignore[no-any-return]
        raise AssertionError("the stream ended without an event")

    event = await asyncio.wait_for(read_first_event(), TIMEOUT)  # leaving the block closes it
    assert event["method"] == "notifications/progress"
    marker = real_server.marker_dir / "real-sse.finally"
    assert await wait_for_file(marker) == "cancelled=True"
    # The server is still healthy afterwards.
    assert text_of(await post(real_client, ECHO)) == "hi"


@pytest.mark.subprocess
async def test_real_disconnect_during_json_request_cancels_the_handler(
    real_server: HTTPServerProcess,
) -> None:
    body = call(78, "wait_forever", {"tag": "real-json"})
    headers = mcp_headers("tools/call", "wait_forever", accept="application/json")
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{real_server.port}") as http:
        task = asyncio.create_task(http.post("/mcp", content=encode(body), headers=headers))
        await wait_for_file(real_server.marker_dir / "real-json.started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await wait_for_file(real_server.marker_dir / "real-json.finally") == "cancelled=True"


@pytest.mark.subprocess
def test_cli_serves_http(tmp_path: Path) -> None:
    """``mcpserve run file.py:name --http --host --port`` serves the named server."""
    args = [
        sys.executable, "-m", "mcpserve.cli", "run", f"{BASIC}:other",
        "--http", "--host", "127.0.0.1", "--port", "{port}",
    ]  # fmt: skip
    with http_server_process(tmp_path, args=args) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        with httpx2.Client(base_url=base, timeout=TIMEOUT) as http:
            response = http.post(
                "/mcp",
                content=encode(call(1, "whoami", {})),
                headers=mcp_headers("tools/call", "whoami"),
            )
            reply = decode_reply("tools/call", response)
            assert reply.status == 200
            assert text_of(reply) == "other"
            response = http.get("/mcp")
            assert response.status_code == 405


# ---------------------------------------------------------------- header bytes as ASGI gives them


def raw_headers(**overrides: bytes) -> list[tuple[bytes, bytes]]:
    headers = {k.encode(): v.encode() for k, v in mcp_headers("tools/call", "echo").items()}
    headers[b"host"] = b"127.0.0.1"
    headers.update({k.replace("_", "-").encode(): v for k, v in overrides.items()})
    return list(headers.items())


async def test_header_names_a_server_did_not_lower_case_still_work() -> None:
    headers = [(name.title(), value) for name, value in raw_headers()]
    status, _, body = await asgi_raw(server.http_app(), headers=headers, body=encode(ECHO))
    assert status == 200, body
    assert json.loads(body)["result"]["content"] == [{"type": "text", "text": "hi"}]


async def test_repeated_name_headers_with_different_values_are_a_mismatch() -> None:
    headers = [*raw_headers(), (b"mcp-name", b"other")]
    status, _, body = await asgi_raw(server.http_app(), headers=headers, body=encode(ECHO))
    assert status == 400
    check("HeaderMismatchError", json.loads(body))


async def test_bytes_beyond_ascii_in_a_header_are_read_as_latin_1() -> None:
    # "é" sent raw as UTF-8 is two Latin-1 characters, so it cannot equal the body's name.
    message = call(1, "echo", {"text": "hi"})
    message["params"]["name"] = "é"
    headers = raw_headers(mcp_name="é".encode())
    status, _, body = await asgi_raw(server.http_app(), headers=headers, body=encode(message))
    assert status == 400
    error = json.loads(body)
    check("HeaderMismatchError", error)
    assert "Ã©" in error["error"]["message"]


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        (b"Application/JSON; charset=utf-8", 200),
        (b"application/json ; charset=UTF-8", 200),
        (b"application/json\xa0", 415),  # only SP and HTAB are whitespace in HTTP
        (b"application/jsonp", 415),
    ],
)
async def test_content_type_bytes(content_type: bytes, status: int) -> None:
    headers = raw_headers(content_type=content_type)
    answer, _, _ = await asgi_raw(server.http_app(), headers=headers, body=encode(ECHO))
    assert answer == status


async def test_a_non_ascii_host_is_refused_not_crashed_on() -> None:
    headers = raw_headers(host="exämple.com".encode("latin-1"))
    status, _, body = await asgi_raw(server.http_app(), headers=headers, body=encode(ECHO))
    assert status == 421
    check_response(None, json.loads(body))
