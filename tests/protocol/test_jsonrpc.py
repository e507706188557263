"""JSON-RPC framing: decoding, classification and message building."""

import orjson
import pytest

from mcpserve.protocol import constants as c
from mcpserve.protocol.errors import InvalidParams, InvalidRequest, ParseError
from mcpserve.protocol.jsonrpc import (
    Kind,
    classify,
    dumps,
    error_response,
    is_valid_id,
    loads,
    notification,
    readable_id,
)
from wire_schema import check

# -- loads ------------------------------------------------------------------------------


def test_loads_decodes_one_json_object_from_bytes():
    assert loads(b'{"jsonrpc": "2.0", "id": 1, "method": "x"}') == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "x",
    }


def test_loads_decodes_one_json_object_from_str():
    assert loads('{"a": [1, 2]}') == {"a": [1, 2]}


def test_loads_decodes_from_bytearray_and_memoryview():
    assert loads(bytearray(b'{"a": 1}')) == {"a": 1}
    assert loads(memoryview(b'{"a": 1}')) == {"a": 1}


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"{",
        b'{"jsonrpc": "2.0",}',
        b"{'single': 'quotes'}",
        b"NaN",
        b'{"a": 1} trailing',
        b"\xff\xfe\x00",
        '"\ud800"',
    ],
)
def test_unparsable_text_raises_parse_error(text):
    with pytest.raises(ParseError):
        loads(text)


def test_parse_error_has_code_minus_32700():
    with pytest.raises(ParseError) as caught:
        loads(b"not json")
    assert caught.value.code == c.PARSE_ERROR == -32700
    assert caught.value.to_wire()["code"] == -32700


def test_parse_error_does_not_chain_the_decoder_exception():
    with pytest.raises(ParseError) as caught:
        loads(b"{")
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_parse_error_response_has_no_id_and_is_schema_valid():
    with pytest.raises(ParseError) as caught:
        loads(b"{")
    response = error_response(None, caught.value)
    assert "id" not in response
    check("JSONRPCErrorResponse", response)


def test_loads_keeps_large_integers_exact():
    big = 2**53 + 1
    assert loads(f'{{"id": {big}}}'.encode())["id"] == big


@pytest.mark.parametrize("big", [2**64, -(2**63) - 1, 10**30])
def test_loads_keeps_ids_beyond_64_bits_exact(big):
    # orjson alone would give a float here, and classify() would refuse the id.
    message = loads(f'{{"jsonrpc": "2.0", "id": {big}, "method": "x", "params": {{"n": {big}}}}}')
    assert type(message["id"]) is int
    assert message["id"] == big
    assert message["params"]["n"] == big
    assert classify(message) is Kind.REQUEST


@pytest.mark.parametrize("big", [2**64 + 1, -(2**63) - 1])
def test_loads_keeps_integers_exact_in_a_large_message_too(big):
    """A large text is searched by value (for the floats orjson makes of such integers), not
    scanned byte by byte; the integer comes back exact either way."""
    padding = "1234567890" * 600  # digits, but inside a string
    text = (
        f'{{"id": 1, "params": {{"pad": "{padding}", "n": {big}, "deep": {"[" * 900}{"]" * 900}}}}}'
    )
    assert len(text) > 4096
    message = loads(text)
    assert type(message["params"]["n"]) is int
    assert message["params"]["n"] == big


def test_loads_of_a_large_message_without_long_integers_is_orjsons_reading():
    text = '{"id": 1, "pad": "' + "1234567890" * 600 + '", "x": 1.5, "y": 3e20}'
    message = loads(text)
    assert message == orjson.loads(text)  # 3e20 is a float literal, and stays one


def test_a_client_reading_results_keeps_only_the_id_exact():
    big = 2**64 + 1
    text = f'{{"jsonrpc": "2.0", "id": {big}, "result": {{"n": {big}}}}}'
    assert loads(text, exact_integers=False)["id"] == big
    inexact = loads(f'{{"jsonrpc": "2.0", "id": 1, "result": {{"n": {big}}}}}',
                    exact_integers=False)  # fmt: skip
    assert type(inexact["result"]["n"]) is float


def test_loads_still_reads_a_float_id_as_a_float():
    message = loads(b'{"jsonrpc": "2.0", "id": 1.5, "method": "x"}')
    assert message["id"] == 1.5
    with pytest.raises(InvalidRequest):
        classify(message)


# -- classify: what is invalid ----------------------------------------------------------


def test_batch_array_is_invalid_request():
    with pytest.raises(InvalidRequest, match="batch"):
        classify([{"jsonrpc": "2.0", "id": 1, "method": "x"}])


def test_empty_batch_array_is_invalid_request():
    with pytest.raises(InvalidRequest):
        classify([])


@pytest.mark.parametrize("message", ["text", 3, 1.5, True, None])
def test_non_object_message_is_invalid_request(message):
    with pytest.raises(InvalidRequest):
        classify(message)


def test_invalid_request_has_code_minus_32600():
    with pytest.raises(InvalidRequest) as caught:
        classify("x")
    assert caught.value.code == c.INVALID_REQUEST == -32600


@pytest.mark.parametrize("version", ["1.0", "2", 2.0, None, ""])
def test_wrong_jsonrpc_version_is_invalid_request(version):
    with pytest.raises(InvalidRequest, match="jsonrpc"):
        classify({"jsonrpc": version, "id": 1, "method": "x"})


def test_missing_jsonrpc_member_is_invalid_request():
    with pytest.raises(InvalidRequest, match="jsonrpc"):
        classify({"id": 1, "method": "x"})


@pytest.mark.parametrize("method", [1, None, ["x"], {"name": "x"}, True])
def test_non_string_method_is_invalid_request(method):
    with pytest.raises(InvalidRequest, match="method"):
        classify({"jsonrpc": "2.0", "id": 1, "method": method})


@pytest.mark.parametrize("params", [[1, 2], "x", 3, True])
def test_params_that_are_not_an_object_are_invalid_request(params):
    with pytest.raises(InvalidRequest, match="params"):
        classify({"jsonrpc": "2.0", "id": 1, "method": "x", "params": params})


def test_notification_params_that_are_not_an_object_are_invalid_request():
    with pytest.raises(InvalidRequest, match="params"):
        classify({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]})


def test_null_params_are_invalid_request():
    # JSON-RPC: params, when present, is a structured value; MCP narrows it to an object.
    with pytest.raises(InvalidRequest, match="params"):
        classify({"jsonrpc": "2.0", "id": 1, "method": "x", "params": None})


@pytest.mark.parametrize("request_id", [None, 1.0, 1.5, True, False, {"a": 1}, [1]])
def test_request_id_that_is_not_string_or_integer_is_invalid_request(request_id):
    with pytest.raises(InvalidRequest, match="id"):
        classify({"jsonrpc": "2.0", "id": request_id, "method": "x"})


def test_object_without_method_result_or_error_is_invalid_request():
    with pytest.raises(InvalidRequest):
        classify({"jsonrpc": "2.0", "id": 1})


def test_result_without_id_is_invalid_request():
    with pytest.raises(InvalidRequest):
        classify({"jsonrpc": "2.0", "result": {}})


# -- classify: what is valid ------------------------------------------------------------


def test_integer_id_with_method_is_a_request():
    assert classify({"jsonrpc": "2.0", "id": 7, "method": "x"}) is Kind.REQUEST


def test_integer_zero_id_is_a_valid_request_id():
    assert classify({"jsonrpc": "2.0", "id": 0, "method": "x"}) is Kind.REQUEST


def test_empty_string_id_is_a_valid_request_id():
    assert classify({"jsonrpc": "2.0", "id": "", "method": "x"}) is Kind.REQUEST


def test_negative_and_large_integer_ids_are_valid():
    assert classify({"jsonrpc": "2.0", "id": -1, "method": "x"}) is Kind.REQUEST
    assert classify({"jsonrpc": "2.0", "id": 2**63 - 1, "method": "x"}) is Kind.REQUEST


def test_request_with_object_params_is_a_request():
    message = {"jsonrpc": "2.0", "id": "a", "method": "x", "params": {"k": 1}}
    assert classify(message) is Kind.REQUEST


def test_message_with_method_and_no_id_is_a_notification():
    assert classify({"jsonrpc": "2.0", "method": "notifications/x"}) is Kind.NOTIFICATION


def test_notification_with_object_params_is_a_notification():
    message = {"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": 1}}
    assert classify(message) is Kind.NOTIFICATION


def test_result_with_id_is_a_response():
    assert classify({"jsonrpc": "2.0", "id": 1, "result": {}}) is Kind.RESPONSE


def test_error_with_id_is_a_response():
    message = {"jsonrpc": "2.0", "id": "x", "error": {"code": -1, "message": "no"}}
    assert classify(message) is Kind.RESPONSE


def test_error_with_null_id_is_a_response():
    message = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse"}}
    assert classify(message) is Kind.RESPONSE


def test_error_without_id_is_a_response():
    # The schema's JSONRPCErrorResponse makes "id" optional: a peer that could not read our id
    # answers without one, and that is still a response, not a malformed request.
    message = {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}
    check("JSONRPCErrorResponse", message)
    assert classify(message) is Kind.RESPONSE


# -- ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -5, 2**70, "", "abc"])
def test_strings_and_integers_are_valid_ids(value):
    assert is_valid_id(value)


@pytest.mark.parametrize("value", [None, True, False, 0.0, 1.5, [], {}])
def test_null_bool_float_and_containers_are_not_valid_ids(value):
    assert not is_valid_id(value)


def test_readable_id_returns_integer_zero():
    assert readable_id({"id": 0}) == 0
    assert type(readable_id({"id": 0})) is int


def test_readable_id_returns_empty_string():
    assert readable_id({"id": ""}) == ""


@pytest.mark.parametrize("message", [{"id": None}, {"id": 1.5}, {"id": True}, {}, [1], "x"])
def test_readable_id_is_none_when_the_id_cannot_be_read(message):
    assert readable_id(message) is None


# -- building and dumping -----------------------------------------------------------------


def test_error_response_with_id_carries_it():
    response = error_response("r1", InvalidParams("Bad", data={"k": 1}))
    assert response == {
        "jsonrpc": "2.0",
        "id": "r1",
        "error": {"code": -32602, "message": "Bad", "data": {"k": 1}},
    }
    check("JSONRPCErrorResponse", response)


def test_error_response_with_zero_id_keeps_it():
    assert error_response(0, InvalidParams("Bad"))["id"] == 0


def test_error_response_without_id_omits_the_member():
    response = error_response(None, InvalidRequest("Bad"))
    assert response == {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Bad"}}


def test_error_without_data_omits_the_data_member():
    assert "data" not in error_response(1, InvalidRequest("Bad"))["error"]


def test_notification_without_params_omits_the_member():
    assert notification("notifications/x") == {"jsonrpc": "2.0", "method": "notifications/x"}


def test_notification_with_params_carries_them():
    message = notification("notifications/progress", {"progressToken": 1, "progress": 2})
    assert message["params"] == {"progressToken": 1, "progress": 2}
    assert "id" not in message
    check("ProgressNotification", message)


def test_dumps_produces_compact_utf8_json():
    data = dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": "héllo"}})
    assert isinstance(data, bytes)
    assert data == '{"jsonrpc":"2.0","id":1,"result":{"text":"héllo"}}'.encode()


def test_dumps_has_no_raw_newline_even_for_strings_with_newlines():
    message = {"jsonrpc": "2.0", "id": 1, "result": {"text": "line 1\nline 2\r\n\tend"}}
    data = dumps(message)
    assert b"\n" not in data
    assert b"\r" not in data
    assert loads(data) == message


def test_dumps_escapes_newlines_in_keys_too():
    data = dumps({"a\nb": "c\nd"})
    assert b"\n" not in data
    assert orjson.loads(data) == {"a\nb": "c\nd"}


def test_dumps_then_loads_round_trips_zero_and_empty_string_ids():
    for request_id in (0, ""):
        message = {"jsonrpc": "2.0", "id": request_id, "result": {}}
        assert loads(dumps(message)) == message
        assert type(loads(dumps(message))["id"]) is type(request_id)
