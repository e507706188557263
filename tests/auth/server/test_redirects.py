"""Redirect URIs (auth/server/redirects.py): what a client may register, and exact matching
with RFC 8252's one exception for loopback ports."""

from __future__ import annotations

import pytest

from mcpserve.auth.server.errors import AuthorizationError
from mcpserve.auth.server.redirects import check_registered, matches


@pytest.mark.parametrize(
    "uri",
    [
        "https://claude.ai/api/mcp/auth_callback",
        "https://app.example/cb?tenant=7",
        "http://127.0.0.1/callback",
        "http://127.0.0.1:33418/callback",
        "http://[::1]:8080/cb",
        "http://localhost:6274/oauth/callback",
    ],
)
def test_https_and_loopback_redirects_may_be_registered(uri: str) -> None:
    assert check_registered(uri) == uri


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("http://app.example/cb", "must be https, or http on the loopback"),
        ("http://192.168.1.10/cb", "must be https, or http on the loopback"),
        ("javascript:alert(1)", "not an absolute URI"),
        ("myapp://callback", "must be https, or http on the loopback"),
        ("https://app.example/cb#frag", "has a fragment"),
        ("https://user:pw@app.example/cb", "carries user information"),
        ("http://127.0.0.1@evil.example/cb", "carries user information"),
        ("/relative/cb", "not an absolute URI"),
        ("https://app.example:99999/cb", "is not a URI"),
        ("", "must be a URI string"),
        (None, "must be a URI string"),
        ("https://app.example/" + "a" * 3000, "must be a URI string"),
    ],
)
def test_other_redirects_are_refused_saying_why(uri: object, why: str) -> None:
    with pytest.raises(AuthorizationError, match=why) as refused:
        check_registered(uri)
    assert refused.value.error == "invalid_redirect_uri"


def test_a_redirect_matches_exactly() -> None:
    registered = "https://app.example/cb?tenant=7"
    assert matches(registered, registered)
    for other in (
        "https://app.example/cb?tenant=8",
        "https://app.example/cb",
        "https://app.example/cb/",
        "https://APP.example/cb?tenant=7",
        "https://app.example:443/cb?tenant=7",
        "https://app.example/cb?tenant=7#x",
        "https://app.example.evil/cb?tenant=7",
    ):
        assert not matches(registered, other), other


def test_a_loopback_redirect_may_name_another_port_and_nothing_else() -> None:
    registered = "http://127.0.0.1/callback"
    assert matches(registered, "http://127.0.0.1:51004/callback")
    assert matches("http://127.0.0.1:8080/callback", "http://127.0.0.1:9090/callback")
    assert matches("http://[::1]/cb", "http://[::1]:4000/cb")
    for other in (
        "http://127.0.0.1:51004/other",
        "http://127.0.0.1:51004/callback?x=1",
        "http://127.0.0.1:51004/callback#f",
        "http://localhost:51004/callback",
        "https://127.0.0.1:51004/callback",
        "http://127.0.0.1@evil.example:51004/callback",
        "http://127.0.0.1:bad/callback",
    ):
        assert not matches(registered, other), other
    # Only loopback HTTP gets the exception.
    assert not matches("https://app.example/cb", "https://app.example:8443/cb")
