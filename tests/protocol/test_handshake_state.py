"""The handshake era's state machine, sans-IO: which messages it serves, a session's life,
and what a session hears (``protocol/handshake_state.py``). The transports' wire tests
(``tests/transports/test_legacy_wire.py``, ``tests/server/test_legacy.py``) prove the same
rules through stdio and HTTP."""

from __future__ import annotations

import itertools

import pytest

from mcpserve._types import JSONDict
from mcpserve.protocol import constants as c
from mcpserve.protocol.handshake import Session
from mcpserve.protocol.handshake_state import (
    ROUTES,
    TRANSITIONS,
    HandshakeState,
    Peer,
    Phase,
    Route,
    Shape,
    route,
)
from mcpserve.protocol.jsonrpc import Kind

MODERN_META = {c.META_PROTOCOL_VERSION: "2026-07-28", "clientCapabilities": {}}


def request(method: str, **params: object) -> JSONDict:
    message: JSONDict = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params:
        message["params"] = dict(params)
    return message


def session() -> Session:
    return Session("2025-11-25", {})


def test_every_place_and_shape_has_a_route() -> None:
    places = set(itertools.product((True, False), Peer, Shape))
    assert set(ROUTES) == places


@pytest.mark.parametrize("peer", list(Peer))
@pytest.mark.parametrize("in_session", [True, False])
def test_a_message_with_meta_is_modern_even_inside_a_session(peer: Peer, in_session: bool) -> None:
    message = request("tools/list", _meta=MODERN_META)
    assert route(message, Kind.REQUEST, in_session=in_session, peer=peer) is Route.MODERN


@pytest.mark.parametrize("peer", list(Peer))
@pytest.mark.parametrize("in_session", [True, False])
def test_initialize_without_meta_starts_a_session_wherever_it_arrives(
    peer: Peer, in_session: bool
) -> None:
    message = request("initialize", protocolVersion="2025-11-25", capabilities={})
    assert route(message, Kind.REQUEST, in_session=in_session, peer=peer) is Route.INITIALIZE


def test_on_stdio_a_ping_before_initialize_is_answered_by_the_era_and_served_after() -> None:
    state = HandshakeState(Peer.STDIO)
    assert state.route(request("ping"), Kind.REQUEST) is Route.PROBE
    state.start(session())
    assert state.route(request("ping"), Kind.REQUEST) is Route.SERVE


def test_on_stdio_a_request_without_meta_outside_a_session_is_modern() -> None:
    assert HandshakeState(Peer.STDIO).route(request("tools/list"), Kind.REQUEST) is Route.MODERN


@pytest.mark.parametrize("method", ["tools/list", "ping"])
def test_over_http_a_handshake_era_request_outside_a_session_needs_one(method: str) -> None:
    message = request(method)
    routed = route(message, Kind.REQUEST, in_session=False, peer=Peer.HANDSHAKE_HEADERS)
    assert routed is Route.NEEDS_SESSION
    modern = route(message, Kind.REQUEST, in_session=False, peer=Peer.MODERN_HEADERS)
    assert modern is Route.MODERN


@pytest.mark.parametrize("peer", list(Peer))
def test_a_response_answers_the_servers_question_only_inside_a_session(peer: Peer) -> None:
    answer: JSONDict = {"jsonrpc": "2.0", "id": "mcpserve-1", "result": {}}
    assert route(answer, Kind.RESPONSE, in_session=True, peer=peer) is Route.CLIENT_ANSWER
    assert route(answer, Kind.RESPONSE, in_session=False, peer=peer) is Route.MODERN


def test_a_notification_inside_a_session_is_served_with_it() -> None:
    cancelled: JSONDict = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    routed = route(cancelled, Kind.NOTIFICATION, in_session=True, peer=Peer.HANDSHAKE_HEADERS)
    assert routed is Route.SERVE


def test_every_phase_knows_both_events() -> None:
    assert set(TRANSITIONS) == set(itertools.product(Phase, ("started", "ended")))


def test_a_session_lives_from_initialize_to_its_end() -> None:
    state = HandshakeState(Peer.STDIO)
    assert (state.phase, state.session) == (Phase.IDLE, None)
    first = session()
    state.start(first)
    assert (state.phase, state.session) == (Phase.ACTIVE, first)
    second = session()
    state.start(second)  # a second initialize: a new session in its place
    assert (state.phase, state.session) == (Phase.ACTIVE, second)
    state.end()
    assert (state.phase, state.session) == (Phase.ENDED, None)
    assert state.route(request("ping"), Kind.REQUEST) is Route.PROBE  # no session any more


def test_an_active_session_hears_list_changes_and_updates_it_subscribed_to() -> None:
    agreed = session()
    agreed.resource_subscriptions.add("file:///project")
    state = HandshakeState(Peer.HANDSHAKE_HEADERS, agreed)
    assert state.hear({"type": "tools"}) == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
    }
    assert state.hear({"type": "updated", "uri": "file:///project/a.txt"}) == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "file:///project/a.txt"},
    }
    assert state.hear({"type": "updated", "uri": "file:///elsewhere"}) is None
    assert state.hear({"type": "task", "taskId": "t"}) is None


def test_an_ended_session_hears_nothing() -> None:
    state = HandshakeState(Peer.STDIO, session())
    state.end()
    assert state.hear({"type": "tools"}) is None
