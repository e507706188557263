"""What the command line reads: env files, and ``key=value`` words by a tool's schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpserve.cli.arguments import ArgumentError, describe, tool_arguments
from mcpserve.cli.envfile import EnvFileError, load_env_file, parse_env

# --------------------------------------------------------------------------- env files


def test_an_env_file_skips_comments_and_blank_lines_and_allows_export() -> None:
    text = "# settings\n\nexport TOKEN=abc\n  PORT = 8080  \n"
    assert parse_env(text) == {"TOKEN": "abc", "PORT": "8080"}


def test_an_unquoted_value_ends_at_a_comment_after_a_space() -> None:
    text = "URL=http://example.test/#top # the home page\nEMPTY=\n"
    assert parse_env(text) == {"URL": "http://example.test/#top", "EMPTY": ""}


def test_single_quotes_keep_a_value_literally() -> None:
    assert parse_env(r"PATTERN='a\nb # $HOME'") == {"PATTERN": r"a\nb # $HOME"}


def test_double_quotes_understand_escapes() -> None:
    text = r'GREETING="Hello,\n\"world\" \\ \t!" # trailing comment'
    assert parse_env(text) == {"GREETING": 'Hello,\n"world" \\ \t!'}


def test_a_later_line_for_a_key_wins() -> None:
    assert parse_env("A=1\nA=2\n") == {"A": "2"}


def test_a_line_that_is_not_key_value_is_an_error_naming_file_and_line() -> None:
    with pytest.raises(EnvFileError) as caught:
        parse_env("A=1\nnot a variable\n", ".env")
    assert str(caught.value) == ".env:2: expected KEY=VALUE, got 'not a variable'"


def test_an_unclosed_quote_is_an_error_rather_than_a_multi_line_value() -> None:
    with pytest.raises(EnvFileError) as caught:
        parse_env('A="one\nB=2\n', ".env")
    assert (
        str(caught.value) == ".env:1: the value's closing \" is missing (values end on their line)"
    )


def test_text_after_a_quoted_value_is_an_error() -> None:
    with pytest.raises(EnvFileError, match=r"\.env:1: unexpected text after the quoted value"):
        parse_env("A='one' two", ".env")


def test_loading_an_env_file_keeps_variables_the_environment_already_has(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("KEPT=from-file\nADDED=from-file\n")
    environ = {"KEPT": "from-shell"}
    assert load_env_file(path, environ) == {"KEPT": "from-file", "ADDED": "from-file"}
    assert environ == {"KEPT": "from-shell", "ADDED": "from-file"}


# --------------------------------------------------------------------------- tool arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "isbn": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "price": {"type": "number"},
        "draft": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "extra": {"type": "object"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "color": {"$ref": "#/$defs/Color"},
        "label": {"type": "string"},
    },
    "required": ["isbn"],
    "additionalProperties": False,
    "$defs": {"Color": {"enum": ["red", "blue"], "type": "string"}},
}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("label=9780441013593", {"label": "9780441013593"}),
        ("count=3", {"count": 3}),
        ("price=2.5", {"price": 2.5}),
        ("price=2", {"price": 2}),
        ("draft=false", {"draft": False}),
        ('tags=["a","b"]', {"tags": ["a", "b"]}),
        ('extra={"k": 1}', {"extra": {"k": 1}}),
        ("note=null", {"note": None}),
        ("note=later", {"note": "later"}),
        ("color=blue", {"color": "blue"}),
        ("label=true", {"label": "true"}),
        ('label="quoted"', {"label": "quoted"}),
        ("label=a=b", {"label": "a=b"}),
        ("label=", {"label": ""}),
    ],
)
def test_each_value_is_read_as_the_arguments_schema_says(word: str, expected: Any) -> None:
    assert tool_arguments(["isbn=1", word], SCHEMA) == {"isbn": "1", **expected}


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("count=3.5", "Argument 'count' expects integer, got '3.5'"),
        ("count=0", "Argument 'count' expects integer, got '0': 0 is less than the minimum of 1"),
        ("draft=yes", "Argument 'draft' expects boolean, got 'yes'"),
        ("color=green", "Argument 'color' expects \"red\" | \"blue\", got 'green'"),
        ("extra=k", "Argument 'extra' expects object, got 'k'; write an object as JSON"),
        ("mood=dark", "This tool has no argument 'mood'; it takes: isbn, count, price"),
        ("isbn=2", "Argument 'isbn' is given twice; give it once"),
    ],
)
def test_a_value_that_cannot_be_sent_is_refused_saying_why(word: str, message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        tool_arguments(["isbn=1", word], SCHEMA)
    assert str(caught.value).startswith(message)


def test_an_argument_a_schema_does_not_describe_is_sent_as_json_or_as_text() -> None:
    open_schema = {"type": "object", "properties": {}}
    assert tool_arguments(["n=3", "s=three"], open_schema) == {"n": 3, "s": "three"}


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "integer"}, "integer"),
        ({"type": ["number", "null"]}, "number | null"),
        ({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
         "(string | integer)[]"),
        ({"type": "string", "format": "date"}, "string (date)"),
        ({"const": "fixed"}, '"fixed"'),
        ({}, "any"),
    ],
)  # fmt: skip
def test_a_schema_is_described_in_a_few_words(schema: dict[str, Any], words: str) -> None:
    assert describe(schema) == words
