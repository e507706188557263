"""Content blocks, and the conversion of plain values to them.

A tool or prompt on the server returns them, and so does a client's sampling handler: both
sides convert with the functions here. Helpers (``Image``, ``Audio``, ``ResourceLink``, ...)
are small frozen records that derive from :class:`ContentBlock` and know their wire form.
Plain values convert too: a ``str`` is text, a dict that already is a content block passes
through, and anything else is rendered as JSON text.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import orjson

from ._types import JSONDict

CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


def text(value: str) -> JSONDict:
    """A text content block."""
    return {"type": "text", "text": value}


class ContentBlock:
    """The base of the content helpers: records that know their wire form.

    The helpers themselves live with the server's entries, loaded on first use: a server
    that never returns an image or a resource link does not pay for importing them.
    """

    __slots__ = ()

    if TYPE_CHECKING:  # each helper defines it; the base only names it for the type checker

        def to_wire(self) -> JSONDict: ...


def is_content_block(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


def to_block(value: Any) -> JSONDict:
    """One value as one content block."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, ContentBlock):
        return value.to_wire()
    if is_content_block(value):
        return value  # type: ignore[no-any-return]
    return text(json_text(value))


def to_blocks(value: Any) -> list[JSONDict]:
    """A return value as a list of content blocks; ``None`` is no content."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [to_block(item) for item in value]
    return [to_block(value)]


def json_value(value: Any) -> Any:
    """A plain JSON value (dicts, lists, strings, numbers) for any JSON-able value."""
    return orjson.loads(orjson.dumps(value, default=_jsonable))


def json_text(value: Any) -> str:
    """Compact JSON for a value, with pydantic models and dataclasses dumped first."""
    return orjson.dumps(value, default=_jsonable).decode()


def _jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, set | frozenset):
        return list(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
