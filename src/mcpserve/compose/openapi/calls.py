"""One operation as one tool: a call sends one HTTP request and shapes what comes back.

The tool is an ordinary :class:`~mcpserve.Tool` with a hand-written ``inputSchema``
(enforced before anything is sent) and, when the document describes it, an
``outputSchema``. Only its binding differs: the arguments reach :meth:`Call.send` as one
dict, since they are the operation's, not a Python function's.

What the client sees:

* a 2xx JSON answer is ``structuredContent`` (checked against the ``outputSchema`` first)
  with its JSON as text; text is text, images and audio are content blocks, other bytes are
  described;
* anything else is an ``isError`` result the model can read: a non-2xx status with the
  first few hundred characters of the body, an API that cannot be reached, an answer that
  does not match the document. Nothing of the exception's traceback goes to the client.

The request is the user's ``httpx2.AsyncClient``'s: its base URL, headers, auth, cookies and
timeouts apply, and nothing of the MCP request (its token, its headers) is added.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import httpx2
import orjson

from ..._content import json_text, text
from ..._types import JSONDict
from ...protocol.errors import ToolError
from ...server.context.context import Context
from ...server.entries.tools import Tool
from ...server.schema.raw import RawSchema
from .arguments import Plan

#: How much of an error's body the model sees.
EXCERPT_CHARS = 500
_WHITESPACE = re.compile(r"\s+")


class OperationTool(Tool):
    """A tool whose arguments go, as one dict, to the operation's :meth:`Call.send`."""

    __slots__ = ()

    def bind(self, arguments: Any, ctx: Context) -> JSONDict:
        # Already checked against the inputSchema (``admit``); nothing else to bind.
        return {"arguments": arguments or {}}


class Call:
    """Sends one operation's requests with the user's client."""

    def __init__(
        self, client: httpx2.AsyncClient, method: str, plan: Plan, *, server_url: str = ""
    ) -> None:
        self.client = client
        self.method = method
        self.plan = plan
        #: Put before the path when the client has no ``base_url`` (the document's server).
        self.server_url = server_url
        #: The published outputSchema's validator, once the tool is built.
        self.output_check: RawSchema | None = None

    async def send(self, arguments: JSONDict) -> JSONDict:
        request = self.plan.request(arguments)
        label = f"{self.method} {request.path}"
        try:
            response = await self.client.request(
                self.method,
                self.server_url + request.path,
                params=list(request.params) or None,
                headers=request.headers or None,
                content=request.content,
            )
        except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
            detail = _short(str(exc)) or "no detail"
            reason = f"the API could not be reached ({type(exc).__name__}: {detail})"
            raise ToolError(f"{label} failed: {reason}") from None
        status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        if not 200 <= response.status_code < 300:
            excerpt = _short(response.text)
            raise ToolError(f"{label} answered {status}" + (f": {excerpt}" if excerpt else ""))
        return self._success(label, status, response)

    def _success(self, label: str, status: str, response: httpx2.Response) -> JSONDict:
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        body = response.content
        if body and _is_json(media):
            try:
                value = orjson.loads(body)
            except orjson.JSONDecodeError:
                excerpt = _short(response.text)
                raise ToolError(
                    f"{label} answered {status} with a body that is not the JSON "
                    f"its Content-Type says: {excerpt}"
                ) from None
            if self.output_check is not None:
                problems = self.output_check.problems(value)
                if problems:
                    raise ToolError(
                        f"{label} answered {status} with JSON that does not match "
                        f"its OpenAPI document: {'; '.join(problems)}"
                    )
            return {"content": [text(json_text(value))], "structuredContent": value}
        if self.output_check is not None:
            what = f"{media or 'an untyped body'}" if body else "no body"
            raise ToolError(
                f"{label} answered {status} with {what}, not the JSON its OpenAPI "
                "document describes"
            )
        return {"content": [_block(status, media, response)]}


def _block(status: str, media: str, response: httpx2.Response) -> JSONDict:
    body = response.content
    if not body:
        return text(f"The API answered {status} (no body).")
    kind = media.partition("/")[0]
    if kind in ("image", "audio"):
        data = base64.b64encode(body).decode("ascii")
        return {"type": kind, "data": data, "mimeType": media}
    if kind == "text" or _is_utf8(body):
        return text(response.text)
    return text(
        f"The API answered {status} with {len(body)} bytes of "
        f"{media or 'application/octet-stream'}."
    )


def _is_json(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _short(value: str) -> str:
    flat = _WHITESPACE.sub(" ", value).strip()
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "…"
