"""``Server.from_openapi`` and ``server.add_openapi``: an HTTP API's operations as tools.

The API is real: a small FastAPI shop served by uvicorn on a free 127.0.0.1 port in a
thread, for the whole module; its generated ``openapi.json`` is what the tools are built
from. The tools are driven through the schema-checked in-memory client, and once over real
Streamable HTTP by the official ``mcp`` SDK client. Hand-written documents cover what
FastAPI does not write: OpenAPI 3.0 ``nullable``, ``$ref`` cycles, odd operationIds.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import httpx2
import jsonschema
import pytest
from fastapi import Body, Cookie, FastAPI, Form, Header, HTTPException, Request
from fastapi.responses import PlainTextResponse
from mcp import Client as SDKClient
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, Field

from http_serving import serve_asgi
from mcpserve import Client, Server, fetch_openapi
from mcpserve.testing import serve_http

TIMEOUT = 10.0

# --------------------------------------------------------------------------- the API


class ItemIn(BaseModel):
    name: str
    price: float = Field(gt=0)
    tags: list[str] = []


class Item(ItemIn):
    id: int


api = FastAPI(title="Shop", version="2.0.1")
ITEMS: dict[int, Item] = {}
#: Every request the API received, as "METHOD /path".
RECEIVED: list[str] = []


@api.middleware("http")
async def record(request: Request, call_next: Any) -> Any:
    RECEIVED.append(f"{request.method} {request.url.path}")
    return await call_next(request)


@api.get("/items/{item_id}", response_model=Item, operation_id="get_item", tags=["items"],
         summary="Get one item", description="The item with this id.")  # fmt: skip
def get_item(item_id: int) -> Item:
    if item_id not in ITEMS:
        raise HTTPException(404, "Item not found")
    return ITEMS[item_id]


@api.get("/items", response_model=list[Item], operation_id="list_items", tags=["items"])
def list_items(q: str | None = None, limit: int = 10) -> list[Item]:
    return [item for item in ITEMS.values() if q is None or q in item.name][:limit]


@api.post("/items", response_model=Item, status_code=201, operation_id="create_item",
          tags=["items"])  # fmt: skip
def create_item(item: ItemIn) -> Item:
    if any(existing.name == item.name for existing in ITEMS.values()):
        raise HTTPException(422, f"An item named {item.name!r} exists already")
    created = Item(id=max(ITEMS, default=0) + 1, **item.model_dump())
    ITEMS[created.id] = created
    return created


@api.put("/items/{id}", operation_id="replace_item", tags=["items"])
def replace_item(id: int, item: Item) -> dict[str, Any]:
    return {"path_id": id, "body_id": item.id, "name": item.name}


@api.delete("/items/{item_id}", status_code=204, operation_id="delete_item", tags=["items"])
def delete_item(item_id: int) -> None:
    ITEMS.pop(item_id, None)


@api.get("/whoami", operation_id="whoami", tags=["meta"])
def whoami(
    request: Request,
    x_trace: str | None = Header(default=None),
    session: str | None = Cookie(default=None),
) -> dict[str, Any]:
    return {
        "trace": x_trace,
        "session": session,
        "authorization": request.headers.get("authorization"),
        "api_key": request.headers.get("x-api-key"),
        "mcp_headers": sorted(name for name in request.headers if name.startswith("mcp-")),
    }


@api.get("/files/{name:path}", operation_id="read_file", tags=["meta"])
def read_file(request: Request, name: str) -> dict[str, Any]:
    return {"name": name, "raw_path": request.scope["raw_path"].decode()}


@api.post("/login", operation_id="login", tags=["meta"])
def login(username: str = Form(), password: str = Form()) -> dict[str, Any]:
    return {"user": username, "password_length": len(password)}


@api.get("/motd", response_class=PlainTextResponse, operation_id="motd", tags=["meta"])
def motd() -> str:
    return "Welcome to the shop."


@api.post("/echo", operation_id="echo", tags=["meta"])
def echo(body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    return body


@api.get("/outage", operation_id="outage", tags=["errors"])
def outage() -> None:
    raise HTTPException(503, "The warehouse is down. " * 100)


@pytest.fixture(scope="module")
def api_url() -> Iterator[str]:
    with serve_asgi(api, lifespan="off") as url:
        yield url


@pytest.fixture(scope="module")
def spec(api_url: str) -> dict[str, Any]:
    document: dict[str, Any] = httpx2.get(f"{api_url}/openapi.json", timeout=TIMEOUT).json()
    return document


@pytest.fixture(autouse=True)
def shop() -> Iterator[None]:
    ITEMS.clear()
    ITEMS[1] = Item(id=1, name="green tea", price=3.5, tags=["drinks"])
    ITEMS[2] = Item(id=2, name="teapot", price=20.0)
    RECEIVED.clear()
    yield
    ITEMS.clear()


@pytest.fixture
async def http(api_url: str) -> AsyncIterator[httpx2.AsyncClient]:
    headers = {"X-API-Key": "api-secret"}
    async with httpx2.AsyncClient(base_url=api_url, headers=headers, timeout=TIMEOUT) as client:
        yield client


async def tools_of(connect: Any, server: Server) -> dict[str, dict[str, Any]]:
    async with connect(server) as client:
        return {tool["name"]: tool for tool in await client.list_tools()}


async def call(connect: Any, server: Server, name: str, arguments: dict[str, Any]) -> Any:
    async with connect(server) as client:
        return await client.call_tool(name, arguments)


def only_text(result: dict[str, Any]) -> str:
    [block] = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


def fits(value: Any, schema: dict[str, Any]) -> bool:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema).is_valid(value)


# --------------------------------------------------------------------------- listing


async def test_each_operation_of_the_api_is_a_tool_named_by_its_operation_id(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)
    tools = await tools_of(connect, server)

    assert server.name == "Shop"
    assert server.version == "2.0.1"
    assert list(tools) == ["get_item", "delete_item", "list_items", "create_item",
                           "replace_item", "whoami", "read_file", "login", "motd", "echo",
                           "outage"]  # fmt: skip
    assert tools["get_item"]["description"] == "Get one item\n\nThe item with this id."
    assert tools["list_items"]["description"] == "List Items"  # FastAPI's summary
    assert tools["get_item"]["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
    assert tools["delete_item"]["annotations"] == {
        "readOnlyHint": False, "destructiveHint": True, "idempotentHint": True,
        "openWorldHint": True,
    }  # fmt: skip
    assert tools["replace_item"]["annotations"] == {
        "readOnlyHint": False, "idempotentHint": True, "openWorldHint": True
    }  # fmt: skip
    assert tools["create_item"]["annotations"] == {"readOnlyHint": False, "openWorldHint": True}
    assert tools["get_item"]["inputSchema"] == {
        "type": "object",
        "properties": {"item_id": {"type": "integer", "title": "Item Id"}},
        "required": ["item_id"],
    }
    # A 204 without a body, and a text answer: no outputSchema.
    assert "outputSchema" not in tools["delete_item"]
    assert "outputSchema" not in tools["motd"]


async def test_a_json_body_is_spread_into_arguments_beside_the_parameters(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    tools = await tools_of(connect, Server.from_openapi(spec, client=http))

    created = tools["create_item"]["inputSchema"]
    assert list(created["properties"]) == ["name", "price", "tags"]
    assert created["required"] == ["name", "price"]
    assert created["properties"]["price"]["exclusiveMinimum"] == 0
    listed = tools["list_items"]["inputSchema"]
    assert listed["properties"]["q"]["type"] == ["string", "null"]
    assert listed["properties"]["limit"]["default"] == 10
    assert "required" not in listed


# --------------------------------------------------------------------------- calling


async def test_a_path_parameter_fills_the_path_and_the_json_answer_is_structured(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)
    output_schema = (await tools_of(connect, server))["get_item"]["outputSchema"]

    result = await call(connect, server, "get_item", {"item_id": 1})

    expected = {"id": 1, "name": "green tea", "price": 3.5, "tags": ["drinks"]}
    assert result.get("isError") is not True
    assert result["structuredContent"] == expected
    assert json.loads(only_text(result)) == expected
    assert fits(result["structuredContent"], output_schema)
    assert RECEIVED == ["GET /items/1"]


async def test_query_parameters_are_sent_and_an_array_answer_fits_its_output_schema(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)
    output_schema = (await tools_of(connect, server))["list_items"]["outputSchema"]

    result = await call(connect, server, "list_items", {"q": "tea", "limit": 1})

    assert output_schema["type"] == "array"
    assert [item["name"] for item in result["structuredContent"]] == ["green tea"]
    assert fits(result["structuredContent"], output_schema)


async def test_a_spread_body_is_posted_as_json(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)

    result = await call(connect, server, "create_item", {"name": "mug", "price": 7.25})

    assert result["structuredContent"] == {"id": 3, "name": "mug", "price": 7.25, "tags": []}
    assert ITEMS[3].name == "mug"
    assert RECEIVED == ["POST /items"]


async def test_a_body_property_named_like_a_path_parameter_is_prefixed_with_body(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)
    schema = (await tools_of(connect, server))["replace_item"]["inputSchema"]

    result = await call(connect, server, "replace_item",
                        {"id": 5, "body_id": 7, "name": "cup", "price": 1.0})  # fmt: skip

    assert list(schema["properties"]) == ["id", "name", "price", "tags", "body_id"]
    assert schema["required"] == ["id", "name", "price", "body_id"]
    assert result["structuredContent"] == {"path_id": 5, "body_id": 7, "name": "cup"}


async def test_header_and_cookie_parameters_are_sent_with_the_clients_own_headers(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)

    result = await call(connect, server, "whoami", {"x-trace": "t-1", "session": "s-42"})

    assert result["structuredContent"] == {
        "trace": "t-1",
        "session": "s-42",
        "authorization": None,
        "api_key": "api-secret",
        "mcp_headers": [],
    }


async def test_a_path_value_stays_one_segment_whatever_it_holds(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)

    traversal = await call(connect, server, "read_file", {"name": "../admin?x=1#top"})
    dots = await call(connect, server, "read_file", {"name": ".."})

    assert traversal["structuredContent"] == {
        "name": "../admin?x=1#top",
        "raw_path": "/files/..%2Fadmin%3Fx%3D1%23top",
    }
    assert dots["structuredContent"]["raw_path"] == "/files/%2E%2E"


async def test_a_form_body_is_sent_form_encoded(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)
    schema = (await tools_of(connect, server))["login"]["inputSchema"]

    result = await call(connect, server, "login", {"username": "ada", "password": "s3cret & co"})

    assert schema["required"] == ["username", "password"]
    assert result["structuredContent"] == {"user": "ada", "password_length": 11}


async def test_a_text_answer_is_text_content(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    result = await call(connect, Server.from_openapi(spec, client=http), "motd", {})

    assert result == {**result, "content": [{"type": "text", "text": "Welcome to the shop."}]}
    assert "structuredContent" not in result


async def test_a_204_answer_says_there_was_no_body(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    result = await call(connect, Server.from_openapi(spec, client=http), "delete_item",
                        {"item_id": 2})  # fmt: skip

    assert only_text(result) == "The API answered HTTP 204 No Content (no body)."
    assert result.get("isError") is not True
    assert 2 not in ITEMS


# --------------------------------------------------------------------------- errors


async def test_a_404_from_the_api_is_an_error_result_with_the_status_and_the_body(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    result = await call(connect, Server.from_openapi(spec, client=http), "get_item",
                        {"item_id": 999})  # fmt: skip

    assert result["isError"] is True
    assert (
        only_text(result)
        == 'GET /items/999 answered HTTP 404 Not Found: {"detail":"Item not found"}'
    )
    assert "structuredContent" not in result


async def test_a_422_from_the_api_is_an_error_result_the_model_can_read(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    result = await call(connect, Server.from_openapi(spec, client=http), "create_item",
                        {"name": "teapot", "price": 9.0})  # fmt: skip

    assert result["isError"] is True
    assert only_text(result) == (
        "POST /items answered HTTP 422 Unprocessable Entity: "
        '{"detail":"An item named \'teapot\' exists already"}'
    )


async def test_a_long_error_body_is_cut_to_an_excerpt(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    result = await call(connect, Server.from_openapi(spec, client=http), "outage", {})

    message = only_text(result)
    assert result["isError"] is True
    assert message.startswith('GET /outage answered HTTP 503 Service Unavailable: {"detail":'
                              '"The warehouse is down. The warehouse is down.')  # fmt: skip
    assert message.endswith("…")
    assert len(message) == len("GET /outage answered HTTP 503 Service Unavailable: ") + 500 + 1


async def test_arguments_that_break_the_input_schema_are_refused_before_any_request(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(spec, client=http)

    result = await call(connect, server, "create_item", {"name": "mug", "price": -1})

    assert result["isError"] is True
    assert only_text(result).startswith("Invalid arguments for tool create_item: price:")
    assert RECEIVED == []


async def test_an_unreachable_api_is_an_error_result_without_a_traceback(
    spec: dict[str, Any], connect: Any
) -> None:
    with socket.socket() as sock:  # a port nobody listens on, once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=TIMEOUT) as down:
        result = await call(connect, Server.from_openapi(spec, client=down), "get_item",
                            {"item_id": 1})  # fmt: skip

    assert result["isError"] is True
    assert only_text(result).startswith(
        "GET /items/1 failed: the API could not be reached (ConnectError: "
    )
    assert "Traceback" not in only_text(result)


async def test_an_answer_that_does_not_match_the_document_is_an_error_result(
    http: httpx2.AsyncClient, connect: Any
) -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/whoami": {"get": {"operationId": "whoami", "responses": {"200": {
            "description": "who",
            "content": {"application/json": {"schema": {
                "type": "object", "required": ["account"],
                "properties": {"account": {"type": "string"}},
            }}},
        }}}}},
    }  # fmt: skip

    result = await call(connect, Server.from_openapi(document, client=http), "whoami", {})

    assert result["isError"] is True
    assert only_text(result) == ("GET /whoami answered HTTP 200 OK with JSON that does not "
                                 "match its OpenAPI document: arguments: 'account' is a "
                                 "required property")  # fmt: skip


# --------------------------------------------------------------------------- OpenAPI 3.0

NODE = {"$ref": "#/components/schemas/Node"}
TREES: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Trees", "version": "1"},
    "paths": {
        "/echo": {
            "post": {
                "operationId": "echoTree",
                "summary": "Echo a tree",
                "deprecated": True,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": NODE}},
                },
                "responses": {
                    "200": {
                        "description": "The same tree",
                        "content": {"application/json": {"schema": NODE}},
                    }
                },
            }
        }
    },
    "components": {
        "schemas": {
            "Node": {
                "type": "object",
                "required": ["label"],
                "x-internal": True,
                "properties": {
                    "id": {"type": "integer", "readOnly": True},
                    "label": {"type": "string", "example": "root"},
                    "weight": {"type": "number", "nullable": True, "minimum": 0,
                               "exclusiveMinimum": True},
                    "kind": {"type": "string", "enum": ["leaf", "branch"], "nullable": True},
                    "parent": {"$ref": "#/components/schemas/NodeOrNull"},
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                },
            },
            "NodeOrNull": {"allOf": [{"$ref": "#/components/schemas/Node"}], "nullable": True},
        }
    },
}  # fmt: skip


async def test_a_3_0_document_gets_2020_12_schemas_with_its_cycles_kept_in_defs(
    http: httpx2.AsyncClient, connect: Any
) -> None:
    tool = (await tools_of(connect, Server.from_openapi(TREES, client=http)))["echoTree"]

    assert tool["description"] == "Deprecated. Echo a tree"
    schema = tool["inputSchema"]
    assert list(schema["properties"]) == ["label", "weight", "kind", "parent", "children"]
    assert schema["properties"]["label"] == {"type": "string", "examples": ["root"]}
    assert schema["properties"]["weight"] == {"type": ["number", "null"], "exclusiveMinimum": 0}
    assert schema["properties"]["kind"] == {"type": ["string", "null"],
                                            "enum": ["leaf", "branch", None]}  # fmt: skip
    assert schema["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/Node"}}
    # Node and NodeOrNull reach each other: both stay definitions, referenced, not inlined.
    assert schema["properties"]["parent"] == {"$ref": "#/$defs/NodeOrNull"}
    assert set(schema["$defs"]) == {"Node", "NodeOrNull"}
    assert schema["$defs"]["NodeOrNull"] == {
        "anyOf": [{"allOf": [{"$ref": "#/$defs/Node"}]}, {"type": "null"}]
    }
    assert "x-internal" not in json.dumps(schema)
    output = tool["outputSchema"]
    assert output["type"] == "object"  # the root is unfolded once; the cycle stays in $defs
    assert output["properties"]["id"] == {"type": "integer", "readOnly": True}
    assert output["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator.check_schema(output)


async def test_a_recursive_body_is_checked_all_the_way_down_and_sent_whole(
    http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(TREES, client=http)
    tree = {
        "label": "root",
        "weight": None,
        "parent": None,
        "children": [{"label": "leaf", "kind": None, "children": []},
                     {"label": "twig", "kind": "branch", "weight": 0.5}],
    }  # fmt: skip

    echoed = await call(connect, server, "echoTree", tree)
    nested = {"label": "root", "children": [{"children": [{"weight": 1}]}]}
    deep_error = await call(connect, server, "echoTree", nested)
    zero = await call(connect, server, "echoTree", {"label": "root", "weight": 0})

    assert echoed["structuredContent"] == tree
    assert deep_error["isError"] is True
    assert "'label' is a required property" in only_text(deep_error)
    assert zero["isError"] is True
    assert "weight" in only_text(zero)
    assert RECEIVED == ["POST /echo"]


# --------------------------------------------------------------------------- choosing


async def test_operations_are_chosen_by_operation_id_by_tag_or_by_a_callable(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    by_id = Server.from_openapi(spec, client=http, operation_ids=["motd", "get_item"])
    by_tag = Server.from_openapi(spec, client=http, tags=["meta"])
    by_callable = Server.from_openapi(
        spec, client=http, include=lambda operation: operation.method == "GET"
    )
    both = Server.from_openapi(
        spec, client=http, tags=["items"], include=lambda op: op.path.startswith("/items/")
    )

    assert list(await tools_of(connect, by_id)) == ["get_item", "motd"]
    assert list(await tools_of(connect, by_tag)) == ["whoami", "read_file", "login", "motd", "echo"]
    assert list(await tools_of(connect, by_callable)) == [
        "get_item", "list_items", "whoami", "read_file", "motd", "outage"
    ]  # fmt: skip
    assert list(await tools_of(connect, both)) == ["get_item", "delete_item", "replace_item"]


def test_an_unknown_operation_id_or_an_empty_choice_is_refused(
    spec: dict[str, Any], http: httpx2.AsyncClient
) -> None:
    with pytest.raises(ValueError, match="No operation has the operationId nope"):
        Server.from_openapi(spec, client=http, operation_ids=["get_item", "nope"])
    with pytest.raises(ValueError, match="no operation was chosen"):
        Server.from_openapi(spec, client=http, tags=["no-such-tag"])


async def test_add_openapi_adds_prefixed_tools_beside_the_servers_own(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server("mine")

    @server.tool
    def shop_motd() -> str:
        return "mine"

    added = server.add_openapi(spec, client=http, prefix="shop_", tags=["meta"])
    tools = await tools_of(connect, server)

    assert [tool.name for tool in added] == [
        "shop_whoami", "shop_read_file", "shop_login", "shop_motd_2", "shop_echo"
    ]  # fmt: skip
    assert list(tools) == ["shop_motd", *(tool.name for tool in added)]
    assert only_text(await call(connect, server, "shop_motd_2", {})) == "Welcome to the shop."


# --------------------------------------------------------------------------- names

NAMES: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Pets", "version": "1"},
    "servers": [{"url": "https://{region}.pets.example/v1",
                 "variables": {"region": {"default": "eu"}}}],
    "paths": {
        "/pets": {
            "get": {"operationId": "list pets!", "responses": {"200": {"description": "x"}}},
            "post": {"responses": {"201": {"description": "x"}}},
        },
        "/pets/{petId}": {
            "parameters": [{"name": "petId", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "get": {"operationId": "pets.get-v2", "responses": {"200": {"description": "x"}}},
            "delete": {"operationId": "list pets?", "responses": {"204": {"description": "x"}}},
        },
        "/owners/{ownerId}/pets": {
            "get": {"parameters": [{"name": "ownerId", "in": "path", "required": True}],
                    "responses": {"200": {"description": "x"}}},
        },
        "/long": {"get": {"operationId": "a" * 200, "responses": {"200": {"description": "x"}}}},
        "/ü": {"get": {"operationId": "ü", "responses": {"200": {"description": "x"}}}},
    },
}  # fmt: skip


async def test_tool_names_are_sanitised_generated_when_missing_and_made_unique(
    connect: Any,
) -> None:
    async with httpx2.AsyncClient() as client:  # no base_url: the document's server is used
        tools = await tools_of(connect, Server.from_openapi(NAMES, client=client))

    assert list(tools) == ["list_pets", "post_pets", "pets.get-v2", "list_pets_2",
                           "get_owners_ownerId_pets", "a" * 128, "get"]  # fmt: skip
    assert tools["post_pets"]["description"] == "POST /pets"
    assert tools["pets.get-v2"]["inputSchema"]["required"] == ["petId"]


async def test_a_client_without_base_url_needs_an_absolute_server_in_the_document() -> None:
    document = {**NAMES, "servers": [{"url": "/v1"}]}
    async with httpx2.AsyncClient() as client:
        with pytest.raises(ValueError, match=r"give the client one, httpx2.AsyncClient\(base_url="):
            Server.from_openapi(document, client=client)


async def test_without_base_url_requests_go_to_the_documents_server(connect: Any) -> None:
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return httpx2.Response(200, json={"ok": True})

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer)) as client:
        server = Server.from_openapi(NAMES, client=client)
        await call(connect, server, "pets.get-v2", {"petId": "a b"})

    assert seen == ["https://eu.pets.example/v1/pets/a%20b"]


# --------------------------------------------------------------------------- serializing

STYLES: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Styles", "version": "1"},
    "paths": {
        "/grid/{cell}/{tags}/{pos}": {
            "post": {
                "operationId": "styles",
                "parameters": [
                    {"name": "cell", "in": "path", "required": True, "style": "label",
                     "schema": {"type": "array", "items": {"type": "integer"}}},
                    {"name": "tags", "in": "path", "required": True, "style": "matrix",
                     "explode": True, "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "pos", "in": "path", "required": True,
                     "schema": {"type": "object"}, "explode": True},
                    {"name": "ids", "in": "query", "schema": {"type": "array"}},
                    {"name": "csv", "in": "query", "explode": False, "schema": {"type": "array"}},
                    {"name": "pipes", "in": "query", "style": "pipeDelimited",
                     "schema": {"type": "array"}},
                    {"name": "filter", "in": "query", "style": "deepObject",
                     "schema": {"type": "object"}},
                    {"name": "flag", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "where", "in": "query",
                     "content": {"application/json": {"schema": {"type": "object"}}}},
                    {"name": "skipped", "in": "query", "schema": {"type": ["string", "null"]}},
                    {"name": "X-Ids", "in": "header", "schema": {"type": "array"}},
                    {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                    {"name": "prefs", "in": "cookie", "schema": {"type": "string"}},
                ],
                "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {
                    "type": "object",
                    "properties": {"colors": {"type": "array"}, "size": {"type": "integer"}},
                }}}},
                "responses": {"200": {"description": "an image",
                                      "content": {"image/png": {}}}},
            }
        }
    },
}  # fmt: skip


async def test_parameters_and_form_bodies_are_serialized_as_their_style_says(
    connect: Any,
) -> None:
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=b"\x89PNG", headers={"Content-Type": "image/png"})

    transport = httpx2.MockTransport(answer)
    async with httpx2.AsyncClient(transport=transport, base_url="http://api") as client:
        server = Server.from_openapi(STYLES, client=client)
        schema = (await tools_of(connect, server))["styles"]["inputSchema"]
        result = await call(connect, server, "styles", {
            "cell": [3, 4], "tags": ["a b", "c"], "pos": {"x": 1, "y": 2},
            "ids": [1, 2], "csv": ["p", "q"], "pipes": ["r", "s"],
            "filter": {"color": "red", "size": 2}, "flag": True, "where": {"a": [1]},
            "skipped": None, "X-Ids": [5, 6], "prefs": "dark mode",
            "colors": ["red", "blue"], "size": 3,
        })  # fmt: skip

    assert "Accept" not in schema["properties"]
    [request] = seen
    assert request.url.raw_path.decode() == (
        "/grid/.3,4/;tags=a%20b;tags=c/x=1,y=2"
        "?ids=1&ids=2&csv=p%2Cq&pipes=r%7Cs&filter%5Bcolor%5D=red&filter%5Bsize%5D=2"
        "&flag=true&where=%7B%22a%22%3A%5B1%5D%7D"
    )
    assert request.headers["X-Ids"] == "5,6"
    assert request.headers["Cookie"] == "prefs=dark%20mode"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert request.content == b"colors=red&colors=blue&size=3"
    assert result["content"] == [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]


# --------------------------------------------------------------------------- documents


def test_an_operation_that_cannot_be_a_tool_is_skipped_with_a_warning(
    http: httpx2.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Files", "version": "1"},
        "paths": {
            "/upload": {"post": {
                "operationId": "upload", "responses": {"200": {"description": "x"}},
                "requestBody": {"content": {"multipart/form-data": {"schema": {}}}},
            }},
            "/remote": {"get": {"operationId": "remote", "responses": {"200": {"description": "x",
                "content": {"application/json": {"schema": {"$ref": "other.yaml#/Thing"}}}}}}},
            "/ok": {"get": {"operationId": "ok", "responses": {"200": {"description": "x"}}}},
        },
    }  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="mcpserve"):
        server = Server.from_openapi(document, client=http)

    assert list(server.registry.tools) == ["ok"]
    assert [record.getMessage() for record in caplog.records] == [
        "OpenAPI operation POST /upload (upload) skipped: no supported media type for the "
        "request body among ['multipart/form-data']",
        "OpenAPI operation GET /remote (remote) skipped: $ref 'other.yaml#/Thing' points "
        "outside the document; only local references (#/...) are resolved",
    ]
    with pytest.raises(ValueError, match=r"Operation POST /upload \(upload\) cannot be a tool"):
        Server.from_openapi(document, client=http, operation_ids=["upload", "ok"])


async def test_the_document_may_be_json_text(
    spec: dict[str, Any], http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi(json.dumps(spec), client=http, operation_ids=["get_item"])

    assert (await call(connect, server, "get_item", {"item_id": 2}))["structuredContent"]["id"] == 2


def test_documents_that_are_not_openapi_3_json_are_refused_clearly(
    http: httpx2.AsyncClient,
) -> None:
    with pytest.raises(ValueError, match=r"not JSON\. YAML is not read: parse it first"):
        Server.from_openapi("openapi: 3.1.0\ninfo: {title: t}\n", client=http)
    with pytest.raises(ValueError, match=r"Swagger 2\.0 documents are not read"):
        Server.from_openapi({"swagger": "2.0", "paths": {}}, client=http)
    with pytest.raises(ValueError, match="Not an OpenAPI 3 document"):
        Server.from_openapi({"paths": {}}, client=http)
    with (
        httpx2.Client() as sync_client,
        pytest.raises(TypeError, match=r"client must be an httpx2\.AsyncClient, not Client"),
    ):
        Server.from_openapi(TREES, client=sync_client)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"fetch it first, spec = await fetch_openapi"):
        Server("s").add_openapi("/openapi.json", client=http)


async def test_from_a_url_the_tools_are_fetched_with_the_client_when_the_server_starts(
    http: httpx2.AsyncClient, connect: Any
) -> None:
    server = Server.from_openapi("/openapi.json", client=http, name="shop", tags=["items"])

    assert server.registry.tools == {}
    tools = await tools_of(connect, server)
    again = await tools_of(connect, server)  # started again: the same tools, not twice

    assert list(tools) == list(again) == ["get_item", "delete_item", "list_items",
                                          "create_item", "replace_item"]  # fmt: skip
    assert RECEIVED == ["GET /openapi.json"]


async def test_a_document_url_that_fails_stops_the_server_from_starting(
    http: httpx2.AsyncClient,
) -> None:
    server = Server.from_openapi("/no-such-document.json", client=http)

    with pytest.raises(ValueError, match=r"at /no-such-document\.json answered HTTP 404"):
        async with Client(server):
            pass


async def test_fetch_openapi_reads_the_document_with_the_client(
    spec: dict[str, Any], http: httpx2.AsyncClient
) -> None:
    assert await fetch_openapi(http, "/openapi.json") == spec


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture(scope="module")
def served(spec: dict[str, Any], api_url: str) -> Iterator[str]:
    """The shop as an MCP server over real Streamable HTTP; its API client lives in the
    serving thread's loop and is closed by the server's lifespan."""
    client = httpx2.AsyncClient(base_url=api_url, headers={"Authorization": "Bearer api-key"},
                               timeout=TIMEOUT)  # fmt: skip

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        async with client:
            yield

    server = Server("shop", lifespan=lifespan)
    server.add_openapi(spec, client=client)
    with serve_http(server) as url:
        yield url


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_the_official_sdk_client_sees_ordinary_tools_over_http(
    served: str, mode: str
) -> None:
    mcp_token = {"Authorization": "Bearer mcp-client-token"}
    async with (
        httpx2.AsyncClient(headers=mcp_token, timeout=TIMEOUT) as transport_client,
        SDKClient(streamable_http_client(served, http_client=transport_client), mode=mode,
                  read_timeout_seconds=TIMEOUT, cache=None) as client,
    ):  # fmt: skip
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        item = await client.call_tool("get_item", {"item_id": 1})
        items = await client.call_tool("list_items", {"limit": 5})
        missing = await client.call_tool("get_item", {"item_id": 404})
        who = await client.call_tool("whoami", {})

    assert listed["get_item"].input_schema["required"] == ["item_id"]
    assert listed["get_item"].annotations is not None
    assert listed["get_item"].annotations.read_only_hint is True
    assert item.is_error is False
    assert item.structured_content == {"id": 1, "name": "green tea", "price": 3.5,
                                       "tags": ["drinks"]}  # fmt: skip
    names = ["green tea", "teapot"]
    if mode == "legacy":  # a handshake-era client gets the array wrapped in an object
        assert [i["name"] for i in items.structured_content["result"]] == names  # type: ignore[index]
    else:
        assert [i["name"] for i in items.structured_content] == names  # type: ignore[union-attr]
    assert missing.is_error is True
    assert missing.content[0].text.startswith("GET /items/404 answered HTTP 404")  # type: ignore[union-attr]
    # The API sees the credentials of the httpx2 client, never the MCP client's token.
    assert who.structured_content is not None
    assert who.structured_content["authorization"] == "Bearer api-key"
    assert who.structured_content["mcp_headers"] == []


def test_a_misspelt_option_is_refused_rather_than_ignored(
    spec: dict[str, Any], http: httpx2.AsyncClient
) -> None:
    with pytest.raises(TypeError, match="Unknown option tag; the options are include, "):
        Server.from_openapi(spec, client=http, tag=["items"])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="Unknown option operations"):
        Server("s").add_openapi(spec, client=http, operations=["get_item"])  # type: ignore[call-arg]


WITHOUT_HTTPX = """
import sys


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "httpx2":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
from mcpserve import Server

try:
    Server.from_openapi({"openapi": "3.1.0", "paths": {}}, client=None)
except ModuleNotFoundError as exc:
    print(exc)
"""


@pytest.mark.subprocess
def test_without_httpx_the_error_names_the_http_extra() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_HTTPX], capture_output=True,
                          text=True, timeout=30, check=True)  # fmt: skip
    assert done.stdout.strip() == (
        "Server.from_openapi (tools from an OpenAPI document) needs httpx2, which the http "
        'extra installs: pip install "mcpserve[http]"'
    )
