"""DNS-rebinding protection: which ``Host`` and ``Origin`` headers the HTTP app accepts.

A web page on ``evil.example`` can make a browser send requests to a server on
127.0.0.1 by pointing its own DNS name there. Two checks stop that (the spec requires the
Origin check; ``docs/decisions.md``, "Origin"):

* ``Host`` must name this server: for a server bound to a loopback address, one of
  ``localhost``, ``127.0.0.1`` or ``[::1]`` (any port); otherwise the host of the public
  URL or the explicit allow-list. A wrong Host is answered 421 (Misdirected Request).
* ``Origin``, when a browser sends one, must be an allowed origin: by default any
  ``http``/``https`` origin whose host is an allowed host; or the explicit allow-list. A
  wrong Origin is answered 403. Requests without ``Origin`` (non-browser clients) pass.

Configuration, strongest first: arguments to ``http_app``, then the environment variables
``MCPSERVE_ALLOWED_HOSTS`` and ``MCPSERVE_ALLOWED_ORIGINS`` (comma-separated) and
``MCPSERVE_PUBLIC_URL``. ``*`` in a list allows anything (only behind a proxy that checks).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from .. import _environment as environment

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")


def _split_host(value: str) -> str:
    """The host part of a ``Host`` header value, lower-cased, brackets kept for IPv6."""
    value = value.strip().lower()
    if "@" in value or "/" in value:
        return ""  # userinfo or a path has no place in a Host header: matches nothing
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end != -1 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


#: An origin as browsers serialize it (RFC 6454 § 6.1): scheme, host, optional port; no
#: userinfo, path, query or fragment, and never several origins joined by commas.
_ORIGIN = re.compile(r"(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::([0-9]{1,5}))?")


def _origin_host(origin: str) -> str | None:
    """The host of a browser-sent origin, lower-cased; None for anything else."""
    match = _ORIGIN.fullmatch(origin.strip())
    if match is None:
        return None
    host = match.group(2).lower()
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
    return host


def _url_host(url: str) -> str | None:
    """The host of an http(s) URL (the server's public URL may have a path)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    hosts: frozenset[str] | None  # None: any Host
    origins: frozenset[str] | None  # None: any Origin whose host is an allowed host

    @classmethod
    def build(
        cls,
        *,
        bind_host: str | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        public_url: str | None = None,
    ) -> OriginPolicy:
        hosts = (
            list(allowed_hosts)
            if allowed_hosts is not None
            else environment.read_list(environment.ALLOWED_HOSTS)
        )
        origins = (
            list(allowed_origins)
            if allowed_origins is not None
            else environment.read_list(environment.ALLOWED_ORIGINS)
        )
        public_url = public_url or environment.read(environment.PUBLIC_URL)
        if hosts is None:
            hosts = list(LOOPBACK_NAMES)
            if public_url:
                public_host = _url_host(public_url)
                if public_host is None:
                    raise ValueError(f"public_url {public_url!r} is not an http(s) URL")
                hosts.append(public_host)
            if bind_host and not is_loopback(bind_host) and bind_host not in ("0.0.0.0", "::"):
                hosts.append(_split_host(bind_host))
        host_set = None if "*" in hosts else frozenset(_split_host(h) for h in hosts)
        origin_set = None
        if origins is not None:
            origin_set = None if "*" in origins else frozenset(o.rstrip("/") for o in origins)
            if origin_set is None:
                return cls(host_set, None) if host_set is None else cls(host_set, frozenset({"*"}))
        return cls(host_set, origin_set)

    def check_host(self, host: str | None) -> str | None:
        """None when acceptable, else the reason (naming the rejected value)."""
        if self.hosts is None:
            return None
        if host is None:
            return "Missing Host header"
        if _split_host(host) not in self.hosts:
            return f"Host {host[:200]!r} is not allowed (configure allowed_hosts or public_url)"
        return None

    def check_origin(self, origin: str | None) -> str | None:
        if origin is None or self.origins == frozenset({"*"}):
            return None
        if self.origins is not None:
            if origin.rstrip("/") in self.origins:
                return None
        else:
            host = _origin_host(origin)
            if host is not None and (self.hosts is None or host in self.hosts):
                return None
        return f"Origin {origin[:200]!r} is not allowed (configure allowed_origins)"
