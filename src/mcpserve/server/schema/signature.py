"""Function signatures to JSON Schema, argument validators and result serializers.

Theory of operation
-------------------
All the expensive work happens once, when a tool, prompt or resource template is registered.

:func:`inspect_arguments` resolves the hints with ``typing.get_type_hints`` (so modules using
``from __future__ import annotations`` work), sets the context parameter aside and builds a
functional ``TypedDict`` with one key per parameter; defaults and docstring descriptions ride
along as ``Field(default=..., description=...)``. A TypedDict rather than a model because
pydantic-core validates it straight into the kwargs ``dict``: no model instance to unpack and
no clash between parameter names (``json``, ``schema``, ``model_*``) and ``BaseModel``.

Schemas come from pydantic's generator, cleaned as :mod:`.json_schema` describes (titles only
where users set them, ``$ref``s inlined, flat ``Optional`` as a ``type`` list).

:func:`inspect_output` classifies the return annotation once and keeps one ``TypeAdapter``.

An annotation that cannot be evaluated or has no JSON Schema, and a ``ctx``/``context``
parameter left without an annotation, fail registration with one line naming the function,
the parameter and the type (:mod:`.annotation_errors`, loaded only then).

Per call, :meth:`ArgumentSpec.validate` is one pydantic-core call. Lax mode validates the
decoded Python dict directly. Strict mode re-encodes the arguments with orjson and validates
them as JSON: pydantic's *Python* strict mode demands real instances (an ``Enum`` member, a
``datetime``, a dataclass object) that a JSON payload can never hold, while its JSON strict mode
has exactly the semantics a wire protocol wants.
"""

from __future__ import annotations

import collections.abc as abc
import copy
import functools
import inspect
import types
import typing
from collections.abc import Callable, Hashable, Mapping
from typing import Annotated, Any, NotRequired, Required, cast

import orjson
from typing_extensions import (
    TypedDict,  # pydantic rejects typing's before Python 3.12
    TypeIs,
)

from ..._types import JSONDict, JSONValue, UserFunction
from .docstrings import parse_docstring, remember_last, unwrap
from .json_schema import clean_schema

if typing.TYPE_CHECKING:
    # pydantic's validation and schema machinery loads with the first schema built (a
    # registration), not with ``import mcpserve``.
    from pydantic import TypeAdapter
    from pydantic.fields import FieldInfo

__all__ = [
    "ArgumentSpec",
    "Header",
    "OutputSpec",
    "inspect_arguments",
    "inspect_output",
    "parse_docstring",
]

#: A function's parameters as registration reads them: (name, annotation, default,
#: description). An annotation is any typing form, which pydantic's own API takes as ``Any``.
_Shape = list[tuple[str, Any, object, str | None]]


class Header:
    """Marks a parameter as mirrored in an HTTP header: ``Annotated[str, Header("Region")]``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Header({self.name!r})"


# --------------------------------------------------------------------------- arguments


@remember_last
def _hints(fn: UserFunction) -> dict[str, Any]:
    """The function's resolved type hints (a shared dict: read it, do not change it)."""
    target = unwrap(fn)
    if inspect.isclass(target):
        target = target.__init__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        from .errors import unresolved_annotations

        raise unresolved_annotations(fn, target, exc) from None


def _strip_annotated(tp: Any) -> tuple[object, tuple[object, ...]]:
    if typing.get_origin(tp) is Annotated:
        return tp.__origin__, tp.__metadata__
    return tp, ()


def _is_union(tp: object) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _is_context(tp: object, context_type: type) -> bool:
    tp, _ = _strip_annotated(tp)
    if _is_union(tp):
        members = [arg for arg in typing.get_args(tp) if arg is not types.NoneType]
        return len(members) == 1 and _is_context(members[0], context_type)
    tp = typing.get_origin(tp) or tp  # a generic Context[State] is still a Context
    return isinstance(tp, type) and issubclass(tp, context_type)


#: Names that mean the request context: unannotated, they are a mistake, not an argument.
_CONTEXT_NAMES = frozenset({"ctx", "context"})


def _header_of(tp: object) -> str | None:
    bare, metadata = _strip_annotated(tp)
    # Also look inside unions, for `Annotated[str, Header("X")] | None`.
    for member in typing.get_args(bare) if _is_union(bare) else ():
        metadata += _strip_annotated(member)[1]
    return next((meta.name for meta in metadata if isinstance(meta, Header)), None)


class ArgumentSpec:
    """What registration learned about a function's parameters."""

    # Plain classes here and in the other registration records: dataclass method generation
    # would cost a noticeable share of a stdio server's cold start, and they need none of it.
    __slots__ = (
        "_validate_json",
        "_validate_python",
        "context_param",
        "injected",
        "input_schema",
        "param_names",
    )

    def __init__(
        self,
        input_schema: JSONDict,
        context_param: str | None,
        param_names: tuple[str, ...],
        validate_python: Callable[[object], object],
        validate_json: Callable[[bytes], object] | None,
    ) -> None:
        self.input_schema = input_schema
        self.context_param = context_param
        self.param_names = param_names
        self._validate_python = validate_python
        self._validate_json = validate_json
        #: Parameters the server provides (``Annotated[T, Depends(...)]``): each name and
        #: its marker, set aside from the schema like the context.
        self.injected: tuple[tuple[str, object], ...] = ()

    def __repr__(self) -> str:
        return f"ArgumentSpec(param_names={self.param_names!r})"

    def with_schema(self, input_schema: JSONDict) -> ArgumentSpec:
        """The same parameters and validators, published with ``input_schema``."""
        return ArgumentSpec(
            input_schema,
            self.context_param,
            self.param_names,
            self._validate_python,
            self._validate_json,
        )

    def validate(self, arguments: Mapping[str, JSONValue] | None) -> JSONDict:
        """Validate and coerce; returns kwargs for the function (without the context param).
        Raises pydantic.ValidationError on bad input. None means {}."""
        if arguments is None:
            arguments = {}
        if self._validate_json is not None:
            try:
                encoded = orjson.dumps(arguments)
            except orjson.JSONEncodeError:
                # Not JSON-shaped, so it came from Python code: Python strict mode fits.
                return cast(JSONDict, self._validate_python(arguments))
            return cast(JSONDict, self._validate_json(encoded))
        return cast(JSONDict, self._validate_python(arguments))


def inspect_arguments(
    fn: UserFunction,
    *,
    context_type: type | None = None,
    injected_type: type | None = None,
    strict: bool = False,
) -> ArgumentSpec:
    """Build the input schema and validator for ``fn``'s parameters (once, at registration).

    A parameter annotated ``Annotated[T, marker]`` with a marker of ``injected_type`` is the
    server's to provide, like the context: it is left out of the schema and listed in
    :attr:`ArgumentSpec.injected`.
    """
    hints = _hints(fn)
    _, param_docs = parse_docstring(fn)
    context_param: str | None = None
    injected: list[tuple[str, object]] = []
    headers: dict[str, str] = {}
    # (name, annotation, default, description) per parameter; also the cache key.
    shape: _Shape = []
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"{fn!r}: parameter {name!r} is {param.kind.description}; arguments arrive by "
                "name, so only ordinary and keyword-only parameters are supported"
            )
        if name not in hints and name in _CONTEXT_NAMES and context_type is not None:
            from .errors import context_without_annotation

            raise context_without_annotation(fn, name)
        annotation = hints.get(name, Any)
        if context_type is not None and _is_context(annotation, context_type):
            if context_param is not None:
                raise TypeError(f"{fn!r} has two context parameters: {context_param}, {name}")
            context_param = name
            continue
        if injected_type is not None:
            marker = _marker_of(annotation, param.default, injected_type, fn, name)
            if marker is not None:
                injected.append((name, marker))
                continue
        if (header := _header_of(annotation)) is not None:
            headers[name] = header
        description = param_docs.get(name)
        if description is not None and any(
            _is_field_info(meta) and meta.description is not None
            for meta in _strip_annotated(annotation)[1]
        ):
            description = None  # Field(description=...) wins over the docstring
        shape.append((name, annotation, param.default, description))

    # The default's type is part of the key: 1 == 1.0 == True, but their schemas differ.
    key: Hashable = (tuple((*entry, type(entry[2])) for entry in shape), context_param, strict)
    try:
        cached = _SPEC_CACHE.get(key)
    except TypeError:  # an unhashable default or annotation: build this one afresh
        key, cached = None, None
    if cached is not None:
        # Same parameters, types, defaults and descriptions: the same schema and validator.
        spec = cached.with_schema(_copy_json(cached.input_schema))
    else:
        try:
            spec = _build_arguments(_typed_fields(shape), headers, context_param, strict)
        except Exception as exc:
            raise _unsupported_parameters(fn, shape, exc) from None
        if key is not None and len(_SPEC_CACHE) < _SPEC_CACHE_SIZE:
            _SPEC_CACHE[key] = spec
        if injected:  # the cached spec stays free of this function's markers
            spec = spec.with_schema(spec.input_schema)
    spec.injected = tuple(injected)
    return spec


def _marker_of(
    annotation: object, default: object, marker_type: type, fn: UserFunction, name: str
) -> object | None:
    """The ``marker_type`` in the parameter's ``Annotated`` metadata, or None. A marker given
    as the default instead is a mistake with a one-line fix."""
    for meta in _strip_annotated(annotation)[1]:
        if isinstance(meta, marker_type):
            return meta
    if isinstance(default, marker_type):
        raise TypeError(
            f"{getattr(fn, '__qualname__', fn)!r}: parameter {name!r} has {default!r} as its "
            f"default; write it in the annotation instead: {name}: Annotated[T, {default!r}]"
        )
    return None


def _unsupported_parameters(fn: UserFunction, shape: _Shape, exc: Exception) -> Exception:
    """The one-line error naming the parameter whose type has no schema."""
    from .errors import schema_error, unsupported_parameter

    for name, annotation, _, _ in shape:
        if schema_error(annotation, "validation") is not None:
            return unsupported_parameter(fn, name, annotation, exc)
    return exc  # each type works alone: not a problem of one annotation, so keep pydantic's


def _copy_json(value: JSONDict) -> JSONDict:
    try:
        return cast(JSONDict, orjson.loads(orjson.dumps(value)))  # ~10x deepcopy's speed
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, say
        return copy.deepcopy(value)


def _is_field_info(value: object) -> TypeIs[FieldInfo]:
    # pydantic.fields is imported here, not at the top: it pulls in pydantic.types and
    # more, which `import mcpserve` should not pay for before any tool is registered.
    from pydantic.fields import FieldInfo

    return isinstance(value, FieldInfo)


def _typed_fields(shape: _Shape) -> dict[str, object]:
    """TypedDict fields for the parameters: defaults and descriptions ride on ``Field``."""
    from pydantic import Field  # see _is_field_info

    fields: dict[str, object] = {}
    for name, annotation, default, description in shape:
        extra: dict[str, Any] = {}  # keyword arguments of pydantic.Field
        if default is not inspect.Parameter.empty:
            extra["default"] = default
        if description is not None:
            extra["description"] = description
        if extra:
            annotation = Annotated[annotation, Field(**extra)]
        fields[name] = NotRequired[annotation] if "default" in extra else Required[annotation]
    return fields


#: Argument specs by parameter shape: servers often register many tools alike.
_SPEC_CACHE: dict[Hashable, ArgumentSpec] = {}
_SPEC_CACHE_SIZE = 1024


def _build_arguments(
    fields: dict[str, object], headers: dict[str, str], context_param: str | None, strict: bool
) -> ArgumentSpec:
    if not fields:  # nothing to validate (most resources, many tools): no pydantic at all
        return ArgumentSpec(_no_arguments_schema(), context_param, (), _no_arguments, None)
    from pydantic import ConfigDict, TypeAdapter

    from .generator import CleanJsonSchemaGenerator

    arguments_type: Any = cast(Any, TypedDict)("Arguments", fields)
    # In strict mode this config only governs the Python-object fallback in validate().
    arguments_type.__pydantic_config__ = ConfigDict(strict=strict, extra="ignore")
    adapter: TypeAdapter[Any] = TypeAdapter(arguments_type)
    cleaned = clean_schema(adapter.json_schema(schema_generator=CleanJsonSchemaGenerator))

    input_schema: JSONDict = {"type": "object"}
    if properties := cleaned.get("properties", {}):
        for name, header in headers.items():
            properties[name]["x-mcp-header"] = header
        input_schema["properties"] = properties
        input_schema.update((key, cleaned[key]) for key in ("required", "$defs") if key in cleaned)
    else:
        input_schema = _no_arguments_schema()
    return ArgumentSpec(
        input_schema=input_schema,
        context_param=context_param,
        param_names=tuple(fields),
        validate_python=adapter.validator.validate_python,
        validate_json=adapter.validator.validate_json if strict else None,
    )


def _no_arguments_schema() -> JSONDict:
    # "properties" although empty: some clients (smolagents' adapter, for one) fail on an
    # object schema without it, and the official SDKs always publish it.
    return {"type": "object", "properties": {}, "additionalProperties": False}


def _no_arguments(arguments: object) -> JSONDict:
    # Extra arguments are dropped, as the TypedDict validator's extra="ignore" would; a tool
    # refuses them before validating (its schema says additionalProperties: false).
    return {}


# --------------------------------------------------------------------------- output


@functools.cache
def _any_adapter() -> TypeAdapter[Any]:
    # Built on first use, not at import: pydantic's first validator scans installed
    # packages for plugins, which `import mcpserve` should not pay for.
    from pydantic import TypeAdapter

    return TypeAdapter(Any)


_SEQUENCE_ORIGINS = (list, tuple, set, frozenset, abc.Sequence, abc.Iterable, abc.Collection)
_MAPPING_ORIGINS = (dict, abc.Mapping, abc.MutableMapping)


class OutputSpec:
    """What registration learned about a function's return annotation."""

    __slots__ = ("_adapter", "_check", "schema", "structured")

    def __init__(
        self,
        schema: JSONDict | None,
        structured: bool,
        adapter: TypeAdapter[Any],
        check: bool = False,
    ) -> None:
        self.schema = schema
        self.structured = structured
        self._adapter = adapter
        self._check = check

    def __repr__(self) -> str:
        return f"OutputSpec(structured={self.structured!r}, schema={self.schema!r})"

    def serialize(self, value: object) -> object:
        """A JSON-able copy of ``value``, checked against the return annotation when that has
        a schema (raises pydantic.ValidationError if it does not fit)."""
        if self._check:
            value = self._adapter.validate_python(value)
        # by_alias: the published outputSchema names fields by their aliases too.
        return self._adapter.dump_python(value, mode="json", by_alias=True)


def _is_content(tp: object, content_types: tuple[type, ...]) -> bool:
    tp, _ = _strip_annotated(tp)
    if _is_union(tp) or typing.get_origin(tp) in _SEQUENCE_ORIGINS:
        return any(_is_content(arg, content_types) for arg in typing.get_args(tp))
    return isinstance(tp, type) and issubclass(tp, content_types)


def _is_loose(tp: object) -> bool:
    if tp is Any or tp is object:
        return True
    if (typing.get_origin(tp) or tp) not in _MAPPING_ORIGINS:
        return False
    args = typing.get_args(tp)
    return len(args) != 2 or args[1] in (Any, object)


def inspect_output(fn: UserFunction, *, content_types: tuple[type, ...] = ()) -> OutputSpec:
    """Classify ``fn``'s return annotation: unstructured, free-form structured, or typed."""
    annotation = _hints(fn).get("return", types.NoneType)
    bare, _ = _strip_annotated(annotation)
    if bare in (types.NoneType, str) or (content_types and _is_content(bare, content_types)):
        return OutputSpec(schema=None, structured=False, adapter=_any_adapter())
    if _is_loose(bare):
        return OutputSpec(schema=None, structured=True, adapter=_any_adapter())
    try:
        from pydantic import TypeAdapter

        from .generator import CleanJsonSchemaGenerator

        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        generated = adapter.json_schema(
            mode="serialization", schema_generator=CleanJsonSchemaGenerator
        )
    except Exception as exc:
        from .errors import unsupported_return

        raise unsupported_return(fn, annotation, exc) from None
    return OutputSpec(schema=clean_schema(generated), structured=True, adapter=adapter, check=True)


def unchecked_output() -> OutputSpec:
    """For a tool that publishes its own ``output_schema=``: the return annotation is not
    read, and values are checked against that schema instead."""
    return OutputSpec(schema=None, structured=True, adapter=_any_adapter())
