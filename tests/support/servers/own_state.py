"""A server with a tool that keeps its own ``requestState`` (``request_state="handler"``)
beside one whose state mcpserve seals, for the wire tests of both."""

from __future__ import annotations

from pydantic import BaseModel

from mcpserve import Context, Elicit, InputRequired, Server


class Resolution(BaseModel):
    resolution: str


class Duplicate(BaseModel):
    duplicate_of: int


def build() -> Server:
    server = Server("own-state", version="1.0.0")

    @server.tool(request_state="handler")
    async def resolve(item: int, ctx: Context) -> str:
        """Resolve a work item: its resolution first, then (for a duplicate) the original,
        carrying what it learnt in a state of its own, in plain text."""
        carried = ctx.raw_request_state or ""
        if "resolution=" in carried:
            resolution = carried.split("resolution=", 1)[1]
        else:
            ctx.set_raw_request_state(f"item={item}")
            answer = await ctx.elicit("Resolution?", Resolution, key="resolution")
            resolution = answer.data.resolution
            if resolution != "Duplicate":
                return f"item {item}: {resolution} (state {carried!r})"
            ctx.set_raw_request_state(f"item={item};resolution={resolution}")
        duplicate = await ctx.elicit("Duplicate of?", Duplicate, key="duplicate")
        return f"item {item}: {resolution} of {duplicate.data.duplicate_of} (state {carried!r})"

    @server.tool(request_state="handler")
    async def stateless(ctx: Context):  # unannotated: a plain text result
        """Asks once, the low-level way, handing out no state at all."""
        if "ok" in ctx.input_responses:
            return f"answered (state {ctx.raw_request_state!r})"
        return InputRequired({"ok": Elicit("OK?", Resolution)})

    @server.tool
    async def sealed(ctx: Context) -> str:
        """An ordinary tool: mcpserve seals its state."""
        answer = await ctx.elicit("Resolution?", Resolution, key="resolution")
        return f"sealed {answer.data.resolution}"

    return server


server = build()

if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
