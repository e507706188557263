"""Validate messages our server produces against the official 2026-07-28 JSON schema.

The schema's response unions are loose (CHECKLIST §19-Q17): ``CallToolResultResponse``
accepts almost any object. So results are checked against the concrete type that the
request method and ``resultType`` select, and errors against ``JSONRPCErrorResponse``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SHARED = Path(__file__).resolve().parents[2] / "shared"
SCHEMA_FILE = SHARED / "spec" / "schema" / "2026-07-28" / "schema.json"

RESULT_TYPES = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}

NOTIFICATION_TYPES = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
}


@functools.cache
def _definitions() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())["$defs"]  # type: ignore[no-any-return]


@functools.cache
def validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": _definitions()})


def check(definition: str, instance: Any) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``instance`` is a valid ``definition``."""
    validator(definition).validate(instance)


def check_response(method: str | None, response: dict[str, Any]) -> None:
    """Validate one response to a request for ``method``."""
    if "error" in response:
        check("JSONRPCErrorResponse", response)
        return
    check("JSONRPCResultResponse", response)
    result = response["result"]
    if result.get("resultType") == "input_required":
        check("InputRequiredResult", result)
    elif method in RESULT_TYPES:
        check(RESULT_TYPES[method], result)
    else:
        check("Result", result)


def check_notification(message: dict[str, Any]) -> None:
    definition = NOTIFICATION_TYPES.get(message["method"], "JSONRPCNotification")
    check(definition, message)
