"""Validate what our server sends with the official 2026-07-28 wire models (``mcp-types``).

``mcp-types`` is the official SDK's package of wire models, one generated module per schema
revision. Each message is validated as the bytes a client reads: encoded, then checked in
pydantic's JSON strict mode, so an id ``true`` or a number where a string belongs fails.

The schema's result unions are loose: an ``InputRequiredResult`` accepts almost any object,
so ``CallToolResult | InputRequiredResult`` would pass a result with no ``content``.
Results are therefore checked against the concrete type that the request method and
``resultType`` select, and errors against ``JSONRPCErrorResponse``.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any

import mcp_types._v2026_07_28 as models
from mcp_types.methods import SERVER_NOTIFICATIONS, SERVER_RESULTS
from pydantic import TypeAdapter

from mcpserve.protocol.jsonrpc import dumps
from task_schema import check_task_notification, check_task_result

VERSION = "2026-07-28"
RESULT_TYPES = ("complete", "input_required", "task")


@functools.cache
def _adapter(model: Any) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def validate(model: Any, instance: Any) -> None:
    """Raise ``pydantic.ValidationError`` unless ``instance``, as JSON, is a valid ``model``."""
    _adapter(model).validate_json(dumps(instance), strict=True)


def check(definition: str, instance: Any) -> None:
    """Validate ``instance`` as the 2026-07-28 type named ``definition``."""
    validate(getattr(models, definition), instance)


def result_model(method: str, version: str = VERSION) -> Any:
    """The concrete result type of ``method`` at ``version``: the union's other arm when the
    official map says ``X | InputRequiredResult``."""
    row = SERVER_RESULTS[(method, version)]
    if isinstance(row, types.UnionType):
        (concrete,) = [arm for arm in typing.get_args(row) if arm.__name__ != "InputRequiredResult"]
        return concrete
    return row


def check_response(method: str | None, response: dict[str, Any]) -> None:
    """Validate one response to a request for ``method``."""
    if "error" in response:
        check("JSONRPCErrorResponse", response)
        assert "result" not in response, response
        return
    check("JSONRPCResultResponse", response)
    result = response["result"]
    assert result.get("resultType") in RESULT_TYPES, result
    if result["resultType"] == "task" or (method or "").startswith("tasks/"):
        check_task_result(method or "", result)  # the tasks extension: not in mcp-types
    elif result["resultType"] == "input_required":
        check("InputRequiredResult", result)
        assert "inputRequests" in result or "requestState" in result, result
    elif method is not None and (method, VERSION) in SERVER_RESULTS:
        validate(result_model(method), result)
    else:
        check("Result", result)


def check_notification(message: dict[str, Any]) -> None:
    """Validate one notification the server sends, by its method."""
    assert "id" not in message, message
    if message["method"] == "notifications/tasks":
        validate(models.JSONRPCNotification, message)
        check_task_notification(message["params"])
        return
    model = SERVER_NOTIFICATIONS.get((message["method"], VERSION), models.JSONRPCNotification)
    validate(model, message)
