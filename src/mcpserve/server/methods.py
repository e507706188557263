"""The method table: every 2026-07-28 method the server answers, on one screen.

Each handler takes the request's :class:`Context` and returns a fresh result dict; the
protocol core adds ``resultType`` and ``serverInfo``. Methods whose feature the server
does not offer answer -32601, exactly as if they did not exist (CHECKLIST B10), and the
capabilities in ``server/discover`` are derived from the same registry, so the two always
agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.errors import InvalidParams, MethodNotFound, ResourceNotFound
from ..protocol.pagination import paginate
from .context import Context
from .resources import CachePolicy, Resource

if TYPE_CHECKING:
    from .server import Server

Method = Any  # Callable[[Context], Awaitable[dict[str, Any]]]
_NOT_CACHEABLE = CachePolicy(ttl_ms=0, scope="private")


def _cache_fields(result: dict[str, Any], policy: CachePolicy) -> dict[str, Any]:
    result["ttlMs"] = policy.ttl_ms
    result["cacheScope"] = policy.scope
    return result


def _string_param(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if type(value) is not str:
        raise InvalidParams(f'Invalid params: "{key}" must be a string')
    return value


def tool_arguments(params: dict[str, Any]) -> dict[str, Any] | None:
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise InvalidParams('Invalid params: "arguments" must be an object')
    return arguments


def method_table(server: Server) -> dict[str, Method]:
    registry = server.registry

    def list_page(kind: str, key: str, ctx: Context) -> dict[str, Any]:
        entries = registry.entries(kind)  # type: ignore[arg-type]
        page, next_cursor = paginate(entries, ctx.request.params.get("cursor"), server.page_size)
        result: dict[str, Any] = {key: page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return _cache_fields(result, server.cache)

    async def discover(ctx: Context) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(server.dispatcher.supported_versions),
            "capabilities": server.capabilities(),
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return _cache_fields(result, server.cache)

    async def tools_list(ctx: Context) -> dict[str, Any]:
        if not registry.tools:
            raise MethodNotFound("Method not found: tools/list")
        return list_page("tools", "tools", ctx)

    async def tools_call(ctx: Context) -> dict[str, Any]:
        if not registry.tools:
            raise MethodNotFound("Method not found: tools/call")
        params = ctx.request.params
        name = _string_param(params, "name")
        tool = registry.tool(name)
        if tool is None:
            raise InvalidParams(f"Unknown tool: {name[:100]}")
        return await tool.call(tool_arguments(params), ctx)

    def require_resources() -> None:
        if not registry.resources and not registry.templates:
            raise MethodNotFound("Method not found: resources")

    async def resources_list(ctx: Context) -> dict[str, Any]:
        require_resources()
        return list_page("resources", "resources", ctx)

    async def templates_list(ctx: Context) -> dict[str, Any]:
        require_resources()
        return list_page("templates", "resourceTemplates", ctx)

    async def resources_read(ctx: Context) -> dict[str, Any]:
        require_resources()
        uri = _string_param(ctx.request.params, "uri")
        found = registry.find_resource(uri)
        if found is None:
            raise ResourceNotFound(uri)
        resource, variables = found
        if isinstance(resource, Resource):
            result = await resource.read(uri, ctx)
        else:
            result = await resource.read(uri, variables, ctx)
        if "resultType" in result:
            return result  # input_required: no caching hints (K05)
        # A retry's answer depends on that user's input: never shareable (K08).
        policy = _NOT_CACHEABLE if ctx.is_retry else (resource.cache or server.cache)
        return _cache_fields(result, policy)

    def require_prompts() -> None:
        if not registry.prompts:
            raise MethodNotFound("Method not found: prompts")

    async def prompts_list(ctx: Context) -> dict[str, Any]:
        require_prompts()
        return list_page("prompts", "prompts", ctx)

    async def prompts_get(ctx: Context) -> dict[str, Any]:
        require_prompts()
        name = _string_param(ctx.request.params, "name")
        prompt = registry.prompt(name)
        if prompt is None:
            raise InvalidParams(f"Unknown prompt: {name[:100]}")
        return await prompt.render(ctx.request.params.get("arguments"), ctx)

    async def complete(ctx: Context) -> dict[str, Any]:
        if not registry.completers:
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
            if target not in registry.prompts:
                raise InvalidParams(f"Unknown prompt: {target[:100]}")
        elif kind == "ref/resource":
            target = _string_param(ref, "uri")
            if target not in registry.templates and target not in registry.resources:
                raise InvalidParams(f"Unknown resource template: {target[:100]}")
        else:
            raise InvalidParams('Invalid params: ref.type must be "ref/prompt" or "ref/resource"')
        context = params.get("context")
        known = context.get("arguments") if isinstance(context, dict) else None
        completer = registry.completers.get((kind, target, arg_name))
        if completer is None:
            return {"completion": {"values": []}}
        arguments = known if isinstance(known, dict) else {}
        return {"completion": await completer.complete(value, arguments, ctx)}

    return {
        "server/discover": discover,
        "tools/list": tools_list,
        "tools/call": tools_call,
        "resources/list": resources_list,
        "resources/templates/list": templates_list,
        "resources/read": resources_read,
        "prompts/list": prompts_list,
        "prompts/get": prompts_get,
        "completion/complete": complete,
        "subscriptions/listen": server.subscriptions.listen,
    }
