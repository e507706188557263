"""Registrations: a user function prepared once, and the one way a request calls it.

Tools, prompts, resources, resource templates, completers and custom methods are each a
:class:`FunctionEntry`: a function whose parameters were read at registration (types, defaults,
docstring descriptions and the ``Context`` parameter, :mod:`.schema`), whose shape
(``async def``, plain or blocking, :mod:`.handlers`) decides how it is called, and whose list
entry (``wire``) is built once.

A call takes the same steps for every kind:

1. :meth:`~FunctionEntry.admit` checks what the kind checks before the arguments (a tool's
   required client capabilities; for kinds that may ask the client, the ``requestState`` of
   a retry, verified before anything runs) and says which arguments to bind;
2. the arguments are validated into keyword arguments and the context is added; arguments
   that do not fit raise :class:`InvalidArguments`, whose text names each problem. A
   function with ``Depends`` parameters has them solved next (:mod:`.dependencies`), so it
   never answers inline;
3. the function runs (:meth:`~FunctionEntry.run`): here and now for a plain function, which
   answers with the result itself, awaited for any other, which answers with an awaitable;
4. a question to the client (``await ctx.elicit(...)`` raising :class:`.rounds.NeedInput`)
   or an :class:`.rounds.InputRequired` return value ends the attempt with
   ``input_required``;
5. invalid arguments go to :meth:`~FunctionEntry.refuse` and every other exception to
   :meth:`~FunctionEntry.fail`: each kind decides what the client sees (a tool answers
   ``isError: true``, a prompt -32602, a template "resource not found"), unless the caller
   asked for unexpected exceptions raised (:func:`~mcpserve.protocol.errors.reraise_unexpected`);
6. :meth:`~FunctionEntry.shape` turns the return value into the kind's result.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Iterable
from time import perf_counter
from typing import TYPE_CHECKING, Any

import pydantic

from ..._invoking import is_synchronous, make_invoker
from ..._types import JSONDict, Result, UserFunction
from ...protocol.errors import MCPError, reraise_unexpected
from ..context.context import Context
from ..context.rounds import InputRequired, NeedInput
from ..schema.signature import ArgumentSpec, inspect_arguments, parse_docstring
from .dependencies import Dependencies, Depends

if TYPE_CHECKING:  # the thread pool's module loads with the first blocking handler
    from concurrent.futures import ThreadPoolExecutor

Pool = Callable[[], "ThreadPoolExecutor"]


class InvalidArguments(Exception):
    """Arguments that do not fit the function: ``problems`` says why, one entry each."""

    def __init__(self, problems: list[str], errors: list[Any] | None = None) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
        #: pydantic's error entries, when pydantic found the problems.
        self.errors = errors or []

    @classmethod
    def of(cls, exc: pydantic.ValidationError) -> InvalidArguments:
        errors = exc.errors(include_url=False, include_input=False)
        problems = [
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in errors[:10]
        ]
        return cls(problems, list(errors))


class FunctionEntry(abc.ABC):
    """A registered function. Each kind (tool, prompt, ...) subclasses it and overrides the
    hooks it needs."""

    # Plain classes, not dataclasses: compared by identity, and dataclass method generation
    # would cost a noticeable share of a stdio server's cold start.
    __slots__ = (
        "arguments",
        "dependencies",
        "fn",
        "inline",
        "invoke",
        "key",
        "scopes",
        "synchronous",
        "wire",
    )

    def __init__(
        self,
        fn: UserFunction,
        key: str,
        *,
        pool: Pool,
        blocking: bool | None = None,
        wire: JSONDict | None = None,
        strict: bool = False,
        scopes: Iterable[str] = (),
    ) -> None:
        self.fn = fn
        #: What requests name it by: a tool's name, a resource's URI, a method's name.
        self.key = key
        self.arguments: ArgumentSpec = inspect_arguments(
            fn, context_type=Context, injected_type=Depends, strict=strict
        )
        self.invoke = make_invoker(fn, blocking=blocking, pool=pool)
        #: What ``Depends`` parameters need, solved before each call (:mod:`.dependencies`).
        self.dependencies = (
            Dependencies(self.arguments.injected, pool) if self.arguments.injected else None
        )
        #: A plain function run on the event loop (not in the thread pool): its calls are
        #: timed, and one that holds the loop too long is named (:mod:`.loop_watch`). One
        #: with dependencies waits for them first.
        self.inline = self.dependencies is None and is_synchronous(self.invoke)
        #: Answered inline: it never waits, so nothing can cancel it mid-call. Cleared for
        #: kinds whose calls may wait around the function (a task, middleware).
        self.synchronous = self.inline
        self.wire: JSONDict = wire or {}
        #: What an authenticated caller must have been granted to see and use it.
        self.scopes = scope_set(scopes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r}, fn={self.fn!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not registered."""
        return self.fn(*args, **kwargs)

    # -- one call ------------------------------------------------------------------------

    def run(self, arguments: Any, ctx: Context) -> Result | Awaitable[Result]:
        """One call of the function for one request: its result, or what it failed as.

        A plain function run on the loop answers here and now (a dict); any other answers
        with an awaitable, as does the odd plain function that hands back an awaitable (a
        coroutine made by a helper, say).
        """
        started = 0.0
        try:
            kwargs = self.bind(self.admit(arguments, ctx), ctx)
            if not self.inline:
                if self.dependencies is not None:
                    return self._finished_later(
                        self.dependencies.call(self.invoke, kwargs, ctx), ctx
                    )
                return self._finished_later(self.invoke(kwargs), ctx)
            started = perf_counter()
            value = self.fn(**kwargs)
        except (Exception, NeedInput) as exc:  # NeedInput is a BaseException (rounds.py)
            if started:
                self._watch_loop(started, ctx)
            return self.failed(exc, ctx)
        held = perf_counter() - started
        if held > ctx.runtime.loop_watch.seconds:
            ctx.runtime.loop_watch.held(self.fn, type(self).__name__, self.key, held)
        if hasattr(type(value), "__await__"):
            return self._finished_later(value, ctx)
        return self.finished(value, ctx)

    def _watch_loop(self, started: float, ctx: Context) -> None:
        held = perf_counter() - started
        watch = ctx.runtime.loop_watch
        if held > watch.seconds:
            watch.held(self.fn, type(self).__name__, self.key, held)

    async def _finished_later(self, awaitable: Awaitable[Any], ctx: Context) -> Result:
        try:
            value = await awaitable
        except (Exception, NeedInput) as exc:
            return self.failed(exc, ctx)
        return self.finished(value, ctx)

    def bind(self, arguments: Any, ctx: Context) -> JSONDict:
        """The keyword arguments for the function, validated, the context among them."""
        try:
            kwargs = self.arguments.validate(arguments)
        except pydantic.ValidationError as exc:
            raise InvalidArguments.of(exc) from None
        if self.arguments.context_param is not None:
            kwargs[self.arguments.context_param] = ctx
        return kwargs

    def failed(self, exc: Exception | NeedInput, ctx: Context) -> JSONDict:
        if isinstance(exc, NeedInput):  # the attempt ends here: ask, and run again on the retry
            return ctx.rounds.input_required(exc.requests)
        if isinstance(exc, InvalidArguments):
            return self.refuse(exc, ctx)
        if isinstance(exc, MCPError):
            raise exc
        reraise_unexpected(exc)  # a test that asked sees it here, before any kind masks it
        return self.fail(exc, ctx)

    def finished(self, value: Any, ctx: Context) -> JSONDict:
        if isinstance(value, InputRequired):
            return ctx.rounds.input_required(value.input_requests, value.state)
        return self.shape(value, ctx)

    # -- what each kind decides ------------------------------------------------------------

    def admit(self, arguments: Any, ctx: Context) -> Any:
        """Checks before binding; returns the arguments to bind."""
        return arguments

    def refuse(self, invalid: InvalidArguments, ctx: Context) -> JSONDict:
        """The answer to arguments that do not fit (default: the exception propagates)."""
        raise invalid

    def fail(self, exc: Exception, ctx: Context) -> JSONDict:
        """The answer to any other exception (default: it propagates, masked as -32603)."""
        raise exc

    @abc.abstractmethod
    def shape(self, value: Any, ctx: Context) -> JSONDict:
        """The result for the function's return value."""


def called_name(ctx: Context, key: str) -> str:
    """The name a tool or prompt was called by: that of the entry the registry holds, which
    is a wrapper's (a mounted server's entry, a transformed tool) when it wraps this one."""
    params = ctx.request.params
    name = params.get("name")
    if name == "call_tool" and key != "call_tool":
        # Tool search's call_tool (server/tool_search.py) ran this tool: it is the one named.
        arguments = params.get("arguments")
        inner = arguments.get("name") if isinstance(arguments, dict) else None
        return inner if type(inner) is str else key
    return name if type(name) is str else key


def scope_set(scopes: Iterable[str]) -> frozenset[str]:
    if isinstance(scopes, str):
        scopes = scopes.split()  # scopes="notes:read notes:write", as a token spells them
    chosen = frozenset(scopes)
    for scope in chosen:
        if not isinstance(scope, str) or not scope or any(ch.isspace() for ch in scope):
            raise ValueError(f"A scope must be a non-empty string without spaces, not {scope!r}")
    return chosen


def list_entry(
    fn: UserFunction,
    fields: JSONDict,
    *,
    title: str | None = None,
    description: str | None = None,
    **optional: Any,
) -> JSONDict:
    """A list entry: ``fields`` first, then each optional field that is set, with the
    docstring's summary as the description unless one is given."""
    entry = dict(fields)
    if title:
        entry["title"] = title
    if description is None:
        description = parse_docstring(fn)[0]
    if description:
        entry["description"] = description
    for key, value in optional.items():
        if value:
            entry[key] = value
    return entry
