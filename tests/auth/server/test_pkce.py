"""PKCE, S256 only (auth/server/pkce.py): RFC 7636's own example, and every way to get it
wrong refused with the RFC's error."""

from __future__ import annotations

import pytest

from mcpserve.auth.server.errors import AuthorizationError
from mcpserve.auth.server.pkce import challenge_of, check_challenge, check_verifier

# RFC 7636, Appendix B.
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_the_rfcs_example_verifier_has_the_rfcs_challenge() -> None:
    assert challenge_of(VERIFIER) == CHALLENGE
    assert check_challenge("S256", CHALLENGE) == CHALLENGE
    check_verifier(CHALLENGE, VERIFIER)


@pytest.mark.parametrize(
    ("method", "challenge", "why"),
    [
        ("S256", None, "code_challenge is required"),
        (None, CHALLENGE, "must be S256"),
        ("plain", CHALLENGE, "must be S256"),
        ("s256", CHALLENGE, "must be S256"),
        ("S256", CHALLENGE[:-1], "not an S256 challenge"),
        ("S256", CHALLENGE + "A", "not an S256 challenge"),
        ("S256", CHALLENGE[:-1] + "=", "not an S256 challenge"),
        ("S256", ["list"], "not an S256 challenge"),
    ],
)
def test_a_request_without_an_s256_challenge_is_invalid(
    method: object, challenge: object, why: str
) -> None:
    with pytest.raises(AuthorizationError, match=why) as refused:
        check_challenge(method, challenge)
    assert refused.value.error == "invalid_request"


@pytest.mark.parametrize(
    "verifier",
    [None, "", "a" * 42, "a" * 129, VERIFIER[:-1] + "!", 12345, VERIFIER[:-1] + "Y"],
)
def test_a_token_request_with_another_verifier_is_an_invalid_grant(verifier: object) -> None:
    with pytest.raises(AuthorizationError) as refused:
        check_verifier(CHALLENGE, verifier)
    assert refused.value.error == "invalid_grant"
    assert refused.value.to_json()["error"] == "invalid_grant"
