"""Opaque cursors over ordered lists.

A cursor encodes the offset of the next page. It is opaque to clients (base64url with a
version tag), stable while the list is unchanged, and anything we did not mint is
rejected with -32602. The last page carries no ``nextCursor`` (``docs/decisions.md``,
"Cursors").
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

from .errors import InvalidParams

T = TypeVar("T")
_PREFIX = "o1:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: object) -> int:
    """The offset a cursor points at; raises :class:`InvalidParams` for foreign cursors."""
    if type(cursor) is not str or not cursor or len(cursor) > 64:
        raise InvalidParams("Invalid cursor")
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidParams("Invalid cursor") from None
    digits = text.removeprefix(_PREFIX)
    if digits == text or not (digits.isascii() and digits.isdigit()):
        raise InvalidParams("Invalid cursor")
    return int(digits)


def paginate(
    items: Sequence[T], cursor: object, page_size: int | None
) -> tuple[Sequence[T], str | None]:
    """One page of ``items`` and the cursor of the next page (None on the last one)."""
    start = 0 if cursor is None else decode_cursor(cursor)
    if start > len(items):
        raise InvalidParams("Invalid cursor")
    if page_size is None:
        return items[start:], None
    end = start + page_size
    return items[start:end], (encode_cursor(end) if end < len(items) else None)
