"""Dependencies: values a handler declares and the server provides, once per request.

::

    def get_db() -> Iterator[Database]:
        db = Database.connect()
        try:
            yield db
        finally:
            db.close()

    @server.tool
    def find(query: str, db: Annotated[Database, Depends(get_db)]) -> list[str]: ...

Theory of operation
-------------------
At registration, each ``Depends`` in a handler's signature becomes a :class:`Dependency`:
the function, its shape (how it is called: ``async def``, plain ``def``, ``@blocking`` in
the thread pool, each maybe a generator) and its own parameters, which may be a
``Context`` or further dependencies and nothing else. Mistakes (something not callable, a
parameter nothing can provide, a cycle) fail registration with one line naming the fix.
The parameters are set aside from the schema as the context is
(:func:`~mcpserve.server.schema.signature.inspect_arguments`), and a handler with
dependencies never answers inline; one without pays nothing.

Per call, :meth:`Dependencies.call` solves them after the arguments are validated and
before the function runs: each dependency is called at most once per request (a second
use, by the handler or by another dependency, gets the same value), through the server's
``dependency_overrides`` when it holds a replacement (:class:`DependencyOverrides`, which
reads each replacement when it is set, so a broken one fails the test that sets it). A
dependency that raises ends the
call: an :class:`~mcpserve.protocol.errors.MCPError` (or a tool's ``ToolError``) is its
answer; any other exception is logged with a reference and answered as an internal error
naming the dependency, never its traceback.

A generator dependency's code after ``yield`` is its teardown, run as a ``with`` block's
exit would be: it sees the exception the call raised, if any, at its ``yield``. Teardowns
run in reverse order of setup, after the response is written when the transport says it
will run them then (it sets ``request.after_response``: stdio and Streamable HTTP do), and
right after the function returns otherwise (in process, or when the call became a task and
its response went out long before). A failing teardown is logged; the response is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

from ..._invoking import Invoker, is_async, is_marked_blocking
from ...protocol.errors import InternalError, MCPError, ToolError, new_ref, reraise_unexpected
from ..context.context import Context
from ..schema.signature import inspect_arguments

if TYPE_CHECKING:  # the thread pool's module loads with the first blocking call
    from concurrent.futures import ThreadPoolExecutor

logger = logging.getLogger("mcpserve")

#: How a dependency is called; the ``_generator`` shapes also have a teardown.
Shape = Literal["async", "plain", "blocking", "async_generator", "generator", "blocking_generator"]


class Depends:
    """Marks a parameter the server provides by calling ``dependency`` once per request.

    >>> def find(query: str, db: Annotated[Database, Depends(get_db)]) -> list[str]: ...
    """

    __slots__ = ("dependency",)

    def __init__(self, dependency: Callable[..., Any]) -> None:
        if not callable(dependency):
            raise TypeError(
                f"Depends() takes the function that provides the value, not {dependency!r}: "
                "write Depends(get_db), without calling get_db"
            )
        self.dependency = dependency

    def __repr__(self) -> str:
        return f"Depends({name_of(self.dependency)})"


def name_of(fn: Callable[..., Any]) -> str:
    """A dependency's qualified name, as errors and logs call it."""
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else type(fn).__qualname__


class Dependency:
    """One dependency function, read once: how to call it and what it needs."""

    __slots__ = ("context_param", "fn", "name", "needs", "shape")

    def __init__(
        self,
        fn: Callable[..., Any],
        shape: Shape,
        context_param: str | None,
        needs: tuple[tuple[str, Dependency], ...],
    ) -> None:
        self.fn = fn
        self.name = name_of(fn)
        self.shape = shape
        self.context_param = context_param
        #: Its own dependencies: the parameter and what provides it.
        self.needs = needs

    def __repr__(self) -> str:
        return f"Dependency({self.name}, {self.shape})"


def shape_of(fn: Callable[..., Any]) -> Shape:
    call = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004
    if inspect.isasyncgenfunction(fn) or inspect.isasyncgenfunction(call):
        return "async_generator"
    blocking = is_marked_blocking(fn)
    if inspect.isgeneratorfunction(fn) or inspect.isgeneratorfunction(call):
        return "blocking_generator" if blocking else "generator"
    if is_async(fn):
        return "async"
    return "blocking" if blocking else "plain"


#: Dependencies already read, by function (overrides are read on first use, at a request).
_PLANS: dict[Callable[..., Any], Dependency] = {}
_PLANS_SIZE = 1024


def dependency_of(fn: Callable[..., Any], path: tuple[Callable[..., Any], ...] = ()) -> Dependency:
    """The :class:`Dependency` of ``fn``, its own dependencies read too; a ``TypeError``
    naming the fix for one that cannot be provided. ``path`` is who needs it (for cycles)."""
    if fn in path:
        cycle = " -> ".join(name_of(f) for f in (*path[path.index(fn) :], fn))
        raise TypeError(f"Dependency cycle: {cycle}; a dependency cannot need itself")
    try:
        planned = _PLANS.get(fn)
    except TypeError:  # an unhashable callable: read it afresh each time
        planned = None
    if planned is not None:
        return planned
    name = name_of(fn)
    spec = inspect_arguments(fn, context_type=Context, injected_type=Depends)
    for param in spec.input_schema.get("required", ()):
        raise TypeError(
            f"Dependency {name}() has the parameter {param!r}, which nothing provides: a "
            "dependency's parameters are a Context, Annotated[T, Depends(...)], or have defaults"
        )
    needs = tuple(
        (param, dependency_of(marker.dependency, (*path, fn)))
        for param, marker in spec.injected
        if isinstance(marker, Depends)
    )
    planned = Dependency(fn, shape_of(fn), spec.context_param, needs)
    with contextlib.suppress(TypeError):
        if len(_PLANS) < _PLANS_SIZE:
            _PLANS[fn] = planned
    return planned


class DependencyOverrides(MutableMapping[Callable[..., Any], Callable[..., Any]]):
    """``server.dependency_overrides``: a dependency, and what replaces it.

    A replacement is read when it is set, as a dependency is at registration: one that could
    never be called (a parameter nothing provides, a cycle) fails the line of the test that
    sets it, naming both functions, instead of every request it would have served.
    """

    __slots__ = ("_replacements",)

    def __init__(self) -> None:
        self._replacements: dict[Callable[..., Any], Callable[..., Any]] = {}

    def __setitem__(self, dependency: Callable[..., Any], replacement: Callable[..., Any]) -> None:
        where = f"dependency_overrides[{name_of(dependency)}]"
        if not callable(replacement):
            raise TypeError(
                f"{where} must be a function that provides the value, not {replacement!r}: "
                f"write lambda: {replacement!r} for a fixed value"
            )
        try:
            dependency_of(replacement)
        except TypeError as exc:
            raise TypeError(f"{where} = {name_of(replacement)}: {exc}") from None
        self._replacements[dependency] = replacement

    def __getitem__(self, dependency: Callable[..., Any]) -> Callable[..., Any]:
        return self._replacements[dependency]

    def get(self, dependency: Callable[..., Any], default: Any = None) -> Any:
        return self._replacements.get(dependency, default)

    def __delitem__(self, dependency: Callable[..., Any]) -> None:
        del self._replacements[dependency]

    def __iter__(self) -> Iterator[Callable[..., Any]]:
        return iter(self._replacements)

    def __len__(self) -> int:
        return len(self._replacements)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name_of(k)}: {name_of(v)}" for k, v in self._replacements.items())
        return f"DependencyOverrides({{{shown}}})"


class Dependencies:
    """A handler's dependencies, read at registration, and how one call solves them."""

    __slots__ = ("params", "pool")

    def __init__(
        self, injected: tuple[tuple[str, object], ...], pool: Callable[[], ThreadPoolExecutor]
    ) -> None:
        #: Each parameter the server provides, and what provides it.
        self.params = tuple(
            (param, dependency_of(marker.dependency))
            for param, marker in injected
            if isinstance(marker, Depends)
        )
        #: Where ``@blocking`` dependencies run: the pool of the server that registered them.
        self.pool = pool

    async def call(self, invoke: Invoker, kwargs: dict[str, object], ctx: Context) -> object:
        """Solve the dependencies into ``kwargs``, then call the function with them."""
        solved = Solved(ctx, self.pool)
        try:
            for param, dependency in self.params:
                kwargs[param] = await solved.value(dependency)
            return await invoke(kwargs)
        except BaseException as exc:  # a question (NeedInput) or a cancellation included
            solved.error = exc
            raise
        finally:
            if solved.teardowns:
                await solved.finish()


class Solved:
    """One request's dependencies: each value once, and the teardowns they left."""

    __slots__ = ("ctx", "error", "overrides", "pool", "teardowns", "values")

    def __init__(self, ctx: Context, pool: Callable[[], ThreadPoolExecutor]) -> None:
        self.ctx = ctx
        self.pool = pool
        self.overrides = ctx.runtime.dependency_overrides
        self.values: dict[Callable[..., Any], object] = {}
        #: Generator dependencies entered, in order, with the context manager to exit.
        self.teardowns: list[tuple[Dependency, Any]] = []
        #: What the call raised, for the teardowns to see at their ``yield``.
        self.error: BaseException | None = None

    async def value(self, dependency: Dependency) -> object:
        key = dependency.fn
        if key in self.values:
            return self.values[key]
        if self.overrides and (replacement := self.overrides.get(key)) is not None:
            dependency = self._replacement(dependency, replacement)
        args: dict[str, object] = {}
        if dependency.context_param is not None:
            args[dependency.context_param] = self.ctx
        for param, needed in dependency.needs:
            args[param] = await self.value(needed)
        try:
            value = await self._enter(dependency, args)
        except (MCPError, ToolError):
            raise  # an answer the dependency chose: a refusal, a tool error
        except Exception as exc:
            reraise_unexpected(exc)  # a test that asked sees the exception itself
            ref = new_ref()
            logger.error("Dependency %s failed (ref %s)", dependency.name, ref, exc_info=exc)
            raise InternalError(f"Dependency {dependency.name} failed (ref {ref})") from None
        self.values[key] = value
        return value

    @staticmethod
    def _replacement(dependency: Dependency, replacement: Callable[..., Any]) -> Dependency:
        try:
            return dependency_of(replacement)
        except TypeError as exc:  # put in a mapping that did not read it when it was set
            raise InternalError(
                f"The override of dependency {dependency.name} cannot be called: {exc}"
            ) from None

    async def _enter(self, dependency: Dependency, args: dict[str, object]) -> object:
        fn, shape = dependency.fn, dependency.shape
        if shape == "plain":
            return fn(**args)
        if shape == "async":
            return await fn(**args)
        if shape == "blocking":
            return await self._in_pool(functools.partial(fn, **args))
        entered: Any
        if shape == "async_generator":
            entered = contextlib.asynccontextmanager(fn)(**args)
            value = await entered.__aenter__()
        elif shape == "generator":
            entered = contextlib.contextmanager(fn)(**args)
            value = entered.__enter__()
        else:
            entered = contextlib.contextmanager(fn)(**args)
            value = await self._in_pool(entered.__enter__)
        self.teardowns.append((dependency, entered))
        return value

    async def _in_pool(self, job: Callable[[], object]) -> object:
        context = contextvars.copy_context()  # the caller's context variables travel along
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool(), context.run, job)

    async def finish(self) -> None:
        """Tear down now, or leave it to the transport to do after the response is
        written (when the call is still that response's, not a task's)."""
        pending = self.ctx.request.after_response
        if (
            pending is not None
            and self.ctx.task is None
            and not isinstance(self.error, asyncio.CancelledError)
        ):
            pending.append(self.close)
        else:
            await self.close()

    async def close(self) -> None:
        """Run the teardowns, last entered first; each failure is logged and the rest run."""
        error = self.error
        exc_info = (type(error), error, error.__traceback__) if error is not None else (None,) * 3
        while self.teardowns:
            dependency, entered = self.teardowns.pop()
            try:
                if dependency.shape == "async_generator":
                    await entered.__aexit__(*exc_info)
                elif dependency.shape == "generator":
                    entered.__exit__(*exc_info)
                else:
                    await self._in_pool(functools.partial(entered.__exit__, *exc_info))
            except Exception as exc:
                if exc is not error:
                    logger.error("Teardown of dependency %s failed", dependency.name, exc_info=exc)
