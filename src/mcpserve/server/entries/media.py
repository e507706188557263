"""Content helpers: images, audio, embedded resources and resource links.

Frozen records that know their wire form; a tool or prompt returns them as they are, or in
a list with other values (see :func:`.content.to_blocks`).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from ..._content import ContentBlock
from ..._types import JSONDict


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _guess_mime(path: Path, default: str) -> str:
    import mimetypes  # only file helpers need it; keep it off the import path

    return mimetypes.guess_type(path.name)[0] or default


@dataclass(frozen=True, slots=True)
class Image(ContentBlock):
    """An image: raw ``bytes`` (encoded for you) or an already base64-encoded ``str``."""

    data: bytes | str
    mime_type: str = "image/png"
    annotations: JSONDict | None = None

    @classmethod
    def from_file(cls, path: str | Path, mime_type: str | None = None) -> Image:
        path = Path(path)
        return cls(path.read_bytes(), mime_type or _guess_mime(path, "image/png"))

    def to_wire(self) -> JSONDict:
        block = {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}
        return _annotate(block, self.annotations)


@dataclass(frozen=True, slots=True)
class Audio(ContentBlock):
    """Audio: raw ``bytes`` or an already base64-encoded ``str``."""

    data: bytes | str
    mime_type: str = "audio/wav"
    annotations: JSONDict | None = None

    @classmethod
    def from_file(cls, path: str | Path, mime_type: str | None = None) -> Audio:
        path = Path(path)
        return cls(path.read_bytes(), mime_type or _guess_mime(path, "audio/wav"))

    def to_wire(self) -> JSONDict:
        block = {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}
        return _annotate(block, self.annotations)


@dataclass(frozen=True, slots=True)
class EmbeddedResource(ContentBlock):
    """A resource's contents inlined in a result: ``text`` or binary ``blob``."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    annotations: JSONDict | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("EmbeddedResource needs exactly one of text or blob")

    def to_wire(self) -> JSONDict:
        resource: JSONDict = {"uri": self.uri}
        if self.mime_type:
            resource["mimeType"] = self.mime_type
        if self.text is not None:
            resource["text"] = self.text
        else:
            resource["blob"] = _b64(self.blob or b"")
        return _annotate({"type": "resource", "resource": resource}, self.annotations)


@dataclass(frozen=True, slots=True)
class ResourceLink(ContentBlock):
    """A pointer to a resource the client can read later with ``resources/read``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: JSONDict | None = None

    def to_wire(self) -> JSONDict:
        block: JSONDict = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("size", self.size),
        ):
            if value is not None:
                block[key] = value
        return _annotate(block, self.annotations)


def _annotate(block: JSONDict, annotations: JSONDict | None) -> JSONDict:
    if annotations:
        block["annotations"] = annotations
    return block
