"""The tasks extension's wire shapes (SEP-2663), as JSON Schemas the tests validate with.

The official wire models (``mcp-types``) carry only the 2025-11-25 experimental tasks, whose
shapes differ (``ttl``, a nested ``task``, ``tasks/result``); the extension's own shapes are
written out here from the SEP: ``Task``, ``CreateTaskResult`` (flat, ``resultType: "task"``),
``DetailedTask`` (``tasks/get`` and ``notifications/tasks``) and the empty acks.
"""

from __future__ import annotations

from typing import Any

import jsonschema

_ISO = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
_META = {"type": "object"}
_TASK_FIELDS: dict[str, Any] = {
    "taskId": {"type": "string", "minLength": 1},
    "status": {"enum": ["working", "input_required", "completed", "failed", "cancelled"]},
    "statusMessage": {"type": "string"},
    "createdAt": {"type": "string", "pattern": _ISO},
    "lastUpdatedAt": {"type": "string", "pattern": _ISO},
    "ttlMs": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    "pollIntervalMs": {"type": "integer", "minimum": 1},
}
_REQUIRED = ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"]
# Fields of the 2025-11-25 experimental tasks (and MRTR's requestState) must never appear.
_FORBIDDEN = {"not": {"anyOf": [{"required": [key]} for key in
                                ("ttl", "pollInterval", "task", "requestState")]}}  # fmt: skip
_INPUT_REQUEST = {
    "type": "object",
    "required": ["method"],
    "properties": {
        "method": {"enum": ["elicitation/create", "sampling/createMessage", "roots/list"]},
        "params": {"type": "object"},
    },
}

CREATE_TASK_RESULT = {
    "type": "object",
    "required": ["resultType", *_REQUIRED],
    "properties": {"resultType": {"const": "task"}, "_meta": _META, **_TASK_FIELDS},
    "additionalProperties": False,
    "allOf": [_FORBIDDEN],
}


def _detailed(status: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "if": {"properties": {"status": {"const": status}}},
        "then": {"required": list(payload), "properties": payload},
    }


DETAILED_TASK = {
    "type": "object",
    "required": _REQUIRED,
    "properties": {
        **_TASK_FIELDS,
        "_meta": _META,
        "inputRequests": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": _INPUT_REQUEST,
        },
        "result": {"type": "object", "required": ["resultType"]},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        },
    },
    "additionalProperties": False,
    "allOf": [
        _FORBIDDEN,
        _detailed("input_required", {"inputRequests": {}}),
        _detailed("completed", {"result": {}}),
        _detailed("failed", {"error": {}}),
        # Each status carries its own payload and no other's.
        *[
            {
                "if": {"properties": {"status": {"const": status}}},
                "then": {"not": {"anyOf": [{"required": [key]} for key in others]}},
            }
            for status, others in (
                ("working", ("inputRequests", "result", "error")),
                ("input_required", ("result", "error")),
                ("completed", ("inputRequests", "error")),
                ("failed", ("inputRequests", "result")),
                ("cancelled", ("inputRequests", "result", "error")),
            )
        ],
    ],
}

GET_TASK_RESULT = {
    **DETAILED_TASK,
    "required": [*_REQUIRED, "resultType"],
    "properties": {**DETAILED_TASK["properties"], "resultType": {"const": "complete"}},
}

ACK = {
    "type": "object",
    "required": ["resultType"],
    "properties": {"resultType": {"const": "complete"}, "_meta": _META},
    "additionalProperties": False,
}


def check_task_result(method: str, result: dict[str, Any]) -> None:
    """Validate the result of a ``tasks/*`` method, or a ``CreateTaskResult``."""
    if result.get("resultType") == "task":
        assert method == "tools/call", f"resultType task on {method}"
        jsonschema.validate(result, CREATE_TASK_RESULT)
    elif method == "tasks/get":
        jsonschema.validate(result, GET_TASK_RESULT)
    else:
        jsonschema.validate(result, ACK)


def check_task_notification(params: dict[str, Any]) -> None:
    """``notifications/tasks``: the whole task, as ``tasks/get`` shows it."""
    jsonschema.validate(params, DETAILED_TASK)
