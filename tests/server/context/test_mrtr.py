"""Multi round-trip requests: asking the client for input, and caching of their answers.

Every exchange goes through the schema-checked in-memory client (``connect``), so each
``input_required`` result is validated as an ``InputRequiredResult`` and each complete one
as the concrete result type of its method.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from mcpserve import CachePolicy, Context, MCPError, Server
from mcpserve.server.context.input_requests import (
    Elicit,
    ElicitResult,
    ListRoots,
    Root,
    Sample,
    SampleResult,
)
from mcpserve.server.context.rounds import InputRequired, NeedInput

FORM = {"elicitation": {"form": {}}}
EVERYTHING = {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}}


def meta_with(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-test", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


ALICE = {"action": "accept", "content": {"name": "Alice"}}
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "The capital of France is Paris."},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


@pytest.fixture(autouse=True)
def _no_shared_state_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSERVE_STATE_KEYS", raising=False)


class UserName(BaseModel):
    name: str


class Color(BaseModel):
    color: str


def text_of(result: dict[str, Any]) -> str:
    assert result["resultType"] == "complete"
    return "".join(block["text"] for block in result["content"])


async def call(
    client: Any,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    responses: Any = None,
    state: Any = None,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``tools/call``; ``responses``/``state`` are added only when given."""
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    caps = EVERYTHING if capabilities is None else capabilities
    result: dict[str, Any] = await client.request("tools/call", params, capabilities=caps)
    return result


def greeting_server(**options: Any) -> Server:
    """The conformance ``test_input_required_result_elicitation`` tool, reporting what it got."""
    server = Server("mrtr", **options)

    @server.tool
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", UserName, key="user_name")
        if answer.action != "accept":
            return f"action={answer.action}"
        assert isinstance(answer.data, UserName)
        return f"Hello, {answer.data.name}!"

    return server


# --------------------------------------------------------------------------- ctx.elicit


async def test_first_call_of_an_eliciting_tool_is_input_required_with_the_keyed_request(connect):
    async with connect(greeting_server()) as client:
        result = await call(client, "greet", capabilities=FORM)
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "user_name": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "What is your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        }
    }


async def test_a_model_schema_is_built_once_and_each_result_gets_its_own_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mcpserve.server.context.forms as form_schema

    built: list[Any] = []
    real = form_schema.type_schema

    def counting(tp: Any, **options: Any) -> dict[str, Any]:
        built.append(tp)
        return real(tp, **options)

    monkeypatch.setattr(form_schema, "type_schema", counting)

    class Nickname(BaseModel):  # a model no other test has asked with
        nickname: str

    server = Server("once")

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Nickname?", Nickname, key="nick")
        return answer.data.nickname

    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "ask", "arguments": {}, "_meta": meta_with(FORM)}}  # fmt: skip
    schemas = []
    for _ in range(3):
        response = await server.handle(message)
        assert response is not None
        schemas.append(response["result"]["inputRequests"]["nick"]["params"]["requestedSchema"])
    assert built == [Nickname]
    schemas[0]["properties"]["nickname"]["type"] = "edited by a middleware"
    assert schemas[1]["properties"]["nickname"] == {"type": "string"}
    assert schemas[1] is not schemas[2]


async def test_input_required_result_carries_a_non_empty_string_request_state(connect):
    async with connect(greeting_server()) as client:
        result = await call(client, "greet", capabilities=FORM)
    assert isinstance(result["requestState"], str)
    assert result["requestState"]


async def test_retry_with_answer_and_state_completes_with_a_model_instance(connect):
    async with connect(greeting_server()) as client:
        first = await call(client, "greet", capabilities=FORM)
        result = await call(
            client,
            "greet",
            responses={"user_name": ALICE},
            state=first["requestState"],
            capabilities=FORM,
        )
    assert text_of(result) == "Hello, Alice!"


async def test_accepted_answer_exposes_action_data_and_raw_content(connect):
    seen: list[ElicitResult] = []
    server = Server("mrtr")

    @server.tool
    async def greet(ctx: Context) -> str:
        seen.append(await ctx.elicit("What is your name?", UserName, key="user_name"))
        return "ok"

    async with connect(server) as client:
        first = await call(client, "greet")
        await call(client, "greet", responses={"user_name": ALICE}, state=first["requestState"])
    (answer,) = seen
    assert answer.action == "accept"
    assert answer.accepted
    assert answer.data == UserName(name="Alice")
    assert answer.content == {"name": "Alice"}


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_reach_the_tool(connect, action):
    async with connect(greeting_server()) as client:
        first = await call(client, "greet")
        result = await call(
            client,
            "greet",
            responses={"user_name": {"action": action}},
            state=first["requestState"],
        )
    assert text_of(result) == f"action={action}"


async def test_declined_answer_has_no_data(connect):
    seen: list[ElicitResult] = []
    server = Server("mrtr")

    @server.tool
    async def greet(ctx: Context) -> str:
        seen.append(await ctx.elicit("What is your name?", UserName, key="user_name"))
        return "ok"

    async with connect(server) as client:
        first = await call(client, "greet")
        await call(
            client,
            "greet",
            responses={"user_name": {"action": "decline"}},
            state=first["requestState"],
        )
    assert seen[0].data is None
    assert not seen[0].accepted


AGE_SCHEMA = {
    "type": "object",
    "properties": {"age": {"type": "integer", "minimum": 0}},
    "required": ["age"],
}


def age_server() -> Server:
    server = Server("mrtr")

    @server.tool
    async def age(ctx: Context) -> str:
        answer = await ctx.elicit("How old are you?", AGE_SCHEMA, key="age")
        return f"data={answer.data!r}"

    return server


async def test_raw_json_schema_is_sent_verbatim_as_requested_schema(connect):
    async with connect(age_server()) as client:
        result = await call(client, "age")
    assert result["inputRequests"]["age"]["params"]["requestedSchema"] == AGE_SCHEMA


async def test_raw_json_schema_answer_arrives_as_the_content_dict(connect):
    async with connect(age_server()) as client:
        first = await call(client, "age")
        result = await call(
            client,
            "age",
            responses={"age": {"action": "accept", "content": {"age": 42}}},
            state=first["requestState"],
        )
    assert text_of(result) == "data={'age': 42}"


@pytest.mark.parametrize(
    "content",
    [{"age": "forty-two"}, {"age": 4.5}, {"age": True}, {}],
    ids=["string", "float", "boolean", "missing-required"],
)
async def test_raw_json_schema_content_of_the_wrong_shape_is_asked_again(connect, content):
    async with connect(age_server()) as client:
        first = await call(client, "age")
        result = await call(
            client,
            "age",
            responses={"age": {"action": "accept", "content": content}},
            state=first["requestState"],
        )
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["age"]


PROFILE_SCHEMA = {
    "type": "object",
    "properties": {
        "nick": {"type": "string", "minLength": 2, "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "size": {"type": "string", "enum": ["S", "M", "L"]},
        "plan": {
            "type": "string",
            "oneOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro"}],
        },
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["nick"],
}
GOOD_PROFILE = {"nick": "ann", "age": 30, "size": "M", "plan": "pro", "tags": ["a", "b"]}


def profile_server() -> Server:
    server = Server("mrtr")

    @server.tool
    async def profile(ctx: Context) -> str:
        answer = await ctx.elicit("Your profile?", PROFILE_SCHEMA, key="profile")
        return f"data={answer.data!r}"

    return server


async def answer_profile(connect: Any, content: dict[str, Any]) -> dict[str, Any]:
    async with connect(profile_server()) as client:
        first = await call(client, "profile")
        result: dict[str, Any] = await call(
            client,
            "profile",
            responses={"profile": {"action": "accept", "content": content}},
            state=first["requestState"],
        )
        return result


@pytest.mark.parametrize(
    "wrong",
    [
        {"nick": "a"},  # minLength
        {"nick": "much too long"},  # maxLength
        {"age": -1},  # minimum
        {"age": 151},  # maximum
        {"size": "XL"},  # enum
        {"plan": "gold"},  # oneOf of titled consts
        {"tags": ["a", "c"]},  # items.enum
        {"tags": "a"},  # array type
    ],
    ids=["minLength", "maxLength", "minimum", "maximum", "enum", "oneOf", "items.enum", "array"],
)
async def test_answers_are_checked_against_every_keyword_of_the_requested_schema(
    connect: Any, wrong: dict[str, Any]
) -> None:
    """A JSON Schema 2020-12 validator decides, not a hand-written subset: an answer that
    breaks any keyword reads as no answer, so the question is asked again."""
    result = await answer_profile(connect, {**GOOD_PROFILE, **wrong})
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["profile"]


async def test_an_answer_that_fits_every_keyword_is_taken(connect: Any) -> None:
    # "format" is an annotation in 2020-12 (not asserted by default), extra keys are allowed.
    content = {**GOOD_PROFILE, "email": "not an address", "extra": 1}
    result = await answer_profile(connect, content)
    assert text_of(result) == f"data={content!r}"


async def test_model_content_that_fails_validation_is_asked_again(connect):
    async with connect(greeting_server()) as client:
        first = await call(client, "greet")
        result = await call(
            client,
            "greet",
            responses={"user_name": {"action": "accept", "content": {"name": 7}}},
            state=first["requestState"],
        )
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["user_name"]


async def test_answer_under_the_wrong_key_gives_a_fresh_input_required(connect):
    async with connect(greeting_server()) as client:
        result = await call(
            client,
            "greet",
            responses={"wrong_key": {"action": "accept", "content": {"data": "wrong"}}},
        )
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["user_name"]


@pytest.mark.parametrize(
    "answer",
    [12345, None, "accept", [], {"action": "accept"}, {"action": "maybe"}, {"content": {}}],
    ids=["number", "null", "string", "list", "accept-without-content", "bad-action", "no-action"],
)
async def test_invalid_answer_is_asked_again_rather_than_completing(connect, answer):
    async with connect(greeting_server()) as client:
        first = await call(client, "greet")
        result = await call(
            client, "greet", responses={"user_name": answer}, state=first["requestState"]
        )
    assert result["resultType"] == "input_required"


async def test_null_input_responses_is_asked_again_rather_than_completing(connect):
    async with connect(greeting_server()) as client:
        first = await call(client, "greet")
        params = {
            "name": "greet",
            "arguments": {},
            "inputResponses": None,
            "requestState": first["requestState"],
        }
        result = await client.request("tools/call", params, capabilities=FORM)
    assert result["resultType"] == "input_required"


async def test_unknown_extra_input_response_keys_are_ignored(connect):
    async with connect(greeting_server()) as client:
        first = await call(client, "greet")
        result = await call(
            client,
            "greet",
            responses={"user_name": ALICE, "surprise": {"x": 1}, "other": 42},
            state=first["requestState"],
        )
    assert text_of(result) == "Hello, Alice!"


@pytest.mark.parametrize("state", ["absent", None])
async def test_answers_without_a_request_state_are_asked_again(connect, state):
    """By default the state is the server's proof that it asked: answers without one (absent
    or null) are not taken, and the question is asked again, with a state."""
    params: dict[str, Any] = {"name": "greet", "arguments": {},
                              "inputResponses": {"user_name": ALICE}}  # fmt: skip
    if state is None:
        params["requestState"] = None
    async with connect(greeting_server()) as client:
        result = await client.request("tools/call", params, capabilities=FORM)
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["user_name"]
    assert isinstance(result["requestState"], str)


async def test_a_server_may_take_answers_without_a_state_for_its_first_questions(connect):
    """``answers_without_state="first-round"``: what the official suite's ignore-extra-params
    check expects, the first question's answer (and unknown keys) sent without a state."""
    server = greeting_server(answers_without_state="first-round")
    async with connect(server) as client:
        result = await call(
            client, "greet", responses={"user_name": ALICE, "unknown_extra": {"action": "accept"}}
        )
    assert text_of(result) == "Hello, Alice!"


def test_answers_without_state_is_ask_or_first_round() -> None:
    with pytest.raises(ValueError, match="answers_without_state"):
        Server("x", answers_without_state="always")  # type: ignore[arg-type]


def two_question_server() -> Server:
    server = Server("mrtr", answers_without_state="first-round")

    @server.tool
    async def confirm_delete(ctx: Context) -> str:
        who = await ctx.elicit("Whose files?", UserName, key="owner")
        sure = await ctx.elicit(f"Delete every file of {who.data.name}?", Color, key="sure")
        return f"deleted for {who.data.name}: {sure.data.color}"

    return server


@pytest.mark.parametrize("state", ["absent", None])
async def test_later_questions_are_not_answered_without_the_state_that_asked_them(connect, state):
    """On a server that takes answers without a state for its first questions, a client
    still cannot answer the second question before the server asked it, however it names
    the key."""
    answers = {"owner": ALICE, "sure": {"action": "accept", "content": {"color": "yes"}}}
    params: dict[str, Any] = {"name": "confirm_delete", "arguments": {}, "inputResponses": answers}
    if state is None:
        params["requestState"] = None
    async with connect(two_question_server()) as client:
        first = await client.request("tools/call", params, capabilities=EVERYTHING)
        assert first["resultType"] == "input_required"
        assert list(first["inputRequests"]) == ["sure"]  # the owner's answer was taken
        done = await call(
            client, "confirm_delete", responses={"sure": answers["sure"]},
            state=first["requestState"],
        )  # fmt: skip
    assert text_of(done) == "deleted for Alice: yes"


async def test_automatic_keys_name_each_call_in_order(connect):
    server = Server("mrtr")

    @server.tool
    async def two(ctx: Context) -> str:
        await ctx.elicit("First?", UserName)
        await ctx.elicit("Second?", Color)
        return "done"

    async with connect(server) as client:
        first = await call(client, "two")
        second = await call(
            client, "two", responses={"elicit_1": ALICE}, state=first["requestState"]
        )
    assert list(first["inputRequests"]) == ["elicit_1"]
    assert list(second["inputRequests"]) == ["elicit_2"]


# --------------------------------------------------------------------------- several rounds


def wizard_server(**options: Any) -> Server:
    server = Server("mrtr", **options)

    @server.tool
    async def wizard(ctx: Context) -> str:
        name = await ctx.elicit("Step 1: What is your name?", UserName, key="step1")
        color = await ctx.elicit("Step 2: What is your favorite color?", Color, key="step2")
        return f"{name.data.name} likes {color.data.color}"

    return server


async def test_second_elicit_gives_a_second_input_required_after_the_first_answer(connect):
    async with connect(wizard_server()) as client:
        first = await call(client, "wizard")
        second = await call(
            client, "wizard", responses={"step1": ALICE}, state=first["requestState"]
        )
    assert list(first["inputRequests"]) == ["step1"]
    assert second["resultType"] == "input_required"
    assert list(second["inputRequests"]) == ["step2"]


async def test_each_round_issues_a_different_request_state(connect):
    async with connect(wizard_server()) as client:
        first = await call(client, "wizard")
        second = await call(
            client, "wizard", responses={"step1": ALICE}, state=first["requestState"]
        )
    assert second["requestState"] != first["requestState"]


async def test_round_one_answer_survives_to_round_three_in_the_sealed_state(connect):
    async with connect(wizard_server()) as client:
        first = await call(client, "wizard")
        second = await call(
            client, "wizard", responses={"step1": ALICE}, state=first["requestState"]
        )
        third = await call(
            client,
            "wizard",
            responses={"step2": {"action": "accept", "content": {"color": "blue"}}},
            state=second["requestState"],
        )
    assert text_of(third) == "Alice likes blue"


async def test_user_state_set_before_asking_survives_the_round_trip(connect):
    server = Server("mrtr")

    @server.tool
    async def stepper(ctx: Context) -> str:
        if not ctx.is_retry:
            ctx.state["step"] = 2
        await ctx.elicit("Go on?", UserName, key="go")
        return f"step={ctx.state.get('step')}"

    async with connect(server) as client:
        first = await call(client, "stepper")
        result = await call(client, "stepper", responses={"go": ALICE}, state=first["requestState"])
    assert text_of(result) == "step=2"


async def test_round_cap_refuses_a_third_input_round_with_invalid_params(connect):
    server = Server("mrtr", max_input_rounds=2)

    @server.tool
    async def quiz(ctx: Context) -> str:
        for key in ("q1", "q2", "q3"):
            await ctx.elicit(f"{key}?", UserName, key=key)
        return "done"

    async with connect(server) as client:
        first = await call(client, "quiz")
        second = await call(client, "quiz", responses={"q1": ALICE}, state=first["requestState"])
        assert second["resultType"] == "input_required"
        with pytest.raises(MCPError) as raised:
            await call(client, "quiz", responses={"q2": ALICE}, state=second["requestState"])
    assert raised.value.code == -32602


# --------------------------------------------------------------------------- ask, sample, roots


def asking_server(seen: list[dict[str, Any]]) -> Server:
    server = Server("mrtr")

    @server.tool
    async def survey(ctx: Context) -> str:
        answers = await ctx.ask(
            user_name=Elicit("What is your name?", UserName),
            greeting=Sample("Generate a greeting", max_tokens=50),
            client_roots=ListRoots(),
        )
        seen.append(answers)
        return "surveyed"

    return server


async def test_ask_sends_all_three_kinds_of_request_in_one_round(connect):
    async with connect(asking_server([])) as client:
        result = await call(client, "survey")
    requests = result["inputRequests"]
    assert {key: r["method"] for key, r in requests.items()} == {
        "user_name": "elicitation/create",
        "greeting": "sampling/createMessage",
        "client_roots": "roots/list",
    }
    assert "requestState" in result


async def test_ask_returns_every_answer_by_key_once_all_are_given(connect):
    seen: list[dict[str, Any]] = []
    async with connect(asking_server(seen)) as client:
        first = await call(client, "survey")
        result = await call(
            client,
            "survey",
            responses={"user_name": ALICE, "greeting": SAMPLED, "client_roots": ROOTS},
            state=first["requestState"],
        )
    assert text_of(result) == "surveyed"
    (answers,) = seen
    assert answers["user_name"].data == UserName(name="Alice")
    assert isinstance(answers["greeting"], SampleResult)
    assert answers["greeting"].text == "The capital of France is Paris."
    assert answers["client_roots"] == [Root("file:///test/root", "Test Root")]


async def test_ask_with_a_partial_answer_asks_only_for_the_rest(connect):
    async with connect(asking_server([])) as client:
        first = await call(client, "survey")
        result = await call(
            client, "survey", responses={"greeting": SAMPLED}, state=first["requestState"]
        )
    assert sorted(result["inputRequests"]) == ["client_roots", "user_name"]


def sampling_server(seen: list[SampleResult]) -> Server:
    server = Server("mrtr")

    @server.tool
    async def capital(ctx: Context) -> str:
        answer = await ctx.sample(
            "What is the capital of France?", max_tokens=50, key="capital_question"
        )
        seen.append(answer)
        return answer.text

    return server


async def test_sample_asks_for_create_message_with_messages_and_max_tokens(connect):
    async with connect(sampling_server([])) as client:
        result = await call(client, "capital", capabilities={"sampling": {}})
    assert result["inputRequests"] == {
        "capital_question": {
            "method": "sampling/createMessage",
            "params": {
                "messages": [
                    {
                        "role": "user",
                        "content": {"type": "text", "text": "What is the capital of France?"},
                    }
                ],
                "maxTokens": 50,
            },
        }
    }


async def test_sample_answer_text_reaches_the_tool(connect):
    seen: list[SampleResult] = []
    async with connect(sampling_server(seen)) as client:
        first = await call(client, "capital", capabilities={"sampling": {}})
        result = await call(
            client,
            "capital",
            responses={"capital_question": SAMPLED},
            state=first["requestState"],
            capabilities={"sampling": {}},
        )
    assert text_of(result) == "The capital of France is Paris."
    assert seen[0].model == "test-model"
    assert seen[0].stop_reason == "endTurn"


def roots_server(seen: list[Any]) -> Server:
    server = Server("mrtr")

    @server.tool
    async def where(ctx: Context) -> str:
        roots = await ctx.list_roots(key="client_roots")
        seen.append(roots)
        return ", ".join(root.uri for root in roots)

    return server


async def test_list_roots_asks_for_roots_list(connect):
    async with connect(roots_server([])) as client:
        result = await call(client, "where", capabilities={"roots": {}})
    request = result["inputRequests"]["client_roots"]
    assert request["method"] == "roots/list"
    assert request.get("params", {}) == {}


async def test_list_roots_answer_is_a_list_of_root(connect):
    seen: list[Any] = []
    async with connect(roots_server(seen)) as client:
        first = await call(client, "where", capabilities={"roots": {}})
        await call(
            client,
            "where",
            responses={"client_roots": ROOTS},
            state=first["requestState"],
            capabilities={"roots": {}},
        )
    assert seen == [[Root(uri="file:///test/root", name="Test Root")]]


@pytest.mark.parametrize(
    "answer",
    [{"roots": "nope"}, {"roots": [{"name": "no uri"}]}, {"roots": [{"uri": 5}]}, {}],
    ids=["not-a-list", "no-uri", "uri-not-string", "no-roots"],
)
async def test_malformed_roots_answer_is_asked_again(connect, answer):
    async with connect(roots_server([])) as client:
        first = await call(client, "where", capabilities={"roots": {}})
        result = await call(
            client,
            "where",
            responses={"client_roots": answer},
            state=first["requestState"],
            capabilities={"roots": {}},
        )
    assert result["resultType"] == "input_required"


@pytest.mark.parametrize(
    "answer",
    [
        {"role": "robot", "content": {"type": "text", "text": "x"}, "model": "m"},
        {"role": "assistant", "content": {"type": "text", "text": "x"}},
        {"role": "assistant", "content": "plain string", "model": "m"},
    ],
    ids=["bad-role", "no-model", "content-not-object"],
)
async def test_malformed_sampling_answer_is_asked_again(connect, answer):
    async with connect(sampling_server([])) as client:
        first = await call(client, "capital", capabilities={"sampling": {}})
        result = await call(
            client,
            "capital",
            responses={"capital_question": answer},
            state=first["requestState"],
            capabilities={"sampling": {}},
        )
    assert result["resultType"] == "input_required"


# --------------------------------------------------------------------------- prompts, resources


def prompt_server() -> Server:
    server = Server("mrtr")

    class PromptContext(BaseModel):
        context: str

    @server.prompt
    async def test_input_required_result_prompt(ctx: Context) -> str:
        answer = await ctx.elicit(
            "What context should the prompt use?", PromptContext, key="user_context"
        )
        return f"Use this context: {answer.data.context}"

    return server


async def test_prompts_get_can_answer_input_required(connect):
    async with connect(prompt_server()) as client:
        result = await client.request(
            "prompts/get", {"name": "test_input_required_result_prompt"}, capabilities=FORM
        )
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["user_context"]["method"] == "elicitation/create"


async def test_prompts_get_retry_completes_with_messages(connect):
    async with connect(prompt_server()) as client:
        first = await client.request(
            "prompts/get", {"name": "test_input_required_result_prompt"}, capabilities=FORM
        )
        result = await client.request(
            "prompts/get",
            {
                "name": "test_input_required_result_prompt",
                "inputResponses": {
                    "user_context": {"action": "accept", "content": {"context": "test context"}}
                },
                "requestState": first["requestState"],
            },
            capabilities=FORM,
        )
    assert result["resultType"] == "complete"
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Use this context: test context"}}
    ]


def resource_server() -> Server:
    server = Server("mrtr")
    public = CachePolicy(ttl_ms=60_000, scope="public")

    @server.resource("secret://{name}", mime_type="text/plain", cache=public)
    async def secret(name: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Reveal {name}?", UserName, key="who")
        return f"{name} for {answer.data.name}"

    @server.resource("file:///static.txt", mime_type="text/plain", cache=public)
    async def static(ctx: Context) -> str:
        answer = await ctx.elicit("Who reads?", UserName, key="who")
        return f"static for {answer.data.name}"

    return server


async def read(
    client: Any, uri: str, *, responses: Any = None, state: Any = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"uri": uri}
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    result: dict[str, Any] = await client.request("resources/read", params, capabilities=FORM)
    return result


@pytest.mark.parametrize("uri", ["secret://alpha", "file:///static.txt"])
async def test_resources_read_can_answer_input_required(connect, uri):
    async with connect(resource_server()) as client:
        result = await read(client, uri)
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["who"]["method"] == "elicitation/create"


@pytest.mark.parametrize(
    ("uri", "text"),
    [("secret://alpha", "alpha for Alice"), ("file:///static.txt", "static for Alice")],
)
async def test_resources_read_retry_completes_with_contents(connect, uri, text):
    async with connect(resource_server()) as client:
        first = await read(client, uri)
        result = await read(client, uri, responses={"who": ALICE}, state=first["requestState"])
    assert result["resultType"] == "complete"
    assert result["contents"] == [{"uri": uri, "mimeType": "text/plain", "text": text}]


@pytest.mark.parametrize("uri", ["secret://alpha", "file:///static.txt"])
async def test_input_required_resources_read_result_carries_no_caching_hints(connect, uri):
    async with connect(resource_server()) as client:
        result = await read(client, uri)
    assert "ttlMs" not in result
    assert "cacheScope" not in result


@pytest.mark.parametrize("uri", ["secret://alpha", "file:///static.txt"])
async def test_complete_result_of_a_retry_is_never_cacheable(connect, uri):
    async with connect(resource_server()) as client:
        first = await read(client, uri)
        result = await read(client, uri, responses={"who": ALICE}, state=first["requestState"])
    assert result["ttlMs"] == 0
    assert result["cacheScope"] == "private"


async def test_input_required_tools_call_result_carries_no_caching_hints(connect):
    async with connect(greeting_server()) as client:
        result = await call(client, "greet")
    assert "ttlMs" not in result
    assert "cacheScope" not in result


# --------------------------------------------------------------------------- other methods


async def test_custom_method_that_elicits_is_a_masked_internal_error(connect):
    server = Server("mrtr")

    @server.method("example.com/ask")
    async def ask(ctx: Context) -> dict[str, Any]:
        await ctx.elicit("What is your name?", UserName, key="user_name")
        return {}

    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.request("example.com/ask", capabilities=FORM)
    assert raised.value.code == -32603
    assert "elicit" not in raised.value.message
    assert "cannot ask" not in raised.value.message


async def test_completer_that_elicits_is_a_masked_internal_error(connect):
    server = Server("mrtr")

    @server.prompt
    def greet(who: str) -> str:
        return f"Hello, {who}"

    @server.completion(prompt="greet", argument="who")
    async def who(value: str, ctx: Context) -> list[str]:
        await ctx.elicit("Which?", UserName, key="which")
        return []

    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.request(
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "greet"},
                    "argument": {"name": "who", "value": "a"},
                },
                capabilities=FORM,
            )
    assert raised.value.code == -32603


@pytest.mark.parametrize("method", ["tools/list", "prompts/list", "resources/list"])
async def test_list_methods_never_answer_input_required(connect, method):
    server = greeting_server()

    @server.prompt
    def hello() -> str:
        return "hi"

    @server.resource("file:///a.txt")
    def a() -> str:
        return "a"

    async with connect(server) as client:
        result = await client.request(
            method, {"inputResponses": {"user_name": ALICE}}, capabilities=EVERYTHING
        )
    assert result["resultType"] == "complete"


# --------------------------------------------------------------------------- capabilities


async def test_eliciting_without_the_elicitation_capability_is_minus_32021(connect):
    async with connect(greeting_server()) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "greet", capabilities={})
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_empty_elicitation_capability_counts_as_form_mode(connect):
    async with connect(greeting_server()) as client:
        result = await call(client, "greet", capabilities={"elicitation": {}})
    assert result["resultType"] == "input_required"


async def test_url_only_elicitation_capability_does_not_allow_a_form(connect):
    async with connect(greeting_server()) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "greet", capabilities={"elicitation": {"url": {}}})
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


def url_server() -> Server:
    server = Server("mrtr")

    @server.tool
    async def connect_account(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Connect your account", url="https://example.com/connect", key="oauth"
        )
        return f"action={answer.action}"

    return server


async def test_url_elicitation_needs_the_url_capability(connect):
    async with connect(url_server()) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "connect_account", capabilities={"elicitation": {}})
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}


async def test_url_elicitation_is_sent_in_url_mode(connect):
    async with connect(url_server()) as client:
        result = await call(client, "connect_account", capabilities={"elicitation": {"url": {}}})
    assert result["inputRequests"]["oauth"] == {
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": "Connect your account",
            "url": "https://example.com/connect",
        },
    }


async def test_url_elicitation_accept_reaches_the_tool(connect):
    caps = {"elicitation": {"url": {}}}
    async with connect(url_server()) as client:
        first = await call(client, "connect_account", capabilities=caps)
        result = await call(
            client,
            "connect_account",
            responses={"oauth": {"action": "accept"}},
            state=first["requestState"],
            capabilities=caps,
        )
    assert text_of(result) == "action=accept"


def tool_sampling_server() -> Server:
    server = Server("mrtr")
    weather = {
        "name": "get_weather",
        "description": "Weather for a city",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }

    @server.tool
    async def plan(ctx: Context) -> str:
        answer = await ctx.sample("Plan a trip", max_tokens=50, key="plan", tools=[weather])
        return answer.text

    return server


async def test_sampling_with_tools_needs_the_sampling_tools_capability(connect):
    async with connect(tool_sampling_server()) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "plan", capabilities={"sampling": {}})
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"sampling": {"tools": {}}}}


async def test_sampling_with_tools_is_sent_when_the_client_declares_them(connect):
    async with connect(tool_sampling_server()) as client:
        result = await call(client, "plan", capabilities={"sampling": {"tools": {}}})
    params = result["inputRequests"]["plan"]["params"]
    assert [tool["name"] for tool in params["tools"]] == ["get_weather"]


async def test_sampling_without_the_sampling_capability_is_minus_32021(connect):
    async with connect(sampling_server([])) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "capital", capabilities=FORM)
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_listing_roots_without_the_roots_capability_is_minus_32021(connect):
    async with connect(roots_server([])) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "where", capabilities=FORM)
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"roots": {}}}


async def test_asking_several_unsupported_kinds_names_every_missing_capability(connect):
    # The -32021 data lists "the capabilities the server requires ... to process this
    # request" (schema.ts MissingRequiredClientCapabilityError), so all of them at once.
    async with connect(asking_server([])) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "survey", capabilities={})
    assert raised.value.code == -32021
    assert raised.value.data == {
        "requiredCapabilities": {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
    }


# --------------------------------------------------------------------------- low-level path


def low_level_server(seen: list[tuple[dict[str, Any], dict[str, Any]]]) -> Server:
    server = Server("mrtr")

    @server.tool
    async def manual(ctx: Context):  # unannotated: a plain text result
        if "confirm" not in ctx.input_responses:
            return InputRequired(
                input_requests={"confirm": Elicit("Please confirm", UserName)},
                state={"order": 4711},
            )
        seen.append((ctx.input_responses, ctx.request_state))
        return "state-ok"

    return server


async def test_returning_input_required_asks_with_the_given_requests(connect):
    async with connect(low_level_server([])) as client:
        result = await call(client, "manual")
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["confirm"]["params"]["message"] == "Please confirm"
    assert isinstance(result["requestState"], str)


async def test_retry_of_the_low_level_path_sees_raw_responses_and_the_sealed_state(connect):
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    async with connect(low_level_server(seen)) as client:
        first = await call(client, "manual")
        result = await call(
            client,
            "manual",
            responses={"confirm": {"action": "accept", "content": {"name": "x"}}},
            state=first["requestState"],
        )
    assert text_of(result) == "state-ok"
    assert seen == [({"confirm": {"action": "accept", "content": {"name": "x"}}}, {"order": 4711})]


async def test_low_level_raw_dict_requests_pass_through_unchanged(connect):
    server = Server("mrtr")

    @server.tool
    async def manual(ctx: Context) -> Any:
        return InputRequired(input_requests={"r": {"method": "roots/list", "params": {}}})

    async with connect(server) as client:
        result = await call(client, "manual")
    assert result["inputRequests"] == {"r": {"method": "roots/list", "params": {}}}


async def test_low_level_request_the_client_cannot_handle_is_minus_32021(connect):
    # Never include an input request the client did not declare.
    server = Server("mrtr")

    @server.tool
    async def manual(ctx: Context) -> Any:
        return InputRequired(input_requests={"confirm": Elicit("Please confirm", UserName)})

    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "manual", capabilities={})
    assert raised.value.code == -32021


async def test_low_level_raw_dict_request_the_client_cannot_handle_is_minus_32021(connect):
    server = Server("mrtr")

    @server.tool
    async def manual(ctx: Context) -> Any:
        return InputRequired(input_requests={"r": {"method": "roots/list", "params": {}}})

    async with connect(server) as client:
        with pytest.raises(MCPError) as raised:
            await call(client, "manual", capabilities={})
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"roots": {}}}


# --------------------------------------------------------------------------- ending attempts


def test_need_input_is_not_an_exception():
    assert issubclass(NeedInput, BaseException)
    assert not issubclass(NeedInput, Exception)


async def test_tool_catching_exception_around_elicit_still_ends_the_attempt(connect):
    caught: list[BaseException] = []
    server = Server("mrtr")

    @server.tool
    async def careful(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("What is your name?", UserName, key="user_name")
        except Exception as exc:  # the pattern NeedInput must slip through
            caught.append(exc)
            return "swallowed"
        return f"Hello, {answer.data.name}!"

    async with connect(server) as client:
        first = await call(client, "careful")
        result = await call(
            client, "careful", responses={"user_name": ALICE}, state=first["requestState"]
        )
    assert first["resultType"] == "input_required"
    assert text_of(result) == "Hello, Alice!"
    assert caught == []


async def test_code_after_an_unanswered_question_does_not_run(connect):
    reached: list[str] = []
    server = Server("mrtr")

    @server.tool
    async def side_effect(ctx: Context) -> str:
        await ctx.elicit("What is your name?", UserName, key="user_name")
        reached.append("after")
        return "done"

    async with connect(server) as client:
        await call(client, "side_effect")
    assert reached == []
