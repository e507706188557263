"""The "everything" server that the official MCP conformance suite tests, built with mcpserve.

The suite (``@modelcontextprotocol/conformance``) calls fixed tools, resources and prompts by
name and checks their answers against canonical values, which the docstrings below repeat
where they matter. This file is also a tour of mcpserve's API:
text, image, audio and embedded-resource content, tool errors, progress and log
notifications, a hand-written JSON Schema, a required client capability, a parameter
mirrored in an HTTP header, resources and a template, prompts and a completion, and a skill
served from ``skills/`` (the skills extension).

It serves both legs on one endpoint: the 2026-07-28 (stateless) wire, including the multi
round-trip tools (``test_input_required_result_*``) and the list-change triggers, and the
2025-11-25 (session) wire, where the same ``ctx.elicit``/``ctx.sample`` calls become real
requests to the client. The tasks extension fixtures are not here yet.

Serve it over Streamable HTTP at ``http://127.0.0.1:PORT/mcp``::

    .venv/bin/python examples/conformance/server.py --port 3001

``scripts/conformance`` starts it and runs the suite against it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel

from mcpserve import (
    Audio,
    CachePolicy,
    Context,
    Elicit,
    EmbeddedResource,
    Header,
    Image,
    ListRoots,
    MCPError,
    Message,
    Sample,
    Server,
    ToolError,
)

# A 1x1 PNG and a tiny WAV file, base64-encoded: the suite's canonical media.
PNG_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
    "rkJggg=="
)
WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

server = Server(
    "mcpserve-conformance",
    version="1.0.0",
    instructions="Fixtures for the MCP conformance suite; every answer is canned.",
    # Every list and read result here is the same for every caller and never changes while
    # the server runs, so clients and shared caches may keep it: public, for five minutes.
    # (Revisit once the list-changed trigger tools make the lists change at run time.)
    cache=CachePolicy(ttl_ms=300_000, scope="public"),
    # Lets tools send notifications/message, to requests that ask for a log level.
    client_logging=True,
    # The suite's ignore-extra-params check answers the first question without a state and
    # expects a complete result (docs/decisions.md, "Answers without a state").
    answers_without_state="first-round",
)


# -- tools ------------------------------------------------------------------------------------
# Listed in this order; the first one must work when called with no arguments at all, because
# the suite's header-validation probes call whichever tool comes first.


@server.tool
def test_simple_text() -> str:
    """Return a simple text response."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> Image:
    """Return a 1x1 PNG image."""
    return Image(PNG_BASE64, mime_type="image/png")


@server.tool
def test_audio_content() -> Audio:
    """Return a short WAV clip."""
    return Audio(WAV_BASE64, mime_type="audio/wav")


@server.tool
def test_embedded_resource() -> EmbeddedResource:
    """Return a resource embedded in the result."""
    return EmbeddedResource(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@server.tool
def test_multiple_content_types() -> list[str | Image | EmbeddedResource]:
    """Return text, an image and an embedded resource in one result."""
    return [
        "Multiple content types test:",
        Image(PNG_BASE64, mime_type="image/png"),
        EmbeddedResource(
            "test://mixed-content-resource",
            text='{"test":"data","value":123}',
            mime_type="application/json",
        ),
    ]


@server.tool
def test_error_handling() -> str:
    """Fail on purpose, with an error the model can read (``isError: true``)."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 (of 100) while working, then return the progress token."""
    for done in (0, 50, 100):
        await ctx.progress(done, total=100)
        if done < 100:
            await asyncio.sleep(0.05)
    return f"Progress completed (token {ctx.progress_token})"


JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,  # the suite's wire name, so not snake_case
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Publish a JSON Schema 2020-12 inputSchema ($defs, $ref, allOf, if/then/else) verbatim.

    The function's own signature only unpacks the arguments; ``input_schema=`` replaces the
    schema mcpserve would derive from it.
    """
    contact = phone if contactMethod == "phone" else email
    return f"Contact {name or 'someone'} via {contactMethod or 'any method'}: {contact or '-'}"


@server.tool(requires={"sampling": {}})
def test_missing_capability() -> str:
    """Need the client's sampling capability; without it the call fails with -32021."""
    return "The client supports sampling."


@server.tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Stream a notification before the result, but never a server-to-client request."""
    await ctx.progress(1, total=1, message="Streaming")
    return "Streaming complete"


@server.tool
async def test_logging_tool(ctx: Context) -> str:
    """Log to the client, which only happens when the request asked for a log level."""
    # A no-op unless the request's _meta set io.modelcontextprotocol/logLevel to "info" or lower.
    await ctx.log("info", "test_logging_tool was called")
    return "Logging evaluated"


@server.tool(name="test_x_mcp_header")
def echo_region(region: Annotated[str, Header("Region")] = "<none>") -> str:
    """Echo a parameter that clients also send as the ``Mcp-Param-Region`` HTTP header.

    Args:
        region: Where the request comes from.
    """
    return f"region={region}"


# -- multi round-trip requests (input_required) -----------------------------------------------
# Each tool asks on its first attempt and finishes on the retry that carries the answers.
# The keys (user_name, confirm, ...) are the suite's canonical ones.


class Name(BaseModel):
    name: str


class Ok(BaseModel):
    ok: bool


class Color(BaseModel):
    color: str


class PromptContext(BaseModel):
    context: str


@server.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask the user's name, then greet them."""
    answer = await ctx.elicit("What is your name?", Name, key="user_name")
    return f"Hello, {answer.data.name}!" if answer.accepted else f"No name ({answer.action})."


@server.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's model a question."""
    reply = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"LLM response: {reply.text}"


@server.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """List the client's roots."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.uri for root in roots)


@server.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Keep data of its own in the sealed request state across the round trip."""
    ctx.state["asked"] = "confirm"
    answer = await ctx.elicit("Please confirm", Ok, key="confirm")
    state = "state-ok" if ctx.state.get("asked") == "confirm" else "state-lost"
    return f"{state}: confirmed={answer.accepted and answer.data.ok}"


@server.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Ask three things in one round: a name, a model completion and the roots."""
    answers = await ctx.ask(
        user_name=Elicit("What is your name?", Name),
        greeting=Sample("Generate a greeting", max_tokens=50),
        client_roots=ListRoots(),
    )
    name = answers["user_name"].data.name if answers["user_name"].accepted else "stranger"
    roots = len(answers["client_roots"])
    return f"{answers['greeting'].text} {name} ({roots} roots)"


@server.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Ask two questions in two rounds; the first answer rides along in the state."""
    name = await ctx.elicit("Step 1: What is your name?", Name, key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", Color, key="step2")
    return f"{name.data.name} likes {color.data.color}."


@server.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Ask for a confirmation; a tampered requestState on the retry is rejected (-32602)."""
    answer = await ctx.elicit("Please confirm", Ok, key="confirm")
    return f"confirmed={answer.accepted and answer.data.ok}"


@server.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only in a way the client declared: elicitation if it can, else sampling."""
    if ctx.client_supports({"elicitation": {}}):
        answer = await ctx.elicit("What is your name?", Name, key="user_name")
        return f"Hello, {answer.data.name}!" if answer.accepted else "No name."
    reply = await ctx.sample("Suggest a name.", max_tokens=20, key="name_suggestion")
    return f"Suggested: {reply.text}"


# -- tools the 2025-11-25 leg calls (the same code serves both eras) -----------------------------


class Contact(BaseModel):
    username: str
    email: str


class Defaults(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


ENUM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages while working."""
    for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.log("info", step)
        await asyncio.sleep(0.05)
    return "Logging test completed"


@server.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's model to answer a prompt.

    Args:
        prompt: What to ask the model.
    """
    reply = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {reply.text}"


@server.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user for a username and an email address.

    Args:
        message: What to tell the user.
    """
    answer = await ctx.elicit(message, Contact)
    return f"User response: action={answer.action}, content={answer.content}"


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask with a form whose fields all have defaults (SEP-1034)."""
    answer = await ctx.elicit("Please review your details", Defaults)
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask with every enum style of SEP-1330, as a hand-written schema."""
    answer = await ctx.elicit("Please choose options", ENUM_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={answer.content}"


@server.tool
async def test_reconnection(ctx: Context) -> str:
    """Close the SSE connection mid-call; the client resumes it and gets the result."""
    await ctx.log("info", "Before disconnect")
    ctx.close_stream(retry_ms=100)
    await asyncio.sleep(0.2)
    await ctx.log("info", "After reconnect")
    return "Reconnection test completed"


# -- list changes, delivered to subscriptions/listen streams ------------------------------------


def _toggle_tool() -> str:
    """A tool that comes and goes, so the tool list really changes."""
    return "I come and go."


def _toggle_prompt() -> str:
    """A prompt that comes and goes."""
    return "I come and go."


@server.tool
def test_trigger_tool_change() -> str:
    """Add or remove a tool; listeners that asked for toolsListChanged are told."""
    if "dynamic_tool" in server.registry.tools:
        server.remove_tool("dynamic_tool")
        return "Removed dynamic_tool."
    server.add_tool(_toggle_tool, name="dynamic_tool")
    return "Added dynamic_tool."


@server.tool
def test_trigger_prompt_change() -> str:
    """Add or remove a prompt; listeners that asked for promptsListChanged are told."""
    if "dynamic_prompt" in server.registry.prompts:
        server.remove_prompt("dynamic_prompt")
        return "Removed dynamic_prompt."
    server.add_prompt(_toggle_prompt, name="dynamic_prompt")
    return "Added dynamic_prompt."


# -- resources --------------------------------------------------------------------------------


@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A fixed text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A fixed binary resource: a 1x1 PNG."""
    return base64.b64decode(PNG_BASE64)


@server.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> dict[str, Any]:
    """JSON data for any id."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may watch for updates."""
    return "Watched resource content"


# -- tasks (the io.modelcontextprotocol/tasks extension) ---------------------------------------


class Confirmation(BaseModel):
    confirm: bool


@server.tool
def greet(name: str) -> str:
    """Greet someone; never a task."""
    return f"Hello, {name}!"


@server.tool(task="optional")
async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Sleep for ``seconds``, then answer; a task for clients that take one."""
    await asyncio.sleep(seconds)
    return f"Computed {label or 'result'} after {seconds:g}s"


@server.tool(task="required")
async def failing_job() -> str:
    """Run for about a second, then fail as a tool (isError)."""
    await asyncio.sleep(1)
    raise ToolError("The job failed: the input could not be processed")


@server.tool(task="optional")
async def protocol_error_job() -> str:
    """Fail with a JSON-RPC error: the task ends failed."""
    raise MCPError("The job crashed", code=-32603)


@server.tool(task="optional")
async def confirm_delete(ctx: Context, filename: str = "example.txt") -> str:
    """Ask for confirmation (the task waits in input_required), then answer."""
    answer = await ctx.elicit(f"Delete {filename}?", Confirmation)
    if answer.accepted and answer.data.confirm:
        return f"Deleted {filename}"
    return f"Kept {filename}"


@server.tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Ask two questions at once: two keys pending together."""
    answers = await ctx.ask(
        first=Elicit("First: what is your name?", Name),
        second=Elicit("Second: confirm?", Confirmation),
    )
    name = answers["first"].data.name if answers["first"].accepted else "nobody"
    confirmed = answers["second"].accepted and answers["second"].data.confirm
    return f"{name} confirmed={confirmed}"


@server.tool(task="required", task_start="handler")
async def test_tool_with_task(ctx: Context) -> str:
    """Ask the user's name synchronously (multi round-trip), then work as a task."""
    answer = await ctx.elicit("What is your name?", Name, key="user_name")
    name = answer.data.name if answer.accepted else "nobody"
    await ctx.start_task("Working on it")
    await asyncio.sleep(0.5)
    return f"Done for {name}"


# -- prompts ----------------------------------------------------------------------------------


@server.prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt that fills in two arguments.

    Args:
        arg1: The first argument.
        arg2: The second argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message | str]:  # wire name
    """A prompt that embeds a resource.

    Args:
        resourceUri: The URI of the resource to embed.
    """
    resource = EmbeddedResource(
        resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
    )
    return [Message(resource), "Please process the embedded resource above."]


@server.prompt
def test_prompt_with_image() -> list[Message | str]:
    """A prompt that shows an image."""
    return [Message(Image(PNG_BASE64, mime_type="image/png")), "Please analyze the image above."]


@server.prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context before it renders."""
    answer = await ctx.elicit("What context should the prompt use?", PromptContext,
                              key="user_context")  # fmt: skip
    context = answer.data.context if answer.accepted else "none"
    return f"Use this context: {context}"


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str) -> list[str]:
    """Suggest values for ``arg1`` that start with what was typed."""
    return [option for option in ("paris", "park", "party") if option.startswith(value)]


# -- skills (the io.modelcontextprotocol/skills extension) ------------------------------------
# One skill with a subdirectory, so the directory-read scenario has a folder to descend into.

server.add_skills(Path(__file__).parent / "skills")


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the conformance everything server.")
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default: %(default)s)"
    )
    parser.add_argument("--port", type=int, default=3001, help="TCP port (default: %(default)s)")
    args = parser.parse_args()
    server.run("http", host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
