"""Tools: a function, its schemas, and the rules for turning its return value into a result.

Everything a call needs is prepared when the tool is registered: the argument validator,
the published ``inputSchema``/``outputSchema``, the HTTP header rules and the ``tools/list``
entry. A call is then: validate arguments, run the function, shape the result.

Failures split three ways (``docs/decisions.md``, "Tool errors"):

* arguments that do not fit ``inputSchema`` and :class:`ToolError` raised by the tool become
  an ``isError: true`` result the model can read and act on;
* any other exception from the tool is masked: ``isError: true`` with a reference id, the
  details only in the server log;
* protocol errors (:class:`MCPError`, such as a missing client capability) stay JSON-RPC
  errors.

A call that is awaited (``async def``, ``blocking``) may be bounded (``docs/state.md``,
"Timeouts"; ``docs/decisions.md``, "A timeout a function cannot obey"): past ``timeout``
seconds (the tool's own, else ``Server(tool_timeout=...)``) it is cancelled and answered
with a tool error naming the limit, and past ``max_concurrency`` calls at once in this
process the next waits its turn (the timeout counts from when it runs). A plain function
runs inline, where nothing can interrupt it, so the server's default leaves it be; given
its own ``timeout=`` it runs in the thread pool, where the answer is on time though the
thread finishes on its own (its ``ctx.cancelled`` says to stop).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import pydantic
from typing_extensions import Unpack

from ..._content import ContentBlock, is_content_block, json_text, json_value, text, to_blocks
from ..._invoking import is_async
from ..._types import JSONDict, Result, UserFunction
from ...protocol.capabilities import missing_capabilities
from ...protocol.errors import InternalError, MissingClientCapability, ToolError, new_ref
from ...protocol.handshake import wraps_output
from ...protocol.header_annotations import header_annotations
from ...protocol.records import Record
from ..context.context import Context
from ..context.rounds import REQUEST_STATE_KEEPERS, RequestStateKeeper
from ..schema.raw import RawSchema
from ..schema.signature import inspect_output, unchecked_output
from .catalogue import catalogue_meta
from .entry import FunctionEntry, InvalidArguments, Pool, called_name, list_entry
from .kinds import TOOL_NAME, TaskMode, error_result
from .options import ToolFields, check_timeout, refuse_unknown

if TYPE_CHECKING:  # compose/ sits above server/
    from ...compose.transform import ToolChanges, TransformedTool

logger = logging.getLogger("mcpserve")


class ToolResult(Record):
    """A result spelled out in full, for when a tool wants both text and structured data.

    >>> return ToolResult(content=["3 rows"], structured={"rows": 3})
    """

    __slots__ = ("content", "is_error", "meta", "structured")  # a Record: see protocol/records.py

    def __init__(
        self,
        content: list[Any] | None = None,
        structured: Any = None,
        is_error: bool = False,
        meta: JSONDict | None = None,
    ) -> None:
        self.content: list[Any] = [] if content is None else content
        self.structured = structured
        self.is_error = is_error
        self.meta = meta

    def to_wire(self) -> JSONDict:
        result: JSONDict = {"content": to_blocks(self.content)}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        if self.meta:
            result["_meta"] = dict(self.meta)
        return result


class Tool(FunctionEntry):
    """A registered tool. Build one with ``@server.tool`` or ``server.add_tool``."""

    #: Set by a tool that may run as a task (the tasks extension's ``TaskTool``).
    task_mode: TaskMode | None = None

    __slots__ = (
        "_turns",
        "header_params",
        "header_types",
        "max_concurrency",
        "output",
        "output_check",
        "raw_schema",
        "request_state",
        "requires",
        "timeout",
    )

    def __init__(self, fn: UserFunction, *, pool: Pool, **options: Unpack[ToolFields]) -> None:
        refuse_unknown(options, ToolFields, "Tool")
        name = options.get("name")
        name = fn.__name__ if name is None else name
        title, description = options.get("title"), options.get("description")
        annotations, icons, meta = (
            options.get("annotations"),
            options.get("icons"),
            catalogue_meta(options.get("meta"), options.get("tags"), options.get("version"), name),
        )
        blocking, requires = options.get("blocking"), options.get("requires")
        input_schema, output_schema = options.get("input_schema"), options.get("output_schema")
        scopes, request_state = options.get("scopes", ()), options.get("request_state", "sealed")
        if not TOOL_NAME.fullmatch(name):
            raise ValueError(
                f"Tool name {name!r} must be 1-128 characters of A-Z, a-z, 0-9, '_', '-' or '.'"
            )
        if request_state not in REQUEST_STATE_KEEPERS:
            raise ValueError(
                f'Tool {name!r}: request_state must be "sealed" or "handler", not {request_state!r}'
            )
        #: Seconds a call may run (None: the server's default, if any).
        self.timeout = check_timeout(options.get("timeout"), f"Tool {name!r}")
        #: Calls that run at once in this process (None: no limit).
        self.max_concurrency = _concurrency(options.get("max_concurrency"), name)
        self._turns: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        if self.timeout is not None and not is_async(fn):
            if blocking is False:
                raise ValueError(
                    f"Tool {name!r}: a plain function run on the event loop cannot be "
                    "interrupted, so it cannot have a timeout: drop blocking=False, or make it "
                    "async"
                )
            blocking = True  # off the loop, so the answer can come at its timeout
        super().__init__(fn, name, pool=pool, blocking=blocking, scopes=scopes)
        #: Who keeps the requestState of its rounds: mcpserve ("sealed") or the function.
        self.request_state: RequestStateKeeper = request_state
        # A published output_schema= replaces the return annotation: it is not read, so one
        # without a JSON form (a class of your own) does not stop the tool registering.
        self.output = (
            unchecked_output()
            if output_schema is not None
            else inspect_output(fn, content_types=(ContentBlock, ToolResult))
        )
        self.requires = requires
        schema = input_schema if input_schema is not None else self.arguments.input_schema
        if schema.get("type") != "object":
            raise ValueError(f"Tool {name!r}: inputSchema must have type 'object' at its root")
        #: A hand-written inputSchema, enforced instead of the function's own validation.
        self.raw_schema = RawSchema(name, schema) if input_schema is not None else None
        self.output_check = RawSchema(name, output_schema) if output_schema is not None else None
        try:
            annotated = header_annotations(schema)
        except ValueError as exc:
            raise ValueError(f"Tool {name!r}: {exc}") from None
        self.header_params: dict[str, str] = {prop: header for prop, header, _ in annotated}
        self.header_types: dict[str, str] = {prop: kind for prop, _, kind in annotated}
        fields: JSONDict = {"name": name, "inputSchema": schema}
        published_output = output_schema if output_schema is not None else self.output.schema
        if published_output is not None:
            fields["outputSchema"] = published_output
        self.wire = list_entry(
            fn,
            fields,
            title=title,
            description=description,
            annotations=annotations,
            icons=icons,
            _meta=meta,
        )

    @property
    def name(self) -> str:
        return self.key

    def transformed(self, **changes: Unpack[ToolChanges]) -> TransformedTool:
        """A new tool over the same function: renamed, redescribed, arguments hidden, fixed,
        given new defaults or narrowed (see :mod:`.transform`). Register it with
        ``server.add_tool(...)``; this one is left as it is."""
        from ...compose.transform import ToolTransform

        return ToolTransform(changes).apply(self)

    # -- one call (the steps are FunctionEntry's) ---------------------------------------------

    def run(self, arguments: Any, ctx: Context) -> Result | Awaitable[Result]:
        answer = super().run(arguments, ctx)
        if isinstance(answer, dict):  # answered already: inline, or refused before running
            return answer
        timeout = self.timeout if self.timeout is not None else ctx.runtime.tool_timeout
        if timeout is None and self.max_concurrency is None:
            return answer
        return self._bounded(answer, seconds=timeout, ctx=ctx)

    async def _bounded(
        self, answer: Awaitable[Result], *, seconds: float | None, ctx: Context
    ) -> Result:
        turns = self._turn_keeper()
        if turns is not None:
            try:
                await turns.acquire()
            except BaseException:  # cancelled while waiting its turn: it never runs
                close = getattr(answer, "close", None)
                if close is not None:
                    close()
                raise
        try:
            if seconds is None:
                return await answer
            limit = asyncio.timeout(seconds)
            try:
                async with limit:
                    return await answer
            except TimeoutError:
                if not limit.expired():
                    raise
            ctx.mark_cancelled()  # a thread still running reads ctx.cancelled
            return self._timed_out(seconds, ctx)
        finally:
            if turns is not None:
                turns.release()

    def _turn_keeper(self) -> asyncio.Semaphore | None:
        """This process's places for concurrent calls (one set per event loop)."""
        if self.max_concurrency is None:
            return None
        loop = asyncio.get_running_loop()
        if self._turns is None or self._turns[0] is not loop:
            self._turns = (loop, asyncio.Semaphore(self.max_concurrency))
        return self._turns[1]

    def _timed_out(self, timeout: float | None, ctx: Context) -> Result:
        message = (
            f"Tool {called_name(ctx, self.key)} did not finish within its timeout of "
            f"{timeout:g} seconds and was cancelled"
        )
        if ctx.task is not None:  # a task fails, with the reason as its error
            raise InternalError(message)
        return error_result(message)

    def admit(self, arguments: Any, ctx: Context) -> Any:
        if self.requires:
            missing = missing_capabilities(self.requires, ctx.client_capabilities)
            if missing:
                raise MissingClientCapability(missing)
        # A bad sealed requestState fails first; a handler's own is the handler's to judge.
        # By the name it was called by (called_name), read here without a call: every call.
        name = ctx.request.params.get("name", self.key)
        ctx.begin_rounds(name, arguments or {}, sealed=self.request_state == "sealed")
        if self.raw_schema is not None:
            problems = self.raw_schema.problems(arguments or {})
            if problems:
                raise InvalidArguments(problems)
        elif arguments and not self.arguments.param_names:
            # The published schema says additionalProperties: false; keep that promise.
            unexpected = ", ".join(sorted(arguments)[:10])
            raise InvalidArguments([f"this tool takes no arguments; got: {unexpected}"])
        return arguments

    def refuse(self, invalid: InvalidArguments, ctx: Context) -> JSONDict:
        return error_result(f"Invalid arguments for tool {called_name(ctx, self.key)}: {invalid}")

    def fail(self, exc: Exception, ctx: Context) -> JSONDict:
        if isinstance(exc, ToolError):
            return error_result(str(exc))
        ref = new_ref()
        name = called_name(ctx, self.key)
        logger.error("Tool %r failed (ref %s)", name, ref, exc_info=exc)
        return error_result(f"Tool {name} failed unexpectedly (ref {ref})")

    def shape(self, value: Any, ctx: Context | None = None) -> JSONDict:
        """Turn a return value into a ``CallToolResult`` body."""
        if type(value) is str and self.output_check is None and not self.output.structured:
            return {"content": [{"type": "text", "text": value}]}  # the commonest answer
        result = self._shaped(value, self.key if ctx is None else called_name(ctx, self.key))
        if (
            ctx is not None
            and ctx.request.session is not None
            and "structuredContent" in result
            and wraps_output(self.wire.get("outputSchema"))
        ):
            # The handshake era lists this tool's schema wrapped as {"result": ...}: every
            # structured result must be wrapped to fit it, an object included.
            result["structuredContent"] = {"result": result["structuredContent"]}
        return result

    def _shaped(self, value: Any, name: str) -> JSONDict:
        if isinstance(value, ToolResult):
            result = value.to_wire()
        elif _is_call_tool_result(value):
            result = dict(value)  # already CallToolResult-shaped: passes through untouched
        elif self.output_check is not None:
            structured = self._checked(json_value(value), name)
            return {"content": [text(json_text(structured))], "structuredContent": structured}
        elif not self.output.structured:
            return {"content": to_blocks(value)}
        else:
            try:
                structured = self.output.serialize(value)
            except pydantic.ValidationError as exc:
                raise self._invalid_result(str(exc), name) from None
            return {"content": [text(json_text(structured))], "structuredContent": structured}
        # A result spelled out by the tool: its structuredContent must still fit the schema.
        if not result.get("isError") and "outputSchema" in self.wire:
            if "structuredContent" not in result:
                raise self._invalid_result(
                    "no structuredContent, yet the tool has an outputSchema", name
                )
            result["structuredContent"] = self._checked(result["structuredContent"], name)
        return result

    def _checked(self, structured: Any, name: str) -> Any:
        if self.output_check is not None:
            problems = self.output_check.problems(structured)
            if problems:
                raise self._invalid_result("; ".join(problems), name)
            return structured
        try:
            return self.output.serialize(structured)
        except pydantic.ValidationError as exc:
            raise self._invalid_result(str(exc), name) from None

    def _invalid_result(self, why: str, name: str) -> InternalError:
        ref = new_ref()
        logger.error(
            "Tool %r returned a result that does not fit its output schema (ref %s): %s",
            name,
            ref,
            why,
        )
        return InternalError(f"Tool {name} returned an invalid result (ref {ref})")


def _concurrency(limit: int | None, name: str) -> int | None:
    if limit is not None and (type(limit) is not int or limit < 1):
        raise ValueError(f"Tool {name!r}: max_concurrency is a whole number of calls (1 or more)")
    return limit


def _is_call_tool_result(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    content = value.get("content")
    return isinstance(content, list) and all(is_content_block(block) for block in content)
