"""An HTTP API described by OpenAPI 3.0 or 3.1, served as tools: one tool per operation.

``Server.from_openapi(spec, client=...)`` builds a server of them and
``server.add_openapi(spec, client=...)`` adds them to a server; both come here. Reading the
document happens once, at registration:

1. the document is a dict, or JSON text (YAML is not read: ``yaml.safe_load`` it first), or
   for ``from_openapi`` a URL, fetched with the client when the server starts
   (:func:`fetch_openapi`);
2. the operations are chosen: all, or those named in ``operation_ids``, tagged with one of
   ``tags``, accepted by ``include`` (each given filter must pass);
3. each becomes a tool: its name from ``operationId`` (or method and path), its arguments
   and ``inputSchema`` from its parameters and body (:mod:`.arguments`), its
   ``outputSchema`` from its 2xx JSON responses (:mod:`.schemas`), its annotations from the
   method; calls are sent with the user's ``httpx2.AsyncClient`` (:mod:`.calls`).

An operation that cannot be a tool (a reference out of the document, a body only in
``multipart/form-data``) is skipped with a warning in the log, unless ``operation_ids``
named it: then registration fails, naming the operation and the reason. Nothing is
registered when registration fails.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

import orjson
from typing_extensions import Unpack

from ..._extras import needs_extra
from ..._types import JSONDict
from ...server.entries.entry import Pool
from ...server.entries.kinds import ToolEntry
from ...server.registry import Registry
from .schemas import Translator, UnsupportedSchema, follow_refs

if TYPE_CHECKING:  # the thread pool's module, httpx2 and the calls (httpx2) load on first use
    from concurrent.futures import ThreadPoolExecutor

    import httpx2

    from .calls import OperationTool

logger = logging.getLogger("mcpserve")


class ToolHost(Protocol):
    """What registering the operations needs of a server."""

    registry: Registry

    def thread_pool(self) -> ThreadPoolExecutor: ...

    def add_tool(self, fn: ToolEntry, /) -> ToolEntry: ...


H_co = TypeVar("H_co", bound=ToolHost, covariant=True)
S = TypeVar("S", bound=ToolHost)


class ServerClass(Protocol[H_co]):
    """A server class: made with a name, a version and a lifespan."""

    def __call__(
        self, name: str, version: str = ..., *, lifespan: Callable[[Any], Any] | None = ...
    ) -> H_co: ...


_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_UNSAFE_TOOL_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")
_PREFIX = re.compile(r"[A-Za-z0-9_.\-]*")
#: What each method promises (the MCP tool annotations; unlisted hints keep their defaults).
_ANNOTATIONS: dict[str, dict[str, bool]] = {
    "GET": {"readOnlyHint": True},
    "HEAD": {"readOnlyHint": True},
    "OPTIONS": {"readOnlyHint": True},
    "TRACE": {"readOnlyHint": True},
    "PUT": {"readOnlyHint": False, "idempotentHint": True},
    "DELETE": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
    "POST": {"readOnlyHint": False},
    "PATCH": {"readOnlyHint": False},
}


@dataclass(frozen=True)
class OpenAPIOperation:
    """One operation of the document, as ``include=`` sees it when choosing."""

    #: Upper case: ``"GET"``.
    method: str
    #: The path template: ``"/items/{item_id}"``.
    path: str
    operation_id: str | None
    tags: tuple[str, ...]
    summary: str | None
    #: The Operation Object itself, as the document has it.
    operation: Mapping[str, Any]


class OpenAPISelection(TypedDict, total=False):
    """Which operations become tools, and how their names begin."""

    #: Only these operations (by ``operationId``; an unknown one is an error).
    operation_ids: Iterable[str]
    #: Only operations with at least one of these tags.
    tags: Iterable[str]
    #: Only operations this accepts.
    include: Callable[[OpenAPIOperation], bool]
    #: Put before every tool name (``"petstore_"``), to keep two APIs apart.
    prefix: str


def load_document(spec: Mapping[str, Any] | str | bytes) -> JSONDict:
    """The OpenAPI document ``spec`` is: a dict, or JSON text."""
    if isinstance(spec, str | bytes):
        try:
            spec = orjson.loads(spec)
        except orjson.JSONDecodeError:
            raise ValueError(
                "The OpenAPI document is not JSON. YAML is not read: parse it "
                "first (yaml.safe_load) and pass the dict"
            ) from None
    if not isinstance(spec, Mapping):
        raise ValueError(f"An OpenAPI document is a JSON object, not {type(spec).__name__}")
    version = spec.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        if "swagger" in spec:
            raise ValueError("Swagger 2.0 documents are not read; convert it to OpenAPI 3")
        raise ValueError(f"Not an OpenAPI 3 document (openapi: {version!r})")
    if not isinstance(spec.get("paths", {}), Mapping):
        raise ValueError("The OpenAPI document's paths must be an object")
    return dict(spec)


def is_url(spec: object) -> bool:
    """Whether ``spec`` names a document rather than being one: text on one line that is
    not JSON (``"https://api.example.com/openapi.json"``, ``"/openapi.json"``)."""
    if not isinstance(spec, str):
        return False
    stripped = spec.strip()
    return bool(stripped) and stripped[0] not in "{[" and not any(c.isspace() for c in stripped)


async def fetch_openapi(client: httpx2.AsyncClient, url: str) -> JSONDict:
    """Fetch an OpenAPI document with ``client`` (a URL relative to its ``base_url`` works).

    >>> spec = await fetch_openapi(client, "/openapi.json")
    """
    response = await client.get(url)
    if not 200 <= response.status_code < 300:
        raise ValueError(
            f"Fetching the OpenAPI document at {url} answered HTTP {response.status_code}"
        )
    return load_document(response.content)


def operation_tools(
    spec: Mapping[str, Any] | str | bytes,
    *,
    client: httpx2.AsyncClient,
    pool: Pool,
    taken: Collection[str] = (),
    **selection: Unpack[OpenAPISelection],
) -> list[OperationTool]:
    """The tools for the chosen operations of ``spec``, named apart from ``taken``."""
    _check_client(client)
    from .arguments import build_plan
    from .calls import Call, OperationTool

    _check_options(selection)
    if is_url(spec):
        raise TypeError(
            "add_openapi() takes the document, not its URL: fetch it first, "
            "spec = await fetch_openapi(client, url), or use "
            "Server.from_openapi(url, client=...)"
        )
    prefix = selection.get("prefix", "")
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(f"prefix {prefix!r} may only use A-Z, a-z, 0-9, '_', '-' and '.'")
    document = load_document(spec)
    server_url = _server_url(document, client)
    wanted = frozenset(selection["operation_ids"]) if "operation_ids" in selection else None
    tags = frozenset(selection["tags"]) if "tags" in selection else None
    include = selection.get("include")
    operations = list(_operations(document))
    unknown = (wanted or frozenset()) - {operation.operation_id for operation, _ in operations}
    if unknown:
        raise ValueError(f"No operation has the operationId {', '.join(sorted(unknown))}")
    translator = Translator(document)
    names = set(taken)
    tools: list[OperationTool] = []
    chosen = [
        (operation, path_item)
        for operation, path_item in operations
        if (wanted is None or operation.operation_id in wanted)
        and (tags is None or not tags.isdisjoint(operation.tags))
        and (include is None or include(operation))
    ]
    for operation, path_item in chosen:
        name = _unique(_tool_name(prefix, operation), names)
        try:
            plan = build_plan(
                translator, document, operation.path, path_item, dict(operation.operation)
            )
            call = Call(client, operation.method, plan, server_url=server_url)
            tool = OperationTool(
                call.send,
                pool=pool,
                name=name,
                description=_description(operation),
                annotations={**_ANNOTATIONS[operation.method], "openWorldHint": True},
                input_schema=plan.input_schema,
                output_schema=_output_schema(translator, document, operation),
            )
        except ValueError as exc:
            what = f"{operation.method} {operation.path}"
            if operation.operation_id:
                what += f" ({operation.operation_id})"
            if wanted is not None and operation.operation_id in wanted:
                raise ValueError(f"Operation {what} cannot be a tool: {exc}") from None
            logger.warning("OpenAPI operation %s skipped: %s", what, exc)
            continue
        call.output_check = tool.output_check
        names.add(name)
        tools.append(tool)
    if not tools:
        why = "see the warnings" if chosen else "no operation was chosen"
        raise ValueError(f"The OpenAPI document gives no tool: {why}")
    return tools


def add_openapi(
    server: ToolHost,
    spec: Mapping[str, Any] | str | bytes,
    *,
    client: httpx2.AsyncClient,
    **selection: Unpack[OpenAPISelection],
) -> list[OperationTool]:
    """Register a tool per chosen operation on ``server`` (all or none)."""
    tools = operation_tools(
        spec, client=client, pool=server.thread_pool, taken=server.registry.tools, **selection
    )
    for tool in tools:
        server.add_tool(tool)
    return tools


def server_from_openapi(
    cls: ServerClass[S],
    spec: Mapping[str, Any] | str | bytes,
    *,
    client: httpx2.AsyncClient,
    name: str | None = None,
    version: str | None = None,
    **selection: Unpack[OpenAPISelection],
) -> S:
    """A new server of ``cls`` with the API's tools; from a URL, they are registered when the
    server starts (its lifespan), so the client fetches in the loop it will call from."""
    _check_options(selection)
    if not is_url(spec):
        document = load_document(spec)
        info = document.get("info")
        info = info if isinstance(info, dict) else {}
        server = cls(
            name or str(info.get("title") or "openapi"),
            version or str(info.get("version") or "0.1.0"),
        )
        add_openapi(server, document, client=client, **selection)
        return server
    assert isinstance(spec, str)
    _check_client(client)
    url = spec.strip()
    fetched = False

    @asynccontextmanager
    async def register_at_start(server: ToolHost) -> AsyncIterator[None]:
        nonlocal fetched
        if not fetched:  # a server started twice (tests, say) keeps the first tools
            add_openapi(server, await fetch_openapi(client, url), client=client, **selection)
            fetched = True
        yield None

    return cls(name or "openapi", version or "0.1.0", lifespan=register_at_start)


def _check_client(client: object) -> None:
    with needs_extra("Server.from_openapi (tools from an OpenAPI document)"):
        import httpx2
    if not isinstance(client, httpx2.AsyncClient):
        raise TypeError(f"client must be an httpx2.AsyncClient, not {type(client).__name__}")


def _check_options(selection: Mapping[str, Any]) -> None:
    """``**selection`` is only typed for the type checker: refuse a misspelt option here."""
    if unknown := sorted(set(selection) - OpenAPISelection.__optional_keys__):
        known = ", ".join(sorted(OpenAPISelection.__optional_keys__))
        raise TypeError(f"Unknown option {', '.join(unknown)}; the options are {known}")


def _operations(document: JSONDict) -> Iterator[tuple[OpenAPIOperation, JSONDict]]:
    """Every operation of the document, in its order, with its path item."""
    for path, declared in (document.get("paths") or {}).items():
        try:
            path_item = follow_refs(document, declared)
        except UnsupportedSchema as exc:
            logger.warning("OpenAPI path %s skipped: %s", path, exc)
            continue
        if not isinstance(path_item, dict):
            continue
        for method, raw in path_item.items():
            if method not in _METHODS or not isinstance(raw, dict):
                continue
            operation_id, tags, summary = (
                raw.get("operationId"),
                raw.get("tags"),
                raw.get("summary"),
            )
            yield (
                OpenAPIOperation(
                    method=method.upper(),
                    path=str(path),
                    operation_id=operation_id if isinstance(operation_id, str) else None,
                    tags=tuple(map(str, tags)) if isinstance(tags, list) else (),
                    summary=summary if isinstance(summary, str) else None,
                    operation=raw,
                ),
                path_item,
            )


def _server_url(document: JSONDict, client: httpx2.AsyncClient) -> str:
    """What goes before each path: nothing when the client has a ``base_url`` (it wins),
    else the document's first server URL, which must then be absolute."""
    if str(client.base_url):
        return ""
    servers = document.get("servers")
    first = servers[0] if isinstance(servers, list) and servers else None
    url = first.get("url") if isinstance(first, dict) else None
    if isinstance(first, dict) and isinstance(url, str):
        for variable, spec in (first.get("variables") or {}).items():
            if isinstance(spec, dict) and "default" in spec:
                url = url.replace("{" + variable + "}", str(spec["default"]))
        if url.startswith(("http://", "https://")):
            return url.rstrip("/")
    raise ValueError(
        "The client has no base_url and the document names no absolute server "
        "URL: give the client one, httpx2.AsyncClient(base_url=...)"
    )


def _tool_name(prefix: str, operation: OpenAPIOperation) -> str:
    """The operationId, or else the method and path, with each run of characters a tool name
    cannot have replaced by ``_``: ``get_items_item_id`` for ``GET /items/{item_id}``."""
    sanitised = _UNSAFE_TOOL_NAME.sub("_", operation.operation_id or "").strip("_")
    if not sanitised:
        path = _UNSAFE_TOOL_NAME.sub("_", operation.path).strip("_")
        sanitised = f"{operation.method.lower()}_{path}".rstrip("_")
    return (prefix + sanitised)[:128]


def _unique(name: str, taken: Collection[str]) -> str:
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        suffix = f"_{number}"
        candidate = name[: 128 - len(suffix)] + suffix
    return candidate


def _description(operation: OpenAPIOperation) -> str:
    raw = operation.operation
    parts = [
        part.strip()
        for part in (raw.get("summary"), raw.get("description"))
        if isinstance(part, str) and part.strip()
    ]
    text = "\n\n".join(dict.fromkeys(parts)) or f"{operation.method} {operation.path}"
    return f"Deprecated. {text}" if raw.get("deprecated") is True else text


def _output_schema(
    translator: Translator, document: JSONDict, operation: OpenAPIOperation
) -> JSONDict | None:
    """The schema every documented 2xx answer fits, or None when one may have no JSON body
    (a 204, say) or the document does not say what it is."""
    responses = operation.operation.get("responses")
    if not isinstance(responses, dict):
        return None
    schemas: list[Any] = []
    for code in (code for code in responses if str(code).startswith("2")):
        response = follow_refs(document, responses[code])
        content = response.get("content") if isinstance(response, dict) else None
        if not isinstance(content, dict):
            return None
        json_media = [
            media
            for media in content
            if media.split(";")[0].strip().lower() == "application/json"
            or media.split(";")[0].strip().lower().endswith("+json")
        ]
        media_object = content[json_media[0]] if json_media else None
        if not isinstance(media_object, dict) or media_object.get("schema") in (None, {}, True):
            return None
        translated = translator.translate(media_object["schema"])
        if translated not in schemas:
            schemas.append(translated)
    if not schemas or not isinstance(schemas[0], dict):
        return None
    return translator.finish(schemas[0] if len(schemas) == 1 else {"anyOf": schemas})
