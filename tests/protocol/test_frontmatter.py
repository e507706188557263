"""SKILL.md frontmatter: the YAML subset read exactly as a YAML 1.2 parser reads it, and
refused, with its line, where YAML parsers would disagree or this reader cannot follow.

The expected values were checked against the ``yaml`` package the official conformance
suite parses frontmatter with (and a host may): for every accepted text both agree."""

from __future__ import annotations

from typing import Any

import pytest

from mcpserve.protocol.frontmatter import (
    FrontmatterError,
    parse_frontmatter,
    render_frontmatter,
    split_frontmatter,
)


def parse(yaml: str) -> dict[str, Any]:
    return parse_frontmatter(f"---\n{yaml}---\n\n# Body\n")


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("name: pdf\ndescription: Extract text\n", {"name": "pdf", "description": "Extract text"}),
        (
            "description: >\n  Folded text\n  over lines.\n\n  New paragraph.\n",
            {"description": "Folded text over lines.\nNew paragraph.\n"},
        ),
        (
            "description: >-\n  Folded\n    indented\n  back\n",
            {"description": "Folded\n  indented\nback"},
        ),
        ("a: |\n  line one\n  line two\n\n\n", {"a": "line one\nline two\n"}),
        ("a: |+\n  keep\n\n\nb: 1\n", {"a": "keep\n\n\n", "b": 1}),
        ("a: |-\n  strip\n\n", {"a": "strip"}),
        ("a: |2\n    two more\n  base\n", {"a": "  two more\nbase\n"}),
        ("a: |  # a comment\n  # not a comment\n  text\n", {"a": "# not a comment\ntext\n"}),
        ("a: >\n\n  leading blank\n", {"a": "\nleading blank\n"}),
        (
            'metadata:\n  version: "1.0"\n  nested:\n    deep: true\n',
            {"metadata": {"version": "1.0", "nested": {"deep": True}}},
        ),
        (
            'allowed-tools: [Bash, Read, "Write(x)"]\n',
            {"allowed-tools": ["Bash", "Read", "Write(x)"]},
        ),
        (
            "a: {k: v, n: 1, 'q': [1, 2]}\nb: []\nc: {}\n",
            {"a": {"k": "v", "n": 1, "q": [1, 2]}, "b": [], "c": {}},
        ),
        ("tags:\n- a\n- 3\n", {"tags": ["a", 3]}),
        (
            "tags:\n  - a\n  - key: v\n    other: 2\n  - - x\n    - z\n",
            {"tags": ["a", {"key": "v", "other": 2}, ["x", "z"]]},
        ),
        ("items:\n-\n- x\n", {"items": [None, "x"]}),
        (
            "description: a plain value\n  continued here\n\n  and a new paragraph\n",
            {"description": "a plain value continued here\nand a new paragraph"},
        ),
        (
            "x: 'it''s quoted'  # comment\nz: \"tab\\t \\u00e9 \\x41 \\\" end\"\n",
            {"x": "it's quoted", "z": 'tab\t é A " end'},
        ),
        (
            "a: 1\nb: -2\nc: 1.5\nd: .5\ne: 0x1F\nf: null\ng: ~\nh: true\ni: False\nj:\nk: 1.\n",
            {
                "a": 1,
                "b": -2,
                "c": 1.5,
                "d": 0.5,
                "e": 31,
                "f": None,
                "g": None,
                "h": True,
                "i": False,
                "j": None,
                "k": 1.0,
            },
        ),
        (
            "a: http://example.com/x#frag\nb: value # comment\nc: a#b\nd: -x\ne: v1.2.3\n",
            {"a": "http://example.com/x#frag", "b": "value", "c": "a#b", "d": "-x", "e": "v1.2.3"},
        ),
        ("# comment\nname: x # c\n\n# another\nlicense: MIT\n", {"name": "x", "license": "MIT"}),
        ("emoji: 🎉 party\n", {"emoji": "🎉 party"}),
    ],
)
def test_the_subset_skills_use_reads_as_yaml_reads_it(yaml: str, expected: dict[str, Any]) -> None:
    assert parse(yaml) == expected


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("a: yes\n", "line 2: YAML parsers disagree on what 'yes' is; quote it"),
        ("a: off\n", "line 2: YAML parsers disagree on what 'off' is; quote it"),
        ("a: 0755\n", "line 2: YAML parsers disagree on what '0755' is; quote it"),
        ("a: 1_000\n", "line 2: YAML parsers disagree on what '1_000' is; quote it"),
        ("a: 1e5\n", "line 2: YAML parsers disagree on what '1e5' is; quote it"),
        ("a: 2024-01-01\n", "line 2: YAML parsers disagree on what '2024-01-01' is; quote it"),
        ("a: 12:30\n", "line 2: YAML parsers disagree on what '12:30' is; quote it"),
        (
            "a: 99999999999999999999\n",
            "line 2: '99999999999999999999' is too large for a JSON number; quote it",
        ),
        ("name: x\na: &anchor 1\n", "line 3: anchors (&) are not supported"),
        ("a: *alias\n", "line 2: aliases (*) are not supported"),
        ("a: !tag x\n", "line 2: tags (!) are not supported"),
        (
            "a: 'two\n  lines'\n",
            "line 2: the quoted value does not end on its line (for text over several lines "
            "use a | or > block)",
        ),
        ("a: b: c\n", "line 2: a value with ': ' in it must be quoted"),
        ("a: 1\na: 2\n", "line 3: the key 'a' appears twice"),
        ("yes: 1\n", "line 2: the key 'yes' is not text to every YAML parser"),
        ("\tname: x\n", "line 2: a tab cannot indent YAML; indent with spaces"),
        ("a: [1, 2\n", "line 2: expected ',' or ']'; a [...] or {...} must end on its line"),
        ("a: 1\n  b: 2\n", "line 3: a value with ': ' in it must be quoted"),
        ("a:\n  b: 1\n c: 2\n", "line 4: unexpected indentation"),
        ("- a\n", "line 2: the frontmatter must be a mapping of keys to values, not a list"),
        (
            "my key: x\n",
            "line 2: cannot read this line: expected 'key: value', with a key of "
            "letters, digits, '_', '-', '.' or '/'",
        ),
    ],
)
def test_what_parsers_would_disagree_on_or_this_reader_cannot_follow_is_refused_by_line(
    yaml: str, message: str
) -> None:
    with pytest.raises(FrontmatterError) as raised:
        parse(yaml)
    assert str(raised.value) == message


def test_a_skill_md_must_begin_with_a_delimited_frontmatter_block() -> None:
    with pytest.raises(
        FrontmatterError, match=r"^line 1: a SKILL\.md must begin with a '---' line"
    ):
        parse_frontmatter("# Just markdown\n")
    with pytest.raises(FrontmatterError, match=r"^line 1: the frontmatter has no closing '---'"):
        parse_frontmatter("---\nname: x\n")


def test_the_frontmatter_ends_at_the_first_closing_line_and_crlf_and_a_bom_are_read() -> None:
    lines, body = split_frontmatter("\ufeff---\r\nname: x\r\n---  \r\n# Body\r\n---\r\n")
    assert lines == ["name: x"]
    assert body == "# Body\r\n---\r\n"
    assert parse_frontmatter("\ufeff---\r\nname: x\r\n---\r\n") == {"name": "x"}


FIELDS: list[dict[str, Any]] = [
    {"name": "x", "description": "Has: a colon, # a hash\nand a new line"},
    {"metadata": {"version": "1.0", "answer": "yes", "empty": {}}, "tags": ["a", 1, {"k": "v"}]},
    {"f": 1e-05, "big": 1e16, "b": True, "z": None, "n": -3},
    {"odd": "\u2028 line separator, \x7f delete, \ufeff mark", "emoji": "🎉", "lead": " x"},
    {"looks": "true", "like": "12", "other": "null", "types": "2024-01-01", "dash": "- x"},
]


@pytest.mark.parametrize("fields", FIELDS)
def test_rendered_frontmatter_reads_back_as_the_same_fields(fields: dict[str, Any]) -> None:
    text = render_frontmatter(fields)
    assert parse_frontmatter(f"---\n{text}---\n") == fields


def test_rendering_quotes_only_what_would_not_read_back_plain() -> None:
    rendered = render_frontmatter({"name": "pdf", "version": "1.0", "answer": "yes", "n": 2})
    assert rendered == 'name: pdf\nversion: "1.0"\nanswer: "yes"\nn: 2\n'


def test_rendering_refuses_keys_yaml_cannot_read_back_as_text() -> None:
    with pytest.raises(ValueError, match="frontmatter key 'my key'"):
        render_frontmatter({"my key": "x"})
    with pytest.raises(ValueError, match="frontmatter key 'on'"):
        render_frontmatter({"on": "x"})
