"""The method table: every method the server answers, in each era, on one screen.

:meth:`Methods.table` lists them: the methods both eras share, those only the 2026-07-28
wire has (``server/discover``, ``subscriptions/listen``) and those only a handshake-era
session has (``ping``, ``logging/setLevel``, ``resources/subscribe`` ...). Extensions add
theirs through the seam of :mod:`.extension`, custom methods through ``server.method``;
:mod:`.pipeline` puts the lot together.

Each handler takes the request's :class:`Context` and returns a fresh result dict; the
dispatcher adds ``resultType`` and ``serverInfo``. A method that names a target (a tool, a
prompt, a resource) looks it up once, in ``prepare`` (``resolve``), and finds it on
``ctx.request.target``; one whose function can never wait also answers inline.

A visibility rule (``@server.visibility``, :mod:`.entries.catalogue`) is asked on the same
path: each list keeps only the entries the caller is shown, and a call, get or read of one
it is not shown is answered as for an unknown name, before the function runs.

Methods whose feature the server does not offer answer -32601, exactly as if they did not
exist (``docs/decisions.md``, "Capabilities follow the registry"); the capabilities in
``server/discover`` are derived from the same registry, so the two always agree.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict

from typing_extensions import Unpack

from .._types import JSONDict, Result
from ..protocol import constants as c
from ..protocol.core import Answer, Handler, answered
from ..protocol.errors import (
    InsufficientScope,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ResourceNotFound,
)
from ..protocol.handshake import Session
from ..protocol.pagination import paginate
from .context.context import Context
from .entries.cache import CachePolicy
from .entries.catalogue import ComponentKind, then
from .entries.kinds import PromptEntry, ResourceEntry, TemplateEntry, ToolEntry
from .entries.tools import Tool
from .registry import Registry
from .settings import Settings
from .subscriptions import Subscriptions

if TYPE_CHECKING:  # loads with the first prompt; with tool_search=True
    from .entries.prompts import Prompt
    from .tool_search import ToolSearch

MethodTable = dict[str, Handler[Context]]
#: A core method's answer to one request: the request's context in, the result out, now or
#: awaited.
Call = Callable[[Context], Answer]
#: What ``find_resource`` finds: the resource serving the URI, and a template's variables.
FoundResource = tuple[ResourceEntry | TemplateEntry, JSONDict | None]
#: The lists a client pages through.
ListedKind = Literal["tools", "resources", "templates", "prompts"]
#: Which era answers a method: both, only the 2026-07-28 wire, only a handshake-era session.
Era = Literal["both", "modern", "handshake"]


class Method(NamedTuple):
    """One line of the table: the handler, and the eras that answer the method."""

    handler: Handler[Context]
    era: Era = "both"


class HandlerOptions(TypedDict, total=False):
    """How a line's handler runs (see :class:`~mcpserve.protocol.core.Handler`). The
    target is what ``resolve`` found, a different kind for each method: a tool, a prompt,
    a :data:`FoundResource`."""

    inline: bool | Callable[[Any], bool]
    resolve: Callable[[JSONDict], object]
    scopes: Callable[[Any], frozenset[str]]


def both(call: Call, **options: Unpack[HandlerOptions]) -> Method:
    return Method(Handler(call, **options), "both")


def modern(call: Call, **options: Unpack[HandlerOptions]) -> Method:
    return Method(Handler(call, **options), "modern")


def handshake(call: Call, **options: Unpack[HandlerOptions]) -> Method:
    return Method(Handler(call, **options), "handshake")


def split(table: Mapping[str, Method]) -> tuple[MethodTable, MethodTable]:
    """The table of each era: the 2026-07-28 wire's, and a handshake-era session's."""
    modern_table = {name: m.handler for name, m in table.items() if m.era != "handshake"}
    session_table = {name: m.handler for name, m in table.items() if m.era != "modern"}
    return modern_table, session_table


_NOT_CACHEABLE = CachePolicy(ttl_ms=0, scope="private")


def _cache_fields(result: Result, policy: CachePolicy) -> Result:
    result["ttlMs"] = policy.ttl_ms
    result["cacheScope"] = policy.scope
    return result


def _string_param(params: Result, key: str) -> str:
    value = params.get(key)
    if type(value) is not str:
        raise InvalidParams(f'Invalid params: "{key}" must be a string')
    return value


def _arguments(params: Result) -> Result | None:
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise InvalidParams('Invalid params: "arguments" must be an object')
    return arguments


def _then(
    result: Result | Awaitable[Result], finish: Callable[[Result], Result]
) -> Result | Awaitable[Result]:
    """``finish(result)``, now or once an awaitable result is ready."""
    if isinstance(result, dict):
        return finish(result)

    async def later() -> Result:
        return finish(await result)

    return later()


#: The kind a visibility rule is told, per list.
_COMPONENT_KINDS: dict[str, ComponentKind] = {
    "tools": "tool",
    "resources": "resource",
    "templates": "template",
    "prompts": "prompt",
}


#: Whether a found tool or prompt may answer inline (a C-level getter: no Python frame).
_synchronous = operator.attrgetter("synchronous")


def _synchronous_resource(found: FoundResource) -> bool:
    return found[0].synchronous


#: The scopes a found tool or prompt requires; a resource's, from what ``find_resource`` found.
_scopes = operator.attrgetter("scopes")
_NO_SCOPES: frozenset[str] = frozenset()


def _resource_scopes(found: FoundResource) -> frozenset[str]:
    return found[0].scopes


class Methods:
    """The handlers of the core methods, reading the registry on every request."""

    def __init__(
        self,
        registry: Registry,
        settings: Settings,
        subscriptions: Subscriptions,
        capabilities: Callable[[], Result],
        supported_versions: list[str],
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.subscriptions = subscriptions
        self.capabilities = capabilities
        self.supported_versions = supported_versions
        #: ``Server(tool_search=True)``: the catalogue behind search_tools and call_tool.
        self.search: ToolSearch | None = None
        if settings.tool_search:
            from .tool_search import ToolSearch

            self.search = ToolSearch(registry)

    def table(self) -> dict[str, Method]:
        """Every core method, and the eras that answer it."""
        return {
            "server/discover": modern(self.discover, inline=True),
            "subscriptions/listen": modern(self.subscriptions.listen),
            "tools/list": both(self.tools_list, inline=True),
            "tools/call": both(
                self.tools_call,
                inline=_synchronous,
                resolve=self.find_tool,
                scopes=self.unless_guarded(_scopes),
            ),
            "resources/list": both(self.resources_list, inline=True),
            "resources/templates/list": both(self.templates_list, inline=True),
            "resources/read": both(
                self.resources_read,
                inline=_synchronous_resource,
                resolve=self.find_resource,
                scopes=self.unless_guarded(_resource_scopes),
            ),
            "prompts/list": both(self.prompts_list, inline=True),
            "prompts/get": both(
                self.prompts_get,
                inline=_synchronous,
                resolve=self.find_prompt,
                scopes=self.unless_guarded(_scopes),
            ),
            "completion/complete": both(self.complete),
            "ping": handshake(_pong, inline=True),
            "initialize": handshake(_initialized_already, inline=True),
            "logging/setLevel": handshake(self.set_level, inline=True),
            "resources/subscribe": handshake(self.subscribe, inline=True),
            "resources/unsubscribe": handshake(self.subscribe, inline=True),
        }

    def unless_guarded(
        self, scopes: Callable[[Any], frozenset[str]]
    ) -> Callable[[Any], frozenset[str]]:
        """The scopes the dispatcher checks before the handler, or none while a visibility
        rule is set: then the rule is asked first and the scopes after (:meth:`if_shown`), so
        that an entry hidden from a caller is unknown to it, whatever scopes it holds."""
        registry = self.registry

        def needed(target: Any) -> frozenset[str]:
            return _NO_SCOPES if registry.visibility is not None else scopes(target)

        return needed

    def list_page(
        self, kind: ListedKind, key: str, ctx: Context, more: list[JSONDict] | None = None
    ) -> Result | Awaitable[Result]:
        auth = ctx.request.auth
        # A checked caller sees only what its scopes let it use (docs/decisions.md, "Lists
        # and scopes"); such a list is the caller's own, so no shared cache may keep it.
        personal = auth.checked and self.registry.scoped(kind)
        entries = self.registry.entries(kind, auth.scopes if personal else None)
        if more:
            entries = [*entries, *more]
        rule = self.registry.visibility
        if rule is None:
            return self.page(entries, key, ctx, personal)
        kept = rule.kept(ctx, _COMPONENT_KINDS[kind], entries)
        # A list per caller: never shared.
        paged: Result | Awaitable[Result] = then(kept, lambda k: self.page(k, key, ctx, True))
        return paged

    def page(self, entries: list[JSONDict], key: str, ctx: Context, personal: bool) -> Result:
        """One page of a list's entries, with the caching hints (private when ``personal``)."""
        page, next_cursor = paginate(
            entries, ctx.request.params.get("cursor"), self.settings.page_size
        )
        result: Result = {key: page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        policy = self.settings.cache
        if personal and policy.scope == "public":
            policy = CachePolicy(policy.ttl_ms, "private")
        return _cache_fields(result, policy)

    def discover(self, ctx: Context) -> Result:
        result: Result = {
            "supportedVersions": list(self.supported_versions),
            "capabilities": self.capabilities(),
        }
        if self.settings.instructions:
            result["instructions"] = self.settings.instructions
        return _cache_fields(result, self.settings.cache)

    # -- tools ---------------------------------------------------------------------------

    def tools_list(self, ctx: Context) -> Result | Awaitable[Result]:
        if not self.registry.tools:
            raise MethodNotFound("Method not found: tools/list")
        if self.search is not None:
            return self.page(self.search.entries(), "tools", ctx, False)
        return self.list_page("tools", "tools", ctx)

    def find_tool(self, params: JSONDict) -> ToolEntry | None:
        if self.search is not None:
            return self.search.find(params)
        name = params.get("name")
        return self.registry.tool(name) if type(name) is str else None

    def called_tool(self, ctx: Context) -> Tool:
        if not self.registry.tools:
            raise MethodNotFound("Method not found: tools/call")
        tool = ctx.request.target
        if tool is None:
            name = _string_param(ctx.request.params, "name")
            if self.search is not None and name == "call_tool":
                name = str(_string_param(_arguments(ctx.request.params) or {}, "name"))
            raise InvalidParams(f"Unknown tool: {name[:100]}")
        return tool  # type: ignore[no-any-return]

    def tools_call(self, ctx: Context) -> Result | Awaitable[Result]:
        tool = self.called_tool(ctx)
        arguments = _arguments(ctx.request.params)
        if self.search is not None and ctx.request.params.get("name") == "call_tool":
            from .tool_search import inner_arguments  # a call_tool request: the tool's own

            arguments = inner_arguments(arguments)
        if self.registry.visibility is None:
            # The tool's own answer, not a coroutine around it: one frame less on every await.
            return tool.run(arguments, ctx)
        unknown = InvalidParams(f"Unknown tool: {tool.name[:100]}")
        run = lambda: tool.run(arguments, ctx)  # noqa: E731
        return self.if_shown(ctx, "tool", tool.wire, unknown, run, tool.scopes)

    def if_shown(
        self,
        ctx: Context,
        kind: ComponentKind,
        wire: JSONDict,
        unknown: Exception,
        answer: Callable[[], Result | Awaitable[Result]],
        needed: frozenset[str] = frozenset(),
    ) -> Result | Awaitable[Result]:
        """``answer()`` when the visibility rule shows the caller this entry and the caller
        holds the ``needed`` scopes (:meth:`unless_guarded` left them to be checked here);
        otherwise the error an unknown name gets, or the 403's, before the entry runs."""
        rule = self.registry.visibility
        assert rule is not None
        checked = answer
        if needed:

            def checked() -> Result | Awaitable[Result]:
                missing = ctx.request.auth.missing(needed)
                if missing:
                    raise InsufficientScope(needed, missing)
                return answer()

        guarded: Result | Awaitable[Result] = rule.guarded(ctx, kind, wire, unknown, checked)
        return guarded

    # -- resources -----------------------------------------------------------------------

    def require_resources(self) -> None:
        if not self.registry.offers_resources:
            raise MethodNotFound("Method not found: resources")

    def resources_list(self, ctx: Context) -> Result | Awaitable[Result]:
        self.require_resources()
        lister = self.registry.resource_lister
        if lister is None:
            return self.list_page("resources", "resources", ctx)
        listed = lister.run({}, ctx)

        async def page() -> Result:
            more = (await answered(listed))["resources"]
            return await answered(self.list_page("resources", "resources", ctx, more))

        if isinstance(listed, dict) and self.registry.visibility is None:
            return self.list_page("resources", "resources", ctx, listed["resources"])
        return page()

    def templates_list(self, ctx: Context) -> Result | Awaitable[Result]:
        self.require_resources()
        return self.list_page("templates", "resourceTemplates", ctx)

    def find_resource(self, params: JSONDict) -> FoundResource | None:
        """The resource serving the URI and the template's variables, when one does."""
        uri = params.get("uri")
        return self.registry.find_resource(uri) if type(uri) is str else None

    def read_resource(self, ctx: Context) -> FoundResource:
        self.require_resources()
        uri = _string_param(ctx.request.params, "uri")
        found = ctx.request.target
        if found is None:
            raise ResourceNotFound(uri)
        return found  # type: ignore[no-any-return]

    def with_cache_fields(
        self, resource: ResourceEntry | TemplateEntry, ctx: Context
    ) -> Callable[[Result], Result]:
        def finish(result: Result) -> Result:
            if "resultType" in result:
                return result  # input_required: no caching hints on an interim answer
            # A retry's answer depends on that user's input: never shareable.
            policy = _NOT_CACHEABLE if ctx.is_retry else (resource.cache or self.settings.cache)
            return _cache_fields(result, policy)

        return finish

    def resources_read(self, ctx: Context) -> Result | Awaitable[Result]:
        resource, variables = self.read_resource(ctx)
        if self.registry.visibility is None:
            return _then(resource.run(variables, ctx), self.with_cache_fields(resource, ctx))
        kind: ComponentKind = "resource" if variables is None else "template"
        uri = _string_param(ctx.request.params, "uri")
        finish = self.with_cache_fields(resource, ctx)
        read = lambda: _then(resource.run(variables, ctx), finish)  # noqa: E731
        return self.if_shown(ctx, kind, resource.wire, ResourceNotFound(uri), read, resource.scopes)

    # -- prompts -------------------------------------------------------------------------

    def require_prompts(self) -> None:
        if not self.registry.prompts:
            raise MethodNotFound("Method not found: prompts")

    def prompts_list(self, ctx: Context) -> Result | Awaitable[Result]:
        self.require_prompts()
        return self.list_page("prompts", "prompts", ctx)

    def find_prompt(self, params: JSONDict) -> PromptEntry | None:
        name = params.get("name")
        return self.registry.prompt(name) if type(name) is str else None

    def got_prompt(self, ctx: Context) -> Prompt:
        self.require_prompts()
        prompt = ctx.request.target
        if prompt is None:
            name = _string_param(ctx.request.params, "name")
            raise InvalidParams(f"Unknown prompt: {name[:100]}")
        return prompt  # type: ignore[no-any-return]

    def prompts_get(self, ctx: Context) -> Result | Awaitable[Result]:
        prompt = self.got_prompt(ctx)
        arguments = ctx.request.params.get("arguments")
        if self.registry.visibility is None:
            return prompt.run(arguments, ctx)
        unknown = InvalidParams(f"Unknown prompt: {prompt.name[:100]}")
        return self.if_shown(
            ctx, "prompt", prompt.wire, unknown, lambda: prompt.run(arguments, ctx), prompt.scopes
        )

    # -- completions ---------------------------------------------------------------------

    async def complete(self, ctx: Context) -> Result:
        registry = self.registry
        if not registry.completers and not any(p.choices for p in registry.prompts.values()):
            raise MethodNotFound("Method not found: completion/complete")
        params = ctx.request.params
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParams('Invalid params: "ref" and "argument" must be objects')
        arg_name, value = argument.get("name"), argument.get("value")
        if type(arg_name) is not str or type(value) is not str:
            raise InvalidParams('Invalid params: "argument" needs string "name" and "value"')
        kind = ref.get("type")
        if kind == "ref/prompt":
            target = _string_param(ref, "name")
            if not registry.completion_target(kind, target):
                raise InvalidParams(f"Unknown prompt: {target[:100]}")
        elif kind == "ref/resource":
            target = _string_param(ref, "uri")
            if not registry.completion_target(kind, target):
                raise InvalidParams(f"Unknown resource template: {target[:100]}")
        else:
            raise InvalidParams('Invalid params: ref.type must be "ref/prompt" or "ref/resource"')
        ctx.require_scopes(*registry.completion_scopes(kind, target))
        if registry.visibility is not None:
            await self.completion_shown(ctx, kind, target)
        context = params.get("context")
        known = context.get("arguments") if isinstance(context, dict) else None
        completer = registry.completers.get((kind, target, arg_name))
        if completer is None:
            if kind == "ref/prompt":  # a Literal or enum argument completes to its values
                from .entries.completions import choice_completion

                choices = registry.prompts[target].choices.get(arg_name, ())
                return {"completion": choice_completion(choices, value)}
            return {"completion": {"values": []}}
        arguments = known if isinstance(known, dict) else {}
        return {"completion": await completer.complete(value, arguments, ctx)}

    async def completion_shown(self, ctx: Context, kind: str, target: str) -> None:
        """Completions of a prompt or template the rule hides: -32602, as for an unknown one."""
        registry = self.registry
        component: ComponentKind
        if kind == "ref/prompt":
            wire, component, what = registry.prompts[target].wire, "prompt", "prompt"
        elif target in registry.templates:
            wire, component = registry.templates[target].wire, "template"
            what = "resource template"
        else:
            wire, component = registry.resources[target].wire, "resource"
            what = "resource template"
        rule = registry.visibility
        assert rule is not None
        allowed = rule.allows(ctx, component, wire)
        if not (allowed if isinstance(allowed, bool) else await allowed):
            raise InvalidParams(f"Unknown {what}: {target[:100]}")

    # -- a handshake-era session's own ---------------------------------------------------

    def set_level(self, ctx: Context) -> Result:
        if not self.settings.client_logging:
            raise MethodNotFound("Method not found: logging/setLevel")
        level = ctx.request.params.get("level")
        if type(level) is not str or level not in c.LOG_LEVEL_RANK:
            raise InvalidParams(f"Invalid params: unknown log level {str(level)[:40]!r}")
        _session(ctx).log_level = level
        return {}

    def subscribe(self, ctx: Context) -> Result | Awaitable[Result]:
        method = ctx.request.method
        if not self.registry.offers_resources:
            raise MethodNotFound(f"Method not found: {method}")
        uri = ctx.request.params.get("uri")
        if type(uri) is not str:
            raise InvalidParams('Invalid params: "uri" must be a string')
        subscriptions = _session(ctx).resource_subscriptions
        if method != "resources/subscribe":
            subscriptions.discard(uri)
            return {}
        found = self.registry.find_resource(uri)
        if found is None:
            subscriptions.add(uri)
            return {}

        def subscribed() -> Result:
            ctx.require_scopes(*found[0].scopes)  # updates of what it may not read: no
            subscriptions.add(uri)
            return {}

        rule = self.registry.visibility
        if rule is None:
            return subscribed()
        # A hidden resource: the same {} an unknown URI gets, but nothing kept, so none of
        # its updates ever reach this session.
        kind: ComponentKind = "resource" if found[1] is None else "template"
        shown: Result | Awaitable[Result] = then(
            rule.allows(ctx, kind, found[0].wire), lambda ok: subscribed() if ok else {}
        )
        return shown


def _pong(ctx: Context) -> Result:
    return {}


def _initialized_already(ctx: Context) -> Result:
    raise InvalidRequest("Invalid request: this session is already initialized")


def _session(ctx: Context) -> Session:
    session = ctx.request.session
    assert session is not None, "a session's own method runs inside a session"
    return session
