"""Handlers for notifications the client sends: ``@server.notification("vendor/thing")``.

A notification has no answer, so nothing a handler returns or raises reaches the client:
the params (without ``_meta``) are validated against the function's parameters as a custom
method's are, and a mismatch or an exception is logged (an unexpected one with a
reference), never sent. The function may be ``async def``, a plain ``def`` (run on the
loop) or ``@blocking`` (run in the thread pool), and may take the :class:`Context`, whose
``principal``, ``http`` and, in the handshake era, session facts describe the sender.

Every transport hands client notifications to the dispatcher's ``notify``; middleware sees
them too (``ctx.request.id`` is None), handler or not.
"""

from __future__ import annotations

import logging
from typing import Any

from .._types import JSONDict, UserFunction
from ..protocol.core import answered
from ..protocol.errors import new_ref
from .context.context import Context
from .entries.entry import FunctionEntry, InvalidArguments, Pool

logger = logging.getLogger("mcpserve")


class NotificationHandler(FunctionEntry):
    """A function run for each client notification of one method."""

    __slots__ = ()

    def __init__(
        self, name: str, fn: UserFunction, *, pool: Pool, blocking: bool | None = None
    ) -> None:
        super().__init__(fn, name, pool=pool, blocking=blocking)

    async def receive(self, ctx: Context) -> JSONDict:
        """Run the function for one notification (the empty dict: nothing is answered)."""
        return await answered(self.run(ctx.request.params, ctx))

    def admit(self, arguments: Any, ctx: Context) -> Any:
        return {k: v for k, v in arguments.items() if k != "_meta"}

    def refuse(self, invalid: InvalidArguments, ctx: Context) -> JSONDict:
        logger.warning(
            "Notification %s ignored: its params do not fit %s(): %s",
            self.key,
            self.fn.__name__,
            "; ".join(invalid.problems),
        )
        return {}

    def fail(self, exc: Exception, ctx: Context) -> JSONDict:
        logger.error("Notification handler %s failed (ref %s)", self.key, new_ref(), exc_info=exc)
        return {}

    def shape(self, value: Any, ctx: Context) -> JSONDict:
        return {}
