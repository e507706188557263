"""OAuth 2.1 for an MCP server's HTTP endpoint: bearer tokens verified, metadata served.

::

    from mcpserve import Server
    from mcpserve.auth import JWTVerifier

    server = Server(
        "notes",
        auth=JWTVerifier(issuer="https://auth.example.com", audience="https://mcp.example.com/mcp"),
    )

    @server.tool(scopes=["notes:write"])
    def add_note(text: str) -> str: ...

The verifiers load PyJWT and httpx2 (``pip install 'mcpserve[auth]'``) when first used;
``import mcpserve`` loads none of this package. See ``docs/auth.md``.
"""

import importlib
import typing

from .._extras import needs_extra

if typing.TYPE_CHECKING:  # each loads on first use, by __getattr__ below
    from .introspection import IntrospectionVerifier as IntrospectionVerifier
    from .jwt import JWTVerifier as JWTVerifier
    from .oidc_proxy import OIDCProxy as OIDCProxy
    from .resource import ResourceServer as ResourceServer
    from .tokens import AccessToken as AccessToken
    from .tokens import InvalidToken as InvalidToken
    from .tokens import TokenCache as TokenCache
    from .tokens import TokenVerifier as TokenVerifier
    from .tokens import VerifierUnavailable as VerifierUnavailable

_MODULES = {
    "AccessToken": "tokens",
    "IntrospectionVerifier": "introspection",
    "InvalidToken": "tokens",
    "JWTVerifier": "jwt",
    "OIDCProxy": "oidc_proxy",
    "ResourceServer": "resource",
    "TokenCache": "tokens",
    "TokenVerifier": "tokens",
    "VerifierUnavailable": "tokens",
}


def __getattr__(name: str) -> typing.Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with needs_extra(f"mcpserve.auth.{name}", extra="auth"):
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AccessToken",
    "IntrospectionVerifier",
    "InvalidToken",
    "JWTVerifier",
    "OIDCProxy",
    "ResourceServer",
    "TokenCache",
    "TokenVerifier",
    "VerifierUnavailable",
]
