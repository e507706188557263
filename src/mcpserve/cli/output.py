"""How results look on a terminal: text plainly, structured content as JSON, media summed up.

A ``CallToolResult`` prints its ``structuredContent`` as indented JSON, then its content
blocks: text as it is (except the text block that only repeats the structured content as
JSON, which the spec asks servers to include for older clients), images and audio as their
MIME type and size, resource links as their URI, embedded resources as their text.
An ``isError`` result goes to stderr instead, for the command to exit with status 1.

``inspect`` shows what a server offers as aligned tables: every tool with its arguments
(type, required, default, description) and options (annotations, task support, output),
then resources, resource templates and prompts. Columns empty in every row are left out.

A tool's task support is its ``execution.taskSupport``: listed by a server of the
2025-11-25 era, and filled in by ``inspect`` from the registry of a target it imported,
since the 2026-07-28 tasks extension lists no such field (docs/decisions.md, "Task tools
in inspect"). A server that declares the extension without marking any tool gets a line
saying so.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence

import click

from .._types import JSONDict, JSONValue
from .arguments import describe


def dumps(value: object) -> str:
    """JSON for people: indented by two, non-ASCII kept."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def show_json(value: object) -> None:
    click.echo(dumps(value))


def show_tool_result(result: JSONDict) -> None:
    """Print a ``tools/call`` result: to stdout, or to stderr when ``isError``."""
    error = bool(result.get("isError"))
    structured = result.get("structuredContent")
    if structured is not None and not error:
        click.echo(dumps(structured))
    for block in result.get("content") or []:
        if structured is not None and _repeats(block, structured):
            continue
        click.echo(block_text(block), err=error)


def _repeats(block: JSONValue, structured: JSONValue) -> bool:
    if not isinstance(block, dict) or block.get("type") != "text":
        return False
    try:
        return bool(json.loads(block.get("text", "")) == structured)
    except ValueError:
        return False


def block_text(block: JSONValue) -> str:
    """One content block as a line (or lines) of text."""
    if not isinstance(block, dict):
        return dumps(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType', 'unknown type')}, {_size(block.get('data'))}]"
    if kind == "resource_link":
        name = f" ({block['name']})" if block.get("name") else ""
        return f"[resource link: {block.get('uri')}{name}]"
    if kind == "resource":
        return contents_text(block.get("resource") or {})
    return dumps(block)


def contents_text(contents: JSONDict) -> str:
    """One entry of ``resources/read`` contents (or an embedded resource)."""
    if "text" in contents:
        return str(contents["text"])
    mime = contents.get("mimeType", "unknown type")
    return f"[{contents.get('uri')}: {mime}, {_size(contents.get('blob'))}]"


def _size(data: JSONValue) -> str:
    if not isinstance(data, str):
        return "no data"
    try:
        count = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return f"{len(data)} characters of data that is not base64"
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def show_log(level: str, data: JSONValue, logger: str | None) -> None:
    """A server's log message (``notifications/message``) on stderr: ``[warning db] text``."""
    source = f"{level} {logger}" if logger else str(level)
    shown = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    click.echo(f"[{source}] {shown}", err=True)


def show_resource(result: JSONDict) -> None:
    for contents in result.get("contents") or []:
        click.echo(contents_text(contents))


def show_prompt(result: JSONDict) -> None:
    if result.get("description"):
        click.echo(f"# {result['description']}")
    for message in result.get("messages") or []:
        click.echo(f"[{message.get('role', '?')}]")
        click.echo(block_text(message.get("content")))


# -- inspect -------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> str:
    """Rows under headers, columns aligned; a column empty in every row is left out."""
    keep = [i for i in range(len(headers)) if any(row[i] for row in rows)]
    cells = [[headers[i] for i in keep], *[[row[i] for i in keep] for row in rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(keep))]
    return "\n".join(
        indent
        + "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def first_line(text: object) -> str:
    return str(text).strip().splitlines()[0] if text and str(text).strip() else ""


_HINTS = {
    ("readOnlyHint", True): "read-only",
    ("destructiveHint", True): "destructive",
    ("destructiveHint", False): "not destructive",
    ("idempotentHint", True): "idempotent",
    ("openWorldHint", True): "open world",
    ("openWorldHint", False): "closed world",
}


def tool_options(tool: JSONDict) -> list[str]:
    """A tool's annotations and execution settings, in words."""
    options = []
    for key, value in (tool.get("annotations") or {}).items():
        if key == "title":
            continue
        options.append(_HINTS.get((key, value), f"{key}={json.dumps(value)}"))
    support = (tool.get("execution") or {}).get("taskSupport")
    if support in ("optional", "required"):
        options.append(f"task ({support})")
    if tool.get("outputSchema"):
        options.append(f"returns {describe(tool['outputSchema'], tool['outputSchema'])}")
    return options


TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def is_task_tool(tool: JSONDict) -> bool:
    return (tool.get("execution") or {}).get("taskSupport") in ("optional", "required")


def tool_block(tool: JSONDict) -> str:
    """One tool: name, title and description, options, then its arguments as a table."""
    title = tool.get("title") or (tool.get("annotations") or {}).get("title")
    heading = tool["name"] + (f" ({title})" if title else "")
    lines = [f"  {heading}"]
    if description := first_line(tool.get("description")):
        lines.append(f"    {description}")
    if options := tool_options(tool):
        lines.append(f"    options: {', '.join(options)}")
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    if not properties:
        lines.append("    no arguments")
        return "\n".join(lines)
    required = set(schema.get("required") or ())
    rows = [
        [
            name,
            describe(prop, schema),
            "yes" if name in required else "no",
            json.dumps(prop["default"]) if isinstance(prop, dict) and "default" in prop else "",
            first_line(prop.get("description")) if isinstance(prop, dict) else "",
        ]
        for name, prop in properties.items()
    ]
    lines.append(table(["ARGUMENT", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"], rows, "    "))
    return "\n".join(lines)


def inspection_text(found: JSONDict) -> str:
    """What ``inspect`` prints: the server, then a section for each kind it offers."""
    info = found.get("server") or {}
    heading = " ".join(str(info[key]) for key in ("name", "version") if info.get(key))
    extensions = (found.get("capabilities") or {}).get("extensions") or {}
    marked = any(is_task_tool(tool) for tool in found.get("tools") or ())
    if TASKS_EXTENSION in extensions and not marked:
        heading += (
            "\nTasks: some calls may run as tasks (io.modelcontextprotocol/tasks); "
            "its tool list does not say which"
        )
    sections = [heading]
    if "tools" in found:
        tools = found["tools"]
        body = "\n\n".join(tool_block(tool) for tool in tools) if tools else "  none"
        sections.append(f"Tools ({len(tools)})\n{body}")
    if "resources" in found:
        rows = [
            [
                r.get("uri", ""),
                r.get("name", ""),
                r.get("mimeType", ""),
                first_line(r.get("description")),
            ]
            for r in found["resources"]
        ]
        sections.append(_section("Resources", ["URI", "NAME", "MIME TYPE", "DESCRIPTION"], rows))
    if "resourceTemplates" in found:
        rows = [
            [
                t.get("uriTemplate", ""),
                t.get("name", ""),
                t.get("mimeType", ""),
                first_line(t.get("description")),
            ]
            for t in found["resourceTemplates"]
        ]
        headers = ["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"]
        sections.append(_section("Resource templates", headers, rows))
    if "prompts" in found:
        rows = [
            [p["name"], _prompt_arguments(p), first_line(p.get("description"))]
            for p in found["prompts"]
        ]
        sections.append(_section("Prompts", ["NAME", "ARGUMENTS", "DESCRIPTION"], rows))
    return "\n\n".join(section for section in sections if section)


def _section(title: str, headers: list[str], rows: list[list[str]]) -> str:
    return f"{title} ({len(rows)})\n" + (table(headers, rows) if rows else "  none")


def _prompt_arguments(prompt: JSONDict) -> str:
    return ", ".join(
        argument["name"] + ("" if argument.get("required") else "?")
        for argument in prompt.get("arguments") or []
    )
