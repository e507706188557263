"""How the client commands get into a protected server: headers, OAuth, client credentials.

Only a URL target can be protected: a file runs in this process or as this user's child,
so these options are refused for one. ``--header`` sends a fixed header (a token you got
elsewhere); ``--client-id``/``--client-secret`` get tokens as that client (the client
credentials grant, no user); ``--oauth`` logs a user in through the browser (authorization
code with PKCE), with ``--client-id`` naming a pre-registered client instead of registering
one. The tokens a login brings are kept in a file readable by its owner only
(:func:`token_file`), so the next command does not log in again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import _environment as environment
from .errors import Mistake

if TYPE_CHECKING:
    from ..client.oauth import OAuthFlow

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def token_file() -> Path:
    """Where ``--oauth`` keeps tokens: ``$MCPSERVE_TOKEN_FILE``, else the user's cache."""
    configured = environment.read(environment.TOKEN_FILE)
    if configured:
        return Path(configured)
    cache = environment.read(environment.XDG_CACHE_HOME) or Path.home() / ".cache"
    return Path(cache) / "mcpserve" / "oauth-tokens.json"


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` as a (name, value) pair; a usage error when it is not one."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _HEADER_NAME.fullmatch(name):
        raise Mistake(f"--header {text!r} is not NAME: VALUE (e.g. 'X-Team: blue')")
    if "\r" in value or "\n" in value:
        raise Mistake(f"--header {name}: the value holds a line break")
    return name, value


@dataclass(frozen=True)
class HTTPAccess:
    """What a client command sends a server at a URL so it lets the command in."""

    headers: dict[str, str] = field(default_factory=dict)
    oauth: bool = False
    client_id: str | None = None
    client_secret: str | None = None

    @classmethod
    def from_options(
        cls,
        headers: tuple[str, ...],
        oauth: bool,
        client_id: str | None,
        client_secret: str | None,
    ) -> HTTPAccess:
        parsed = dict(parse_header(text) for text in headers)
        if client_secret and not client_id:
            raise Mistake("--client-secret needs --client-id")
        if client_id and not client_secret and not oauth:
            raise Mistake(
                "--client-id needs --client-secret (client credentials), or --oauth to log "
                "in as a user through that pre-registered client"
            )
        if (oauth or client_id) and any(name.lower() == "authorization" for name in parsed):
            raise Mistake(
                "--header Authorization sends a token of your own; drop it or drop --oauth "
                "and --client-id"
            )
        return cls(parsed, oauth, client_id or None, client_secret or None)

    @property
    def given(self) -> bool:
        return bool(self.headers or self.oauth or self.client_id)

    def auth(self) -> OAuthFlow | None:
        """The OAuth flow these options ask for, or None."""
        if self.oauth:
            from ..client.oauth import FileTokenStorage, OAuth

            return OAuth(
                client_id=self.client_id,
                client_secret=self.client_secret,
                client_name="mcpserve CLI",
                storage=FileTokenStorage(token_file()),
            )
        if self.client_id and self.client_secret:
            from ..client.oauth import ClientCredentials

            return ClientCredentials(self.client_id, self.client_secret)
        return None


def access_options(fn: click.decorators.FC) -> click.decorators.FC:
    """The options of :class:`HTTPAccess`, for a command whose target may be a URL."""
    fn = click.option(
        "--client-secret",
        envvar=environment.CLIENT_SECRET,
        help="The OAuth client's secret ($MCPSERVE_CLIENT_SECRET).",
    )(fn)
    fn = click.option(
        "--client-id",
        envvar=environment.CLIENT_ID,
        help="Get tokens as this OAuth client: with --client-secret, the client "
        "credentials grant; with --oauth, a pre-registered client "
        "(or $MCPSERVE_CLIENT_ID).",
    )(fn)
    fn = click.option(
        "--oauth",
        is_flag=True,
        help="Log in through the browser when the server asks (OAuth); the "
        "tokens are kept for the next command.",
    )(fn)
    return click.option(
        "--header",
        "-H",
        "headers",
        multiple=True,
        metavar="'NAME: VALUE'",
        help="Send this HTTP header to a URL target (repeatable).",
    )(fn)
