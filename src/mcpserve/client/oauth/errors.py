"""The one exception of the OAuth client: authorization could not be obtained, and why."""

from __future__ import annotations


class OAuthError(Exception):
    """Authorization failed: discovery, registration, the user's consent or a token request.

    ``error`` is the OAuth error code when an authorization server sent one
    (``invalid_grant``, ``access_denied``, ...), else ``None``. The message says what was
    being done and what went wrong; it never contains a token, a code or a secret.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error
