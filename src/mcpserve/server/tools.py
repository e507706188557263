"""Tools: a function, its schemas, and the rules for turning its return value into a result.

Everything a call needs is prepared when the tool is registered: the argument validator,
the published ``inputSchema``/``outputSchema``, the HTTP header rules and the ``tools/list``
entry. A call is then: validate arguments, run the function, shape the result.

Failures split three ways (CHECKLIST T16/T17 and §19-Q5):

* arguments that do not fit ``inputSchema`` and :class:`ToolError` raised by the tool become
  an ``isError: true`` result the model can read and act on;
* any other exception from the tool is masked: ``isError: true`` with a reference id, the
  details only in the server log;
* protocol errors (:class:`MCPError`, such as a missing client capability) stay JSON-RPC
  errors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pydantic

from ..protocol.capabilities import missing_capabilities
from ..protocol.errors import (
    InternalError,
    MCPError,
    MissingClientCapability,
    ToolError,
    new_ref,
)
from ..protocol.header_annotations import header_annotations
from ..protocol.records import Record
from .content import ContentBlock, is_content_block, json_text, json_value, text, to_blocks
from .context import Context
from .handlers import Invoker, is_synchronous, make_invoker
from .rounds import InputRequired, NeedInput
from .schema import ArgumentSpec, OutputSpec, inspect_arguments, inspect_output, parse_docstring

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

logger = logging.getLogger("mcpserve")

_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


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
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.content: list[Any] = [] if content is None else content
        self.structured = structured
        self.is_error = is_error
        self.meta = meta

    def to_wire(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": to_blocks(self.content)}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        if self.meta:
            result["_meta"] = dict(self.meta)
        return result


class _Answered(Exception):
    """A call that ends before the function runs, with this message as an error result."""


def error_result(message: str) -> dict[str, Any]:
    return {"content": [text(message)], "isError": True}


class Tool:
    """A registered tool. Build one with ``@server.tool`` or :meth:`Tool.from_function`."""

    # A plain class, as are the other registrations: compared by identity, and dataclass
    # method generation would cost a noticeable share of a stdio server's cold start.
    __slots__ = (
        "arguments",
        "fn",
        "header_params",
        "header_types",
        "invoke",
        "name",
        "output",
        "output_check",
        "raw_schema",
        "requires",
        "synchronous",
        "wire",
    )

    def __init__(
        self,
        *,
        name: str,
        fn: Callable[..., Any],
        arguments: ArgumentSpec,
        output: OutputSpec,
        invoke: Invoker,
        wire: dict[str, Any],
        requires: dict[str, Any] | None = None,
        header_params: dict[str, str] | None = None,
        header_types: dict[str, str] | None = None,
        raw_schema: RawSchema | None = None,
        output_check: RawSchema | None = None,
        synchronous: bool = False,
    ) -> None:
        self.name = name
        self.fn = fn
        self.arguments = arguments
        self.output = output
        self.invoke = invoke
        self.wire = wire
        self.requires = requires
        self.header_params: dict[str, str] = header_params or {}
        self.header_types: dict[str, str] = header_types or {}
        self.raw_schema = raw_schema
        self.output_check = output_check
        #: A plain function run inline: a call can never wait, so it can never be cancelled.
        self.synchronous = synchronous

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, fn={self.fn!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as if it were not registered."""
        return self.fn(*args, **kwargs)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        pool: Callable[[], ThreadPoolExecutor],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        blocking: bool | None = None,
        requires: dict[str, Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> Tool:
        name = fn.__name__ if name is None else name
        if not _TOOL_NAME.fullmatch(name):
            raise ValueError(
                f"Tool name {name!r} must be 1-128 characters of A-Z, a-z, 0-9, '_', '-' or '.'"
            )
        arguments = inspect_arguments(fn, context_type=Context, strict=False)
        output = inspect_output(fn, content_types=(ContentBlock, ToolResult))
        invoke = make_invoker(fn, blocking=blocking, pool=pool)
        schema = input_schema if input_schema is not None else arguments.input_schema
        if schema.get("type") != "object":
            raise ValueError(f"Tool {name!r}: inputSchema must have type 'object' at its root")
        raw_schema = RawSchema(name, schema) if input_schema is not None else None
        output_check = RawSchema(name, output_schema) if output_schema is not None else None
        try:
            annotated = header_annotations(schema)
        except ValueError as exc:
            raise ValueError(f"Tool {name!r}: {exc}") from None
        doc_description, _ = parse_docstring(fn)
        wire: dict[str, Any] = {"name": name}
        if title:
            wire["title"] = title
        description = description if description is not None else doc_description
        if description:
            wire["description"] = description
        wire["inputSchema"] = schema
        published_output = output_schema if output_schema is not None else output.schema
        if published_output is not None:
            wire["outputSchema"] = published_output
        if annotations:
            wire["annotations"] = annotations
        if icons:
            wire["icons"] = icons
        if meta:
            wire["_meta"] = meta
        return cls(
            name=name,
            fn=fn,
            arguments=arguments,
            output=output,
            invoke=invoke,
            wire=wire,
            requires=requires,
            header_params={prop: header for prop, header, _ in annotated},
            header_types={prop: kind for prop, _, kind in annotated},
            raw_schema=raw_schema,
            output_check=output_check,
            synchronous=is_synchronous(invoke),
        )

    async def call(self, arguments: Any, ctx: Context) -> dict[str, Any]:
        """Run the tool for one ``tools/call`` and return the ``CallToolResult`` body."""
        try:
            kwargs = self._bind(arguments, ctx)
            value = await self.invoke(kwargs)
        except (Exception, NeedInput) as exc:  # NeedInput is a BaseException (rounds.py)
            return self._failed(exc, ctx)
        return self._finished(value, ctx)

    def call_inline(
        self, arguments: Any, ctx: Context
    ) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """:meth:`call` for a :attr:`synchronous` tool, run here and now: no coroutine.

        Returns an awaitable only in the odd case of a plain function that hands back an
        awaitable (a coroutine made by a helper, say).
        """
        try:
            kwargs = self._bind(arguments, ctx)
            value = self.fn(**kwargs)
        except (Exception, NeedInput) as exc:  # NeedInput is a BaseException (rounds.py)
            return self._failed(exc, ctx)
        if hasattr(type(value), "__await__"):
            return self._finish_awaited(value, ctx)
        return self._finished(value, ctx)

    async def _finish_awaited(self, awaitable: Awaitable[Any], ctx: Context) -> dict[str, Any]:
        try:
            value = await awaitable
        except (Exception, NeedInput) as exc:  # NeedInput is a BaseException (rounds.py)
            return self._failed(exc, ctx)
        return self._finished(value, ctx)

    def _bind(self, arguments: Any, ctx: Context) -> dict[str, Any]:
        """Check and validate the arguments; the keyword arguments for the function.

        Raises :class:`_Answered` when the call ends before the function runs."""
        if self.requires:
            missing = missing_capabilities(self.requires, ctx.client_capabilities)
            if missing:
                raise MissingClientCapability(missing)
        ctx.begin_rounds(self.name, arguments or {})  # a bad requestState fails first
        if self.raw_schema is not None:
            problems = self.raw_schema.problems(arguments or {})
            if problems:
                raise _Answered(f"Invalid arguments for tool {self.name}: {problems}")
        elif arguments and not self.arguments.param_names:
            # The published schema says additionalProperties: false; keep that promise.
            unexpected = ", ".join(sorted(arguments)[:10])
            raise _Answered(f"Tool {self.name} takes no arguments; got: {unexpected}")
        try:
            kwargs = self.arguments.validate(arguments)
        except pydantic.ValidationError as exc:
            raise _Answered(describe_validation_error(self.name, exc)) from None
        if self.arguments.context_param is not None:
            kwargs[self.arguments.context_param] = ctx
        return kwargs

    def _failed(self, exc: Exception | NeedInput, ctx: Context) -> dict[str, Any]:
        """The result for a call that raised; protocol errors propagate."""
        if isinstance(exc, _Answered | ToolError):
            return error_result(str(exc))
        if isinstance(exc, NeedInput):  # the attempt ends here: ask, and run again on the retry
            return ctx.rounds.input_required(exc.requests)
        if isinstance(exc, MCPError):
            raise exc
        ref = new_ref()
        logger.error("Tool %r failed (ref %s)", self.name, ref, exc_info=exc)
        return error_result(f"Tool {self.name} failed unexpectedly (ref {ref})")

    def _finished(self, value: Any, ctx: Context) -> dict[str, Any]:
        if isinstance(value, InputRequired):
            return ctx.rounds.input_required(value.input_requests, value.state)
        return self.shape(value)

    def shape(self, value: Any) -> dict[str, Any]:
        """Turn a return value into a ``CallToolResult`` body."""
        if type(value) is str and self.output_check is None and not self.output.structured:
            return {"content": [{"type": "text", "text": value}]}  # the commonest answer
        if isinstance(value, ToolResult):
            result = value.to_wire()
        elif _is_call_tool_result(value):
            result = dict(value)  # already CallToolResult-shaped: passes through untouched
        elif self.output_check is not None:
            structured = self._checked(json_value(value))
            return {"content": [text(json_text(structured))], "structuredContent": structured}
        elif not self.output.structured:
            return {"content": to_blocks(value)}
        else:
            try:
                structured = self.output.serialize(value)
            except pydantic.ValidationError as exc:
                raise self._invalid_result(str(exc)) from None
            return {"content": [text(json_text(structured))], "structuredContent": structured}
        # A result spelled out by the tool: its structuredContent must still fit (T13).
        if not result.get("isError") and "outputSchema" in self.wire:
            if "structuredContent" not in result:
                raise self._invalid_result("no structuredContent, yet the tool has an outputSchema")
            result["structuredContent"] = self._checked(result["structuredContent"])
        return result

    def _checked(self, structured: Any) -> Any:
        if self.output_check is not None:
            problems = self.output_check.problems(structured)
            if problems:
                raise self._invalid_result(problems)
            return structured
        try:
            return self.output.serialize(structured)
        except pydantic.ValidationError as exc:
            raise self._invalid_result(str(exc)) from None

    def _invalid_result(self, why: str) -> InternalError:
        ref = new_ref()
        logger.error("Tool %r returned a result that does not fit its output schema (ref %s): "
                     "%s", self.name, ref, why)  # fmt: skip
        return InternalError(f"Tool {self.name} returned an invalid result (ref {ref})")


DIALECT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class RawSchema:
    """A hand-written JSON Schema: checked at registration, enforced on every call.

    Only the 2020-12 dialect is supported (CHECKLIST T08); ``$ref`` never leaves the
    document, since no retrieval is configured (T10).
    """

    def __init__(self, tool: str, schema: dict[str, Any]) -> None:
        import jsonschema

        dialect = schema.get("$schema", DIALECT_2020_12)
        if dialect.rstrip("#") != DIALECT_2020_12:
            raise ValueError(
                f"Tool {tool!r}: JSON Schema dialect {dialect!r} is not supported; "
                f"use {DIALECT_2020_12}"
            )
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"Tool {tool!r}: invalid JSON Schema: {exc.message}") from None
        self._validator = jsonschema.Draft202012Validator(schema)

    def problems(self, instance: Any) -> str:
        """Why ``instance`` does not fit, or ``""``."""
        errors = sorted(self._validator.iter_errors(instance), key=lambda e: list(e.path))[:10]
        return "; ".join(
            f"{'.'.join(map(str, error.path)) or 'arguments'}: {error.message}" for error in errors
        )


def _is_call_tool_result(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    content = value.get("content")
    return isinstance(content, list) and all(is_content_block(block) for block in content)


def describe_validation_error(tool: str, exc: pydantic.ValidationError) -> str:
    """A message a model can act on: which argument is wrong and why."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False)[:10]:
        location = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{location}: {error['msg']}")
    return f"Invalid arguments for tool {tool}: " + "; ".join(problems)
