"""Why a function cannot be registered, said so that its author can act on it.

Registration turns each parameter and return annotation into a JSON Schema (:mod:`.schema`).
When that fails, the error underneath speaks of pydantic's machinery (core schemas, config
flags, a documentation URL); the author needs the function, the parameter (or the return
annotation), the type, and what to write instead, in one line. So on that failure path only,
the annotations are tried again one at a time, then the parts of the one that fails (the
items of a ``list[...]``, the members of a union, the fields of a model, dataclass or
TypedDict), down to the smallest type that cannot become a schema, and a
:class:`RegistrationError` is raised ``from None``: there is no chain to read.

Nothing here runs while registration succeeds, and the module imports nothing heavy at
its top, so it costs nothing to import with the package.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import Annotated, Any, Literal

from ..._types import JSONDict, UserFunction
from .docstrings import unwrap

#: What the advice offers in place of a type that cannot become a schema.
SUPPORTED_TYPES = (
    "str, int, float, bool, a list or dict of those, a Literal or an Enum, a pydantic "
    "model, a dataclass or a TypedDict"
)
_ANY_ADVICE = "or annotate it Any and convert the JSON value yourself"
_MAX_DEPTH = 8  # how deep the search for the culprit goes into nested types


class RegistrationError(TypeError):
    """A function that cannot be registered as written.

    The message names the function, the parameter (or the return annotation) and the type,
    and says what to write instead. A ``TypeError``, as Python raises for a call that does
    not fit a signature.
    """


def function_name(fn: UserFunction) -> str:
    """``name()`` as its author wrote it: a partial's function, an object's class."""
    target = unwrap(fn)
    name = getattr(target, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    # A function defined inside another is named as written, not as test.<locals>.fn.
    return f"{name.rpartition('<locals>.')[2].removesuffix('.__call__')}()"


def context_without_annotation(fn: UserFunction, name: str) -> RegistrationError:
    """A ``ctx``/``context`` parameter nobody typed: it would be published as an argument."""
    return RegistrationError(
        f"{function_name(fn)}: parameter {name!r} has no annotation, so it would be published "
        f"as an argument every client must send; to receive the request context, annotate it "
        f"as Context ({name}: Context, with from mcpserve import Context)"
    )


# --------------------------------------------------------------------------- evaluating


def unresolved_annotations(fn: UserFunction, target: Any, exc: Exception) -> RegistrationError:
    """``typing.get_type_hints`` failed: find the annotation that cannot be evaluated."""
    namespace = getattr(target, "__globals__", None) or {}
    for name, annotation in _raw_annotations(target).items():
        problem = _evaluation_problem(annotation, namespace, fn)
        if problem is not None:
            return RegistrationError(f"{function_name(fn)}: {_subject(name)} {problem}")
    return RegistrationError(
        f"{function_name(fn)}: its annotations cannot be evaluated ({_first_line(exc)})"
    )


def _raw_annotations(target: Any) -> JSONDict:
    try:
        return dict(getattr(target, "__annotations__", None) or {})
    except NameError:
        # Python 3.14 evaluates annotations when they are read: read them as text instead.
        annotationlib: Any = importlib.import_module("annotationlib")
        return dict(annotationlib.get_annotations(target, format=annotationlib.Format.STRING))


def _evaluation_problem(
    annotation: Any, namespace: dict[str, object], fn: UserFunction
) -> str | None:
    holder = types.SimpleNamespace(__annotations__={"probe": annotation})
    try:
        typing.get_type_hints(holder, globalns=namespace, include_extras=True)
    except NameError as exc:
        missing = exc.name or str(exc)
        return (
            f"{describe(annotation)}, but {missing!r} is not defined in the module of "
            f"{function_name(fn)}: define or import {missing} there, at module level (a class "
            f"defined inside a function is not found once annotations are strings, as under "
            f"from __future__ import annotations)"
        )
    except Exception as exc:
        return (
            f"{describe(annotation)}, which Python cannot evaluate ({_first_line(exc)}); "
            f"write a type there"
        )
    return None


def _subject(name: str) -> str:
    return "the return annotation is" if name == "return" else f"parameter {name!r} is annotated"


# --------------------------------------------------------------------------- schemas


def unsupported_parameter(
    fn: UserFunction, name: str, annotation: Any, exc: Exception
) -> RegistrationError:
    """A parameter whose type has no JSON Schema."""
    return RegistrationError(
        f"{function_name(fn)}: {_subject(name)} {_why(annotation, 'validation', exc)}. "
        f"Use a type that can: {SUPPORTED_TYPES}; {_ANY_ADVICE} (a tool can describe it "
        f"with input_schema=)"
    )


def unsupported_return(fn: UserFunction, annotation: Any, exc: Exception) -> RegistrationError:
    """A return annotation that has no JSON Schema."""
    return RegistrationError(
        f"{function_name(fn)}: {_subject('return')} {_why(annotation, 'serialization', exc)}. "
        f"Return a type that can: {SUPPORTED_TYPES}; or annotate the return Any (a tool can "
        f"publish output_schema= instead)"
    )


def schema_error(annotation: Any, mode: Literal["validation", "serialization"]) -> Exception | None:
    """Why ``annotation`` has no JSON Schema, or ``None`` when it has one."""
    from pydantic import TypeAdapter

    from .generator import CleanJsonSchemaGenerator

    try:
        TypeAdapter(annotation).json_schema(mode=mode, schema_generator=CleanJsonSchemaGenerator)
    except Exception as exc:
        return exc
    return None


def _why(annotation: Any, mode: Literal["validation", "serialization"], exc: Exception) -> str:
    return f"{describe(annotation)}, and {no_schema_reason(annotation, mode, exc)}"


def no_schema_reason(
    annotation: Any, mode: Literal["validation", "serialization"], exc: Exception
) -> str:
    """Why ``annotation`` has no JSON Schema, as a clause: the part of it that fails, and why."""
    found = _culprit(annotation, mode, depth=0, seen=set())
    if found is None:  # fails only together with other annotations: say what failed
        return f"it cannot become a JSON schema ({_reason(annotation, exc)})"
    culprit, where, error = found
    if culprit is _strip(annotation) and not where:
        return f"it cannot become a JSON schema: {_reason(culprit, error)}"
    place = f" ({where})" if where else ""
    return f"{describe(culprit)}{place} cannot become a JSON schema: {_reason(culprit, error)}"


def _culprit(
    annotation: Any, mode: Literal["validation", "serialization"], *, depth: int, seen: set[int]
) -> tuple[Any, str, Exception] | None:
    """The innermost part of ``annotation`` that has no schema: (type, where, error)."""
    error = schema_error(annotation, mode)
    if error is None:
        return None
    bare = _strip(annotation)
    if depth < _MAX_DEPTH and id(bare) not in seen:
        seen.add(id(bare))
        for part, where in _parts(bare):
            inner = _culprit(part, mode, depth=depth + 1, seen=seen)
            if inner is not None:
                return inner[0], inner[1] or where, inner[2]
    return bare, "", error


def _parts(tp: Any) -> list[tuple[Any, str]]:
    """The types ``tp`` is made of, each with where it sits (for fields)."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return []
    if origin is not None:
        return [(arg, "") for arg in typing.get_args(tp) if _is_type_like(arg)]
    if not isinstance(tp, type):
        return []
    fields: dict[str, object] = {}
    model_fields = getattr(tp, "__pydantic_fields__", None)
    if isinstance(model_fields, dict) and not dataclasses.is_dataclass(tp):
        fields = {name: info.annotation for name, info in model_fields.items()}
    elif dataclasses.is_dataclass(tp) or typing.is_typeddict(tp):
        try:
            fields = typing.get_type_hints(tp, include_extras=True)
        except Exception:
            return []
    return [(hint, f"field {name!r} of {tp.__qualname__}") for name, hint in fields.items()]


def _is_type_like(value: Any) -> bool:
    return isinstance(value, type | typing.ForwardRef) or typing.get_origin(value) is not None


def _strip(tp: Any) -> Any:
    while typing.get_origin(tp) is Annotated:
        tp = tp.__origin__
    return tp


def _reason(tp: Any, error: Exception) -> str:
    code = getattr(error, "code", None)
    if code == "typed-dict-version":
        return "typing.TypedDict works here only from Python 3.12; use typing_extensions.TypedDict"
    if code == "class-not-fully-defined" or type(error).__name__ == "PydanticUndefinedAnnotation":
        name = getattr(_strip(tp), "__qualname__", describe(tp))
        missing = getattr(error, "name", None)
        named = f" ({missing})" if isinstance(missing, str) and missing else ""
        return (
            f"it refers to a name that is not defined yet{named}; define it, then call "
            f"{name}.model_rebuild()"
        )
    if code in ("schema-for-unknown-type", "invalid-for-json-schema"):
        return "there is no JSON form for its values"
    return _first_line(error)


def _first_line(error: BaseException) -> str:
    lines = [
        line.strip()
        for line in str(error).splitlines()
        if line.strip() and not line.strip().startswith("For further information")
    ]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


# --------------------------------------------------------------------------- naming types


def describe(tp: Any) -> str:
    """A type as its author would write it: ``list[Thing]``, ``int | None``, ``Shelf``."""
    if isinstance(tp, str):
        return tp
    if isinstance(tp, typing.ForwardRef):
        return tp.__forward_arg__
    if tp is None or tp is types.NoneType:
        return "None"
    if tp is Any:
        return "Any"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Annotated:
        return describe(_strip(tp))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(describe(arg) for arg in args)
    if origin is Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if origin is not None:
        name = getattr(origin, "__qualname__", None) or str(origin).removeprefix("typing.")
        shown = [
            f"[{', '.join(map(describe, arg))}]" if isinstance(arg, list) else describe(arg)
            for arg in args
        ]
        return f"{name}[{', '.join(shown)}]" if shown else name
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp)
