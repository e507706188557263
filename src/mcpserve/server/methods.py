"""The method table: every 2026-07-28 method the server answers, on one screen.

Each handler takes the request's :class:`Context` and returns a fresh result dict; the
dispatcher adds ``resultType`` and ``serverInfo``. A method that names a target (a tool, a
prompt, a resource) looks it up once, in ``prepare`` (``resolve``), and finds it on
``ctx.request.target``; one whose function can never wait also answers inline.

Methods whose feature the server does not offer answer -32601, exactly as if they did not
exist (``docs/decisions.md``, "Capabilities follow the registry"); the capabilities in
``server/discover`` are derived from the same registry, so the two always agree.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..protocol.core import Handler
from ..protocol.errors import InvalidParams, MethodNotFound, ResourceNotFound
from ..protocol.pagination import paginate
from .context.context import Context
from .entries.kinds import ResourceEntry, TemplateEntry
from .entries.resources import CachePolicy
from .settings import Settings, capabilities

if TYPE_CHECKING:
    from ..extensions.tasks.runner import Tasks
    from .entries.prompts import Prompt
    from .entries.tools import Tool
    from .registry import Registry
    from .subscriptions import Subscriptions

Result = dict[str, Any]
MethodTable = dict[str, Handler[Context]]
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


def _then(result: Result | Awaitable[Result], finish: Callable[[Result], Result]) -> Any:
    """``finish(result)``, now or once an awaitable result is ready."""
    if isinstance(result, dict):
        return finish(result)

    async def later() -> Result:
        return finish(await result)

    return later()


#: Whether a found tool or prompt may answer inline (a C-level getter: no Python frame).
_synchronous = operator.attrgetter("synchronous")


def _synchronous_resource(found: Any) -> bool:
    return found[0].synchronous  # type: ignore[no-any-return]


#: The scopes a found tool or prompt requires; a resource's, from what ``find_resource`` found.
_scopes = operator.attrgetter("scopes")


def _resource_scopes(found: Any) -> frozenset[str]:
    return found[0].scopes  # type: ignore[no-any-return]


def method_table(
    registry: Registry,
    settings: Settings,
    subscriptions: Subscriptions,
    supported_versions: list[str],
    tasks: Tasks | None = None,
) -> MethodTable:
    """The handlers of the 2026-07-28 methods, reading ``registry`` on every request."""

    def list_page(kind: Any, key: str, ctx: Context, more: list[Any] | None = None) -> Result:
        auth = ctx.request.auth
        # A checked caller sees only what its scopes let it use (docs/decisions.md, "Lists
        # and scopes"); such a list is the caller's own, so no shared cache may keep it.
        personal = auth.checked and registry.scoped(kind)
        entries = registry.entries(kind, auth.scopes if personal else None)
        if more:
            entries = [*entries, *more]
        page, next_cursor = paginate(entries, ctx.request.params.get("cursor"), settings.page_size)
        result: Result = {key: page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        policy = settings.cache
        if personal and policy.scope == "public":
            policy = CachePolicy(policy.ttl_ms, "private")
        return _cache_fields(result, policy)

    def discover(ctx: Context) -> Result:
        result: Result = {
            "supportedVersions": list(supported_versions),
            "capabilities": capabilities(registry, settings),
        }
        if settings.instructions:
            result["instructions"] = settings.instructions
        return _cache_fields(result, settings.cache)

    # -- tools ---------------------------------------------------------------------------

    def tools_list(ctx: Context) -> Result:
        if not registry.tools:
            raise MethodNotFound("Method not found: tools/list")
        return list_page("tools", "tools", ctx)

    def find_tool(params: Result) -> Any:
        name = params.get("name")
        return registry.tool(name) if type(name) is str else None

    def called_tool(ctx: Context) -> Tool:
        if not registry.tools:
            raise MethodNotFound("Method not found: tools/call")
        tool = ctx.request.target
        if tool is None:
            name = _string_param(ctx.request.params, "name")
            raise InvalidParams(f"Unknown tool: {name[:100]}")
        return tool  # type: ignore[no-any-return]

    def tools_call(ctx: Context) -> Result | Awaitable[Result]:
        # The tool's own answer, not a coroutine around it: one frame less on every await.
        return called_tool(ctx).run(_arguments(ctx.request.params), ctx)

    # -- resources -----------------------------------------------------------------------

    def require_resources() -> None:
        if not registry.offers_resources:
            raise MethodNotFound("Method not found: resources")

    def resources_list(ctx: Context) -> Result | Awaitable[Result]:
        require_resources()
        lister = registry.resource_lister
        if lister is None:
            return list_page("resources", "resources", ctx)
        listed = lister.run({}, ctx)

        def page(result: Result) -> Result:
            return list_page("resources", "resources", ctx, result["resources"])

        paged: Result | Awaitable[Result] = _then(listed, page)
        return paged

    def templates_list(ctx: Context) -> Result:
        require_resources()
        return list_page("templates", "resourceTemplates", ctx)

    def find_resource(params: Result) -> Any:
        """The resource serving the URI and the template's variables, when one does."""
        uri = params.get("uri")
        return registry.find_resource(uri) if type(uri) is str else None

    def read_resource(ctx: Context) -> tuple[ResourceEntry | TemplateEntry, Any]:
        require_resources()
        uri = _string_param(ctx.request.params, "uri")
        found = ctx.request.target
        if found is None:
            raise ResourceNotFound(uri)
        return found  # type: ignore[no-any-return]

    def with_cache_fields(resource: ResourceEntry | TemplateEntry, ctx: Context) -> Any:
        def finish(result: Result) -> Result:
            if "resultType" in result:
                return result  # input_required: no caching hints on an interim answer
            # A retry's answer depends on that user's input: never shareable.
            policy = _NOT_CACHEABLE if ctx.is_retry else (resource.cache or settings.cache)
            return _cache_fields(result, policy)

        return finish

    def resources_read(ctx: Context) -> Result | Awaitable[Result]:
        resource, variables = read_resource(ctx)
        return _then(resource.run(variables, ctx), with_cache_fields(resource, ctx))  # type: ignore[no-any-return]

    # -- prompts -------------------------------------------------------------------------

    def require_prompts() -> None:
        if not registry.prompts:
            raise MethodNotFound("Method not found: prompts")

    def prompts_list(ctx: Context) -> Result:
        require_prompts()
        return list_page("prompts", "prompts", ctx)

    def find_prompt(params: Result) -> Any:
        name = params.get("name")
        return registry.prompt(name) if type(name) is str else None

    def got_prompt(ctx: Context) -> Prompt:
        require_prompts()
        prompt = ctx.request.target
        if prompt is None:
            name = _string_param(ctx.request.params, "name")
            raise InvalidParams(f"Unknown prompt: {name[:100]}")
        return prompt  # type: ignore[no-any-return]

    def prompts_get(ctx: Context) -> Result | Awaitable[Result]:
        return got_prompt(ctx).run(ctx.request.params.get("arguments"), ctx)

    # -- completions ---------------------------------------------------------------------

    async def complete(ctx: Context) -> Result:
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

    table: MethodTable = {
        "server/discover": Handler(discover, inline=True),
        "tools/list": Handler(tools_list, inline=True),
        "tools/call": Handler(tools_call, inline=_synchronous, resolve=find_tool, scopes=_scopes),
        "resources/list": Handler(resources_list, inline=True),
        "resources/templates/list": Handler(templates_list, inline=True),
        "resources/read": Handler(
            resources_read,
            inline=_synchronous_resource,
            resolve=find_resource,
            scopes=_resource_scopes,
        ),
        "prompts/list": Handler(prompts_list, inline=True),
        "prompts/get": Handler(
            prompts_get, inline=_synchronous, resolve=find_prompt, scopes=_scopes
        ),
        "completion/complete": Handler(complete),
        "subscriptions/listen": Handler(subscriptions.listen),
    }
    if tasks is not None:  # the tasks extension: its methods exist once a task tool does
        from ..extensions.tasks.methods import TaskMethods

        task_methods = TaskMethods(tasks)
        subscriptions.task_ids = task_methods.listened
        table["tasks/get"] = Handler(task_methods.get)
        table["tasks/update"] = Handler(task_methods.update)
        table["tasks/cancel"] = Handler(task_methods.cancel)
    return table
