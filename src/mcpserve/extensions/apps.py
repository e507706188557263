"""MCP Apps: an HTML view a host renders for a tool, in a sandboxed iframe (the apps extension).

Theory of operation
-------------------
An app is a resource at a ``ui://`` URI whose contents are one HTML document, with the
media type ``text/html;profile=mcp-app`` and ``_meta.ui`` saying what the host's sandbox
should allow: the domains of its Content-Security-Policy (``csp``), browser permissions, a
dedicated origin (``domain``) and whether it wants a border. A tool names the app that
shows its results in ``_meta.ui.resourceUri``, and who may call it in
``_meta.ui.visibility`` (``"model"``, ``"app"``).

When the model calls such a tool, a host that speaks the extension reads the app's
resource, loads the HTML into a sandboxed iframe, and talks to it with JSON-RPC over
``postMessage``: the view sends ``ui/initialize``, the host answers and then notifies the
tool's arguments and result; the view may call tools and read resources, which the host
forwards here as ordinary requests. The server side of all this is only what is
registered here; nothing in a request is different.

:func:`register_app` builds an :class:`App` (a :class:`~.resources.Resource`) from a
string, a file read at each ``resources/read`` (edits show without a restart), or a
function called at each read (the template form: it returns the HTML, may take ``ctx``
and be ``async``). ``_meta.ui`` is on the listing entry and on the content item, as the
extension allows hosts to read either. :func:`with_app_meta` turns a tool's ``app=`` and
``visibility=`` into its ``_meta``. The server declares the extension while any registered
resource is an app (``server/settings.py``; ``docs/decisions.md``, "Apps in both eras").
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict

from .._types import JSONDict, UserFunction
from ..protocol.constants import APP_MIME_TYPE, APPS_EXTENSION
from ..protocol.errors import InternalError, new_ref
from ..protocol.records import Record
from ..server.context.context import Context
from ..server.entries.catalogue import catalogue_meta
from ..server.entries.entry import Pool, list_entry
from ..server.entries.resources import CachePolicy, Resource
from ..server.registry import Registry

logger = logging.getLogger("mcpserve")

#: The extension's identifier, in ``capabilities.extensions`` of either side.
#: The media type of an app's HTML.
#: The flat key hosts read before ``_meta.ui.resourceUri`` existed (deprecated, still sent).
LEGACY_RESOURCE_URI_KEY = "ui/resourceUri"
#: What ``permissions`` may ask for, as the extension spells them.
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
VISIBILITIES = ("model", "app")

Visibility = Literal["model", "app"]

# A CSP source as a host writes it into a policy: a scheme and host (a leading "*." allowed),
# an optional port and path. Nothing that could end a directive or start another.
_SOURCE = re.compile(
    r"[a-zA-Z][a-zA-Z0-9+.-]*://((\*\.)?[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:(\d{1,5}|\*))?"
    r"(/[^\s;,']*)?"
)
_CSP_FIELDS = {
    "connect_domains": "connectDomains",
    "resource_domains": "resourceDomains",
    "frame_domains": "frameDomains",
    "base_uri_domains": "baseUriDomains",
}


class AppCSP(Record):
    """The origins an app needs, which the host turns into its iframe's CSP.

    Each is a list of origins such as ``"https://api.example.com"`` or
    ``"https://*.example.com"``; left empty, the host allows none (its restrictive
    default). ``connect_domains`` is ``connect-src`` (fetch, XHR, WebSocket),
    ``resource_domains`` scripts, styles, images, fonts and media, ``frame_domains``
    nested iframes and ``base_uri_domains`` ``base-uri``.

    >>> AppCSP(connect_domains=["https://api.example.com"])
    """

    __slots__ = ("base_uri_domains", "connect_domains", "frame_domains", "resource_domains")

    def __init__(
        self,
        *,
        connect_domains: Iterable[str] = (),
        resource_domains: Iterable[str] = (),
        frame_domains: Iterable[str] = (),
        base_uri_domains: Iterable[str] = (),
    ) -> None:
        self.connect_domains = _origins("connect_domains", connect_domains)
        self.resource_domains = _origins("resource_domains", resource_domains)
        self.frame_domains = _origins("frame_domains", frame_domains)
        self.base_uri_domains = _origins("base_uri_domains", base_uri_domains)

    @classmethod
    def of(cls, value: AppCSP | Mapping[str, Iterable[str]]) -> AppCSP:
        """An :class:`AppCSP`, or a dict of the wire's fields (``connectDomains``, ...)."""
        if isinstance(value, AppCSP):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"csp must be an AppCSP or a dict, not {type(value).__name__}")
        wire_names = {wire: field for field, wire in _CSP_FIELDS.items()}
        unknown = sorted(set(value) - set(wire_names))
        if unknown:
            raise ValueError(
                f"Unknown csp field(s) {', '.join(unknown)}; the extension defines "
                f"{', '.join(wire_names)}"
            )
        return cls(**{wire_names[key]: domains for key, domains in value.items()})

    def to_wire(self) -> dict[str, list[str]]:
        return {
            wire: list(getattr(self, field))
            for field, wire in _CSP_FIELDS.items()
            if getattr(self, field)
        }


class AppOptions(TypedDict, total=False):
    """What ``server.app`` takes besides the URI and the HTML."""

    name: str
    title: str
    description: str
    icons: list[JSONDict]
    annotations: JSONDict
    #: More of the listing entry's ``_meta`` (``ui`` is built from the options below).
    meta: JSONDict
    #: Labels for the catalogue, and a PEP 440 version (``server.pin``), as for any resource.
    tags: Iterable[str]
    version: str
    blocking: bool
    scopes: Iterable[str]
    cache: CachePolicy
    csp: AppCSP | Mapping[str, Iterable[str]]
    #: Browser features the view asks for: "camera", "microphone", "geolocation",
    #: "clipboardWrite". Hosts may grant them; a view must not count on it.
    permissions: Iterable[str]
    #: A dedicated origin for the view's sandbox, in the form the host documents.
    domain: str
    #: True for a visible border and background around the view, False for none.
    prefers_border: bool


class App(Resource):
    """A registered MCP App: the resource at a ``ui://`` URI holding one HTML view.

    Build one with ``server.app(...)``; pass it to ``@server.tool(app=...)`` to show that
    tool's results in it. :attr:`ui` is the ``_meta.ui`` sent with the HTML.
    """

    __slots__ = ("ui",)

    def __init__(self, uri: str, fn: UserFunction, *, ui: JSONDict, **options: Any) -> None:
        super().__init__(uri, fn, mime_type=APP_MIME_TYPE, **options)
        self.ui = ui

    def shape(self, value: Any, ctx: Context) -> JSONDict:
        entry: JSONDict = {"uri": ctx.request.params["uri"], "mimeType": APP_MIME_TYPE}
        if isinstance(value, str):
            entry["text"] = value
        elif isinstance(value, bytes | bytearray | memoryview):
            entry["blob"] = base64.b64encode(value).decode("ascii")
        else:
            ref = new_ref()
            logger.error(
                "App %r returned %s, not its HTML as str or bytes (ref %s)",
                self.key,
                type(value).__name__,
                ref,
            )
            raise InternalError(f"App {self.key} returned no HTML (ref {ref})")
        if self.ui:
            entry["_meta"] = {"ui": self.ui}
        return {"contents": [entry]}


def register_app(
    registry: Registry,
    uri: str,
    *,
    pool: Pool,
    html: str | None = None,
    path: str | os.PathLike[str] | None = None,
    **options: Any,
) -> App | Callable[[UserFunction], App]:
    """``server.app``: an :class:`App` from ``html`` or ``path``, else a decorator that
    makes one from the function it decorates (called at each read for the HTML)."""
    _check_uri(uri)
    if html is not None and path is not None:
        raise TypeError("server.app() takes html= or path=, not both")
    if html is not None:
        if not isinstance(html, str):
            raise TypeError(
                f"html must be a str, not {type(html).__name__}; to fill in values at each "
                "read, decorate a function that returns the HTML"
            )
        text = html

        def static() -> str:
            return text

        return _register(registry, uri, static, pool, options)
    if path is not None:
        file = Path(path)
        if not file.is_file():
            raise FileNotFoundError(f"App {uri}: no file at {file}")

        def read() -> str:
            return file.read_text(encoding="utf-8")

        return _register(registry, uri, read, pool, {"blocking": True, **options})

    def decorate(fn: UserFunction) -> App:
        return _register(registry, uri, fn, pool, options)

    return decorate


def _register(
    registry: Registry, uri: str, fn: UserFunction, pool: Pool, options: dict[str, Any]
) -> App:
    app = build_app(uri, fn, pool=pool, **options)
    registry.add_resource(app)
    return app


def build_app(
    uri: str,
    fn: UserFunction,
    *,
    pool: Pool,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    icons: list[JSONDict] | None = None,
    annotations: JSONDict | None = None,
    meta: JSONDict | None = None,
    tags: Iterable[str] | None = None,
    version: str | None = None,
    blocking: bool | None = None,
    scopes: Iterable[str] = (),
    cache: CachePolicy | None = None,
    csp: AppCSP | Mapping[str, Iterable[str]] | None = None,
    permissions: Iterable[str] | None = None,
    domain: str | None = None,
    prefers_border: bool | None = None,
) -> App:
    """An :class:`App` at ``uri`` whose HTML ``fn`` returns; checks every option."""
    _check_uri(uri)
    ui = resource_ui_meta(
        csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border
    )
    app = App(uri, fn, ui=ui, pool=pool, blocking=blocking, cache=cache, scopes=scopes)
    if app.arguments.param_names:
        raise TypeError(
            f"App {uri!r}: {getattr(fn, '__name__', 'its function')}() takes no arguments "
            f"but a Context (ctx: Context); it has {', '.join(app.arguments.param_names)}"
        )
    meta = catalogue_meta(meta, tags, version, uri)
    listed_meta = {**(meta or {}), "ui": ui} if ui else meta
    fields = {"uri": uri, "name": name or uri.removeprefix("ui://")}
    app.wire = list_entry(
        fn,
        fields,
        title=title,
        description=description,
        mimeType=APP_MIME_TYPE,
        icons=icons,
        annotations=annotations,
        _meta=listed_meta,
    )
    return app


def resource_ui_meta(
    *,
    csp: AppCSP | Mapping[str, Iterable[str]] | None = None,
    permissions: Iterable[str] | None = None,
    domain: str | None = None,
    prefers_border: bool | None = None,
) -> JSONDict:
    """An app resource's ``_meta.ui``: only what was given."""
    ui: JSONDict = {}
    if csp is not None:
        policy = AppCSP.of(csp).to_wire()
        if policy:
            ui["csp"] = policy
    if permissions is not None:
        if isinstance(permissions, str):
            permissions = [permissions]
        asked = list(dict.fromkeys(permissions))
        unknown = [name for name in asked if name not in PERMISSIONS]
        if unknown:
            raise ValueError(
                f"Unknown permission(s) {', '.join(map(repr, unknown))}; the extension "
                f"defines {', '.join(PERMISSIONS)}"
            )
        if asked:
            ui["permissions"] = {name: {} for name in asked}
    if domain is not None:
        if not isinstance(domain, str) or not domain or any(ch.isspace() for ch in domain):
            raise ValueError(f"domain must be a non-empty string without spaces, not {domain!r}")
        ui["domain"] = domain
    if prefers_border is not None:
        if not isinstance(prefers_border, bool):
            raise TypeError("prefers_border must be True or False")
        ui["prefersBorder"] = prefers_border
    return ui


def with_app_meta(options: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's options with ``app=`` and ``visibility=`` turned into its ``_meta.ui``.

    ``app`` (an :class:`App` or its ``ui://`` URI) becomes ``resourceUri``, and also the
    flat ``ui/resourceUri`` that hosts older than ``_meta.ui`` read; ``visibility`` is
    checked and kept in order. A ``ui`` the tool's own ``meta`` has is kept under them.
    """
    chosen = dict(options)
    app = chosen.pop("app", None)
    visibility = chosen.pop("visibility", None)
    meta = dict(chosen.get("meta") or {})
    ui = dict(meta.pop("ui", None) or {})
    uri = None
    if app is not None:
        uri = app.uri if isinstance(app, App) else app
        if not isinstance(uri, str):
            raise TypeError(f"app must be an App or its ui:// URI, not {type(app).__name__}")
        _check_uri(uri)
        ui["resourceUri"] = uri
    if visibility is not None:
        ui["visibility"] = _visibility(visibility)
    chosen["meta"] = {"ui": ui, **meta} if ui else meta
    if uri is not None:
        chosen["meta"][LEGACY_RESOURCE_URI_KEY] = uri
    return chosen


def supports_apps(ctx: Context) -> bool:
    """Whether the client says it renders apps: the extension in its capabilities, with
    ``text/html;profile=mcp-app`` among its ``mimeTypes`` (either era).

    A tool may answer differently for a client that shows no app, for instance with more
    in its text content; its ``_meta.ui`` is listed to every client either way.
    """
    extensions = ctx.client_capabilities.get("extensions")
    settings = extensions.get(APPS_EXTENSION) if isinstance(extensions, dict) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def _check_uri(uri: Any) -> None:
    if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) == len("ui://"):
        raise ValueError(f"An app's URI must start with ui:// and name the app, not {uri!r}")
    if "{" in uri or "}" in uri or any(ch.isspace() for ch in uri):
        raise ValueError(f"An app's URI is one fixed URI, without spaces or {{variables}}: {uri!r}")


def is_csp_origin(value: Any) -> bool:
    """Whether ``value`` is an origin a host can write into a CSP directive as it is."""
    return isinstance(value, str) and _SOURCE.fullmatch(value) is not None


def _origins(field: str, domains: Iterable[str]) -> tuple[str, ...]:
    if isinstance(domains, str):
        domains = [domains]
    chosen = tuple(dict.fromkeys(domains))
    for domain in chosen:
        if not is_csp_origin(domain):
            raise ValueError(
                f"csp {field}: {domain!r} is not an origin such as https://api.example.com "
                "or https://*.example.com"
            )
    return chosen


def _visibility(visibility: Iterable[str]) -> list[str]:
    if isinstance(visibility, str):
        visibility = [visibility]
    chosen = list(dict.fromkeys(visibility))
    if not chosen or any(who not in VISIBILITIES for who in chosen):
        raise ValueError(
            f"visibility must name one or both of 'model' and 'app', not {list(visibility)!r}"
        )
    return chosen
