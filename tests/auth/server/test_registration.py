"""Dynamic client registration's checks (auth/server/registration.py): what the official
clients send is registered; everything else is refused with RFC 7591's error, naming it."""

from __future__ import annotations

import json

import pytest

from mcpserve.auth.server.errors import AuthorizationError
from mcpserve.auth.server.registration import MAX_BODY_BYTES, register


def body(**metadata: object) -> bytes:
    return json.dumps(metadata).encode()


def test_a_public_client_as_mcp_clients_register_is_registered() -> None:
    # The shape the official Python SDK's OAuthClientProvider sends.
    client = register(
        body(
            redirect_uris=["http://localhost:3030/callback"],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            client_name="Simple Auth Client",
        ),
        now=1_700_000_000,
    )
    answer = client.to_json()
    assert len(client.client_id) >= 32
    assert client.client_secret is None
    assert answer == {
        "client_id": client.client_id,
        "client_id_issued_at": 1_700_000_000,
        "redirect_uris": ["http://localhost:3030/callback"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "client_name": "Simple Auth Client",
    }
    other = register(body(redirect_uris=["https://app.example/cb"]))
    assert other.client_id != client.client_id  # each registration is a client of its own


def test_a_confidential_client_gets_a_secret_that_does_not_expire() -> None:
    client = register(
        body(
            redirect_uris=["https://app.example/cb"],
            token_endpoint_auth_method="client_secret_post",
        )
    )
    answer = client.to_json()
    assert isinstance(answer["client_secret"], str)
    assert len(answer["client_secret"]) >= 40
    assert answer["client_secret_expires_at"] == 0
    assert answer["grant_types"] == ["authorization_code"]


@pytest.mark.parametrize(
    ("sent", "error", "why"),
    [
        (b"not json", "invalid_client_metadata", "not JSON"),
        (b"[1, 2]", "invalid_client_metadata", "must be a JSON object"),
        (b"[" * 5000 + b"]" * 5000, "invalid_client_metadata", "not JSON"),
        (
            b'{"redirect_uris": ["https://a.example/cb"], "x": 1' + b"0" * 400 + b"}",
            "invalid_client_metadata",
            "not JSON that can be read: number is infinity",
        ),
        (body(), "invalid_redirect_uri", "at least one"),
        (body(redirect_uris="https://a.example/cb"), "invalid_client_metadata", "list of strings"),
        (body(redirect_uris=[1]), "invalid_client_metadata", "list of strings"),
        (body(redirect_uris=["http://evil.example/cb"]), "invalid_redirect_uri", "https"),
        (
            body(redirect_uris=[f"https://a.example/{n}" for n in range(21)]),
            "invalid_redirect_uri",
            "at most 20",
        ),
        (
            body(redirect_uris=["https://a.example/cb"], grant_types=["client_credentials"]),
            "invalid_client_metadata",
            "grant_types",
        ),
        (
            body(redirect_uris=["https://a.example/cb"], grant_types=["refresh_token"]),
            "invalid_client_metadata",
            "grant_types",
        ),
        (
            body(redirect_uris=["https://a.example/cb"], response_types=["token"]),
            "invalid_client_metadata",
            "response_types",
        ),
        (
            body(
                redirect_uris=["https://a.example/cb"], token_endpoint_auth_method="private_key_jwt"
            ),
            "invalid_client_metadata",
            "token_endpoint_auth_method",
        ),
        (
            body(redirect_uris=["https://a.example/cb"], client_name="n" * 201),
            "invalid_client_metadata",
            "client_name",
        ),
        (
            body(redirect_uris=["https://a.example/cb"], client_name=["a"]),
            "invalid_client_metadata",
            "client_name",
        ),
        (b'{"a": "' + b"x" * MAX_BODY_BYTES + b'"}', "invalid_client_metadata", "larger than"),
    ],
)
def test_a_registration_that_asks_for_anything_else_is_refused(
    sent: bytes, error: str, why: str
) -> None:
    with pytest.raises(AuthorizationError, match=why) as refused:
        register(sent)
    assert refused.value.error == error
    assert set(refused.value.to_json()) == {"error", "error_description"}


def test_repeated_redirect_uris_are_registered_once() -> None:
    client = register(body(redirect_uris=["https://a.example/cb", "https://a.example/cb"]))
    assert client.redirect_uris == ["https://a.example/cb"]
