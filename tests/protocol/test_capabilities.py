"""``missing_capabilities``: what a request's client lacks."""

from mcpserve.protocol.capabilities import missing_capabilities


def test_empty_requirement_is_always_met():
    assert missing_capabilities({}, {}) == {}


def test_empty_requirement_is_met_whatever_is_declared():
    assert missing_capabilities({}, {"sampling": {}, "roots": {}}) == {}


def test_top_level_capability_declared_is_not_missing():
    assert missing_capabilities({"sampling": {}}, {"sampling": {}}) == {}


def test_top_level_capability_absent_is_missing():
    assert missing_capabilities({"sampling": {}}, {}) == {"sampling": {}}


def test_only_the_absent_capabilities_are_reported():
    required = {"sampling": {}, "roots": {}, "elicitation": {}}
    assert missing_capabilities(required, {"roots": {}}) == {"sampling": {}, "elicitation": {}}


def test_extra_declared_capabilities_do_not_matter():
    assert missing_capabilities({"roots": {}}, {"roots": {"x": 1}, "sampling": {}}) == {}


def test_declared_capability_that_is_not_an_object_counts_as_missing():
    assert missing_capabilities({"sampling": {}}, {"sampling": True}) == {"sampling": {}}


def test_declared_null_capability_counts_as_missing():
    assert missing_capabilities({"roots": {}}, {"roots": None}) == {"roots": {}}


def test_nested_requirement_met_by_nested_declaration():
    assert missing_capabilities({"sampling": {"tools": {}}}, {"sampling": {"tools": {}}}) == {}


def test_nested_requirement_missing_inner_key_reports_only_the_inner_part():
    assert missing_capabilities({"sampling": {"tools": {}}}, {"sampling": {}}) == {
        "sampling": {"tools": {}}
    }


def test_nested_requirement_missing_outer_key_reports_the_whole_requirement():
    assert missing_capabilities({"sampling": {"tools": {}}}, {}) == {"sampling": {"tools": {}}}


def test_nested_requirement_reports_only_the_missing_siblings():
    required = {"sampling": {"tools": {}, "context": {}}}
    declared = {"sampling": {"context": {}}}
    assert missing_capabilities(required, declared) == {"sampling": {"tools": {}}}


def test_three_level_requirement_is_compared_all_the_way_down():
    required = {"a": {"b": {"c": {}}}}
    assert missing_capabilities(required, {"a": {"b": {"c": {}}}}) == {}
    assert missing_capabilities(required, {"a": {"b": {}}}) == {"a": {"b": {"c": {}}}}


def test_extension_requirement_is_met_by_a_declared_extension():
    required = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    declared = {"extensions": {"io.modelcontextprotocol/tasks": {}, "com.example/x": {}}}
    assert missing_capabilities(required, declared) == {}


def test_extension_requirement_is_missing_when_another_extension_is_declared():
    required = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert missing_capabilities(required, {"extensions": {"com.example/x": {}}}) == required


def test_empty_elicitation_declaration_counts_as_form_mode():
    assert missing_capabilities({"elicitation": {"form": {}}}, {"elicitation": {}}) == {}


def test_empty_elicitation_declaration_does_not_count_as_url_mode():
    assert missing_capabilities({"elicitation": {"url": {}}}, {"elicitation": {}}) == {
        "elicitation": {"url": {}}
    }


def test_url_only_elicitation_declaration_does_not_count_as_form_mode():
    assert missing_capabilities({"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}) == {
        "elicitation": {"form": {}}
    }


def test_elicitation_required_without_mode_is_met_by_an_empty_declaration():
    assert missing_capabilities({"elicitation": {}}, {"elicitation": {}}) == {}


def test_empty_object_of_another_capability_is_not_widened_like_elicitation():
    assert missing_capabilities({"sampling": {"tools": {}}}, {"sampling": {}}) == {
        "sampling": {"tools": {}}
    }


def test_non_object_requirement_needs_only_the_key():
    assert missing_capabilities({"roots": True}, {"roots": {}}) == {}
    assert missing_capabilities({"roots": True}, {}) == {"roots": True}


def test_missing_capabilities_does_not_mutate_its_arguments():
    required = {"elicitation": {"form": {}}, "sampling": {"tools": {}}}
    declared = {"elicitation": {}, "sampling": {}}
    missing_capabilities(required, declared)
    assert required == {"elicitation": {"form": {}}, "sampling": {"tools": {}}}
    assert declared == {"elicitation": {}, "sampling": {}}
