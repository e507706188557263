"""Questions to a handshake-era client, as real requests over its session.

On the 2026-07-28 wire ``ctx.elicit``, ``ctx.sample`` and ``ctx.list_roots`` end the request
with ``input_required`` (``rounds.py``). Inside a handshake-era session they are requests to
the client, which the transport sends (``Request.ask``) and :func:`ask_client` awaits, with
a timeout and a few attempts at an answer that fits. The handler's code is the same in both
eras.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, Protocol

from ..._types import JSONDict
from ...protocol.capabilities import missing_capabilities
from ...protocol.core import Request
from ...protocol.errors import InvalidParams, MCPError, MissingClientCapability, ToolError
from ...protocol.handshake import SessionEnded
from ..runtime import Runtime
from .rounds import MISSING, InputRequest

_ASK_ATTEMPTS = 3


class SessionContext(Protocol):
    """What asking reads of the request's context (``context.py``)."""

    runtime: Runtime

    @property
    def request(self) -> Request: ...

    @property
    def protocol_version(self) -> str: ...

    @property
    def client_capabilities(self) -> dict[str, Any]: ...


async def ask_client(ctx: SessionContext, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
    """Ask everything at once over the request's session; the answers by key."""
    needed: dict[str, Any] = {}
    for request in requests.values():
        needed.update(request.required_capabilities())
    missing = missing_capabilities(needed, ctx.client_capabilities)
    if missing:
        raise MissingClientCapability(missing)
    keys = list(requests)
    answers = await asyncio.gather(*(_ask_one(ctx, requests[key]) for key in keys))
    return dict(zip(keys, answers, strict=True))


async def _ask_one(ctx: SessionContext, request: InputRequest) -> Any:
    ask = ctx.request.ask
    assert ask is not None
    wire = _for_version(request.to_wire(), ctx.protocol_version)
    method = wire["method"]
    timeout = ctx.runtime.client_timeout_seconds
    for _ in range(_ASK_ATTEMPTS):
        try:
            result = await asyncio.wait_for(ask(wire), timeout)
        except TimeoutError:
            raise ToolError(f"The client did not answer {method} within {timeout:g} s") from None
        except SessionEnded:
            raise ToolError(f"The session ended before the client answered {method}") from None
        except MCPError as exc:  # the client's error is not this request's own error
            raise ToolError(f"The client refused {method}: {exc.message}") from None
        parsed = request.parse(result)
        if parsed is not MISSING:
            return parsed
    raise InvalidParams(f"The client's answers to {method} were not valid")


def _for_version(wire: JSONDict, version: str) -> JSONDict:
    """An input request in the shape a handshake-era version expects."""
    if wire["method"] != "elicitation/create":
        return wire
    params = dict(wire["params"])
    if params.get("mode") == "url":
        if version != "2025-11-25":
            raise MissingClientCapability(
                {"elicitation": {"url": {}}},
                f"URL elicitation needs protocol 2025-11-25, not {version}",
            )
        params["elicitationId"] = os.urandom(16).hex()  # 2025-11-25 requires one
    elif version != "2025-11-25":
        params.pop("mode", None)  # older versions know only forms, without a mode field
    return {**wire, "params": params}
