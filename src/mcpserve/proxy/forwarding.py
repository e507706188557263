"""One downstream request sent upstream, and its questions carried across the eras.

A forwarded ``tools/call``, ``prompts/get`` or ``resources/read`` may need input from the
user (elicitation), the client's model (sampling) or the client's roots. Each era asks
differently: a 2026-07-28 server ends the attempt with an ``input_required`` result and
is asked again with the answers; a handshake-era server sends a request of its own in the
middle of the call and waits. The proxy stands between a client and an upstream that may
each speak either, so :meth:`Forwarder.forward` takes one of four paths:

================  ==================  ===================================================
client (down)     upstream            what the proxy does
================  ==================  ===================================================
2026-07-28        2026-07-28          passes the ``input_required`` result through as it
                                      is, its ``requestState`` sealed inside the proxy's
                                      own (bound to the caller and the request); the
                                      retry's ``inputResponses`` go upstream with the
                                      upstream's state: the upstream resumes, nothing is
                                      run again from scratch
handshake era     2026-07-28          sends the call on a handshake-era session opened
                                      upstream for the client's session (:mod:`.sessions`),
                                      and relays each upstream request to the client and
                                      the answer back; when the upstream serves no
                                      handshake era, answers each ``input_required`` round
                                      itself, asking the client real requests over its
                                      session, and sends the retry
handshake era     handshake era       relays each upstream request to the client's session
                                      and the answer back, while the call waits
2026-07-28        handshake era       parks the upstream call, still waiting on its
                                      question, and ends the client's attempt with
                                      ``input_required`` (the questions, and a sealed state
                                      naming the parked call); the retry's answers go to
                                      the waiting questions and the same call goes on
================  ==================  ===================================================

A parked call lives in this process for as long as a handshake-era client gets to answer
(``Server(legacy_client_timeout_seconds=...)``); after that its questions are answered with
an error and the call is cancelled (``docs/decisions.md``, "Questions across eras").

Each call's upstream side is an :class:`~.exchange.Exchange`, which says where the
upstream's messages go.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .._types import JSONDict
from ..extensions.tasks.records import TASKS_EXTENSION
from ..protocol import constants as c
from ..protocol.errors import InternalError, InvalidParams, MCPError
from ..server.context.context import Context
from .exchange import CURRENT, Exchange, Forwarded, ask_session
from .sessions import SessionLink, SessionLinks
from .upstream import CLIENT_INFO, Upstream, UpstreamUnavailable
from .wire import UpstreamError, can_answer, clean_result, downstream_error

if TYPE_CHECKING:  # requestState sealing loads with the first sealed state
    from ..protocol.request_state import Binding

logger = logging.getLogger("mcpserve.proxy")

_INPUT_REQUIRED = "input_required"


class Forwarder:
    """Sends downstream requests upstream and their answers back, in either era."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        #: Every call in flight upstream, parked ones included.
        self.exchanges: set[Exchange] = set()
        #: Calls waiting for a 2026-07-28 client's retry, by the id sealed in its state.
        self.parked: dict[str, Exchange] = {}
        #: The upstream sessions of handshake-era clients (a 2026-07-28 upstream's).
        self.sessions = SessionLinks(upstream)

    # -- where upstream messages go --------------------------------------------------------

    def exchange_of_message(self) -> Exchange | None:
        """The exchange an upstream message just read belongs to, if that can be told."""
        current = CURRENT.get()
        if current is not None:
            return current
        if len(self.exchanges) == 1:
            return next(iter(self.exchanges))
        return None

    async def answer(self, method: str, params: JSONDict) -> JSONDict:
        """Answer an upstream's question (handshake-era upstream) by asking the client."""
        exchange = self.exchange_of_message()
        if exchange is None:
            raise MCPError(
                f"The proxy cannot tell which request {method} belongs to", code=c.INTERNAL_ERROR
            )
        return await exchange.ask(method, params)

    # -- forwarding --------------------------------------------------------------------------

    def forward(self, request: Forwarded, ctx: Context) -> Coroutine[Any, Any, JSONDict]:
        """The downstream result of one forwarded request (one of the four paths above).

        The path's own coroutine: every call comes here, and one frame less on the await
        chain is paid back at each of the call's suspensions."""
        if not self.upstream.connected:
            return self._connecting(request, ctx)
        session = ctx.request.ask is not None
        if self.upstream.legacy:
            if session:
                return self._call(request, Exchange(ctx), {})
            return self._parking(request, ctx)
        if session:
            return self._answering(request, ctx)
        return self._passing(request, ctx)

    async def _connecting(self, request: Forwarded, ctx: Context) -> JSONDict:
        await self.upstream.connect()  # the era decides the path: know it first
        return await self.forward(request, ctx)

    async def ask_once(self, method: str, params: JSONDict, ctx: Context) -> JSONDict:
        """A request without rounds (``completion/complete``)."""
        result = await self._call(Forwarded(method, params, "", None), Exchange(ctx), {})
        if result.get("resultType") == _INPUT_REQUIRED:
            raise UpstreamError(
                f"The upstream server {self.upstream.label} asked for input "
                f"on {method}, which cannot ask"
            )
        return result

    def _passing(self, request: Forwarded, ctx: Context) -> Coroutine[Any, Any, JSONDict]:
        """Both sides 2026-07-28: the upstream's rounds pass through, its state wrapped (by
        :meth:`_call`, which seals an ``input_required`` result's state in the proxy's)."""
        extra: JSONDict = {}
        round_number = 0
        params = ctx.request.params
        if "requestState" in params:
            payload, round_number = _open(ctx, params["requestState"], _binding(request, ctx))
            state = payload.get("s")
            if isinstance(state, str):
                extra["requestState"] = state
        if "inputResponses" in params:
            extra["inputResponses"] = params["inputResponses"]
        return self._call(request, Exchange(ctx), extra, sealed_round=round_number)

    @staticmethod
    def _seal_state(result: JSONDict, request: Forwarded, ctx: Context, round_number: int) -> None:
        """An upstream's ``input_required`` result, its ``requestState`` sealed in the
        proxy's own for the client's next round."""
        state = result.get("requestState")
        payload = {"s": state if isinstance(state, str) else None}
        binding = _binding(request, ctx)  # made only when needed: it hashes the arguments
        result["requestState"] = _seal(ctx, binding, payload, round_number + 1)

    async def _answering(self, request: Forwarded, ctx: Context) -> JSONDict:
        """A handshake-era client, a 2026-07-28 upstream: the call goes on the client's own
        upstream session when the upstream has the handshake era; else each round is asked
        of the client over its session, and the retry sent upstream."""
        link = await self.sessions.link_for(ctx)
        if link is not None:
            return await self._call_in_session(request, Exchange(ctx), link)
        exchange = Exchange(ctx)
        result = await self._call(request, exchange, {})
        rounds = 0
        while result.get("resultType") == _INPUT_REQUIRED:
            rounds += 1
            if rounds > ctx.runtime.sealer.max_rounds:
                raise UpstreamError(
                    f"The upstream server {self.upstream.label} asked for input "
                    f"more than {rounds - 1} times"
                )
            questions = result.get("inputRequests") or {}
            if not isinstance(questions, dict) or not all(
                isinstance(q, dict) for q in questions.values()
            ):
                raise UpstreamError(
                    f"The upstream server {self.upstream.label} sent invalid inputRequests"
                )
            extra: JSONDict = {"inputResponses": await self._ask_all(ctx, questions)}
            if "requestState" in result:
                extra["requestState"] = result["requestState"]
            result = await self._call(request, exchange, extra)
        return result

    async def _ask_all(self, ctx: Context, questions: JSONDict) -> JSONDict:
        for question in questions.values():
            params = question.get("params")
            method = str(question.get("method"))
            if not can_answer(
                method, params if isinstance(params, dict) else {}, ctx.client_capabilities
            ):
                label = self.upstream.label
                raise UpstreamError(
                    f"The upstream server {label} asked for {method[:60]}, "
                    "which the client did not declare"
                )
        keys = list(questions)
        try:
            answers = await asyncio.gather(*(ask_session(ctx, questions[k]) for k in keys))
        except MCPError as exc:
            raise InternalError(f"The client could not answer: {exc.message}") from None
        return dict(zip(keys, answers, strict=True))

    async def _parking(self, request: Forwarded, ctx: Context) -> JSONDict:
        """A 2026-07-28 client, a handshake-era upstream: the upstream call waits on its
        question while the client's attempt ends with ``input_required``."""
        binding = _binding(request, ctx)
        params = ctx.request.params
        if "requestState" in params:
            payload, round_number = _open(ctx, params["requestState"], binding)
            parked = payload.get("p")
            exchange = self.parked.pop(parked, None) if isinstance(parked, str) else None
            if exchange is None:
                raise InvalidParams(
                    "The upstream call this answers has ended: it waited longer than the "
                    "proxy waits for answers, or another proxy process holds it; send the "
                    "request again without requestState"
                )
            responses = params.get("inputResponses")
            exchange.resume(ctx, responses if isinstance(responses, dict) else {})
        else:
            round_number = 0
            exchange = Exchange(ctx)
            exchange.changed = asyncio.Event()
            exchange.task = asyncio.create_task(self._call(request, exchange, {}))
            exchange.task.add_done_callback(_retrieve)
        return await self._until_answered(ctx, exchange, binding, round_number)

    async def _until_answered(
        self, ctx: Context, exchange: Exchange, binding: Binding, round_number: int
    ) -> JSONDict:
        """Wait for the parked call's result, or for questions to end the attempt with."""
        task, changed = exchange.task, exchange.changed
        assert task is not None
        assert changed is not None
        exchange.live = True
        parked = False
        try:
            while True:
                if task.done():
                    return task.result()
                questions = exchange.unanswered()
                if questions:
                    park_id = secrets.token_urlsafe(16)
                    state = _seal(ctx, binding, {"p": park_id}, round_number + 1)
                    self.parked[park_id] = exchange
                    timeout = ctx.runtime.client_timeout_seconds
                    exchange.expiry = asyncio.get_running_loop().call_later(
                        timeout, self._expire, park_id, timeout
                    )
                    parked = True
                    return {
                        "resultType": _INPUT_REQUIRED,
                        "inputRequests": questions,
                        "requestState": state,
                    }
                changed.clear()
                waiting = asyncio.ensure_future(changed.wait())
                try:
                    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiting.cancel()
        except BaseException:
            if not parked:  # cancelled, or out of rounds: nobody will come back for it
                exchange.abandon("The client cancelled the request")
            raise
        finally:
            exchange.live = False

    def _expire(self, park_id: str, timeout: float) -> None:
        exchange = self.parked.pop(park_id, None)
        if exchange is not None:
            exchange.abandon(f"The client did not answer within {timeout:g} s")

    def shutdown(self) -> None:
        """The proxy stops: parked calls end."""
        for exchange in list(self.parked.values()):
            exchange.abandon("The proxy is shutting down")
        self.parked.clear()

    # -- one upstream request ------------------------------------------------------------------

    async def _call(
        self,
        request: Forwarded,
        exchange: Exchange,
        extra: JSONDict,
        sealed_round: int | None = None,
    ) -> JSONDict:
        """Send ``request`` (with ``extra`` params) upstream for ``exchange``; the result.
        With ``sealed_round`` (the round the client is in), an ``input_required`` result
        goes downstream as it is, its state sealed: one coroutine for the whole call."""
        params = {**request.params, **extra} if extra else dict(request.params)
        ctx = exchange.ctx
        meta = self._meta(ctx, request.method)
        if meta:
            params["_meta"] = meta
        progress = exchange.progress if ctx.progress_token is not None else None
        token = CURRENT.set(exchange)
        self.exchanges.add(exchange)
        try:
            raw = await self.upstream.request(request.method, params, on_progress=progress)
        except UpstreamUnavailable:
            raise
        except MCPError as exc:
            label = self.upstream.label
            raise downstream_error(exc, request.method, request.params, label) from None
        finally:
            self.exchanges.discard(exchange)
            CURRENT.reset(token)
        result = clean_result(request.method, raw, self.upstream.label, meta)
        if sealed_round is not None and result.get("resultType") == _INPUT_REQUIRED:
            self._seal_state(result, request, exchange.ctx, sealed_round)
        return result

    async def _call_in_session(
        self, request: Forwarded, exchange: Exchange, link: SessionLink
    ) -> JSONDict:
        """Send ``request`` on a handshake-era ``link``: what the upstream asks and tells
        meanwhile goes to ``exchange``'s client (:meth:`SessionLink.exchange_of_message`)."""
        params = dict(request.params)
        ctx = exchange.ctx
        trace = ctx.trace_context
        if trace:
            params["_meta"] = dict(trace)
        progress = exchange.progress if ctx.progress_token is not None else None
        token = CURRENT.set(exchange)
        link.calls[exchange] = None
        try:
            raw = await link.request(request.method, params, on_progress=progress)
        except UpstreamUnavailable:
            raise
        except MCPError as exc:
            label = self.upstream.label
            raise downstream_error(exc, request.method, request.params, label) from None
        finally:
            link.calls.pop(exchange, None)
            CURRENT.reset(token)
        return clean_result(request.method, raw, self.upstream.label)

    def _meta(self, ctx: Context, method: str) -> JSONDict:
        """The ``_meta`` the upstream gets: on 2026-07-28 the client's capabilities (the
        upstream asks it what it can answer) and log level, under the proxy's own name."""
        trace = ctx.trace_context
        if self.upstream.legacy:
            return dict(trace)
        capabilities = ctx.client_capabilities
        if "extensions" in capabilities:
            capabilities = self._relayed(capabilities, method)
        meta: JSONDict = {
            c.META_PROTOCOL_VERSION: self.upstream.version,
            c.META_CLIENT_INFO: CLIENT_INFO,
            c.META_CLIENT_CAPABILITIES: capabilities,
        }
        if ctx.log_level is not None:
            meta[c.META_LOG_LEVEL] = ctx.log_level
        if trace:
            meta.update(trace)
        return meta

    def _relayed(self, capabilities: JSONDict, method: str) -> JSONDict:
        """The client's capabilities less the extensions the proxy does not carry: all but
        tasks, and tasks only on the calls that may become tasks (``.tasks``)."""
        kept = {k: v for k, v in capabilities.items() if k != "extensions"}
        extensions = capabilities["extensions"]
        if (
            (method == "tools/call" or method.startswith("tasks/"))
            and isinstance(extensions, dict)
            and TASKS_EXTENSION in extensions
            and self.upstream.offers_tasks
        ):
            kept["extensions"] = {TASKS_EXTENSION: extensions[TASKS_EXTENSION]}
        return kept


# -- the proxy's own requestState ------------------------------------------------------------


def _binding(request: Forwarded, ctx: Context) -> Binding:
    """What the proxy's state is valid for: this request, by this caller."""
    from ..protocol.request_state import Binding

    return Binding.of(request.method, request.target, request.arguments, ctx.principal)


def _seal(ctx: Context, binding: Binding, payload: JSONDict, round_number: int) -> str:
    """The proxy's own ``requestState``, sealed with the keys of the server answering."""
    sealer = ctx.runtime.sealer
    if round_number > sealer.max_rounds:
        raise InvalidParams(f"Too many input rounds for this request (max {sealer.max_rounds})")
    return sealer.seal(binding, payload, round_number=round_number)


def _open(ctx: Context, sealed: Any, binding: Binding) -> tuple[JSONDict, int]:
    from ..protocol.request_state import StateRejected

    try:
        return ctx.runtime.sealer.open(sealed, binding)
    except StateRejected as exc:
        logger.warning("Rejected requestState on %s %s: %s", binding.method, binding.target, exc)
        raise InvalidParams("Invalid requestState") from None


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Read a parked call's outcome, so one nobody came back for is not reported unread."""
    if not task.cancelled():
        task.exception()
