"""The authorization server's signing keys and access tokens (auth/server/signing.py).

Every token is checked the way a protected server checks one: by mcpserve's own
``JWTVerifier``, given the issuer's published JWK Set.
"""

from __future__ import annotations

import base64
import json
import os
import time

import pytest

from mcpserve.auth import InvalidToken, JWTVerifier
from mcpserve.auth.server.signing import SigningKeys, TokenIssuer

ISSUER = "https://mcp.test"
RESOURCE = "https://mcp.test/mcp"


def ring_key(kid: str) -> tuple[str, bytes]:
    return (kid, os.urandom(32))


def issuer_for(keys: SigningKeys, **options: float) -> TokenIssuer:
    return TokenIssuer(keys, issuer=ISSUER, audience=RESOURCE, **options)


async def verified(keys: SigningKeys, token: str, audience: str = RESOURCE) -> object:
    verifier = JWTVerifier(ISSUER, audience, jwks=keys.jwks, cache=None)
    return await verifier.verify(token)


def header_of(token: str) -> dict[str, object]:
    head = token.split(".")[0]
    decoded: dict[str, object] = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    return decoded


async def test_an_issued_token_is_verified_by_the_resource_servers_own_verifier() -> None:
    keys = SigningKeys([ring_key("k1")])
    token = issuer_for(keys).access_token("github|583231", ["notes:read", "notes:write"], "c1")
    access = await verified(keys, token)
    assert access.principal == "github|583231"  # type: ignore[attr-defined]
    assert access.scopes == frozenset({"notes:read", "notes:write"})  # type: ignore[attr-defined]
    assert access.client_id == "c1"  # type: ignore[attr-defined]
    assert header_of(token) == {"alg": "EdDSA", "kid": "k1.sig", "typ": "at+jwt"}


async def test_every_instance_derives_the_same_keys_from_the_same_ring() -> None:
    ring = [ring_key("k2"), ring_key("k1")]
    one, other = SigningKeys(ring), SigningKeys(list(ring))
    assert one.jwks == other.jwks
    token = issuer_for(one).access_token("ada", [], "c1")
    assert (await verified(other, token)).principal == "ada"  # type: ignore[attr-defined]
    # Another ring is another issuer: its tokens do not verify here.
    stranger = issuer_for(SigningKeys([ring_key("k2")])).access_token("ada", [], "c1")
    with pytest.raises(InvalidToken):
        await verified(one, stranger)


async def test_rotation_follows_the_ring() -> None:
    old, new = ring_key("2026-11"), ring_key("2026-12")
    before = issuer_for(SigningKeys([old])).access_token("ada", ["a"], "c1")
    rotated = SigningKeys([new, old])
    assert rotated.current_kid == "2026-12.sig"
    assert [key["kid"] for key in rotated.jwks["keys"]] == ["2026-12.sig", "2026-11.sig"]
    assert (await verified(rotated, before)).principal == "ada"  # type: ignore[attr-defined]
    after = issuer_for(rotated).access_token("bob", ["a"], "c1")
    assert header_of(after)["kid"] == "2026-12.sig"
    retired = SigningKeys([new])  # the old key left the ring: its tokens are refused
    with pytest.raises(InvalidToken):
        await verified(retired, before)
    assert (await verified(retired, after)).principal == "bob"  # type: ignore[attr-defined]


async def test_a_token_for_another_resource_an_expired_one_and_a_tampered_one_are_refused() -> None:
    keys = SigningKeys([ring_key("k1")])
    issuer = issuer_for(keys, ttl_seconds=60)
    token = issuer.access_token("ada", ["a"], "c1")
    with pytest.raises(InvalidToken):
        await verified(keys, token, audience="https://elsewhere.test/mcp")
    expired = issuer.access_token("ada", ["a"], "c1", now=time.time() - 3600)
    with pytest.raises(InvalidToken):
        await verified(keys, expired)
    head, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["scope"] = "a admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    with pytest.raises(InvalidToken):
        await verified(keys, f"{head}.{forged}.{signature}")


def test_the_published_keys_hold_no_private_part_and_the_lifetime_is_the_ttl() -> None:
    keys = SigningKeys([ring_key("k1")])
    assert all(set(key) == {"kty", "crv", "x", "kid", "use", "alg"} for key in keys.jwks["keys"])
    token = issuer_for(keys, ttl_seconds=900).access_token("ada", [], "c1", now=1_000_000)
    body = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    assert (claims["iat"], claims["exp"], claims["aud"], claims["iss"]) == (
        1_000_000,
        1_000_900,
        RESOURCE,
        ISSUER,
    )


def test_an_empty_ring_and_a_lifetime_of_nothing_are_refused() -> None:
    with pytest.raises(ValueError, match="holds no keys"):
        SigningKeys([])
    with pytest.raises(ValueError, match="ttl_seconds must be positive"):
        TokenIssuer(SigningKeys([ring_key("k1")]), issuer=ISSUER, audience=RESOURCE, ttl_seconds=0)
