"""Registry entries that forward: a tool, prompt, resource, template or completer of the
upstream, registered in the proxy's :class:`~mcpserve.server.registry.Registry`.

Each is the registry kind it stands for (a :class:`~mcpserve.Tool` is a tool to the method
table, the HTTP header checks and the lists), built from the upstream's list entry rather
than from a function: its ``wire`` is that entry as the upstream published it (its schemas
are the upstream's to enforce, so nothing is validated twice), and calling it sends the
request on through the :class:`~.forwarding.Forwarder`. A tool keeps the ``x-mcp-header``
annotations of its schema, so a 2026-07-28 client's ``Mcp-Param-*`` headers are checked
here as they would be upstream; an entry whose annotations are invalid is left out, as a
client must leave it out (:mod:`mcpserve.client.mirroring`).

The upstream's names are kept (``upstream_name``, ``upstream_uri``): the key an entry is
registered under may differ (a namespace a gateway adds), the upstream is always asked for
its own.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from ..protocol.header_annotations import header_annotations
from ..protocol.jsonrpc import JSONDict
from ..server.context.context import Context
from ..server.entries.completions import Completer
from ..server.entries.prompts import Prompt
from ..server.entries.resources import Resource, ResourceTemplate
from ..server.entries.tools import Tool
from ..server.schema.signature import ArgumentSpec
from .exchange import Forwarded
from .wire import UpstreamError

if TYPE_CHECKING:
    from ..server.entries.entry import Registered
    from .forwarding import Forwarder

_NO_ARGUMENTS = ArgumentSpec({"type": "object", "properties": {}}, None, (), dict, None)


def _called_directly(**_: Any) -> None:
    raise TypeError("A forwarded entry is called through the proxy, not directly")


async def _never_invoked(kwargs: dict[str, Any]) -> None:
    raise TypeError("A forwarded entry is called through the proxy, not directly")


def _as_forwarded(entry: Registered, key: str, wire: JSONDict) -> None:
    """Fill what every registered kind has, for an entry with no function behind it."""
    entry.fn = _called_directly
    entry.key = key
    entry.arguments = _NO_ARGUMENTS
    entry.invoke = _never_invoked
    entry.synchronous = False  # it always waits for the upstream: never answered inline
    entry.wire = wire
    entry.scopes = frozenset()


class ForwardedTool(Tool):
    """An upstream tool: ``tools/call`` goes upstream by the upstream's name."""

    __slots__ = ("forwarder", "upstream_name")

    def __init__(self, entry: JSONDict, forwarder: Forwarder, name: str | None = None) -> None:
        # Not Tool.__init__: there is no function to read, the entry is the upstream's.
        self.upstream_name: str = entry["name"]
        key = name or self.upstream_name
        _as_forwarded(self, key, {**entry, "name": key})
        annotated = header_annotations(entry["inputSchema"])  # ValueError: left out
        self.header_params = {prop: header for prop, header, _ in annotated}
        self.header_types = {prop: kind for prop, _, kind in annotated}
        self.requires = None
        self.raw_schema = None
        self.output_check = None
        self.forwarder = forwarder

    def run(self, arguments: Any, ctx: Context) -> Coroutine[Any, Any, dict[str, Any]]:
        forwarded = self.forwarder.forward(self.forwarded(arguments), ctx)
        if type(self).shape is ForwardedTool.shape:
            return forwarded  # the forwarding itself: no coroutine around it, on every call
        return self._shape_when_done(forwarded, ctx)  # a mounted copy, whose shape rewrites URIs

    def forwarded(self, arguments: Any) -> Forwarded:
        """The ``tools/call`` sent upstream for ``arguments``."""
        params: JSONDict = {"name": self.upstream_name}
        if arguments is not None:
            params["arguments"] = arguments
        return Forwarded("tools/call", params, self.key, arguments or {})

    async def _shape_when_done(
        self, forwarded: Coroutine[Any, Any, dict[str, Any]], ctx: Context
    ) -> dict[str, Any]:
        return self.shape(await forwarded, ctx)

    def shape(self, value: Any, ctx: Context | None = None) -> dict[str, Any]:
        result: dict[str, Any] = value  # the upstream's result, made fit already (wire.py)
        return result


class ForwardedPrompt(Prompt):
    """An upstream prompt: ``prompts/get`` goes upstream by the upstream's name."""

    __slots__ = ("forwarder", "upstream_name")

    def __init__(self, entry: JSONDict, forwarder: Forwarder, name: str | None = None) -> None:
        self.upstream_name: str = entry["name"]
        key = name or self.upstream_name
        _as_forwarded(self, key, {**entry, "name": key})
        self.choices = {}  # completions, when the upstream offers them, are its own
        self.forwarder = forwarder

    @property
    def argument_names(self) -> list[str]:
        listed = self.wire.get("arguments")
        return [
            a["name"] for a in listed or () if isinstance(a, dict) and type(a.get("name")) is str
        ]

    async def run(self, arguments: Any, ctx: Context) -> dict[str, Any]:
        params: JSONDict = {"name": self.upstream_name}
        if arguments is not None:
            params["arguments"] = arguments
        request = Forwarded("prompts/get", params, self.key, arguments or {})
        return self.shape(await self.forwarder.forward(request, ctx), ctx)

    def shape(self, value: Any, ctx: Context) -> dict[str, Any]:
        result: dict[str, Any] = value  # the upstream's result, made fit already (wire.py)
        return result


class ForwardedResource(Resource):
    """An upstream resource at one URI."""

    __slots__ = ("forwarder", "upstream_uri")

    def __init__(self, entry: JSONDict, forwarder: Forwarder, uri: str | None = None) -> None:
        self.upstream_uri: str = entry["uri"]
        key = uri or self.upstream_uri
        _as_forwarded(self, key, {**entry, "uri": key})
        mime = entry.get("mimeType")
        self.mime_type = mime if isinstance(mime, str) else None
        self.cache = None  # the proxy's own caching hints: Server(cache=...)
        self.forwarder = forwarder

    async def run(self, arguments: Any, ctx: Context) -> dict[str, Any]:
        request = Forwarded("resources/read", {"uri": self.upstream_uri}, self.key, {})
        return self.shape(await self.forwarder.forward(request, ctx), ctx)

    def shape(self, value: Any, ctx: Context) -> dict[str, Any]:
        result: dict[str, Any] = value  # the upstream's result, made fit already (wire.py)
        return result


class ForwardedTemplate(ResourceTemplate):
    """An upstream resource template. The URI read goes upstream as it is, less whatever
    the key it is registered under adds before the upstream's template (a namespace)."""

    __slots__ = ("forwarder", "upstream_template")

    def __init__(self, entry: JSONDict, forwarder: Forwarder) -> None:
        from ..server.entries.uri_template import URITemplate

        self.template = URITemplate(entry["uriTemplate"])  # ValueError: left out
        self.upstream_template: str = self.template.template
        _as_forwarded(self, self.template.template, dict(entry))
        mime = entry.get("mimeType")
        self.mime_type = mime if isinstance(mime, str) else None
        self.cache = None
        self.forwarder = forwarder

    async def run(self, arguments: Any, ctx: Context) -> dict[str, Any]:
        uri: str = ctx.request.params["uri"]
        added = len(self.key) - len(self.upstream_template)
        if (
            added > 0
            and self.key.endswith(self.upstream_template)
            and uri[:added] == self.key[:added]
        ):
            uri = uri[added:]
        request = Forwarded("resources/read", {"uri": uri}, ctx.request.params["uri"], {})
        return self.shape(await self.forwarder.forward(request, ctx), ctx)

    def shape(self, value: Any, ctx: Context) -> dict[str, Any]:
        result: dict[str, Any] = value  # the upstream's result, made fit already (wire.py)
        return result


class ForwardedCompleter(Completer):
    """Completions of one prompt argument or template variable, asked of the upstream."""

    __slots__ = ("argument", "forwarder", "ref")

    def __init__(self, ref: JSONDict, argument: str, forwarder: Forwarder) -> None:
        target = ref.get("name") or ref.get("uri")
        _as_forwarded(self, f"{target}:{argument}", {})
        self.arguments_param = "arguments"
        self.value_param = "value"
        self.ref = ref
        self.argument = argument
        self.forwarder = forwarder

    async def complete(self, value: str, arguments: dict[str, str], ctx: Context) -> dict[str, Any]:
        params: JSONDict = {"ref": self.ref, "argument": {"name": self.argument, "value": value}}
        if arguments:
            params["context"] = {"arguments": arguments}
        result = await self.forwarder.ask_once("completion/complete", params, ctx)
        completion = result.get("completion")
        if not isinstance(completion, dict) or not isinstance(completion.get("values"), list):
            raise UpstreamError(
                f"The upstream server {self.forwarder.upstream.label} answered "
                "completion/complete with an invalid result"
            )
        return completion

    def shape(self, value: Any, ctx: Context) -> dict[str, Any]:
        result: dict[str, Any] = value  # the upstream's result, made fit already (wire.py)
        return result
