"""RFC 6570 URI templates: matching (against RFC expansions too) and hostile input."""

from __future__ import annotations

from typing import Any

import pytest

from mcpserve.server.entries.uri_template import URITemplate, is_template

# The variable values of RFC 6570 section 3.2.1.
RFC_VALUES: dict[str, Any] = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

# RFC 6570 sections 3.2.2-3.2.9. Examples that repeat a variable ({.who,who}, {/var:1,var})
# are left out: this implementation rejects duplicate names because match() needs one value.
RFC_EXAMPLES = [
    # 3.2.2 simple string expansion
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,y}", "1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    # 3.2.3 reserved expansion
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    # 3.2.4 fragment expansion
    ("{#var}", "#value"),
    ("{#hello}", "#Hello%20World!"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    # 3.2.5 label expansion with dot-prefix
    ("{.who}", ".fred"),
    ("{.half,who}", ".50%25.fred"),
    ("www{.dom*}", "www.example.com"),
    ("X{.var}", "X.value"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("X{.empty_keys}", "X"),
    ("X{.empty_keys*}", "X"),
    # 3.2.6 path segment expansion
    ("{/who}", "/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var}", "/value"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    # 3.2.7 path-style parameter expansion
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    # 3.2.8 form-style query expansion
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    # 3.2.9 form-style query continuation
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]


def _recoverable(template: str) -> bool:
    """Whether matching an RFC example's expansion must give back the RFC's values.

    Not for what matching deliberately leaves alone (the module docstring): prefix modifiers
    (``{var:3}`` keeps three characters), associative arrays, lists that are not exploded
    (they come back as one string), empty or undefined values, and adjacent expressions.
    """
    parsed = URITemplate(template)
    if "}{" in template or ":" in template.replace("http:", ""):
        return False
    for name in parsed.variables:
        value = RFC_VALUES.get(name)
        if isinstance(value, list):
            if f"{name}*" not in template:
                return False
        elif not isinstance(value, str) or value == "":
            return False
    return True


RECOVERABLE = [example for example in RFC_EXAMPLES if _recoverable(example[0])]


def test_most_rfc_examples_are_recoverable() -> None:
    assert len(RECOVERABLE) >= 40, len(RECOVERABLE)


@pytest.mark.parametrize(("template", "uri"), RECOVERABLE)
def test_matching_an_rfc_6570_expansion_gives_back_its_values(template: str, uri: str) -> None:
    parsed = URITemplate(template)
    assert parsed.match(uri) == {name: RFC_VALUES[name] for name in parsed.variables}


# --- matching, per operator ----------------------------------------------------------------


def test_simple_variable_matches_one_path_segment() -> None:
    assert URITemplate("notes://{note_id}").match("notes://abc-123") == {"note_id": "abc-123"}


def test_simple_variable_does_not_match_across_slashes() -> None:
    assert URITemplate("notes://{note_id}").match("notes://a/b") is None


def test_simple_variable_does_not_match_an_empty_value() -> None:
    assert URITemplate("notes://{note_id}").match("notes://") is None


def test_simple_variable_stops_at_the_next_literal_character() -> None:
    t = URITemplate("log://{day}-{seq}")
    assert t.match("log://mon-42") == {"day": "mon", "seq": "42"}


def test_simple_variable_keeps_commas_of_a_list_value_as_one_string() -> None:
    assert URITemplate("c://{list}").match("c://red,green,blue") == {"list": "red,green,blue"}


def test_simple_expression_with_several_variables_splits_on_commas() -> None:
    assert URITemplate("map://{x,y}").match("map://1024,768") == {"x": "1024", "y": "768"}


def test_exploded_simple_variable_returns_a_list() -> None:
    assert URITemplate("c://{list*}").match("c://red,green") == {"list": ["red", "green"]}


def test_reserved_variable_may_contain_slashes() -> None:
    t = URITemplate("file:///{+path}")
    assert t.match("file:///a/b/c.txt") == {"path": "a/b/c.txt"}


def test_reserved_variable_leaves_room_for_the_literal_that_follows() -> None:
    t = URITemplate("file:///{+path}.json")
    assert t.match("file:///a.json/b.json") == {"path": "a.json/b"}


def test_reserved_variable_ends_before_the_last_segment_variable() -> None:
    t = URITemplate("repo://{+dir}/{file}")
    assert t.match("repo://src/pkg/mod.py") == {"dir": "src/pkg", "file": "mod.py"}


def test_reserved_variable_stops_at_a_query_the_template_expects() -> None:
    t = URITemplate("api://{+path}{?v}")
    assert t.match("api://a/b?v=2") == {"path": "a/b", "v": "2"}


def test_reserved_variable_at_the_end_takes_query_characters_when_no_query_is_expected() -> None:
    assert URITemplate("file:///{+path}").match("file:///a?b") == {"path": "a?b"}


def test_reserved_expression_with_several_variables_splits_on_commas() -> None:
    t = URITemplate("{+path,x}/here")
    assert t.match("/foo/bar,1024/here") == {"path": "/foo/bar", "x": "1024"}


def test_fragment_expression_matches_after_a_hash() -> None:
    t = URITemplate("doc://page{#section}")
    assert t.match("doc://page#intro/part") == {"section": "intro/part"}
    assert t.match("doc://page#") == {"section": ""}
    assert t.match("doc://page") is None


def test_label_expression_matches_dot_prefixed_values() -> None:
    t = URITemplate("file://report{.ext}")
    assert t.match("file://report.pdf") == {"ext": "pdf"}
    assert t.match("file://report.") == {"ext": ""}


def test_exploded_label_expression_returns_every_label() -> None:
    assert URITemplate("www{.dom*}").match("www.example.com") == {"dom": ["example", "com"]}


def test_path_segment_expression_matches_each_segment_in_order() -> None:
    t = URITemplate("x:{/a,b}/here")
    assert t.match("x:/one/two/here") == {"a": "one", "b": "two"}


def test_exploded_path_segment_expression_returns_a_list_of_segments() -> None:
    t = URITemplate("tree://root{/parts*}")
    assert t.match("tree://root/a/b%20c/d") == {"parts": ["a", "b c", "d"]}


def test_path_style_parameters_match_in_template_order() -> None:
    t = URITemplate("m:{;x,y,empty}")
    assert t.match("m:;x=1024;y=768;empty") == {"x": "1024", "y": "768", "empty": ""}


def test_path_style_parameter_name_must_match_exactly() -> None:
    assert URITemplate("m:{;x}").match("m:;xy=1") is None


def test_exploded_path_style_parameter_returns_its_repeated_values() -> None:
    t = URITemplate("m:{;list*}")
    assert t.match("m:;list=red;list=green") == {"list": ["red", "green"]}


def test_query_parameters_match_in_any_order() -> None:
    t = URITemplate("search://q{?query,limit}")
    assert t.match("search://q?limit=5&query=cats") == {"query": "cats", "limit": "5"}


def test_absent_query_parameters_are_missing_from_the_result() -> None:
    t = URITemplate("search://q{?query,limit}")
    assert t.match("search://q") == {}
    assert t.match("search://q?limit=5") == {"limit": "5"}


def test_unknown_query_parameters_are_ignored() -> None:
    t = URITemplate("search://q{?query}")
    assert t.match("search://q?utm=x&query=a&&flag") == {"query": "a"}


def test_query_parameter_without_equals_sign_is_empty() -> None:
    assert URITemplate("s://{?flag}").match("s://?flag") == {"flag": ""}


def test_repeated_query_parameter_gives_its_first_value_unless_exploded() -> None:
    assert URITemplate("s://{?tag}").match("s://?tag=a&tag=b") == {"tag": "a"}
    assert URITemplate("s://{?tag*}").match("s://?tag=a&tag=b") == {"tag": ["a", "b"]}


def test_query_continuation_parameters_are_pooled_with_the_query() -> None:
    t = URITemplate("s://x?fixed=yes{&a,b}")
    assert t.match("s://x?fixed=yes&b=2&a=1") == {"a": "1", "b": "2"}
    assert URITemplate("s://{?a}{&b}").match("s://?b=2&a=1") == {"a": "1", "b": "2"}


def test_plus_in_a_query_value_is_not_a_space() -> None:
    assert URITemplate("s://{?q}").match("s://?q=a+b%20c") == {"q": "a+b c"}


def test_literal_parts_match_case_sensitively() -> None:
    assert URITemplate("notes://{id}").match("NOTES://1") is None


def test_literal_matches_as_written_or_percent_encoded() -> None:
    t = URITemplate("notes://my notes/{id}")
    assert t.match("notes://my notes/1") == {"id": "1"}
    assert t.match("notes://my%20notes/1") == {"id": "1"}


def test_template_without_expressions_matches_only_itself() -> None:
    t = URITemplate("config://app")
    assert t.match("config://app") == {}
    assert t.match("config://app2") is None


def test_adjacent_expressions_without_a_delimiter_never_match() -> None:
    # Documented limitation: "{a}{b}" has no defined split, so the first variable takes all.
    assert URITemplate("x://{a}{b}").match("x://ab") is None


# --- MCP-shaped cases -----------------------------------------------------------------------


def test_mcp_template_matches_a_concrete_resource_uri() -> None:
    t = URITemplate("test://template/{id}/data")
    assert t.match("test://template/123/data") == {"id": "123"}


def test_mcp_template_rejects_extra_trailing_segments() -> None:
    assert URITemplate("test://template/{id}/data").match("test://template/123/data/extra") is None


def test_mcp_template_rejects_a_different_prefix() -> None:
    assert URITemplate("test://template/{id}/data").match("test://other/123/data") is None


def test_mcp_file_template_matches_a_nested_path() -> None:
    assert URITemplate("file:///{+path}").match("file:///a/b/c.txt") == {"path": "a/b/c.txt"}


def test_mcp_template_with_path_and_query_variables() -> None:
    t = URITemplate("repo://{owner}/{repo}/blob/{+path}{?ref}")
    assert t.match("repo://me/proj/blob/src/main.py?ref=v1") == {
        "owner": "me",
        "repo": "proj",
        "path": "src/main.py",
        "ref": "v1",
    }


# --- percent-decoding -----------------------------------------------------------------------


def test_matched_values_are_percent_decoded_as_utf8() -> None:
    assert URITemplate("notes://{note_id}").match("notes://caf%C3%A9") == {"note_id": "café"}


def test_matched_reserved_values_are_percent_decoded() -> None:
    assert URITemplate("file:///{+path}").match("file:///my%20dir/a.txt") == {
        "path": "my dir/a.txt"
    }


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("notes://{id}", "notes://%FF"),
        ("notes://{id}", "notes://caf%C3"),
        ("notes://{id}", "notes://%C3%28"),
        ("file:///{+path}", "file:///a/%E2%82"),
        ("s://{?q}", "s://?q=%FE"),
        ("t://{/parts*}", "t://ok/%80"),
    ],
)
def test_percent_escapes_that_are_not_utf8_mean_no_match(template: str, uri: str) -> None:
    assert URITemplate(template).match(uri) is None


def test_lone_surrogates_in_the_uri_mean_no_match() -> None:
    assert URITemplate("notes://{id}").match("notes://a%41\ud800") is None
    assert URITemplate("notes://{id}").match("notes://a\ud800") is None


def test_malformed_percent_escapes_are_kept_literally() -> None:
    assert URITemplate("notes://{id}").match("notes://100%zz") == {"id": "100%zz"}


# --- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "uri", "values"),
    [
        # URIs as an RFC 6570 client expands these values: reserved characters encoded.
        ("notes://{note_id}", "notes://caf%C3%A9%20au%20lait%2F2%3F%23%26%2C",
         {"note_id": "café au lait/2?#&,"}),
        ("map://{x,y}", "map://10,-3.5", {"x": "10", "y": "-3.5"}),
        ("file:///{+path}", "file:///dir/sub%20dir/na%C3%AFve%20100%25.txt",
         {"path": "dir/sub dir/naïve 100%.txt"}),
        ("repo://{+dir}/{file}", "repo://a/b/c%20d.py", {"dir": "a/b", "file": "c d.py"}),
        ("doc://x{#section}", "doc://x#part/2", {"section": "part/2"}),
        ("x:{/a,b}", "x:/one%2F1/two", {"a": "one/1", "b": "two"}),
        ("tree://root{/parts*}", "tree://root/a/b%20c/d%2Fe", {"parts": ["a", "b c", "d/e"]}),
        ("f://name{.ext}", "f://name.tar", {"ext": "tar"}),
        ("m:{;x,y}", "m:;x=1;y=a%3Bb", {"x": "1", "y": "a;b"}),
        ("search://q{?query,limit}", "search://q?query=a%26b%3Dc%20d&limit=10",
         {"query": "a&b=c d", "limit": "10"}),
        ("search://q{?tag*}", "search://q?tag=x&tag=y%20z", {"tag": ["x", "y z"]}),
        ("s://x?fixed=yes{&a,b}", "s://x?fixed=yes&a=%C3%A9&b=2", {"a": "é", "b": "2"}),
    ],
)  # fmt: skip
def test_matching_an_expanded_uri_gives_back_the_values(
    template: str, uri: str, values: dict[str, Any]
) -> None:
    assert URITemplate(template).match(uri) == values


# --- malformed templates --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("notes://{id", "unclosed '{'"),
        ("notes://{a{b}}", "unclosed '{'"),
        ("notes://id}", "unmatched '}'"),
        ("notes://{}", "empty expression"),
        ("notes://{+}", "empty variable name"),
        ("notes://{a,,b}", "empty variable name"),
        ("notes://{a,}", "empty variable name"),
        ("notes://{a b}", "invalid variable name"),
        ("notes://{a.}", "invalid variable name"),
        ("notes://{a-b}", "invalid variable name"),
        ("notes://{a*:3}", "combines explode"),
        ("notes://{a:0}", "invalid prefix length"),
        ("notes://{a:10000}", "invalid prefix length"),
        ("notes://{$a}", "unknown operator"),
        ("notes://{!a}", "reserved for future extensions"),
        ("notes://{=a}", "reserved for future extensions"),
        ("notes://{a}/{a}", "duplicate variable 'a'"),
        ("notes://{a}{?b,a}", "duplicate variable 'a'"),
    ],
)
def test_malformed_templates_raise_value_error(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        URITemplate(template)
    assert template in str(info.value) or repr(template) in str(info.value)


def test_valid_variable_names_may_contain_dots_and_percent_triplets() -> None:
    assert URITemplate("{a.b,c%20d,_1}").variables == ("a.b", "c%20d", "_1")


# --- object behaviour -----------------------------------------------------------------------


def test_template_text_and_variables_are_kept_in_order() -> None:
    t = URITemplate("repo://{owner}/{repo}{?ref,depth}")
    assert t.template == "repo://{owner}/{repo}{?ref,depth}"
    assert t.variables == ("owner", "repo", "ref", "depth")
    assert str(t) == t.template
    assert repr(t) == "URITemplate('repo://{owner}/{repo}{?ref,depth}')"


def test_templates_compare_and_hash_by_text() -> None:
    assert URITemplate("a://{x}") == URITemplate("a://{x}")
    assert URITemplate("a://{x}") != URITemplate("a://{y}")
    assert URITemplate("a://{x}") != "a://{x}"
    assert len({URITemplate("a://{x}"), URITemplate("a://{x}")}) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("notes://{id}", True),
        ("search://q{?query}", True),
        ("notes://plain", False),
        ("notes://{}", False),
        ("notes://{unclosed", False),
    ],
)
def test_is_template_detects_at_least_one_expression(text: str, expected: bool) -> None:
    assert is_template(text) is expected


# --- hostile input --------------------------------------------------------------------------

BIG = 100_000


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("test://template/{id}/data", "test://template/" + "a" * BIG + "/dat"),
        ("test://template/{id}/data", "test://template/" + "{" * BIG),
        ("file:///{+path}/meta", "file:///" + "/" * BIG),
        ("file:///{+path}/meta", "file:///" + "/met" * (BIG // 4)),
        ("{+a}x{b}", "x" * BIG + "/"),
        ("{+a}/x/{+b}/y", "/x/" * (BIG // 3)),
        ("{a}-{b}-{c}", "-" * BIG),
        ("m:{;x,y}", "m:" + ";x" * (BIG // 2)),
        ("x{.parts*}.json", "x" + "." * BIG),
        ("search://q{?query,limit}", "search://q?" + "query=1&" * (BIG // 8)),
        ("{a}{b}{c}{d}{e}", "a" * BIG),
        ("tree://{+a}/{b}/{c}/{d}", "tree://" + "a/" * (BIG // 2)),
    ],
)
def test_very_long_uris_are_matched_without_catastrophic_backtracking(
    template: str, uri: str
) -> None:
    # No timing assertion: the point is that this returns at all (it would not for a regex
    # with nested or overlapping quantifiers).
    result = URITemplate(template).match(uri)
    assert result is None or isinstance(result, dict)


def test_template_with_many_braces_is_rejected_quickly() -> None:
    with pytest.raises(ValueError, match="unclosed"):
        URITemplate("x://" + "{" * BIG)
    assert is_template("{" * BIG + "a" * BIG) is False
