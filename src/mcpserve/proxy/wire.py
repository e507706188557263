"""What crosses the proxy, made fit for the side it goes to: results, errors, questions.

The proxy passes messages through as they are wherever it can, and changes only what
belongs to one side of it:

* a result loses the upstream's own ``serverInfo`` (the client talks to the proxy, whose
  dispatcher stamps its own) and ``resultType: "complete"`` (stamped again downstream);
  a result that is not even an object, or lacks what its method's result must hold,
  becomes a clear -32603 instead of reaching the client;
* an upstream error keeps its code, message and data when it is about the client's
  request; when it is about the link between proxy and upstream (the proxy's credentials
  lack a scope, its headers or version were refused) it becomes -32603 naming the upstream,
  so the client is never asked to step up a token that was not the one refused
  (``docs/decisions.md``, "Upstream errors"). A handshake-era upstream's -32002 for a
  missing resource becomes the 2026-07-28 -32602 with ``data.uri``;
* a question (``elicitation/create``, ``sampling/createMessage``, ``roots/list``) in the
  shape the receiving era expects: a form elicitation gets ``mode: "form"`` for a
  2026-07-28 client and loses it for one before 2025-11-25; a URL elicitation loses its
  ``elicitationId`` on the 2026-07-28 wire and gets one for a 2025-11-25 session.
"""

from __future__ import annotations

import os
from typing import Any

from .._types import JSONDict
from ..extensions.tasks.records import TASKS_EXTENSION
from ..protocol import constants as c
from ..protocol.capabilities import missing_capabilities
from ..protocol.errors import InternalError, MCPError, ResourceNotFound

#: Codes that describe the proxy's own link to the upstream, not the client's request.
_LINK_CODES = frozenset({c.INSUFFICIENT_SCOPE, c.HEADER_MISMATCH, c.UNSUPPORTED_PROTOCOL_VERSION})
_HANDSHAKE_RESOURCE_NOT_FOUND = -32002
#: What each method's result must hold, to be worth passing on.
_RESULT_FIELDS = {
    "tools/call": ("content", list),
    "prompts/get": ("messages", list),
    "resources/read": ("contents", list),
    "completion/complete": ("completion", dict),
}
#: What a client needs to answer each kind of question.
_NEEDS: dict[str, JSONDict] = {
    "sampling/createMessage": {"sampling": {}},
    "roots/list": {"roots": {}},
}
_ELICITATION_ID = "elicitationId"


class UpstreamError(InternalError):
    """The upstream could not answer: unreachable, refused the proxy, or talked nonsense."""


def clean_result(
    method: str, result: Any, upstream: str, request_meta: JSONDict | None = None
) -> JSONDict:
    """An upstream result, ready to go downstream; raises :class:`UpstreamError` for one
    that is not a result of ``method`` (``request_meta``: the ``_meta`` sent with it)."""
    if not isinstance(result, dict):
        raise UpstreamError(
            f"The upstream server {upstream} answered {method} with something "
            "that is not a result object"
        )
    meta = result.get("_meta")
    if isinstance(meta, dict) and c.META_SERVER_INFO in meta:
        meta = {k: v for k, v in meta.items() if k != c.META_SERVER_INFO}
        if meta:
            result["_meta"] = meta
        else:
            del result["_meta"]
    kind = result.get("resultType")
    if kind == "input_required":
        return result
    if kind == "task":  # only where the upstream was told the client speaks tasks
        if method != "tools/call" or not _declares_tasks(request_meta):
            raise UpstreamError(
                f"The upstream server {upstream} answered {method} with a "
                "task, which the request did not allow"
            )
        return result
    needed = _RESULT_FIELDS.get(method)
    if needed is not None and kind in (None, "complete"):
        key, expected = needed
        if not isinstance(result.get(key), expected):
            raise UpstreamError(
                f"The upstream server {upstream} answered {method} with an "
                f"invalid result (no {key!r})"
            )
    if kind == "complete":
        del result["resultType"]
    return result


def _declares_tasks(request_meta: JSONDict | None) -> bool:
    capabilities = (request_meta or {}).get(c.META_CLIENT_CAPABILITIES)
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def downstream_error(exc: MCPError, method: str, params: JSONDict, upstream: str) -> MCPError:
    """The error the client gets for an upstream's JSON-RPC error."""
    code = exc.code
    if code in _LINK_CODES:
        return UpstreamError(
            f"The upstream server {upstream} refused the proxy's {method}: {exc.message[:300]}"
        )
    if code == _HANDSHAKE_RESOURCE_NOT_FOUND and method == "resources/read":
        uri = params.get("uri")
        return ResourceNotFound(uri if isinstance(uri, str) else "")
    return MCPError(exc.message[:1000], code=code, data=exc.data)


# -- questions -----------------------------------------------------------------------------


def needed_capabilities(method: str, params: JSONDict) -> JSONDict:
    """What the client must have declared to be asked this question."""
    if method == "elicitation/create":
        return {"elicitation": {"url" if params.get("mode") == "url" else "form": {}}}
    if method == "sampling/createMessage" and ("tools" in params or "toolChoice" in params):
        return {"sampling": {"tools": {}}}
    return _NEEDS.get(method, {})


def can_answer(method: str, params: JSONDict, capabilities: JSONDict) -> bool:
    """Whether a client that declared ``capabilities`` can be asked this question."""
    if method not in ("elicitation/create", "sampling/createMessage", "roots/list"):
        return False
    return not missing_capabilities(needed_capabilities(method, params), capabilities)


def modern_question(method: str, params: JSONDict) -> JSONDict:
    """A question as an entry of a 2026-07-28 ``inputRequests``."""
    if method == "elicitation/create":
        params = dict(params)
        params.pop(_ELICITATION_ID, None)
        params.setdefault("mode", "url" if "url" in params else "form")
    return {"method": method, "params": params}


def session_question(question: JSONDict, version: str) -> JSONDict:
    """A question (``{"method", "params"}``) as a request to a handshake-era session."""
    method = question.get("method")
    params = question.get("params")
    params = dict(params) if isinstance(params, dict) else {}
    if method == "elicitation/create":
        if params.get("mode") == "url":
            if version != "2025-11-25":
                raise InternalError(
                    f"The upstream asked for a URL elicitation, which a "
                    f"{version} client cannot answer"
                )
            params.setdefault(_ELICITATION_ID, os.urandom(16).hex())
        elif version != "2025-11-25":
            params.pop("mode", None)  # before 2025-11-25 there were only forms, unnamed
    return {"method": method, "params": params}
