"""The functions a :class:`~mcpserve.Client` is given: how they are called, what they answer.

Every handler (``on_input``, ``on_elicit``, ``on_sample``, ``on_list_roots`` and
``on_notification``) may take the three shapes server handlers take, read once by the same
code (:mod:`mcpserve._invoking`):

* ``async def`` is awaited on the event loop;
* plain ``def`` runs inline on the event loop: right for quick answers;
* ``def`` marked :func:`~mcpserve.blocking` runs in the client's own thread pool (started
  with the first such call, shut down with the client), so a handler that waits on a person
  at a terminal or a slow LLM call stalls neither the stdio reader nor other requests.

An input request goes to the handler for its kind when there is one, else to ``on_input``
(called with the method too). A kind that has neither is one this client does not support.
A real client that does not support a kind does not declare its capability, and a server
that follows the spec then never asks for it; a server that asks anyway gets no answer, as
there is no error entry in ``inputResponses``: the call fails with
:class:`~mcpserve.MethodNotFound` (-32601, what a JSON-RPC peer answers for a method it does
not implement) before any handler of that round is called. Given no input handler at all,
the client answers nothing and ``input_required`` results come back as they are.

An answer is the result's wire dict; per-kind handlers may also return the typed results
the server side reads them into (:class:`~mcpserve.ElicitResult`,
:class:`~mcpserve.SampleResult`, a list of :class:`~mcpserve.Root`, from
:mod:`mcpserve.protocol.input_answers`), turned into wire form here with the content rules
both sides share (:mod:`mcpserve._content`).

Capabilities follow the handlers, as a server's follow its registrations: each per-kind
handler declares its kind (``elicitation.form``, ``sampling``, ``roots``) unless the client
was given ``capabilities`` explicitly. ``on_input`` declares nothing: it cannot say which
kinds it answers.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .._content import json_value, to_block
from .._invoking import is_async, is_synchronous, make_invoker
from .._types import JSONDict, UserFunction
from ..protocol.errors import MethodNotFound
from ..protocol.input_answers import ElicitResult, Root, SampleResult
from .connections import NotificationHandler

if TYPE_CHECKING:  # the thread pool's module loads with the first blocking handler
    from concurrent.futures import ThreadPoolExecutor

_T = TypeVar("_T")
MaybeAwaitable: TypeAlias = _T | Awaitable[_T]

#: Answers any input request: called with its ``method`` (``elicitation/create``,
#: ``sampling/createMessage``, ``roots/list``) and ``params``, returns the result the
#: client sends back for it in ``inputResponses``.
InputHandler = Callable[[str, JSONDict], MaybeAwaitable[JSONDict]]
#: Answers ``elicitation/create``: ``{"action": "accept", "content": {...}}`` or an ElicitResult.
ElicitHandler = Callable[[JSONDict], "MaybeAwaitable[JSONDict | ElicitResult]"]
#: Answers ``sampling/createMessage``: a message dict or a SampleResult.
SampleHandler = Callable[[JSONDict], "MaybeAwaitable[JSONDict | SampleResult]"]
#: Answers ``roots/list``: ``{"roots": [...]}`` or a list of Roots.
RootsHandler = Callable[[JSONDict], "MaybeAwaitable[JSONDict | Sequence[Root]]"]

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ROOTS = "roots/list"
#: What each per-kind handler declares when capabilities are not given explicitly. URL
#: elicitation and sampling with tools ask more of a client: declare those yourself.
_CAPABILITIES: dict[str, JSONDict] = {
    ELICIT: {"elicitation": {"form": {}}},
    SAMPLE: {"sampling": {}},
    ROOTS: {"roots": {}},
}


class ThreadPool:
    """The threads one client's blocking handlers run in, started with the first call."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None

    def __call__(self) -> ThreadPoolExecutor:
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor  # with the first blocking call

            self._executor = ThreadPoolExecutor(thread_name_prefix="mcpserve-client")
        return self._executor

    def shutdown(self) -> None:
        if self._executor is not None:
            executor, self._executor = self._executor, None
            # Not waiting: a handler still stuck on a person must not hold up the event loop;
            # its thread ends when it returns.
            executor.shutdown(wait=False)


def shaped(fn: UserFunction, pool: ThreadPool) -> Callable[..., Awaitable[Any]]:
    """``fn`` as a coroutine function that calls it where its shape says."""
    # make_invoker tells the shapes apart (async, plain, or marked @blocking) but calls with
    # keyword arguments, and client handlers take positional ones: so it is asked which
    # shape fn has, then made to call a positional adapter in that place. Inline, the
    # adapter hands back an async fn's coroutine and the invoker awaits it; in the pool,
    # the context variables go along.
    in_thread = not is_async(fn) and not is_synchronous(make_invoker(fn, blocking=None, pool=pool))
    invoke = make_invoker(lambda args: fn(*args), blocking=in_thread, pool=pool)

    async def call(*args: Any) -> Any:
        return await invoke({"args": args})

    return call


class Handlers:
    """One client's handlers, shaped once: what answers each input request, and how."""

    def __init__(
        self,
        *,
        on_input: InputHandler | None = None,
        on_elicit: ElicitHandler | None = None,
        on_sample: SampleHandler | None = None,
        on_list_roots: RootsHandler | None = None,
        on_notification: NotificationHandler | None = None,
    ) -> None:
        self.pool = ThreadPool()
        self._fallback = shaped(on_input, self.pool) if on_input is not None else None
        kinds = ((ELICIT, on_elicit), (SAMPLE, on_sample), (ROOTS, on_list_roots))
        self._by_method = {m: shaped(fn, self.pool) for m, fn in kinds if fn is not None}
        self.on_notification: NotificationHandler | None = (
            shaped(on_notification, self.pool) if on_notification is not None else None
        )

    @property
    def answers_input(self) -> bool:
        """Whether ``input_required`` results are answered at all."""
        return self._fallback is not None or bool(self._by_method)

    def capabilities(self) -> JSONDict:
        """The client capabilities the per-kind handlers stand for."""
        declared: JSONDict = {}
        for method in self._by_method:
            declared.update(_CAPABILITIES[method])
        return declared

    def _handler(self, method: str) -> Callable[[JSONDict], Awaitable[Any]]:
        per_kind = self._by_method.get(method)
        if per_kind is not None:
            return per_kind
        if self._fallback is not None:
            return functools.partial(self._fallback, method)
        raise MethodNotFound(f"This client has no handler for {method}", data={"method": method})

    async def answer(self, requests: JSONDict) -> JSONDict:
        """The ``inputResponses`` for one round, every question asked at once."""
        # Every question finds its handler first: a round the client cannot answer in full
        # fails before anyone is asked anything.
        asked = [
            (key, request.get("method"), request.get("params") or {})
            for key, request in requests.items()
        ]
        handlers = [self._handler(method) for _, method, _ in asked]
        answers = await asyncio.gather(
            *(handler(params) for handler, (_, _, params) in zip(handlers, asked, strict=True))
        )
        return {
            key: to_wire(method, answer)
            for (key, method, _), answer in zip(asked, answers, strict=True)
        }


def to_wire(method: str, answer: object) -> JSONDict:
    """A handler's answer as the wire result: dicts as they are, typed results converted."""
    if isinstance(answer, dict):
        return answer
    if method == ELICIT and isinstance(answer, ElicitResult):
        wire: JSONDict = {"action": answer.action}
        content = answer.content if answer.content is not None else answer.data
        if answer.action == "accept" and content is not None:
            wire["content"] = json_value(content)  # a pydantic model or a dataclass too
        return wire
    if method == SAMPLE and isinstance(answer, SampleResult):
        blocks = answer.content  # a string becomes a text block
        content = [to_block(b) for b in blocks] if isinstance(blocks, list) else to_block(blocks)
        wire = {"role": answer.role, "content": content, "model": answer.model}
        if answer.stop_reason is not None:
            wire["stopReason"] = answer.stop_reason
        return wire
    if method == ROOTS and isinstance(answer, list | tuple):
        roots = [_root(root) for root in answer]
        if all(root is not None for root in roots):
            return {"roots": roots}
    raise TypeError(f"A handler answered {method} with {answer!r}: expected its result dict")


def _root(root: object) -> JSONDict | None:
    if isinstance(root, dict):
        return root
    if isinstance(root, Root):
        return {"uri": root.uri} if root.name is None else {"uri": root.uri, "name": root.name}
    return None
