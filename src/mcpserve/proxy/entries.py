"""Registry entries that forward: a tool, prompt, resource, template or completer of the
upstream, registered in the proxy's :class:`~mcpserve.server.registry.Registry`.

Each keeps the protocol of the kind it stands for (:mod:`mcpserve.server.entries.kinds`: a
forwarded tool is a tool to the method table, the HTTP header checks and the lists), built
from the upstream's list entry rather than from a function: its ``wire`` is that entry as
the upstream published it (its schemas are the upstream's to enforce, so nothing is
validated twice), and calling it sends the request on through the
:class:`~.forwarding.Forwarder`. Nothing of it runs inline (it always waits for the
upstream) and no scope guards it (the upstream checks the proxy's own credentials).

A tool keeps the ``x-mcp-header`` annotations of its schema, so a 2026-07-28 client's
``Mcp-Param-*`` headers are checked here as they would be upstream; an entry whose
annotations are invalid is left out, as a client must leave it out
(:mod:`mcpserve.client.mirroring`).

The upstream's names are kept (``upstream_name``, ``upstream_uri``): the key an entry is
registered under may differ (a namespace a gateway adds), the upstream is always asked for
its own.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .._types import JSONDict, JSONValue
from ..protocol.header_annotations import header_annotations
from ..server.context.context import Context
from ..server.entries.cache import CachePolicy
from ..server.entries.kinds import TaskMode
from .exchange import Forwarded
from .forwarding import Forwarder
from .wire import UpstreamError

if TYPE_CHECKING:  # loads with the first template an upstream lists
    from ..server.entries.uri_template import URITemplate

Answer = Coroutine[Any, Any, JSONDict]
_NONE: frozenset[str] = frozenset()


class Forwarding:
    """What every forwarded entry has: a key, the upstream's list entry, its forwarder."""

    __slots__ = ("forwarder", "key", "wire")

    #: It always waits for the upstream: never answered inline.
    synchronous = False
    #: The upstream checks the credentials the proxy sends it; the proxy adds no scope.
    scopes = _NONE

    def __init__(self, key: str, wire: JSONDict, forwarder: Forwarder) -> None:
        self.key = key
        self.wire = wire
        self.forwarder = forwarder

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r})"


class ForwardedTool(Forwarding):
    """An upstream tool: ``tools/call`` goes upstream by the upstream's name."""

    __slots__ = ("header_params", "header_types", "upstream_name")

    task_mode: TaskMode | None = None

    def __init__(self, entry: JSONDict, forwarder: Forwarder, name: str | None = None) -> None:
        self.upstream_name: str = entry["name"]
        key = name or self.upstream_name
        super().__init__(key, {**entry, "name": key}, forwarder)
        annotated = header_annotations(entry["inputSchema"])  # ValueError: left out
        self.header_params = {prop: header for prop, header, _ in annotated}
        self.header_types = {prop: kind for prop, _, kind in annotated}

    @property
    def name(self) -> str:
        return self.key

    def run(self, arguments: JSONValue, ctx: Context) -> Answer:
        # The forwarding itself: no coroutine around it, on every call.
        return self.forwarder.forward(self.forwarded(arguments), ctx)

    def forwarded(self, arguments: JSONValue) -> Forwarded:
        """The ``tools/call`` sent upstream for ``arguments``."""
        params: JSONDict = {"name": self.upstream_name}
        if arguments is not None:
            params["arguments"] = arguments
        return Forwarded("tools/call", params, self.key, arguments or {})


class ForwardedPrompt(Forwarding):
    """An upstream prompt: ``prompts/get`` goes upstream by the upstream's name."""

    __slots__ = ("upstream_name",)

    #: Completions, when the upstream offers them, are its own.
    choices: dict[str, list[str]] = {}  # noqa: RUF012 - read-only, shared by every one

    def __init__(self, entry: JSONDict, forwarder: Forwarder, name: str | None = None) -> None:
        self.upstream_name: str = entry["name"]
        key = name or self.upstream_name
        super().__init__(key, {**entry, "name": key}, forwarder)

    @property
    def name(self) -> str:
        return self.key

    @property
    def argument_names(self) -> list[str]:
        listed = self.wire.get("arguments")
        return [
            a["name"] for a in listed or () if isinstance(a, dict) and type(a.get("name")) is str
        ]

    def run(self, arguments: JSONValue, ctx: Context) -> Answer:
        params: JSONDict = {"name": self.upstream_name}
        if arguments is not None:
            params["arguments"] = arguments
        request = Forwarded("prompts/get", params, self.key, arguments or {})
        return self.forwarder.forward(request, ctx)


class ForwardedResource(Forwarding):
    """An upstream resource at one URI."""

    __slots__ = ("mime_type", "upstream_uri")

    #: The proxy's own caching hints apply: Server(cache=...).
    cache: CachePolicy | None = None

    def __init__(self, entry: JSONDict, forwarder: Forwarder, uri: str | None = None) -> None:
        self.upstream_uri: str = entry["uri"]
        key = uri or self.upstream_uri
        super().__init__(key, {**entry, "uri": key}, forwarder)
        mime = entry.get("mimeType")
        self.mime_type = mime if isinstance(mime, str) else None

    @property
    def uri(self) -> str:
        return self.key

    def run(self, arguments: JSONValue, ctx: Context) -> Answer:
        request = Forwarded("resources/read", {"uri": self.upstream_uri}, self.key, {})
        return self.forwarder.forward(request, ctx)


class ForwardedTemplate(Forwarding):
    """An upstream resource template. The URI read goes upstream as the request names it:
    behind a mount (a gateway's namespace), the mount presents it as the upstream serves it."""

    __slots__ = ("mime_type", "template")

    cache: CachePolicy | None = None

    def __init__(self, entry: JSONDict, forwarder: Forwarder) -> None:
        from ..server.entries.uri_template import URITemplate

        self.template: URITemplate = URITemplate(entry["uriTemplate"])  # ValueError: left out
        super().__init__(self.template.template, dict(entry), forwarder)
        mime = entry.get("mimeType")
        self.mime_type = mime if isinstance(mime, str) else None

    @property
    def upstream_template(self) -> str:
        return self.template.template

    def match(self, uri: str) -> JSONDict | None:
        return self.template.match(uri)

    def run(self, arguments: JSONValue, ctx: Context) -> Answer:
        uri: str = ctx.request.params["uri"]
        request = Forwarded("resources/read", {"uri": uri}, uri, {})
        return self.forwarder.forward(request, ctx)


class ForwardedCompleter(Forwarding):
    """Completions of one prompt argument or template variable, asked of the upstream."""

    __slots__ = ("argument", "ref")

    def __init__(self, ref: JSONDict, argument: str, forwarder: Forwarder) -> None:
        target = ref.get("name") or ref.get("uri")
        super().__init__(f"{target}:{argument}", {}, forwarder)
        self.ref = ref
        self.argument = argument

    def run(self, arguments: JSONValue, ctx: Context) -> Answer:
        value, known = arguments
        return self.complete(value, known, ctx)

    async def complete(self, value: str, arguments: dict[str, str], ctx: Context) -> JSONDict:
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
