"""An HTTP API as MCP tools: each operation of its OpenAPI document becomes one tool.

The API here is a tiny FastAPI inventory defined in this file, and the httpx2 client reaches
it in process (``httpx2.ASGITransport``), so the example runs without a network. Against a
real API, only the client changes: ``httpx2.AsyncClient(base_url="https://api.example.com",
headers={"Authorization": "Bearer ..."})``. Its credentials are the API's; the MCP client's
are never passed on.

Run it (``pip install fastapi "mcpserve[http]"``)::

    python examples/openapi_inventory.py                 # stdio
    mcpserve call examples/openapi_inventory.py find_parts text=bolt
"""

from __future__ import annotations

import httpx2
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from mcpserve import Server

api = FastAPI(title="Inventory", version="1.0.0")


class NewPart(BaseModel):
    name: str = Field(description="What the part is called.")
    count: int = Field(ge=0, description="How many are in stock.")


class Part(NewPart):
    sku: str


PARTS = {
    "B-10": Part(sku="B-10", name="hex bolt M10", count=120),
    "N-10": Part(sku="N-10", name="hex nut M10", count=80),
}


@api.get("/parts", operation_id="find_parts", summary="Find parts by name")
def find_parts(text: str = "", limit: int = 20) -> list[Part]:
    return [part for part in PARTS.values() if text.lower() in part.name][:limit]


@api.get("/parts/{sku}", operation_id="get_part", summary="One part by its SKU")
def get_part(sku: str) -> Part:
    if sku not in PARTS:
        raise HTTPException(404, f"No part with SKU {sku}")
    return PARTS[sku]


@api.put("/parts/{sku}", operation_id="put_part", summary="Add or replace a part")
def put_part(sku: str, part: NewPart) -> Part:
    PARTS[sku] = Part(sku=sku, **part.model_dump())
    return PARTS[sku]


client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api), base_url="http://inventory")
server = Server.from_openapi(api.openapi(), client=client)

if __name__ == "__main__":
    server.run()
