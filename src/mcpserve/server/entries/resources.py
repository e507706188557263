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
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from ..._content import json_text
from ..._types import JSONDict, UserFunction
from ...protocol.errors import ResourceNotFound
from ...protocol.records import Record
from ..context.context import Context
from .cache import CachePolicy as CachePolicy
from .cache import CacheScope as CacheScope
from .catalogue import catalogue_meta
from .entry import FunctionEntry, InvalidArguments, Pool, list_entry
from .options import ResourceOptions, refuse_unknown

if TYPE_CHECKING:  # loads with the first resource template
    from .uri_template import URITemplate


class Contents(Record):
    """One entry of a ``resources/read`` result; ``uri`` defaults to the URI read."""

    __slots__ = ("blob", "meta", "mime_type", "text", "uri")  # a Record: see protocol/records.py

    def __init__(
        self,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
        uri: str | None = None,
        meta: JSONDict | None = None,
    ) -> None:
        self.text = text
        self.blob = blob
        self.mime_type = mime_type
        self.uri = uri
        self.meta = meta

    def to_wire(self, uri: str, mime_type: str | None) -> JSONDict:
        entry: JSONDict = {"uri": self.uri or uri}
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


def to_contents(value: Any, uri: str, mime_type: str | None) -> list[JSONDict]:
    """A function's return value as ``ReadResourceResult.contents``."""
    if isinstance(value, str):
        entry: JSONDict = {"uri": uri, "text": value}
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


class Readable(FunctionEntry):
    """What resources and templates share: a function that returns what a URI contains."""

    __slots__ = ("cache", "mime_type")

    def __init__(
        self,
        key: str,
        fn: UserFunction,
        *,
        pool: Pool,
        blocking: bool | None = None,
        mime_type: str | None = None,
        cache: CachePolicy | None = None,
        scopes: Iterable[str] = (),
    ) -> None:
        super().__init__(fn, key, pool=pool, blocking=blocking, scopes=scopes)
        self.mime_type = mime_type
        self.cache = cache

    def admit(self, arguments: Any, ctx: Context) -> Any:
        ctx.begin_rounds(ctx.request.params["uri"], {})
        return arguments

    def shape(self, value: Any, ctx: Context) -> JSONDict:
        return {"contents": to_contents(value, ctx.request.params["uri"], self.mime_type)}


class Resource(Readable):
    """A resource at one fixed URI."""

    __slots__ = ()

    @property
    def uri(self) -> str:
        return self.key


class ResourceTemplate(Readable):
    """A family of resources described by an RFC 6570 URI template; its variables are the
    function's arguments."""

    __slots__ = ("template",)

    def __init__(self, template: URITemplate, fn: UserFunction, **options: Any) -> None:
        super().__init__(template.template, fn, **options)
        self.template = template

    def match(self, uri: str) -> JSONDict | None:
        return self.template.match(uri)

    def refuse(self, invalid: InvalidArguments, ctx: Context) -> JSONDict:
        # A variable that does not convert (``notes://abc`` for an ``int`` id) names nothing.
        raise ResourceNotFound(ctx.request.params["uri"])


def build_resource(
    uri: str, fn: UserFunction, *, pool: Pool, **options: Unpack[ResourceOptions]
) -> Resource | ResourceTemplate:
    """A :class:`Resource`, or a :class:`ResourceTemplate` when ``uri`` has ``{variables}``."""
    refuse_unknown(options, ResourceOptions, "resource")
    name, title, description = options.get("name"), options.get("title"), options.get("description")
    mime_type, size, icons = options.get("mime_type"), options.get("size"), options.get("icons")
    annotations = options.get("annotations")
    meta = catalogue_meta(options.get("meta"), options.get("tags"), options.get("version"), uri)
    blocking, cache, scopes = (
        options.get("blocking"),
        options.get("cache"),
        options.get("scopes", ()),
    )
    template = _template_of(uri)
    made: dict[str, Any] = {  # keyword arguments of the resource
        "pool": pool,
        "blocking": blocking,
        "mime_type": mime_type,
        "cache": cache,
        "scopes": scopes,
    }
    resource = (
        Resource(uri, fn, **made) if template is None else ResourceTemplate(template, fn, **made)
    )
    arguments = resource.arguments
    listing: JSONDict = {
        "title": title,
        "description": description,
        "mimeType": mime_type,
        "icons": icons,
        "annotations": annotations,
        "_meta": meta,
    }
    if template is None:
        if arguments.param_names:
            raise TypeError(
                f"Resource {uri!r} has no URI variables, so {fn.__name__}() cannot take "
                f"arguments ({', '.join(arguments.param_names)})"
            )
        fields: JSONDict = {"uri": uri, "name": name or fn.__name__}
        resource.wire = list_entry(fn, fields, **listing, size=size)
        return resource
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
    resource.wire = list_entry(fn, {"uriTemplate": uri, "name": name or fn.__name__}, **listing)
    return resource


def _template_of(uri: str) -> URITemplate | None:
    """The parsed template when ``uri`` has ``{variables}``; None for a plain URI."""
    if "{" not in uri and "}" not in uri:
        return None  # most resources: no need to load the template parser at all
    from .uri_template import URITemplate

    template = URITemplate(uri)
    return template if template.variables else None
