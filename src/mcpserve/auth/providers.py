"""Identity providers with their endpoints filled in: :class:`GitHub`, :class:`Google`,
:class:`Entra`.

Each is an :class:`~mcpserve.auth.OIDCProxy` that needs only the application registered at
the provider (its client id and secret, with ``base_url`` + ``/auth/callback`` as its
redirect URI) and the server's ``base_url``::

    from mcpserve import Server
    from mcpserve.auth.providers import GitHub

    server = Server(
        "issues",
        auth=GitHub(client_id="Iv1.0123", client_secret="...", base_url="https://mcp.example.com"),
    )

Any other OpenID provider (Auth0, Okta, Keycloak, WorkOS, Cognito) is an ``OIDCProxy`` given
its issuer; ``docs/auth.md`` lists theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._extras import needs_extra

with needs_extra("mcpserve.auth.providers", extra="auth"):
    from .oidc_proxy import OIDCProxy


class GitHub(OIDCProxy):
    """Log in with GitHub (an OAuth App, or a GitHub App's user authorization).

    GitHub is not an OpenID provider: the user is the one its user API names, and the
    principal is their numeric GitHub id (stable across renames), with ``login``, ``name``
    and ``email`` among the token's claims. ``scopes`` are GitHub's (``read:user`` by
    default; add ``repo`` and friends for tools that act on the user's repositories).
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        base_url: str,
        scopes: Sequence[str] = ("read:user",),
        **options: Any,
    ) -> None:
        options.setdefault("authorization_endpoint", "https://github.com/login/oauth/authorize")
        options.setdefault("token_endpoint", "https://github.com/login/oauth/access_token")
        options.setdefault("userinfo_endpoint", "https://api.github.com/user")
        options.setdefault("upstream_auth_method", "client_secret_post")
        super().__init__(
            "https://github.com",
            client_id,
            client_secret,
            base_url,
            scopes,
            identity="github",
            **options,
        )


class Google(OIDCProxy):
    """Log in with Google. The principal is the Google account's ``sub``.

    Google gives a refresh token (for ``ctx.upstream_token()`` past the first hour) only when
    asked for offline access with the consent prompt, which is what this preset asks for; its
    ID tokens may name their issuer without the scheme, which is accepted as the same one.
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        base_url: str,
        scopes: Sequence[str] = ("openid", "email", "profile"),
        **options: Any,
    ) -> None:
        options.setdefault("authorize_params", {"access_type": "offline", "prompt": "consent"})
        options.setdefault("issuer_aliases", ["accounts.google.com"])  # Google's ID tokens
        super().__init__(
            "https://accounts.google.com", client_id, client_secret, base_url, scopes, **options
        )


class Entra(OIDCProxy):
    """Log in with Microsoft Entra ID. ``tenant`` is the directory's id or domain, or
    ``organizations`` / ``common`` for accounts of any directory (the ID token's tenant is
    then the issuer checked). The principal is the ID token's ``sub`` for this application;
    its ``tid`` (the tenant) is among the token's claims.
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        base_url: str,
        tenant: str,
        scopes: Sequence[str] = ("openid", "profile", "email", "offline_access"),
        **options: Any,
    ) -> None:
        if not tenant or "/" in tenant:
            raise ValueError("Entra(tenant=...) is the directory's id or domain, e.g. contoso.com")
        super().__init__(
            f"https://login.microsoftonline.com/{tenant}/v2.0",
            client_id,
            client_secret,
            base_url,
            scopes,
            **options,
        )
