"""The errors the authorization server answers with: an OAuth error code (RFC 6749 §5.2,
RFC 7591 §3.2.2) and a description for the client's developer, never more."""

from __future__ import annotations


class AuthorizationError(Exception):
    """``error`` is the RFC's code (``invalid_request``, ``invalid_grant``,
    ``invalid_redirect_uri``, ...); ``description`` says what was wrong, in one line."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description

    def to_json(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}
