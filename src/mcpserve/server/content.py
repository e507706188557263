"""Content blocks a tool or prompt can return, and the conversion of return values to them.

Helpers are small frozen records that know their wire form (``to_wire``). Plain values
convert too: a ``str`` is text, a dict that already is a content block passes through,
and anything else is rendered as JSON text.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _guess_mime(path: Path, default: str) -> str:
    import mimetypes  # only file helpers need it; keep it off the import path

    return mimetypes.guess_type(path.name)[0] or default


@dataclass(frozen=True, slots=True)
class Image:
    """An image: raw ``bytes`` (encoded for you) or an already base64-encoded ``str``."""

    data: bytes | str
    mime_type: str = "image/png"
    annotations: dict[str, Any] | None = None

    @classmethod
    def from_file(cls, path: str | Path, mime_type: str | None = None) -> Image:
        path = Path(path)
        return cls(path.read_bytes(), mime_type or _guess_mime(path, "image/png"))

    def to_wire(self) -> dict[str, Any]:
        block = {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}
        return _annotate(block, self.annotations)


@dataclass(frozen=True, slots=True)
class Audio:
    """Audio: raw ``bytes`` or an already base64-encoded ``str``."""

    data: bytes | str
    mime_type: str = "audio/wav"
    annotations: dict[str, Any] | None = None

    @classmethod
    def from_file(cls, path: str | Path, mime_type: str | None = None) -> Audio:
        path = Path(path)
        return cls(path.read_bytes(), mime_type or _guess_mime(path, "audio/wav"))

    def to_wire(self) -> dict[str, Any]:
        block = {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}
        return _annotate(block, self.annotations)


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource's contents inlined in a result: ``text`` or binary ``blob``."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("EmbeddedResource needs exactly one of text or blob")

    def to_wire(self) -> dict[str, Any]:
        resource: dict[str, Any] = {"uri": self.uri}
        if self.mime_type:
            resource["mimeType"] = self.mime_type
        if self.text is not None:
            resource["text"] = self.text
        else:
            resource["blob"] = _b64(self.blob or b"")
        return _annotate({"type": "resource", "resource": resource}, self.annotations)


@dataclass(frozen=True, slots=True)
class ResourceLink:
    """A pointer to a resource the client can read later with ``resources/read``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("size", self.size),
        ):
            if value is not None:
                block[key] = value
        return _annotate(block, self.annotations)


ContentHelper = Image | Audio | EmbeddedResource | ResourceLink
HELPER_TYPES: tuple[type, ...] = (Image, Audio, EmbeddedResource, ResourceLink)


def _annotate(block: dict[str, Any], annotations: dict[str, Any] | None) -> dict[str, Any]:
    if annotations:
        block["annotations"] = annotations
    return block


def is_content_block(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


def to_block(value: Any) -> dict[str, Any]:
    """One value as one content block."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Image | Audio | EmbeddedResource | ResourceLink):
        return value.to_wire()
    if is_content_block(value):
        return value  # type: ignore[no-any-return]
    return text(json_text(value))


def to_blocks(value: Any) -> list[dict[str, Any]]:
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
