"""What a handshake-era session's client hears of the server's changes, past the gate.

A session hears every event of the server's stream and picks what concerns it
(``HandshakeState.hear``). An update of a resource then goes through the session's
:data:`~mcpserve._types.UpdateGate`, which the server hands over when the session's stream
opens (``ServerEvents.update_gate``): a subscription to a parent URI covers resources a
visibility rule may hide from this client. A plain rule decides at once; a rule that must
be awaited decides in a task of its own, after which the notification is sent, so a slow
rule never holds up the event loop's fan-out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from .._types import JSONDict, UpdateGate

_UPDATED = "notifications/resources/updated"
#: Notifications waiting for an awaited rule (kept, so the tasks are not collected).
_WAITING: set[asyncio.Task[None]] = set()


def send_heard(
    message: JSONDict, gate: UpdateGate | None, send: Callable[[JSONDict], None]
) -> None:
    """``send(message)`` now, later, or never, as ``gate`` decides for an update."""
    if gate is None or message.get("method") != _UPDATED:
        send(message)
        return
    verdict = gate(message["params"]["uri"])
    if isinstance(verdict, bool):
        if verdict:
            send(message)
        return
    task = asyncio.ensure_future(_send_when_shown(verdict, message, send))
    _WAITING.add(task)
    task.add_done_callback(_WAITING.discard)


async def _send_when_shown(
    verdict: Awaitable[bool], message: JSONDict, send: Callable[[JSONDict], None]
) -> None:
    if await verdict:
        send(message)
