"""An operation's inputs as one tool's arguments, and those arguments back as an HTTP request.

Every parameter (``path``, ``query``, ``header``, ``cookie``) is an argument. A request
body whose schema is an object with ``properties`` (and no ``allOf``/``anyOf``/``oneOf`` or
``additionalProperties`` beside them) is spread: each property is an argument, except
``readOnly`` ones, which a request does not send. Any other body (an array, a union, a
free-form object) is one argument, ``body``.

Argument names are the parameter and property names, with each run of characters outside
``A-Z a-z 0-9 _ . -`` replaced by ``_`` and cut to 64 (what model providers accept as a
property name). When two want the same name, the first in the order path, query, header,
cookie, body keeps it and each later one is prefixed with where it goes: a path parameter
``id`` and a body property ``id`` are ``id`` and ``body_id`` (then ``body_id_2``, ... if
that is taken too). ``docs/decisions.md``, "Arguments of an OpenAPI operation".

Values are serialized as the OpenAPI ``style``/``explode`` of each parameter says (path
``simple``, ``label``, ``matrix``; query ``form``, ``spaceDelimited``, ``pipeDelimited``,
``deepObject``; header ``simple``; cookie ``form``); a parameter described by ``content``
instead of ``schema`` is sent as JSON text. A path value is percent-encoded whole, so it
stays one path segment (``..`` included). Bodies are sent as JSON, as
``application/x-www-form-urlencoded`` or as ``text/plain``, with the media type the
document names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import quote, urlencode

import orjson

from ..._types import JSONDict
from .schemas import Translator, UnsupportedSchema, follow_refs

Location = Literal["path", "query", "header", "cookie", "body"]
_ORDER: tuple[Location, ...] = ("path", "query", "header", "cookie", "body")
_DEFAULT_STYLE = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
#: Header parameters the OpenAPI specification says to ignore: the HTTP layer owns them.
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_UNSAFE_ARGUMENT = re.compile(r"[^A-Za-z0-9_.\-]+")
_COOKIE_SAFE = re.compile(r"[A-Za-z0-9!#$%&'()*+\-./:<=>?@\[\]^_`{|}~]*")
_FORM = "application/x-www-form-urlencoded"
_TEMPLATE_VARIABLE = re.compile(r"\{([^{}]+)\}")


class Argument:
    """One argument of the tool, and where its value goes in the request."""

    __slots__ = ("as_json", "explode", "location", "name", "style", "wire_name")

    def __init__(
        self,
        name: str,
        location: Location,
        wire_name: str,
        *,
        style: str = "",
        explode: bool = False,
        as_json: bool = False,
    ) -> None:
        self.name = name
        self.location: Location = location
        #: The parameter's or body property's own name ("" for a whole body).
        self.wire_name = wire_name
        self.style = style
        self.explode = explode
        self.as_json = as_json


class Body:
    """How the request body is sent: its media type, and whether it was spread."""

    __slots__ = ("kind", "media_type", "required", "spread")

    def __init__(
        self,
        media_type: str,
        kind: Literal["json", "form", "text"],
        *,
        spread: bool,
        required: bool,
    ) -> None:
        self.media_type = media_type
        self.kind = kind
        self.spread = spread
        self.required = required


class Request:
    """What :meth:`Plan.request` builds: everything but the method and the base URL."""

    __slots__ = ("content", "headers", "params", "path")

    def __init__(
        self,
        path: str,
        params: list[tuple[str, str]],
        headers: dict[str, str],
        content: bytes | None,
    ) -> None:
        self.path = path
        self.params = params
        self.headers = headers
        self.content = content


class Plan:
    """An operation's arguments and how to turn them into a request (built once)."""

    __slots__ = ("arguments", "body", "input_schema", "path")

    def __init__(
        self, path: str, arguments: list[Argument], body: Body | None, input_schema: JSONDict
    ) -> None:
        self.path = path
        self.arguments = arguments
        self.body = body
        self.input_schema = input_schema

    def request(self, values: JSONDict) -> Request:
        path = self.path
        params: list[tuple[str, str]] = []
        headers: dict[str, str] = {}
        cookies: list[str] = []
        spread: JSONDict = {}
        whole: Any = _ABSENT
        for argument in self.arguments:
            value = values.get(argument.name, _ABSENT)
            if value is _ABSENT:
                continue
            where = argument.location
            if where == "body":
                if argument.wire_name:
                    spread[argument.wire_name] = value
                else:
                    whole = value
            elif value is None:
                continue  # a null parameter is one left out
            elif where == "path":
                path = path.replace("{" + argument.wire_name + "}", _path_value(argument, value))
            elif where == "query":
                params.extend(_query_pairs(argument, value))
            elif where == "header":
                headers[argument.wire_name] = _joined(argument, value)
            else:
                cookies.append(f"{argument.wire_name}={_cookie_value(_joined(argument, value))}")
        if cookies:
            headers["Cookie"] = "; ".join(cookies)
        content = None
        body = self.body
        if body is not None and (spread or whole is not _ABSENT or body.required):
            content = _encode_body(body, spread if body.spread else whole)
            headers["Content-Type"] = body.media_type
        return Request(path, params, headers, content)


_ABSENT: Any = object()


def build_plan(
    translator: Translator,
    document: JSONDict,
    path: str,
    path_item: JSONDict,
    operation: JSONDict,
) -> Plan:
    """The arguments of one operation (raises :class:`UnsupportedSchema` when it has an input
    this module cannot send)."""
    properties: list[tuple[Location, str, JSONDict, bool]] = []
    arguments: list[Argument] = []
    for parameter in _parameters(document, path_item, operation):
        where: Location = parameter["in"]
        name: str = parameter["name"]
        style = parameter.get("style", _DEFAULT_STYLE[where])
        explode = parameter.get("explode", style == "form")
        schema, as_json = _parameter_schema(translator, document, parameter)
        required = where == "path" or parameter.get("required") is True
        properties.append((where, name, schema, required))
        arguments.append(Argument("", where, name, style=style, explode=explode, as_json=as_json))
    body = None
    if "requestBody" in operation:
        body, body_properties = _body(translator, document, operation["requestBody"])
        for name, schema, required in body_properties:
            properties.append(("body", name, schema, required))
            arguments.append(Argument("", "body", name if body.spread else ""))
    declared = {name for where, name, _, _ in properties if where == "path"}
    if missing := [name for name in _TEMPLATE_VARIABLE.findall(path) if name not in declared]:
        raise UnsupportedSchema(f"the path names {missing} but no such path parameter is declared")
    named = _argument_names([(where, name) for where, name, _, _ in properties])
    schema_properties: JSONDict = {}
    required_names: list[str] = []
    for argument, name, (_, _, schema, required) in zip(arguments, named, properties, strict=True):
        argument.name = name
        schema_properties[name] = schema
        if required:
            required_names.append(name)
    input_schema: JSONDict = {"type": "object", "properties": schema_properties}
    if required_names:
        input_schema["required"] = required_names
    if not schema_properties:
        input_schema["additionalProperties"] = False  # as a function without parameters
    return Plan(path, arguments, body, translator.finish(input_schema))


def _parameters(document: JSONDict, path_item: JSONDict, operation: JSONDict) -> list[JSONDict]:
    """The operation's parameters: the path item's, overridden by the operation's own."""
    chosen: dict[tuple[str, str], JSONDict] = {}
    for declared in (path_item.get("parameters") or [], operation.get("parameters") or []):
        for entry in declared:
            parameter = follow_refs(document, entry)
            if not isinstance(parameter, dict) or not isinstance(parameter.get("name"), str):
                raise UnsupportedSchema(f"a parameter without a name: {entry!r}")
            where = parameter.get("in")
            if where not in _DEFAULT_STYLE:
                raise UnsupportedSchema(f"parameter {parameter['name']!r} is in {where!r}")
            if where == "header" and parameter["name"].lower() in _IGNORED_HEADERS:
                continue
            chosen[(where, parameter["name"])] = parameter
    return sorted(chosen.values(), key=lambda parameter: _ORDER.index(parameter["in"]))


def _parameter_schema(
    translator: Translator, document: JSONDict, parameter: JSONDict
) -> tuple[JSONDict, bool]:
    if "schema" in parameter:
        raw, as_json = parameter["schema"], False
    elif isinstance(parameter.get("content"), dict) and parameter["content"]:
        raw, as_json = _schema_of(next(iter(parameter["content"].values()))), True
    else:
        raw, as_json = {}, False
    schema = _as_dict(translator.translate(raw))
    if parameter.get("description") and "description" not in schema:
        schema["description"] = parameter["description"]
    if parameter.get("deprecated") is True:
        schema["deprecated"] = True
    return schema, as_json


def _body(
    translator: Translator, document: JSONDict, declared: Any
) -> tuple[Body, list[tuple[str, JSONDict, bool]]]:
    request_body = follow_refs(document, declared)
    content = request_body.get("content") if isinstance(request_body, dict) else None
    if not isinstance(content, dict) or not content:
        raise UnsupportedSchema("a requestBody without content")
    media_type, kind = _media(list(content))
    raw = _schema_of(content[media_type])
    required = request_body.get("required") is True
    resolved = follow_refs(document, raw)
    if _spreadable(resolved):
        listed = resolved.get("required") or []
        spread = [
            (name, _as_dict(translator.translate(schema)), required and name in listed)
            for name, schema in resolved["properties"].items()
            if not _read_only(document, schema)
        ]
        return Body(media_type, kind, spread=True, required=required), spread
    if kind == "form":
        raise UnsupportedSchema(f"a {_FORM} body that is not an object with properties")
    schema = _as_dict(translator.translate(raw))
    if request_body.get("description") and "description" not in schema:
        schema["description"] = request_body["description"]
    return Body(media_type, kind, spread=False, required=required), [("body", schema, required)]


def _schema_of(media: Any) -> Any:
    """The schema of a Media Type Object (any value when it names none)."""
    return media.get("schema", {}) if isinstance(media, dict) else {}


def _media(types: list[str]) -> tuple[str, Literal["json", "form", "text"]]:
    """The body's media type: JSON first, then a form, then plain text."""
    for media in types:
        bare = media.split(";")[0].strip().lower()
        if bare == "application/json" or bare.endswith("+json") or bare == "*/*":
            return media, "json"
    for media in types:
        if media.split(";")[0].strip().lower() == _FORM:
            return media, "form"
    for media in types:
        if media.split(";")[0].strip().lower() == "text/plain":
            return media, "text"
    raise UnsupportedSchema(f"no supported media type for the request body among {types}")


def _spreadable(schema: Any) -> bool:
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return False
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return False
    extra = schema.get("additionalProperties", False)
    return extra is False and not any(key in schema for key in ("allOf", "anyOf", "oneOf"))


def _read_only(document: JSONDict, schema: Any) -> bool:
    """A property the server sets (``readOnly``): a request does not send it."""
    resolved = follow_refs(document, schema)
    return isinstance(resolved, dict) and resolved.get("readOnly") is True


def _as_dict(schema: Any) -> JSONDict:
    """A property schema as an object: ``true`` is ``{}``; ``false`` accepts nothing."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    assert isinstance(schema, dict)
    return schema


def _argument_names(wanted: list[tuple[Location, str]]) -> list[str]:
    """One distinct argument name per (location, name), decided as the module says."""
    taken: set[str] = set()
    names: list[str] = []
    for where, name in wanted:
        plain = _UNSAFE_ARGUMENT.sub("_", name).strip("_")[:64] or where
        candidate = plain
        if candidate in taken:
            candidate = f"{where}_{plain}"[:64]
        base, number = candidate, 1
        while candidate in taken:
            number += 1
            suffix = f"_{number}"
            candidate = base[: 64 - len(suffix)] + suffix
        taken.add(candidate)
        names.append(candidate)
    return names


# -- serializing ------------------------------------------------------------------------------


def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    return orjson.dumps(value).decode()


def _one(argument: Argument, value: Any) -> str:
    return orjson.dumps(value).decode() if argument.as_json else _scalar(value)


def _plain(piece: str) -> str:
    return piece


def _pieces(argument: Argument, value: Any, encode: Callable[[str], str] = _plain) -> list[str]:
    """A value as the pieces ``simple`` and its kin join: ``[v]``, an array's items, an
    object's ``k=v`` pairs (exploded) or its keys and values in turn; each encoded."""
    if argument.as_json or not isinstance(value, list | dict):
        return [encode(_one(argument, value))]
    if isinstance(value, list):
        return [encode(_scalar(item)) for item in value]
    if argument.explode:
        return [f"{encode(str(key))}={encode(_scalar(item))}" for key, item in value.items()]
    return [encode(piece) for key, item in value.items() for piece in (str(key), _scalar(item))]


def _joined(argument: Argument, value: Any) -> str:
    """The ``simple`` (header) and ``form`` (cookie) value: ``a,b`` or ``k=v,k2=v2``."""
    return ",".join(_pieces(argument, value))


def _path_value(argument: Argument, value: Any) -> str:
    if argument.style == "label":
        return "." + ("." if argument.explode else ",").join(_pieces(argument, value, _segment))
    if argument.style == "matrix":
        name = argument.wire_name
        if argument.explode and isinstance(value, list) and not argument.as_json:
            return "".join(f";{name}={_segment(_scalar(item))}" for item in value)
        if argument.explode and isinstance(value, dict) and not argument.as_json:
            return "".join(";" + piece for piece in _pieces(argument, value, _segment))
        return f";{name}=" + ",".join(_pieces(argument, value, _segment))
    return ",".join(_pieces(argument, value, _segment))


def _segment(piece: str) -> str:
    """A value percent-encoded as RFC 6570 expands a variable (all but ``A-Z a-z 0-9 - . _
    ~``), so it stays inside its path segment; the dot segments ``.`` and ``..``, which a URL
    parser would resolve, are encoded too."""
    if piece in (".", ".."):
        return piece.replace(".", "%2E")
    return quote(piece, safe="")


def _query_pairs(argument: Argument, value: Any) -> list[tuple[str, str]]:
    name = argument.wire_name
    if argument.as_json or not isinstance(value, list | dict):
        return [(name, _one(argument, value))]
    if isinstance(value, dict):
        if argument.style == "deepObject":
            return [(f"{name}[{key}]", _scalar(item)) for key, item in value.items()]
        if argument.explode:
            return [(str(key), _scalar(item)) for key, item in value.items()]
        return [(name, ",".join(_pieces(argument, value)))]
    items = [_scalar(item) for item in value]
    if argument.style == "spaceDelimited":
        return [(name, " ".join(items))]
    if argument.style == "pipeDelimited":
        return [(name, "|".join(items))]
    if argument.explode:
        return [(name, item) for item in items]
    return [(name, ",".join(items))]


def _cookie_value(value: str) -> str:
    return value if _COOKIE_SAFE.fullmatch(value) else quote(value, safe="")


def _encode_body(body: Body, value: Any) -> bytes:
    if body.kind == "json":
        return orjson.dumps(None if value is _ABSENT else value)
    if body.kind == "text":
        return b"" if value is _ABSENT else _scalar(value).encode()
    pairs: list[tuple[str, str]] = []
    for key, item in (value if isinstance(value, dict) else {}).items():
        if isinstance(item, list):
            pairs.extend((key, _scalar(element)) for element in item)
        elif item is not None:
            pairs.append((key, _scalar(item)))
    return urlencode(pairs).encode()
