"""Reading a ``text/event-stream`` body as the client side of Streamable HTTP needs it.

The parser follows the WHATWG event-stream rules, trimmed to what MCP uses: ``data``
lines (joined with a newline), ``id`` and ``retry``; ``event`` names are read and ignored
(MCP sends every message as a plain event), comments (``:`` lines, the keep-alives) are
skipped. Every event is yielded, even one without data: a priming event (an ``id`` and a
``retry`` before any message, as handshake-era servers send) carries nothing to deliver
but tells the client where to resume and how long to wait before it does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    """One dispatched event: its data (``""`` for none), id and retry, when sent."""

    data: str
    id: str | None
    retry_ms: int | None


async def events(lines: AsyncIterator[str]) -> AsyncIterator[Event]:
    """The events of a stream, from its lines (CR, LF or CRLF already split off)."""
    data: list[str] = []
    event_id: str | None = None
    retry: int | None = None
    seen = False
    async for line in lines:
        if not line:
            if seen:
                yield Event("\n".join(data), event_id, retry)
            data, event_id, retry, seen = [], None, None, False
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "id":
            if "\0" not in value:  # the rule: an id with NUL is ignored
                event_id = value
        elif name == "retry":
            if value.isdigit():
                retry = int(value)
        elif name != "event":
            continue  # an unknown field is ignored, and does not make an event
        seen = True
    if seen and data:  # a last event without its blank line: deliver what it carries
        yield Event("\n".join(data), event_id, retry)
