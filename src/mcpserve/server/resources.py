"""Resources and resource templates.

A resource is a fixed URI served by a function with no arguments (besides an optional
``Context``). A template is an RFC 6570 URI template whose variables become the
function's arguments: ``notes://{note_id}`` calls ``note(note_id="42")`` for
``notes://42``. Template arguments are validated like tool arguments, in lax mode, so a
variable annotated ``int`` arrives as an ``int``.

A function returns what the resource contains: ``str`` (text), ``bytes`` (a base64
``blob``), a :class:`Contents` or a list of them (several contents, e.g. a directory), or
any JSON-able value (rendered as JSON text, ``application/json`` by default).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import pydantic

from ..protocol.errors import ResourceNotFound
from ..protocol.records import Record
from .content import json_text
from .context import Context
from .handlers import Invoker, make_invoker
from .rounds import run_asking
from .schema import ArgumentSpec, inspect_arguments, parse_docstring

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from .uri_template import URITemplate

CacheScope = Literal["public", "private"]


class CachePolicy(Record):
    """How long clients may cache a result (``ttlMs``) and who may share it (``cacheScope``).

    ``scope="public"`` means the result holds nothing user-specific and may be shared across
    users by caches; ``"private"`` keeps it to one authorization context.
    """

    __slots__ = ("scope", "ttl_ms")  # a Record: see protocol/records.py

    def __init__(self, ttl_ms: int = 0, scope: CacheScope = "private") -> None:
        if type(ttl_ms) is not int or ttl_ms < 0:
            raise ValueError("ttl_ms must be a whole number of milliseconds >= 0")
        if scope not in ("public", "private"):
            raise ValueError("scope must be 'public' or 'private'")
        self.ttl_ms = ttl_ms
        self.scope = scope


class Contents(Record):
    """One entry of a ``resources/read`` result; ``uri`` defaults to the URI read."""

    __slots__ = ("blob", "meta", "mime_type", "text", "uri")  # a Record: see protocol/records.py

    def __init__(
        self,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
        uri: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.text = text
        self.blob = blob
        self.mime_type = mime_type
        self.uri = uri
        self.meta = meta

    def to_wire(self, uri: str, mime_type: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"uri": self.uri or uri}
        mime = self.mime_type or mime_type
        if mime:
            entry["mimeType"] = mime
        if self.blob is not None:
            entry["blob"] = base64.b64encode(self.blob).decode("ascii")
        else:
            entry["text"] = self.text or ""
        if self.meta:
            entry["_meta"] = self.meta
        return entry


def to_contents(value: Any, uri: str, mime_type: str | None) -> list[dict[str, Any]]:
    """A function's return value as ``ReadResourceResult.contents``."""
    if isinstance(value, str):
        entry: dict[str, Any] = {"uri": uri, "text": value}
    elif isinstance(value, bytes | bytearray | memoryview):
        entry = {"uri": uri, "blob": base64.b64encode(value).decode("ascii")}
    elif isinstance(value, Contents):
        return [value.to_wire(uri, mime_type)]
    elif isinstance(value, list) and value and all(isinstance(v, Contents) for v in value):
        return [v.to_wire(uri, mime_type) for v in value]
    else:
        entry = {"uri": uri, "text": json_text(value)}
        mime_type = mime_type or "application/json"
    if mime_type:
        entry["mimeType"] = mime_type
    return [entry]


def _metadata(
    fn: Callable[..., Any],
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
    icons: list[dict[str, Any]] | None,
    annotations: dict[str, Any] | None,
    meta: dict[str, Any] | None,
) -> dict[str, Any]:
    doc_description, _ = parse_docstring(fn)
    wire: dict[str, Any] = {"name": name or fn.__name__}
    optional = {
        "title": title,
        "description": description if description is not None else doc_description,
        "mimeType": mime_type,
        "icons": icons,
        "annotations": annotations,
        "_meta": meta,
    }
    wire.update({key: value for key, value in optional.items() if value})
    return wire


class Resource:
    """A resource at one fixed URI."""

    # Plain classes, like the other registrations (see :class:`~.tools.Tool`).
    __slots__ = ("cache", "context_param", "fn", "invoke", "mime_type", "uri", "wire")

    def __init__(
        self,
        uri: str,
        fn: Callable[..., Any],
        invoke: Invoker,
        context_param: str | None,
        wire: dict[str, Any],
        mime_type: str | None = None,
        cache: CachePolicy | None = None,
    ) -> None:
        self.uri = uri
        self.fn = fn
        self.invoke = invoke
        self.context_param = context_param
        self.wire = wire
        self.mime_type = mime_type
        self.cache = cache

    def __repr__(self) -> str:
        return f"Resource(uri={self.uri!r}, fn={self.fn!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not registered."""
        return self.fn(*args, **kwargs)

    async def read(self, uri: str, ctx: Context) -> dict[str, Any]:
        """The ``ReadResourceResult`` body (or an ``input_required`` result)."""
        ctx.begin_rounds(uri, {})
        kwargs: dict[str, Any] = {}
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        return await _read(self.invoke, kwargs, uri, self.mime_type, ctx)


class ResourceTemplate:
    """A family of resources described by an RFC 6570 URI template."""

    __slots__ = ("arguments", "cache", "fn", "invoke", "mime_type", "template", "wire")

    def __init__(
        self,
        template: URITemplate,
        fn: Callable[..., Any],
        invoke: Invoker,
        arguments: ArgumentSpec,
        wire: dict[str, Any],
        mime_type: str | None = None,
        cache: CachePolicy | None = None,
    ) -> None:
        self.template = template
        self.fn = fn
        self.invoke = invoke
        self.arguments = arguments
        self.wire = wire
        self.mime_type = mime_type
        self.cache = cache

    def __repr__(self) -> str:
        return f"ResourceTemplate(uriTemplate={self.wire['uriTemplate']!r}, fn={self.fn!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not registered."""
        return self.fn(*args, **kwargs)

    def match(self, uri: str) -> dict[str, Any] | None:
        return self.template.match(uri)

    async def read(self, uri: str, variables: dict[str, Any], ctx: Context) -> dict[str, Any]:
        """The ``ReadResourceResult`` body (or an ``input_required`` result)."""
        ctx.begin_rounds(uri, {})
        try:
            kwargs = self.arguments.validate(variables)
        except pydantic.ValidationError:
            raise ResourceNotFound(uri) from None
        if self.arguments.context_param is not None:
            kwargs[self.arguments.context_param] = ctx
        return await _read(self.invoke, kwargs, uri, self.mime_type, ctx)


async def _read(
    invoke: Invoker, kwargs: dict[str, Any], uri: str, mime_type: str | None, ctx: Context
) -> dict[str, Any]:
    value, input_required = await run_asking(ctx, lambda: invoke(kwargs))
    if input_required is not None:
        return input_required
    return {"contents": to_contents(value, uri, mime_type)}


def build_resource(
    uri: str,
    fn: Callable[..., Any],
    *,
    pool: Callable[[], ThreadPoolExecutor],
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    icons: list[dict[str, Any]] | None = None,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    blocking: bool | None = None,
    cache: CachePolicy | None = None,
) -> Resource | ResourceTemplate:
    """A :class:`Resource`, or a :class:`ResourceTemplate` when ``uri`` has ``{variables}``."""
    arguments = inspect_arguments(fn, context_type=Context, strict=False)
    invoke = make_invoker(fn, blocking=blocking, pool=pool)
    wire = _metadata(fn, name, title, description, mime_type, icons, annotations, meta)
    template = _template_of(uri)
    if template is None:
        if arguments.param_names:
            raise TypeError(
                f"Resource {uri!r} has no URI variables, so {fn.__name__}() cannot take "
                f"arguments ({', '.join(arguments.param_names)})"
            )
        if size is not None:
            wire["size"] = size
        return Resource(
            uri, fn, invoke, arguments.context_param, {"uri": uri, **wire}, mime_type, cache
        )
    unknown = set(template.variables) - set(arguments.param_names)
    if unknown:
        raise TypeError(
            f"{fn.__name__}() has no parameter for URI variable(s) {', '.join(sorted(unknown))}"
        )
    required = set(arguments.input_schema.get("required", ()))
    unfilled = required - set(template.variables)
    if unfilled:
        raise TypeError(
            f"{fn.__name__}() requires {', '.join(sorted(unfilled))}, which {uri!r} never fills"
        )
    return ResourceTemplate(
        template, fn, invoke, arguments, {"uriTemplate": uri, **wire}, mime_type, cache
    )


def _template_of(uri: str) -> URITemplate | None:
    """The parsed template when ``uri`` has ``{variables}``; None for a plain URI."""
    if "{" not in uri and "}" not in uri:
        return None  # most resources: no need to load the template parser at all
    from .uri_template import URITemplate

    template = URITemplate(uri)
    return template if template.variables else None
