"""Opaque cursors and page slicing (``docs/decisions.md``, "Cursors")."""

import base64

import pytest

from mcpserve.protocol.errors import InvalidParams
from mcpserve.protocol.pagination import decode_cursor, encode_cursor, paginate


def b64(text):
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# -- cursors ------------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [0, 1, 2, 99, 10**12])
def test_encoded_cursor_decodes_to_the_same_offset(offset):
    assert decode_cursor(encode_cursor(offset)) == offset


def test_cursor_is_an_opaque_non_empty_string():
    cursor = encode_cursor(2)
    assert isinstance(cursor, str)
    assert cursor
    assert cursor != "2"


def test_cursor_is_url_safe_without_padding():
    for offset in range(200):
        cursor = encode_cursor(offset)
        assert "=" not in cursor
        assert "+" not in cursor
        assert "/" not in cursor


def test_same_offset_always_gives_the_same_cursor():
    assert encode_cursor(7) == encode_cursor(7)


def test_different_offsets_give_different_cursors():
    assert encode_cursor(1) != encode_cursor(2)


def test_padded_cursor_is_accepted():
    padded = base64.urlsafe_b64encode(b"o1:5").decode()
    assert decode_cursor(padded) == 5


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage!!",
        "%%%",
        b64("hello"),
        b64("o1:"),
        b64("o1:-1"),
        b64("o1:1.5"),
        b64("o1: 3"),
        b64("o2:3"),
        b64("3"),
        base64.urlsafe_b64encode(b"\xff\xfe\xfd\xfc").decode(),
        "x" * 65,
    ],
)
def test_foreign_cursor_is_invalid_params(cursor):
    with pytest.raises(InvalidParams) as caught:
        decode_cursor(cursor)
    assert caught.value.code == -32602


@pytest.mark.parametrize("cursor", [None, 3, 1.5, True, ["x"], {"c": 1}, b"o1:1"])
def test_non_string_cursor_is_invalid_params(cursor):
    with pytest.raises(InvalidParams):
        decode_cursor(cursor)


@pytest.mark.parametrize("digits", ["\u00b2", "\u0663", "\uff11"])
def test_cursor_with_non_ascii_digits_is_invalid_params(digits):
    # superscript two, Arabic-Indic three, fullwidth one: str.isdigit() accepts all
    # three; int() rejects the first and reads the others as 3 and 1.
    with pytest.raises(InvalidParams):
        decode_cursor(b64(f"o1:{digits}"))


# -- paginate -----------------------------------------------------------------------------


def test_no_page_size_returns_everything_and_no_cursor():
    assert paginate([1, 2, 3], None, None) == ([1, 2, 3], None)


def test_empty_list_without_page_size_returns_an_empty_page():
    assert paginate([], None, None) == ([], None)


def test_empty_list_with_page_size_returns_an_empty_page_and_no_cursor():
    assert paginate([], None, 2) == ([], None)


def test_first_page_has_page_size_items_and_a_cursor():
    page, cursor = paginate([1, 2, 3, 4, 5], None, 2)
    assert list(page) == [1, 2]
    assert cursor is not None
    assert decode_cursor(cursor) == 2


def test_middle_page_continues_where_the_previous_ended():
    page, cursor = paginate([1, 2, 3, 4, 5], encode_cursor(2), 2)
    assert list(page) == [3, 4]
    assert decode_cursor(cursor) == 4


def test_last_partial_page_has_no_cursor():
    assert paginate([1, 2, 3, 4, 5], encode_cursor(4), 2) == ([5], None)


def test_list_of_exactly_one_page_has_no_cursor():
    assert paginate([1, 2], None, 2) == ([1, 2], None)


def test_last_full_page_has_no_cursor():
    page, cursor = paginate([1, 2, 3, 4], encode_cursor(2), 2)
    assert list(page) == [3, 4]
    assert cursor is None


def test_list_shorter_than_a_page_has_no_cursor():
    assert paginate([1], None, 10) == ([1], None)


def test_page_size_one_walks_every_item():
    items = ["a", "b", "c"]
    seen, cursor = [], None
    while True:
        page, cursor = paginate(items, cursor, 1)
        seen.extend(page)
        if cursor is None:
            break
    assert seen == items


def test_walking_all_pages_yields_every_item_once_in_order():
    items = list(range(11))
    seen, cursor, pages = [], None, 0
    while True:
        page, cursor = paginate(items, cursor, 3)
        pages += 1
        seen.extend(page)
        if cursor is None:
            break
    assert seen == items
    assert pages == 4


def test_cursor_at_exactly_the_end_returns_an_empty_last_page():
    assert paginate([1, 2], encode_cursor(2), 2) == ([], None)


def test_cursor_past_the_end_is_invalid_params():
    with pytest.raises(InvalidParams):
        paginate([1, 2], encode_cursor(3), 2)


def test_cursor_past_the_end_is_invalid_params_without_page_size():
    with pytest.raises(InvalidParams):
        paginate([1, 2], encode_cursor(3), None)


def test_cursor_with_no_page_size_returns_the_rest():
    assert paginate([1, 2, 3], encode_cursor(1), None) == ([2, 3], None)


def test_garbage_cursor_is_invalid_params_in_paginate():
    with pytest.raises(InvalidParams):
        paginate([1, 2, 3], "nope", 2)


def test_empty_string_cursor_is_invalid_params_in_paginate():
    with pytest.raises(InvalidParams):
        paginate([1, 2, 3], "", 2)
