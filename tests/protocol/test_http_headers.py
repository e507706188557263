"""Tests for mcpserve.protocol.http_headers (SEP-2243 header/body validation) and the
x-mcp-header rules in mcpserve.protocol.header_annotations.

Most tests run the standard-header rules as one request meets them: through
:class:`HeaderChecks`, the dispatcher's check hook, with the headers as the raw ASGI bytes
(so the fast path for exact matches and the decoding slow path are both exercised)."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import pytest

from mcpserve.protocol.errors import HeaderMismatch
from mcpserve.protocol.header_annotations import header_annotations
from mcpserve.protocol.http_headers import (
    HeaderChecks,
    check_header_values,
    check_name_header,
    check_notification_headers,
    check_param_headers,
    check_required_headers,
    decode_header_value,
    header_bytes,
    name_for,
)


def check_routing_headers(sent: dict[str, str], message: dict[str, Any]) -> None:
    """Every standard-header rule (not ``Mcp-Param-*``), as the dispatcher runs them."""
    raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in sent.items()]
    checks = HeaderChecks(header_bytes(raw), raw)
    checks.envelope(message)
    params = message.get("params") or {}
    checks.target(SimpleNamespace(method=message["method"], params=params, target=None))


def header_params(schema: Any) -> dict[str, str]:
    """``{property: header name}`` from a tool's x-mcp-header annotations."""
    return {prop: header for prop, header, _ in header_annotations(schema)}


def property_types(schema: Any) -> dict[str, str]:
    return {prop: kind for prop, _, kind in header_annotations(schema)}


VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}


def headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    """Lower-cased names, as the ASGI transport hands them over."""
    result = {"mcp-protocol-version": VERSION, "mcp-method": method}
    if name is not None:
        result["mcp-name"] = name
    result.update({key.lower(): value for key, value in extra.items()})
    return result


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def reject(fn: Any, *args: Any) -> str:
    with pytest.raises(HeaderMismatch) as info:
        fn(*args)
    assert info.value.code == -32020
    return info.value.message


# ---------------------------------------------------------------- the conformance scenarios


def test_tools_list_with_mcp_method_prompts_list_is_rejected() -> None:
    message = reject(check_routing_headers, headers("prompts/list"), request("tools/list"))
    assert message == (
        "Header mismatch: Mcp-Method header value 'prompts/list' "
        "does not match body value 'tools/list'"
    )


def test_tools_list_without_mcp_method_is_rejected() -> None:
    sent = headers("tools/list")
    del sent["mcp-method"]
    message = reject(check_routing_headers, sent, request("tools/list"))
    assert "required Mcp-Method header is missing" in message


def test_tools_call_with_wrong_mcp_name_is_rejected() -> None:
    message = reject(
        check_routing_headers,
        headers("tools/call", "wrong_tool_name"),
        request("tools/call", name="echo"),
    )
    assert "Mcp-Name header value 'wrong_tool_name' does not match body value 'echo'" in message


def test_tools_call_with_mcp_name_in_surrounding_spaces_is_accepted() -> None:
    check_routing_headers(headers("tools/call", "  echo  "), request("tools/call", name="echo"))


def test_tools_call_without_mcp_name_is_rejected() -> None:
    message = reject(
        check_routing_headers, headers("tools/call"), request("tools/call", name="echo")
    )
    assert message == "Header mismatch: required Mcp-Name header is missing (body value 'echo')"


@pytest.mark.parametrize("spelling", ["mcp-method", "MCP-METHOD", "Mcp-Method"])
def test_header_names_in_any_case_are_accepted_once_lower_cased(spelling: str) -> None:
    raw = {"MCP-Protocol-Version": VERSION, spelling: "tools/list"}
    check_routing_headers({k.lower(): v for k, v in raw.items()}, request("tools/list"))


def test_upper_case_method_value_tools_list_is_rejected() -> None:
    reject(check_routing_headers, headers("TOOLS/LIST"), request("tools/list"))


SCHEMA_P = {
    "type": "object",
    "properties": {
        "p": {"type": "string", "x-mcp-header": "Suffix"},
        "other": {"type": "integer"},
    },
    "required": ["p", "other"],
}


def check_p(body_value: str, header_value: str | None) -> None:
    sent = {} if header_value is None else {"mcp-param-suffix": header_value}
    check_param_headers(
        sent,
        {"p": body_value, "other": 0},
        header_params(SCHEMA_P),
        property_types(SCHEMA_P),
    )


@pytest.mark.parametrize(
    ("body", "header"),
    [
        ("Hello", "=?base64?SGVsbG8=?="),
        ("SGVsbG8=", "SGVsbG8="),
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),
    ],
    ids=["valid-base64", "no-wrapper-is-literal", "no-suffix-is-literal"],
)
def test_custom_header_conformance_cases_that_are_accepted(body: str, header: str) -> None:
    check_p(body, header)


@pytest.mark.parametrize(
    ("body", "header"),
    [
        ("Hello", "=?base64?SGVsbG8?="),
        ("Hello", "=?base64?SGVs!!!bG8=?="),
        ("test-value", None),
    ],
    ids=["bad-padding", "bad-characters", "header-missing"],
)
def test_custom_header_conformance_cases_that_are_rejected(body: str, header: str | None) -> None:
    reject(check_p, body, header)


# ---------------------------------------------------------------- the spec's examples

SQL_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "query": {"type": "string"},
    },
    "required": ["region", "query"],
}
SQL_ARGS = {"region": "us-west1", "query": "SELECT 1"}


def check_sql(sent: dict[str, str], message: dict[str, Any]) -> None:
    check_routing_headers(sent, message)
    check_param_headers(
        sent,
        message["params"]["arguments"],
        header_params(SQL_SCHEMA),
        property_types(SQL_SCHEMA),
    )


def test_wire_example_8_region_mismatch_gives_the_documented_message() -> None:
    sent = headers("tools/call", "execute_sql", **{"Mcp-Param-Region": "us-east1"})
    message = reject(check_sql, sent, request("tools/call", name="execute_sql", arguments=SQL_ARGS))
    assert message == (
        "Header mismatch: Mcp-Param-Region header value 'us-east1' "
        "does not match body value 'us-west1'"
    )


def test_wire_example_8_with_matching_region_is_accepted() -> None:
    sent = headers("tools/call", "execute_sql", **{"Mcp-Param-Region": "us-west1"})
    check_sql(sent, request("tools/call", name="execute_sql", arguments=SQL_ARGS))


@pytest.mark.parametrize(
    ("drop", "change"),
    [
        ("mcp-param-region", {}),
        ("mcp-method", {}),
        ("mcp-name", {}),
        ("mcp-protocol-version", {}),
        (None, {"mcp-method": "TOOLS/CALL"}),
        (None, {"mcp-protocol-version": "2025-11-25"}),
        (None, {"mcp-param-region": "=?base64?dXMtd2VzdDE?="}),
    ],
    ids=["no-param", "no-method", "no-name", "no-version", "upper-method", "version", "bad-b64"],
)
def test_wire_example_8_variants_are_rejected(drop: str | None, change: dict[str, str]) -> None:
    sent = headers("tools/call", "execute_sql", **{"Mcp-Param-Region": "us-west1"})
    if drop:
        del sent[drop]
    sent.update(change)
    reject(check_sql, sent, request("tools/call", name="execute_sql", arguments=SQL_ARGS))


def test_wire_example_14_base64_mcp_name_with_non_ascii_uri_is_accepted() -> None:
    sent = headers("resources/read", "=?base64?ZmlsZTovLy9ub3Rlcy9jYWbDqS5tZA==?=")
    check_routing_headers(sent, request("resources/read", uri="file:///notes/café.md"))


# ---------------------------------------------------------------- standard headers


def test_mismatched_protocol_version_is_rejected_naming_both_values() -> None:
    sent = headers("tools/list", **{"MCP-Protocol-Version": "2025-11-25"})
    message = reject(check_routing_headers, sent, request("tools/list"))
    assert "MCP-Protocol-Version header value '2025-11-25'" in message
    assert "body value '2026-07-28'" in message


def test_missing_protocol_version_is_rejected() -> None:
    sent = headers("tools/list")
    del sent["mcp-protocol-version"]
    assert "MCP-Protocol-Version" in reject(check_routing_headers, sent, request("tools/list"))


def test_version_is_not_compared_when_meta_lacks_it() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    check_routing_headers(headers("tools/list"), message)


def test_required_headers_check_presence_only() -> None:
    check_required_headers(headers("wrong", "wrong"), request("tools/call", name="echo"))


def test_header_values_alone_still_reject_a_missing_header() -> None:
    sent = headers("tools/list")
    del sent["mcp-method"]
    reject(check_header_values, sent, request("tools/list"))


def test_header_values_can_leave_mcp_name_for_later() -> None:
    sent, message = headers("tools/call", "wrong"), request("tools/call", name="echo")
    check_header_values(sent, message, include_name=False)
    reject(check_name_header, sent, message)


def test_whitespace_and_tabs_around_values_are_trimmed() -> None:
    sent = {
        "mcp-protocol-version": f"\t{VERSION} ",
        "mcp-method": " tools/call\t",
        "mcp-name": "\t echo",
    }
    check_routing_headers(sent, request("tools/call", name="echo"))


def test_mcp_method_does_not_accept_the_base64_sentinel() -> None:
    reject(check_routing_headers, headers(b64("tools/list")), request("tools/list"))


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("tools/call", {"name": "t"}, "t"),
        ("prompts/get", {"name": "p"}, "p"),
        ("resources/read", {"uri": "file:///x"}, "file:///x"),
        ("tasks/get", {"taskId": "abc"}, "abc"),
        ("tasks/update", {"taskId": "abc"}, "abc"),
        ("tasks/cancel", {"taskId": "abc"}, "abc"),
        ("tools/list", {"name": "t"}, None),
        ("resources/subscribe", {"uri": "file:///x"}, None),
        ("tools/call", {}, None),
        ("tools/call", {"name": 3}, None),
    ],
)
def test_name_for_picks_the_mirrored_body_field(
    method: str, params: dict[str, Any], expected: str | None
) -> None:
    assert name_for(method, params) == expected


def test_tasks_get_requires_mcp_name_equal_to_task_id() -> None:
    message = request("tasks/get", taskId="786512e2")
    check_routing_headers(headers("tasks/get", "786512e2"), message)
    reject(check_routing_headers, headers("tasks/get", "other"), message)
    reject(check_routing_headers, headers("tasks/get"), message)


@pytest.mark.parametrize(
    "uri", ["my-tool-name", "my_tool_name", "file:///path/to/file%20name.txt", "https://e.x/r?id=1"]
)
def test_special_characters_sent_as_is_are_accepted(uri: str) -> None:
    check_routing_headers(headers("resources/read", uri), request("resources/read", uri=uri))


def test_notification_without_mcp_method_is_accepted() -> None:
    check_notification_headers({}, {"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_notification_with_matching_mcp_method_is_accepted() -> None:
    sent = {"mcp-method": "notifications/initialized"}
    check_notification_headers(sent, {"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_notification_with_different_mcp_method_is_rejected() -> None:
    sent = {"mcp-method": "notifications/cancelled"}
    reject(
        check_notification_headers, sent, {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )


# ---------------------------------------------------------------- values and base64


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("us-west1", "us-west1"),
        ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
        ("=?base64?IHBhZGRlZCA=?=", " padded "),
        ("=?base64?bGluZTEKbGluZTI=?=", "line1\nline2"),
        ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
        ("=?base64?5pel5pys6Kqe?=", "日本語"),
        ("=?base64?bGluZTENCmxpbmUy?=", "line1\r\nline2"),
        ("=?base64?CWluZGVudGVk?=", "\tindented"),
        ("us west 1", "us west 1"),
        ("a\tb", "a\tb"),
        ("", ""),
        ("=?base64??=", ""),
        ("=?base64?=", "=?base64?="),
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),
        ("SGVsbG8=?=", "SGVsbG8=?="),
    ],
)
def test_decode_header_value_follows_the_spec_encoding_table(raw: str, decoded: str) -> None:
    assert decode_header_value(raw) == decoded


def test_base64_of_non_ascii_cafe_decodes() -> None:
    assert decode_header_value(b64("café")) == "café"


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?SGVsbG8?=",  # missing padding
        "=?base64?SGVsbG8==?=",  # excess padding
        "=?base64?SGVs!!!bG8=?=",  # characters outside the alphabet
        "=?base64?SGVs bG8=?=",  # inner space
        "=?base64?SGVsbG8-?=",  # URL-safe alphabet
        "=?base64?SGVsbG9=?=",  # non-canonical: non-zero padding bits
        "=?base64?=SGVsbG8?=",  # leading padding
        "=?base64?SGVs?=bG8=?=",  # a second marker inside the payload
    ],
)
def test_malformed_base64_is_a_header_mismatch(raw: str) -> None:
    assert "not valid base64" in reject(decode_header_value, raw)


def test_base64_of_invalid_utf8_is_a_header_mismatch() -> None:
    assert "UTF-8" in reject(decode_header_value, "=?base64?/w==?=")


@pytest.mark.parametrize(
    "raw", ["a\rb", "a\nb", "a\r\nX-Evil: 1", "a\x00b", "a\x7fb", "a\x1bb", "caf\xe9", "\x85"]
)
def test_control_and_non_ascii_characters_are_rejected(raw: str) -> None:
    message = reject(decode_header_value, raw)
    assert "not allowed" in message
    assert not {"\r", "\n", "\x00"} & set(message)


def test_control_characters_in_mcp_method_are_rejected() -> None:
    reject(check_routing_headers, headers("tools/list\r\n"), request("tools/list\r\n"))


def test_huge_mismatching_value_gives_a_short_escaped_message() -> None:
    huge = "x" * 1_000_000 + "\r\n"
    message = reject(
        check_routing_headers, headers("tools/call", huge), request("tools/call", name="echo")
    )
    assert len(message) < 400
    assert "1000002 characters" in message
    assert not {"\r", "\n"} & set(message)


def test_huge_matching_value_is_accepted() -> None:
    huge = "y" * 1_000_000
    check_routing_headers(headers("tools/call", huge), request("tools/call", name=huge))
    check_routing_headers(headers("tools/call", b64(huge)), request("tools/call", name=huge))


def test_huge_base64_garbage_gives_a_short_message() -> None:
    assert len(reject(decode_header_value, "=?base64?" + "!" * 1_000_000 + "?=")) < 400


# ---------------------------------------------------------------- Mcp-Param-* values

TYPED_SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"},
        "text": {"type": "string", "x-mcp-header": "Text"},
    },
}


def check_typed(arguments: dict[str, Any] | None, sent: dict[str, str]) -> None:
    check_param_headers(
        sent,
        arguments,
        header_params(TYPED_SCHEMA),
        property_types(TYPED_SCHEMA),
    )


@pytest.mark.parametrize("header", ["42", " 42 ", "42.0", "4.2e1", "420E-1", "42.000"])
def test_integers_are_compared_numerically(header: str) -> None:
    check_typed({"count": 42}, {"mcp-param-count": header})


@pytest.mark.parametrize(
    "header",
    ["43", "+42", "042", "0x2a", "4_2", "42.", ".42e2", "forty-two", "", "1e99999999999999999999"],
)
def test_integer_headers_that_are_not_that_json_number_mismatch(header: str) -> None:
    reject(check_typed, {"count": 42}, {"mcp-param-count": header})


def test_integral_float_body_value_equals_integer_header() -> None:
    check_typed({"count": 42.0}, {"mcp-param-count": "42"})


def test_large_integers_are_compared_exactly_without_float_rounding() -> None:
    check_typed({"count": 2**53 + 1}, {"mcp-param-count": "9007199254740993"})
    reject(check_typed, {"count": 2**53 + 1}, {"mcp-param-count": "9007199254740992"})


def test_integer_beyond_the_int_to_str_limit_does_not_crash() -> None:
    message = reject(check_typed, {"count": 10**5000}, {"mcp-param-count": "1"})
    assert len(message) < 400
    reject(check_typed, {"text": 10**5000}, {"mcp-param-text": "1"})


@pytest.mark.parametrize(("value", "header"), [(True, "true"), (False, "false")])
def test_booleans_are_lower_case_true_and_false(value: bool, header: str) -> None:
    check_typed({"flag": value}, {"mcp-param-flag": header})


@pytest.mark.parametrize("header", ["True", "TRUE", "1", "yes", "false"])
def test_other_boolean_spellings_mismatch(header: str) -> None:
    reject(check_typed, {"flag": True}, {"mcp-param-flag": header})


def test_string_values_are_compared_exactly_and_case_sensitively() -> None:
    check_typed({"text": "Us-West1"}, {"mcp-param-text": "Us-West1"})
    reject(check_typed, {"text": "Us-West1"}, {"mcp-param-text": "us-west1"})
    reject(check_typed, {"text": "42"}, {"mcp-param-text": "42.0"})


def test_string_value_with_edge_whitespace_needs_base64() -> None:
    check_typed({"text": " padded "}, {"mcp-param-text": "=?base64?IHBhZGRlZCA=?="})
    reject(check_typed, {"text": " padded "}, {"mcp-param-text": " padded "})


def test_null_or_absent_values_expect_no_header() -> None:
    check_typed({"count": None, "flag": None, "text": None}, {})
    check_typed({}, {})
    check_typed(None, {})


def test_header_sent_for_a_null_or_absent_value_is_ignored() -> None:
    sent = {"mcp-param-count": "7", "mcp-param-flag": "true", "mcp-param-text": "x"}
    check_typed({"count": None}, sent)


def test_missing_param_header_names_it_and_the_body_value() -> None:
    message = reject(check_typed, {"count": 5}, {})
    assert message == "Header mismatch: required Mcp-Param-Count header is missing (body value 5)"


def test_param_header_with_control_characters_is_rejected() -> None:
    reject(check_typed, {"text": "a"}, {"mcp-param-text": "a\x00"})


def test_values_of_the_wrong_type_compare_as_the_text_a_client_mirrors() -> None:
    check_typed({"count": "42"}, {"mcp-param-count": "42"})
    reject(check_typed, {"count": "42"}, {"mcp-param-count": "42.0"})
    check_typed({"text": 7}, {"mcp-param-text": "7"})
    check_typed({"text": True}, {"mcp-param-text": "true"})
    check_typed({"flag": "yes"}, {"mcp-param-flag": "yes"})
    check_typed({"text": ["a", 1]}, {"mcp-param-text": '["a",1]'})
    message = reject(check_typed, {"text": {"k": "v"}}, {"mcp-param-text": "x"})
    assert 'body value {"k":"v"}' in message


def test_tool_without_annotations_checks_nothing() -> None:
    check_param_headers({}, {"anything": 1}, {}, {})


# ---------------------------------------------------------------- x-mcp-header registration


def schema_with(prop: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"p": prop, **more}}


@pytest.mark.parametrize("kind", ["string", "integer", "boolean"])
def test_primitive_properties_may_carry_an_annotation(kind: str) -> None:
    schema = schema_with({"type": kind, "x-mcp-header": "P"})
    assert header_params(schema) == {"p": "P"}
    assert property_types(schema) == {"p": kind}


def test_several_annotations_and_plain_properties_are_mapped() -> None:
    assert header_params(TYPED_SCHEMA) == {
        "count": "Count",
        "flag": "Flag",
        "text": "Text",
    }
    assert header_params(SQL_SCHEMA) == {"region": "Region"}
    assert property_types(SQL_SCHEMA) == {"region": "string"}


@pytest.mark.parametrize("name", ["Method", "Name", "X", "a1!#$%&'*+-.^_`|~"])
def test_any_token_is_allowed_including_standard_header_names(name: str) -> None:
    assert header_params(schema_with({"type": "string", "x-mcp-header": name}))


def test_schemas_without_annotations_give_nothing() -> None:
    assert header_params({"type": "object"}) == {}
    assert header_params({"type": "object", "properties": {"a": True}}) == {}


def test_a_property_named_x_mcp_header_or_data_containing_it_is_not_an_annotation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "x-mcp-header": {"type": "string", "default": {"x-mcp-header": "D"}},
            "q": {
                "type": "object",
                "const": {"x-mcp-header": "C"},
                "examples": [{"x-mcp-header": 1}],
            },
        },
    }
    assert header_params(schema) == {}


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (123, "must be a string"),
        (None, "must be a string"),
        ("", "must not be empty"),
        ("Region\t1", "control characters"),
        ("Region\r\nX", "control characters"),
        ("My Region", "RFC 9110 token"),
        ("Region:Primary", "RFC 9110 token"),
        ("Région", "RFC 9110 token"),
        ("Mcp(Param)", "RFC 9110 token"),
    ],
)
def test_invalid_header_names_are_refused_naming_property_and_rule(value: Any, rule: str) -> None:
    with pytest.raises(ValueError, match="property 'p'") as info:
        header_params(schema_with({"type": "string", "x-mcp-header": value}))
    assert rule in str(info.value)


@pytest.mark.parametrize("second", ["Region", "REGION", "region"])
def test_duplicate_header_names_are_refused_case_insensitively(second: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": second},
        },
    }
    with pytest.raises(ValueError, match="duplicates the header name used by property 'a'"):
        header_params(schema)


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "number"},
        {"type": "array", "items": {"type": "string"}},
        {"type": "object"},
        {"type": "null"},
        {"type": ["string", "null"]},
        {"type": ["string", "integer"]},
        {},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"$ref": "#/$defs/S"},
    ],
)
def test_non_primitive_or_untyped_properties_are_refused(prop: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"property 'p' requires \"type\""):
        header_params(schema_with({**prop, "x-mcp-header": "P"}))


NESTED = {"type": "string", "x-mcp-header": "Deep"}


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object", "x-mcp-header": "Root"}, "schema root"),
        (schema_with({"type": "array", "items": NESTED}), "/properties/p/items"),
        (schema_with({"type": "array", "prefixItems": [NESTED]}), "/properties/p/prefixItems/0"),
        (schema_with({"anyOf": [NESTED]}), "/properties/p/anyOf/0"),
        (schema_with({"oneOf": [NESTED]}), "/properties/p/oneOf/0"),
        (schema_with({"allOf": [NESTED]}), "/properties/p/allOf/0"),
        (schema_with({"not": NESTED}), "/properties/p/not"),
        (schema_with({"type": "string", "x-mcp-header": "P", "anyOf": [NESTED]}), "/anyOf/0"),
        ({"type": "object", "if": NESTED, "then": {}}, "/if"),
        ({"type": "object", "then": NESTED}, "/then"),
        ({"type": "object", "else": NESTED}, "/else"),
        ({"type": "object", "$defs": {"S": NESTED}}, "/$defs/S"),
        ({"type": "object", "additionalProperties": NESTED}, "/additionalProperties"),
        ({"type": "object", "patternProperties": {"^a": NESTED}}, "/patternProperties/^a"),
        (
            schema_with({"type": "object", "properties": {"q": NESTED}}),
            "/properties/p/properties/q",
        ),
        ({"type": "object", "properties": [NESTED]}, "/properties/0"),
    ],
)
def test_annotations_below_a_top_level_property_are_refused(
    schema: dict[str, Any], where: str
) -> None:
    with pytest.raises(ValueError, match="x-mcp-header") as info:
        header_params(schema)
    assert where in str(info.value)


def test_property_types_apply_the_same_rules() -> None:
    with pytest.raises(ValueError, match="number"):
        property_types(schema_with({"type": "number", "x-mcp-header": "P"}))


def test_deeply_nested_schema_does_not_hit_the_recursion_limit() -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        node = {"type": "array", "items": node}
    assert header_params(schema_with(node)) == {}


def test_the_annotation_named_only_in_text_is_not_an_annotation() -> None:
    schema = schema_with({"type": "string", "description": 'set "x-mcp-header" to mirror it'})
    assert header_annotations(schema) == []


def test_schemas_that_are_not_plain_json_are_still_searched() -> None:
    # A hand-written schema may hold values JSON cannot encode (a set, an integer key).
    annotated = schema_with({"type": "string", "x-mcp-header": "P", "examples": {"a", "b"}})
    assert header_annotations(annotated) == [("p", "P", "string")]
    nested = schema_with({"type": "object", "properties": {"q": {"x-mcp-header": "Q"}}})
    nested[1] = "an integer key"
    with pytest.raises(ValueError, match="/properties/p/properties/q"):
        header_annotations(nested)


def test_big_integers_do_not_hide_an_annotation() -> None:
    schema = schema_with({"type": "integer", "x-mcp-header": "P", "maximum": 2**70})
    assert header_annotations(schema) == [("p", "P", "integer")]
