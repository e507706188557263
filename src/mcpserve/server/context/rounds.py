"""Multi round-trip requests (MRTR): running the same handler again with the answers.

A handler asks with ``await ctx.elicit(...)`` (or ``sample``, ``list_roots``, ``ask``).
On the first attempt there is no answer yet, so the call raises :class:`NeedInput`, the
attempt ends, and the client receives ``resultType: "input_required"`` with the
``inputRequests`` and a sealed ``requestState``. The client gathers the answers and sends
the same request again with ``inputResponses`` and the state; the handler runs from the
top, and this time the same call returns the answer.

So handler code must be replayable: do side effects after the questions, or make them
idempotent. Answers from earlier rounds travel inside the sealed state, so a handler that
asks twice in a row (round 1, round 2) sees both answers on round 3. ``ctx.state`` is a
dict for your own data that survives the round trip the same way.

A tool registered with ``request_state="handler"`` keeps its own state instead
(``docs/decisions.md``, "A handler's own requestState"): nothing is sealed or verified, the
handler reads the client's string as ``ctx.raw_request_state`` and hands out the one it
sets with ``ctx.set_raw_request_state``, verbatim. With no sealed record of what was asked,
a question takes its answer from this round's ``inputResponses`` only, and no round cap
applies: what earlier rounds learnt is the handler's to carry in its state.

:class:`NeedInput` derives from ``BaseException`` so a handler's ``except Exception``
cannot swallow the end of an attempt by accident.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..._types import JSONDict
from ...protocol import constants as c
from ...protocol.capabilities import missing_capabilities
from ...protocol.core import Request
from ...protocol.errors import InvalidParams, MissingClientCapability
from ...protocol.records import Record
from ..runtime import Runtime

if TYPE_CHECKING:  # requestState sealing loads with the first sealed state
    from ...protocol.request_state import Binding

logger = logging.getLogger("mcpserve.state")


class Asking(Protocol):
    """What the rounds of a request read of its context (``context.py``)."""

    runtime: Runtime

    @property
    def request(self) -> Request: ...

    @property
    def principal(self) -> str | None: ...

    @property
    def client_capabilities(self) -> dict[str, Any]: ...


#: What an input request's ``parse`` returns for an answer it cannot use.
MISSING: Any = object()

#: Who keeps a tool's ``requestState``: mcpserve, sealed (the default), or the handler.
RequestStateKeeper = Literal["sealed", "handler"]
REQUEST_STATE_KEEPERS: tuple[RequestStateKeeper, ...] = ("sealed", "handler")


class InputRequest(Protocol):
    """What a handler can ask for: :mod:`.input_requests` has the kinds."""

    def to_wire(self) -> JSONDict: ...
    def required_capabilities(self) -> JSONDict: ...
    def parse(self, raw: Any) -> Any:
        """The answer, or ``MISSING`` when ``raw`` is not a usable answer."""


class NeedInput(BaseException):
    """Ends the current attempt: these questions need answers first."""

    def __init__(self, requests: Mapping[str, InputRequest]) -> None:
        super().__init__(", ".join(requests))
        self.requests = requests


class InputRequired(Record):
    """Return this from a handler to ask for input yourself (the low-level path).

    ``input_requests`` maps your keys to :class:`Elicit`/:class:`Sample`/:class:`ListRoots`
    or raw ``{"method": ..., "params": ...}`` dicts; ``state`` is sealed and comes back as
    ``ctx.request_state`` on the retry, with the answers in ``ctx.input_responses``.
    """

    __slots__ = ("input_requests", "state")  # a Record: see protocol/records.py

    def __init__(
        self, input_requests: JSONDict | None = None, state: JSONDict | None = None
    ) -> None:
        self.input_requests: JSONDict = {} if input_requests is None else input_requests
        self.state = state


def required_capabilities(request: Any) -> JSONDict:
    """The client capabilities an input request needs; raw dicts are read by method."""
    if not isinstance(request, dict):
        needed: JSONDict = request.required_capabilities()
        return needed
    method = request.get("method")
    params = request.get("params")
    if not isinstance(params, dict):
        params = {}
    if method == "elicitation/create":
        return {"elicitation": {"url" if params.get("mode") == "url" else "form": {}}}
    if method == "sampling/createMessage":
        uses_tools = "tools" in params or "toolChoice" in params
        return {"sampling": {"tools": {}} if uses_tools else {}}
    if method == "roots/list":
        return {"roots": {}}
    raise ValueError(f"Unknown input request method {method!r}")


def _merge(into: JSONDict, more: JSONDict) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif key not in into:
            into[key] = value


class Rounds:
    """The round-trip bookkeeping of one request."""

    __slots__ = (
        "answers",
        "asked",
        "binding",
        "ctx",
        "outgoing",
        "pending",
        "responses",
        "round",
        "state",
        "target",
    )

    def __init__(self, ctx: Asking, target: str, arguments: Any, sealed: bool = True) -> None:
        method = ctx.request.method
        if method not in c.INPUT_REQUIRED_METHODS:
            raise RuntimeError(
                f"{method} cannot ask the client for input (only tools/call, "
                "prompts/get and resources/read can)"
            )
        self.ctx = ctx
        self.target = target
        #: The requestState the handler hands out itself (a tool that keeps its own).
        self.outgoing: str | None = None
        params = ctx.request.params
        self.answers: JSONDict = {}
        #: The keys the last round asked, as sealed in its state: the only answers taken.
        #: None without a state: nothing was asked, so nothing is taken, unless the server
        #: takes such answers for its first questions (docs/decisions.md, "Answers without a
        #: state").
        self.pending: set[str] | None = None
        #: How many times this attempt has asked (each ``ctx.ask``/``elicit`` call once).
        self.asked = 0
        self.state: JSONDict = {}
        self.round = 0
        responses = params.get("inputResponses")
        self.responses: JSONDict = responses if isinstance(responses, dict) else {}
        #: What a sealed state is bound to; None for a handler's own state.
        self.binding: Binding | None = None
        if not sealed:  # the handler's own state: nothing to open, nothing to bind
            return
        from ...protocol.request_state import Binding, StateRejected  # crypto loads on first use

        self.binding = Binding.of(method, target, arguments, ctx.principal)
        state = params.get("requestState")
        if state is not None:
            try:
                payload, self.round = ctx.runtime.sealer.open(state, self.binding)
            except StateRejected as exc:
                logger.warning("Rejected requestState on %s %s: %s", method, target, exc)
                raise InvalidParams("Invalid requestState") from None
            self.answers = payload.get("a", {})
            self.pending = set(payload.get("k", ()))
            self.state = payload.get("u", {})

    @property
    def sealed(self) -> bool:
        """Whether mcpserve keeps this request's state (sealed), rather than the handler."""
        return self.binding is not None

    def carried(self) -> JSONDict:
        """The answers taken so far and the handler's state: what running the call again in
        another process needs (a task that moves to a worker, ``extensions/tasks/queue.py``)."""
        return {"answers": dict(self.answers), "state": dict(self.state)}

    def replay(self, carried: Mapping[str, Any]) -> None:
        """Answer this attempt's questions from ``carried`` (:meth:`carried` of the process
        that received the call), and from nothing else: no new answer is taken."""
        self.answers = dict(carried["answers"])
        self.state = dict(carried["state"])
        self.pending = set()

    def answer(self, key: str, request: InputRequest) -> Any:
        """The parsed answer to ``key``, or ``MISSING``."""
        if not self.sealed:
            takes = True  # a handler that keeps its own state vouches for its own rounds
        elif self.pending is not None:
            takes = key in self.pending
        else:
            takes = self.asked == 1 and self.ctx.runtime.answers_without_state == "first-round"
        if takes and key in self.responses:
            parsed = request.parse(self.responses[key])
            if parsed is not MISSING:
                self.answers[key] = self.responses[key]
                return parsed
        if key in self.answers:
            return request.parse(self.answers[key])
        return MISSING

    def check_capabilities(self, requests: Mapping[str, Any]) -> None:
        """-32021 naming everything the client lacks for ``requests``."""
        needed: JSONDict = {}
        for request in requests.values():
            _merge(needed, required_capabilities(request))
        missing = missing_capabilities(needed, self.ctx.client_capabilities)
        if missing:
            raise MissingClientCapability(missing)

    def ask(self, requests: Mapping[str, InputRequest]) -> JSONDict:
        self.check_capabilities(requests)
        self.asked += 1
        answers: JSONDict = {}
        unanswered: dict[str, InputRequest] = {}
        for key, request in requests.items():
            parsed = self.answer(key, request)
            if parsed is MISSING:
                unanswered[key] = request
            else:
                answers[key] = parsed
        if unanswered:
            raise NeedInput(unanswered)
        return answers

    def input_required(
        self, requests: Mapping[str, Any], user_state: JSONDict | None = None
    ) -> JSONDict:
        """The ``InputRequiredResult`` that ends this attempt."""
        self.check_capabilities(requests)
        wire = {key: r if isinstance(r, dict) else r.to_wire() for key, r in requests.items()}
        if self.binding is None:
            return self._handlers_input_required(wire, user_state)
        sealer = self.ctx.runtime.sealer
        if self.round + 1 > sealer.max_rounds:
            raise InvalidParams(f"Too many input rounds for this request (max {sealer.max_rounds})")
        payload = {
            "a": self.answers,
            "k": sorted(wire),
            "u": self.state if user_state is None else user_state,
        }
        result: JSONDict = {"resultType": "input_required"}
        if wire:
            result["inputRequests"] = wire
        result["requestState"] = sealer.seal(self.binding, payload, round_number=self.round + 1)
        return result

    def _handlers_input_required(self, wire: JSONDict, user_state: JSONDict | None) -> JSONDict:
        """The result of a tool that keeps its own state: its string, exactly as set."""
        if user_state is not None:
            raise RuntimeError(
                f'{self.target} keeps its own requestState (request_state="handler"), so '
                "nothing is sealed: hand yours out with ctx.set_raw_request_state(text), "
                "not InputRequired(state=...)"
            )
        result: JSONDict = {"resultType": "input_required"}
        if wire:
            result["inputRequests"] = wire
        if self.outgoing is not None:
            result["requestState"] = self.outgoing
        return result
