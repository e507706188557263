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
        ("colour=red", "This tool has no argument 'colour' (did you mean color?); it takes:"),
        ("isbn=2", "Argument 'isbn' is given twice; give it once"),
    ],
)
def test_a_value_that_cannot_be_sent_is_refused_saying_why(word: str, message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        tool_arguments(["isbn=1", word], SCHEMA)
    assert str(caught.value).startswith(message)


def test_a_name_the_schema_does_not_take_is_refused_though_additional_properties_is_unset() -> None:
    """JSON Schema allows unnamed properties by default, and a server drops them: a typo
    would run the tool without the argument meant, so it is refused, with the closest name."""
    schema = {"type": "object", "properties": {"year": {"type": "integer"}, "isbn": {}}}
    with pytest.raises(ArgumentError) as caught:
        tool_arguments(["yaer=1965", "isbm=1"], schema, "Tool 'add_book'")
    assert str(caught.value) == (
        "Tool 'add_book' has no argument 'yaer' (did you mean year?) or 'isbm' (did you mean "
        "isbn?); it takes: year, isbn"
    )


def test_a_name_far_from_every_argument_gets_no_suggestion() -> None:
    with pytest.raises(ArgumentError) as caught:
        tool_arguments(["zzz=1"], {"type": "object", "properties": {"year": {}}})
    assert str(caught.value) == "This tool has no argument 'zzz'; it takes: year"


def test_a_schema_without_properties_takes_any_name_as_json_or_as_text() -> None:
    open_schema = {"type": "object"}
    assert tool_arguments(["n=3", "s=three"], open_schema) == {"n": 3, "s": "three"}


def test_additional_properties_true_takes_other_names() -> None:
    schema = {"type": "object", "properties": {"a": {}}, "additionalProperties": True}
    assert tool_arguments(["a=1", "b=two"], schema) == {"a": 1, "b": "two"}


def test_other_names_are_read_by_the_additional_properties_schema() -> None:
    schema = {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}
    assert tool_arguments(["b=2"], schema) == {"b": "2"}  # a string, as that schema says
    with pytest.raises(ArgumentError, match="Argument 'b' expects integer, got 'x'"):
        tool_arguments(["b=x"], {**schema, "additionalProperties": {"type": "integer"}})


def test_names_matching_pattern_properties_are_taken_and_read_by_their_schema() -> None:
    schema = {"type": "object", "properties": {}, "patternProperties": {"^x-": {"type": "integer"}}}
    assert tool_arguments(["x-count=3"], schema) == {"x-count": 3}
    with pytest.raises(ArgumentError, match="has no argument 'count'"):
        tool_arguments(["count=3"], schema)


def test_an_unknown_name_is_said_before_a_missing_required_one() -> None:
    """``isbm=1`` is a typo for the required isbn: naming the typo says what to fix."""
    with pytest.raises(ArgumentError, match="has no argument 'isbm' \\(did you mean isbn\\?\\)"):
        tool_arguments(["isbm=1"], SCHEMA)


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
