"""The OAuth 2.1 client of :class:`~mcpserve.Client` over Streamable HTTP.

::

    from mcpserve import Client, ClientCredentials, OAuth

    async with Client("https://mcp.example.com/mcp", auth=OAuth()) as client:
        ...  # a user logs in in the browser when the server first answers 401

    async with Client(url, auth=ClientCredentials("bot", secret)) as client:
        ...  # a program with its own credentials, no user

    async with Client(url, auth=OAuth(dpop=True)) as client:
        ...  # tokens bound to a key of this client (DPoP, RFC 9449)

The modules, in the order a first authorization uses them: :mod:`.bearer` (the token on
each request, the refusals read), :mod:`.flow` (what to do about a refusal),
:mod:`.challenge` (``WWW-Authenticate``), :mod:`.metadata` (RFC 9728 and RFC 8414
discovery, checked), :mod:`.authorization_code`, :mod:`.client_credentials`,
:mod:`.jwt_bearer` and :mod:`.enterprise` (the grants; the last three share
:mod:`.unattended`), :mod:`.endpoints` (registration, token requests, client
authentication, with :mod:`.assertion` for ``private_key_jwt``), :mod:`.dpop` (proofs of
possession, when asked for), :mod:`.redirect` (the browser and the redirect back),
:mod:`.tokens` (what is kept, and where). It needs httpx2; ``docs/auth.md`` ("The client
side") is the guide.
"""

from .authorization_code import OAuth as OAuth
from .client_credentials import ClientCredentials as ClientCredentials
from .dpop import DPoPKey as DPoPKey
from .enterprise import EnterpriseAuthorization as EnterpriseAuthorization
from .errors import OAuthError as OAuthError
from .flow import OAuthFlow as OAuthFlow
from .jwt_bearer import JWTBearer as JWTBearer
from .redirect import LoopbackRedirect as LoopbackRedirect
from .tokens import ClientRegistration as ClientRegistration
from .tokens import FileTokenStorage as FileTokenStorage
from .tokens import MemoryTokenStorage as MemoryTokenStorage
from .tokens import Tokens as Tokens
from .tokens import TokenStorage as TokenStorage

__all__ = [
    "ClientCredentials",
    "ClientRegistration",
    "DPoPKey",
    "EnterpriseAuthorization",
    "FileTokenStorage",
    "JWTBearer",
    "LoopbackRedirect",
    "MemoryTokenStorage",
    "OAuth",
    "OAuthError",
    "OAuthFlow",
    "TokenStorage",
    "Tokens",
]
