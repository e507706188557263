"""The scopes a protected server tells clients to ask for, when it is not told which.

``Server(auth=verifier)`` (or a ``ResourceServer`` without ``scopes_supported=``) publishes
``required_scopes`` and every scope its switched-on tools, resources, templates and prompts
declare, in the protected resource metadata (``scopes_supported``) and in the 401
challenge (``scope``), as they are when a client asks: entries registered after the app is
built, a mounted server's, a skill's. ``offline_access`` is never published, and an explicit
``scopes_supported=`` still decides alone. These tests read both documents off the wire
(the ASGI app, and once a real uvicorn socket); ``test_auth_official_clients.py`` has the
official Python client log in against such a server.
"""

from __future__ import annotations

import re

import httpx2
import pytest

from mcpserve import Server, Skill
from mcpserve.auth import AccessToken, InvalidToken, ResourceServer
from mcpserve.testing import serve_http
from wire_helpers import TIMEOUT, asgi_client, call, mcp_headers, post, request

RESOURCE = "http://127.0.0.1/mcp"
ISSUER = "https://auth.example.com"
WELL_KNOWN = "/.well-known/oauth-protected-resource/mcp"


class OneTokenVerifier:
    """Knows one token, ``"good"``, granting ``scopes``; refuses every other."""

    issuer = ISSUER
    audience = RESOURCE

    def __init__(self, *scopes: str) -> None:
        self.scopes = frozenset(scopes)

    async def verify(self, token: str) -> AccessToken:
        if token != "good":
            raise InvalidToken("The access token has expired")
        return AccessToken("alice", self.scopes, {"sub": "alice"})


def challenge_parameters(header: str) -> dict[str, str]:
    scheme, _, parameters = header.partition(" ")
    assert scheme == "Bearer", header
    return dict(re.findall(r'([a-z_]+)="([^"]*)"', parameters))


async def published(http: httpx2.AsyncClient) -> tuple[list[str] | None, str | None]:
    """What the server tells a client without a token: the metadata's ``scopes_supported``
    (``None`` when absent) and the 401 challenge's ``scope`` (``None`` when absent)."""
    metadata = await http.get(WELL_KNOWN)
    assert metadata.status_code == 200, metadata.text
    refused = await post(http, request(1, "tools/list"), mcp_headers("tools/list"))
    assert refused.status == 401, refused.body
    parameters = challenge_parameters(refused.headers["www-authenticate"])
    assert parameters["error"] == "invalid_token"
    return metadata.json().get("scopes_supported"), parameters.get("scope")


def scoped_server(auth: object) -> Server:
    server = Server("notes", auth=auth)  # type: ignore[arg-type]

    @server.tool(scopes=["notes:write"])
    def add_note(text: str) -> str:
        return text

    @server.tool(scopes=["notes:read", "offline_access"])
    def list_notes() -> list[str]:
        return []

    @server.tool
    def ping() -> str:
        return "pong"

    @server.resource("notes://index", scopes=["notes:index"])
    def index() -> str:
        return "index"

    @server.resource("notes://{id}", scopes="notes:read")
    def note(id: str) -> str:
        return id

    @server.prompt(scopes=["notes:draft"])
    def draft(topic: str) -> str:
        return topic

    server.add_skill(Skill("note-taking", "How to take notes", "Write them down.",
                           scopes=["skills:notes"]))  # fmt: skip
    return server


EVERY_DECLARED = ["notes:draft", "notes:index", "notes:read", "notes:write", "skills:notes"]


async def test_a_verifier_alone_publishes_every_scope_the_entries_declare() -> None:
    server = scoped_server(OneTokenVerifier())
    async with asgi_client(server.http_app()) as http:
        supported, scope = await published(http)
        metadata = (await http.get("/.well-known/oauth-protected-resource")).json()
    assert supported == EVERY_DECLARED  # offline_access, declared by a tool, is left out
    assert scope == " ".join(EVERY_DECLARED)
    assert metadata == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": EVERY_DECLARED,
    }


async def test_a_resource_server_publishes_its_required_scopes_with_the_declared_ones() -> None:
    auth = ResourceServer(OneTokenVerifier(), required_scopes=["mcp"], resource_name="Notes")
    server = scoped_server(auth)
    async with asgi_client(server.http_app()) as http:
        supported, scope = await published(http)
        metadata = (await http.get(WELL_KNOWN)).json()
    assert supported == ["mcp", *EVERY_DECLARED]
    assert scope == " ".join(["mcp", *EVERY_DECLARED])
    assert metadata["resource_name"] == "Notes"


async def test_an_explicit_scopes_supported_decides_alone() -> None:
    auth = ResourceServer(OneTokenVerifier(), scopes_supported=["notes:read", "offline_access"])
    server = scoped_server(auth)
    async with asgi_client(server.http_app()) as http:
        supported, scope = await published(http)
    assert (supported, scope) == (["notes:read"], "notes:read")


async def test_a_server_whose_entries_declare_no_scope_publishes_none() -> None:
    server = Server("open", auth=OneTokenVerifier())

    @server.tool
    def ping() -> str:
        return "pong"

    async with asgi_client(server.http_app()) as http:
        supported, scope = await published(http)
        refused = await post(http, call(1, "ping", {}), mcp_headers("tools/call", "ping"))
    assert (supported, scope) == (None, None)
    assert refused.headers["www-authenticate"] == (
        'Bearer error="invalid_token", error_description="No access token was sent", '
        'resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"'
    )


async def test_entries_registered_removed_or_switched_after_the_app_is_built_are_followed() -> None:
    server = Server("notes", auth=OneTokenVerifier())
    app = server.http_app()
    async with asgi_client(app) as http:
        before = await published(http)

        @server.tool(scopes=["notes:write"])
        def add_note(text: str) -> str:
            return text

        @server.prompt(scopes=["notes:draft"])
        def draft(topic: str) -> str:
            return topic

        added = await published(http)
        server.disable("tools", "add_note")
        switched_off = await published(http)
        server.enable("tools", "add_note")
        server.remove_prompt("draft")
        last = await published(http)
    assert before == (None, None)
    assert added == (["notes:draft", "notes:write"], "notes:draft notes:write")
    assert switched_off == (["notes:draft"], "notes:draft")
    assert last == (["notes:write"], "notes:write")


async def test_a_mounted_servers_scopes_are_published_also_those_it_declares_later() -> None:
    billing = Server("billing")

    @billing.tool(scopes=["billing:pay"])
    def pay(amount: int) -> int:
        return amount

    app_server = Server("app", auth=OneTokenVerifier())
    app_server.mount(billing, namespace="billing")
    async with asgi_client(app_server.http_app()) as http:
        mounted = await published(http)

        @billing.resource("invoices://{id}", scopes=["billing:read"])
        def invoice(id: str) -> str:
            return id

        later = await published(http)
    assert mounted == (["billing:pay"], "billing:pay")
    assert later == (["billing:pay", "billing:read"], "billing:pay billing:read")


async def test_a_proxy_publishes_its_own_scopes_not_its_upstreams() -> None:
    """A forwarded entry is the upstream's to guard (the proxy holds the upstream's token):
    it needs no scope of the proxy's, so none is published for it. The proxy's own entries,
    registered next to the forwarded ones once it has connected, are."""
    upstream = Server("upstream")

    @upstream.tool(scopes=["upstream:secret"])
    def secret() -> str:
        return "s3cret"

    proxy = Server.proxy(upstream, auth=OneTokenVerifier())

    @proxy.tool(scopes=["proxy:admin"])
    def reload() -> str:
        return "reloaded"

    async with asgi_client(proxy.http_app()) as http:
        scopes = await published(http)
        listed = await post(
            http,
            request(2, "tools/list"),
            {**mcp_headers("tools/list"), "authorization": "Bearer good"},
        )
    assert scopes == (["proxy:admin"], "proxy:admin")
    assert [tool["name"] for tool in listed.result["tools"]] == ["secret"]  # reload is scoped


async def test_one_resource_server_protecting_two_servers_publishes_each_ones_own_scopes() -> None:
    auth = ResourceServer(OneTokenVerifier())
    notes, billing = Server("notes", auth=auth), Server("billing", auth=auth)

    @notes.tool(scopes=["notes:read"])
    def list_notes() -> list[str]:
        return []

    @billing.tool(scopes=["billing:pay"])
    def pay(amount: int) -> int:
        return amount

    async with asgi_client(notes.http_app()) as first, asgi_client(billing.http_app()) as second:
        assert await published(first) == (["notes:read"], "notes:read")
        assert await published(second) == (["billing:pay"], "billing:pay")
    assert auth.scopes_supported == []  # the object given is left as it was configured


def test_the_published_document_is_built_once_per_change_of_the_entries() -> None:
    server = scoped_server(OneTokenVerifier())
    resource_server = server.http_app().resource_server
    assert resource_server is not None
    first = resource_server.metadata_body
    assert resource_server.metadata_body is first
    assert server.registry.declared_scopes() is server.registry.declared_scopes()

    @server.tool(scopes=["notes:admin"])
    def purge() -> str:
        return "purged"

    changed = resource_server.metadata_body
    assert changed is not first
    assert b'"notes:admin"' in changed
    assert resource_server.metadata_body is changed

    @server.tool
    def unscoped() -> str:  # a registry change that declares nothing new
        return "same"

    assert resource_server.metadata_body is changed


def test_a_real_socket_serves_the_declared_scopes_in_the_metadata_and_the_challenge() -> None:
    server = scoped_server(OneTokenVerifier())
    with (
        serve_http(server) as url,
        httpx2.Client(timeout=TIMEOUT, trust_env=False) as http,
    ):
        origin = url.removesuffix("/mcp")
        metadata = http.get(origin + WELL_KNOWN)
        refused = http.post(url, content=b"{}", headers={"content-type": "application/json"})
    assert metadata.json()["scopes_supported"] == EVERY_DECLARED
    assert refused.status_code == 401
    assert challenge_parameters(refused.headers["www-authenticate"])["scope"] == " ".join(
        EVERY_DECLARED
    )


@pytest.mark.parametrize("token", [None, "forged"])
async def test_every_401_carries_the_declared_scopes(token: str | None) -> None:
    server = scoped_server(OneTokenVerifier())
    headers = mcp_headers("tools/call", "ping")
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    async with asgi_client(server.http_app()) as http:
        refused = await post(http, call(1, "ping", {}), headers)
    assert refused.status == 401
    assert challenge_parameters(refused.headers["www-authenticate"])["scope"] == " ".join(
        EVERY_DECLARED
    )
