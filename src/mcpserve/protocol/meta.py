"""Per-request ``_meta``: the protocol fields every 2026-07-28 request carries.

Nothing here is remembered between requests, as the stateless revision requires: the
version, capabilities, client identity, log level, progress token and trace context are read
from each request and live exactly as long as it does.
"""

from __future__ import annotations

from .._types import JSONDict
from . import constants as c
from .errors import InvalidParams


class InvalidMeta(InvalidParams):
    """A request's required ``_meta`` fields are missing or malformed.

    A subclass so the HTTP transport can answer it with 400 while other -32602 errors
    (an unknown tool, a bad cursor) are ordinary 200 answers.
    """


class RequestMeta:
    """What ``params._meta`` said, read once per request (built by :func:`read_meta`)."""

    # A plain class: one is built per request, and a dataclass would only add generated
    # methods nobody calls (and their cost at import).
    __slots__ = (
        "client_capabilities",
        "client_info",
        "log_level",
        "progress_token",
        "protocol_version",
        "raw",
        "trace",
    )

    def __init__(
        self,
        protocol_version: str,
        client_capabilities: JSONDict,
        client_info: JSONDict | None = None,
        log_level: str | None = None,
        progress_token: str | int | None = None,
        trace: dict[str, str] | None = None,
        raw: JSONDict | None = None,
    ) -> None:
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.log_level = log_level
        self.progress_token = progress_token
        self.trace: dict[str, str] = {} if trace is None else trace
        self.raw: JSONDict = {} if raw is None else raw

    def __repr__(self) -> str:
        return f"RequestMeta(protocol_version={self.protocol_version!r})"


def read_meta(params: JSONDict | None) -> RequestMeta:
    """Validate and read ``params._meta``, raising :class:`InvalidMeta` (-32602)."""
    meta = params.get("_meta") if params is not None else None
    if not isinstance(meta, dict):
        raise InvalidMeta(
            "Invalid params: missing _meta with the protocol version and client capabilities",
            data={"missing": [c.META_PROTOCOL_VERSION, c.META_CLIENT_CAPABILITIES]},
        )
    version = meta.get(c.META_PROTOCOL_VERSION)
    capabilities = meta.get(c.META_CLIENT_CAPABILITIES)
    if type(version) is not str or not isinstance(capabilities, dict):
        missing = []
        if type(version) is not str:
            missing.append(c.META_PROTOCOL_VERSION)
        if not isinstance(capabilities, dict):
            missing.append(c.META_CLIENT_CAPABILITIES)
        raise InvalidMeta(
            f"Invalid params: missing or malformed _meta field {', '.join(missing)}",
            data={"missing": missing},
        )
    client_info = meta.get(c.META_CLIENT_INFO)
    log_level = meta.get(c.META_LOG_LEVEL)
    if log_level is not None and (type(log_level) is not str or log_level not in c.LOG_LEVEL_RANK):
        raise InvalidParams(
            f"Invalid params: unknown log level {str(log_level)[:40]!r}",
            data={"supported": list(c.LOG_LEVELS)},
        )
    token = meta.get("progressToken")
    if token is not None and type(token) not in (str, int):
        raise InvalidParams("Invalid params: progressToken must be a string or an integer")
    trace = _NO_TRACE
    if "traceparent" in meta or "tracestate" in meta or "baggage" in meta:
        trace = {key: meta[key] for key in c.TRACE_KEYS if type(meta.get(key)) is str}
    return RequestMeta(
        version,
        capabilities,
        client_info if isinstance(client_info, dict) else None,
        log_level,
        token,
        trace,
        meta,
    )


_NO_TRACE: dict[str, str] = {}


def has_modern_meta(params: JSONDict) -> bool:
    """Whether a request's params carry 2026-07-28 per-request ``_meta`` (the era rule)."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and c.META_PROTOCOL_VERSION in meta
