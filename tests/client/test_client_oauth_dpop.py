"""DPoP (RFC 9449) in the OAuth client: the proofs on the wire, and the nonce dance.

An authorization server and a resource server of the test's own (``oauth_stand.py``), each
on a port of 127.0.0.1 of its own: the authorization server issues DPoP-bound tokens (or
not), the resource server's guard checks ``Authorization: DPoP`` and may insist on a nonce,
in front of a real mcpserve server. Every proof the client sent is decoded with PyJWT
against the public key its own header carries, as a server would.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.responses import JSONResponse, Response

from mcpserve import Client, ClientCredentials, OAuth, OAuthError
from mcpserve.auth.resource_uri import canonical_resource
from mcpserve.client.oauth import DPoPKey, MemoryTokenStorage, Tokens
from mcpserve.client.oauth.challenge import bearer_challenge
from mcpserve.client.oauth.dpop import proof_claims, thumbprint
from oauth_stand import GuardedEndpoint, Seen, TokenServer, oauth_error, serving

DPOP_METADATA = {"dpop_signing_alg_values_supported": ["ES256"]}


def decoded(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A proof's header and claims, its signature checked against the key it names."""
    header = jwt.get_unverified_header(proof)
    key = jwt.PyJWK(header["jwk"], algorithm=header["alg"]).key
    return header, jwt.decode(proof, key, algorithms=[header["alg"]])


def token_hash(token: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()


class Issuer:
    """Token answers: tokens ``tok-1``, ``tok-2``... bound to the proof's key (or Bearer
    ones); with ``nonce``, a proof without it is refused naming it; with ``always_new``,
    every proof is refused naming a new nonce."""

    def __init__(
        self, *, token_type: str = "DPoP", nonce: str | None = None, always_new: bool = False
    ) -> None:
        self.token_type = token_type
        self.nonce = nonce
        self.always_new = always_new
        self.issued = self.refused = 0

    def __call__(self, seen: Seen) -> Response:
        if self.always_new or (
            self.nonce is not None and decoded(seen.headers["dpop"])[1].get("nonce") != self.nonce
        ):
            self.refused += 1
            nonce = f"{self.nonce}-{self.refused}" if self.always_new else str(self.nonce)
            return oauth_error("use_dpop_nonce", **{"DPoP-Nonce": nonce})
        self.issued += 1
        answer = {"access_token": f"tok-{self.issued}", "token_type": self.token_type,
                  "expires_in": 3600}  # fmt: skip
        return JSONResponse(answer)


def dpop_guard(
    *, nonce: str | None = None, always_new: bool = False
) -> Callable[[Seen], Response | None]:
    """A resource server accepting ``DPoP tok-N`` with a proof; with ``nonce``, a proof
    without it is refused naming it; with ``always_new``, every proof is refused naming a
    new nonce."""
    refused = 0

    def guard(seen: Seen) -> Response | None:
        nonlocal refused
        authorization = seen.headers.get("authorization", "")
        if not authorization.startswith("DPoP tok-"):
            challenge = 'DPoP algs="ES256", resource_metadata="(see the well-known URI)"'
            return JSONResponse({}, 401, {"WWW-Authenticate": challenge})
        sent = decoded(seen.headers["dpop"])[1].get("nonce")
        if always_new or (nonce is not None and sent != nonce):
            refused += 1
            named = f"{nonce}-{refused}" if always_new else str(nonce)
            headers = {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": named}
            return JSONResponse({}, 401, headers)
        return None

    return guard


def bearer_guard(seen: Seen) -> Response | None:
    """A resource server that takes ``Bearer tok-N`` tokens only."""
    if seen.headers.get("authorization", "").startswith("Bearer tok-"):
        return None
    return JSONResponse({}, 401, {"WWW-Authenticate": "Bearer"})


def bot(**options: Any) -> ClientCredentials:
    return ClientCredentials("bot", "secret", **({"dpop": True} | options))


@contextlib.asynccontextmanager
async def connected(endpoint: GuardedEndpoint, auth: Any) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(trust_env=False) as pool,
        Client.http(endpoint.mcp, http_client=pool, auth=auth, timeout=10) as mcp,
    ):
        yield mcp


# --------------------------------------------------------------------------- the proofs


async def test_proofs_name_each_request_and_carry_only_the_public_key() -> None:
    issuer = TokenServer(Issuer(), metadata=DPOP_METADATA)
    endpoint = GuardedEndpoint(issuer, dpop_guard())
    async with serving(issuer, endpoint), connected(endpoint, bot()) as mcp:
        assert [tool["name"] for tool in await mcp.list_tools()] == ["hello"]

    (token_request,) = issuer.token_requests()
    header, claims = decoded(token_request.headers["dpop"])
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert set(header["jwk"]) == {"kty", "crv", "x", "y"}  # no "d": never the private key
    assert (claims["htm"], claims["htu"]) == ("POST", issuer.token_endpoint)
    assert abs(claims["iat"] - time.time()) < 30
    assert not {"ath", "nonce"} & set(claims)
    key_thumbprint = thumbprint(header["jwk"])

    authorized = [seen for seen in endpoint.mcp_requests() if "authorization" in seen.headers]
    assert len(authorized) >= 2  # server/discover and tools/list at least
    jtis = {claims["jti"]}
    for seen in authorized:
        assert seen.headers["authorization"] == "DPoP tok-1"
        header, claims = decoded(seen.headers["dpop"])
        assert thumbprint(header["jwk"]) == key_thumbprint  # the same key throughout
        assert (claims["htm"], claims["htu"]) == ("POST", endpoint.mcp)
        assert claims["ath"] == token_hash("tok-1")
        jtis.add(claims["jti"])
    assert len(jtis) == len(authorized) + 1  # a fresh proof for every request


def test_a_proof_names_the_target_without_query_or_fragment() -> None:
    claims = proof_claims("post", "https://mcp.example/mcp?tenant=7#top", issued_at=1700000000,
                          unique_id="j1", access_token="tok", nonce="n1")  # fmt: skip
    assert claims == {"jti": "j1", "htm": "POST", "htu": "https://mcp.example/mcp",
                      "iat": 1700000000, "ath": token_hash("tok"), "nonce": "n1"}  # fmt: skip
    key = DPoPKey()
    header, signed = decoded(key.proof("GET", "https://mcp.example/mcp?x=1", now=time.time()))
    assert (signed["htm"], signed["htu"]) == ("GET", "https://mcp.example/mcp")
    assert thumbprint(header["jwk"]) == key.thumbprint
    first, second = (key.proof("GET", "https://mcp.example/mcp") for _ in range(2))
    assert decoded(first)[1]["jti"] != decoded(second)[1]["jti"]


def test_the_thumbprint_is_rfc_7638s() -> None:
    # RFC 7638 section 3.1: the example key and its thumbprint.
    modulus = (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_B"
        "JECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_F"
        "DW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4"
        "vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
    )
    jwk = {"kty": "RSA", "n": modulus, "e": "AQAB", "alg": "RS256", "kid": "2011-04-29"}
    assert thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_a_key_of_yours_signs_with_the_algorithm_its_type_calls_for() -> None:
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())  # fmt: skip
    key = DPoPKey(pem.decode())
    header, _ = decoded(key.proof("POST", "https://auth.example/token"))
    assert (header["alg"], set(header["jwk"])) == ("RS256", {"kty", "n", "e"})
    assert repr(key) == f"DPoPKey(algorithm='RS256', thumbprint={key.thumbprint!r})"
    with pytest.raises(ValueError, match="The DPoP key is not an unencrypted PEM private key"):
        DPoPKey("not a key")
    with pytest.raises(ValueError, match="dpop= takes True, False or a DPoPKey, not str"):
        OAuth(dpop="yes")  # type: ignore[arg-type]


async def test_the_authorization_request_binds_the_code_to_the_key() -> None:
    key = DPoPKey()
    issuer = TokenServer(Issuer(), metadata=DPOP_METADATA)
    endpoint = GuardedEndpoint(issuer, dpop_guard())
    asked: list[httpx2.URL] = []

    def consent(url: str) -> str:
        asked.append(httpx2.URL(url))
        state = asked[-1].params["state"]
        return f"http://127.0.0.1:9/callback?code=c1&state={state}&iss={issuer.url}"

    auth = OAuth(client_id="app", redirect_uri="http://127.0.0.1:9/callback",
                 on_authorize=consent, dpop=key)  # fmt: skip
    async with serving(issuer, endpoint), connected(endpoint, auth):
        pass
    assert asked[0].params["dpop_jkt"] == key.thumbprint
    (token_request,) = issuer.token_requests()
    assert token_request.form["grant_type"] == "authorization_code"
    assert thumbprint(decoded(token_request.headers["dpop"])[0]["jwk"]) == key.thumbprint


# --------------------------------------------------------------------------- which token is sent


async def test_a_bearer_answer_is_sent_as_bearer_without_a_proof() -> None:
    issuer = TokenServer(Issuer(token_type="Bearer"))  # a server that does not bind tokens
    endpoint = GuardedEndpoint(issuer, bearer_guard)
    async with serving(issuer, endpoint), connected(endpoint, bot()):
        pass
    assert "dpop" in issuer.token_requests()[0].headers  # it was offered
    tokenless, *authorized = endpoint.mcp_requests()
    assert "authorization" not in tokenless.headers
    assert authorized
    for seen in authorized:
        assert seen.headers["authorization"] == "Bearer tok-1"
        assert "dpop" not in seen.headers


async def test_a_server_that_cannot_check_the_key_is_refused_before_the_user_or_a_grant(
) -> None:  # fmt: skip
    issuer = TokenServer(Issuer(), metadata={"dpop_signing_alg_values_supported": ["RS256"]})
    endpoint = GuardedEndpoint(issuer, dpop_guard())
    asked: list[str] = []
    user = OAuth(client_id="app", redirect_uri="http://127.0.0.1:9/callback",
                 on_authorize=asked.append, dpop=True)  # fmt: skip
    async with serving(issuer, endpoint):
        for auth in (bot(), user):
            with pytest.raises(
                OAuthError, match="accepts DPoP proofs signed with RS256, not ES256"
            ):
                async with connected(endpoint, auth):
                    pass
    assert asked == []
    assert issuer.token_requests() == []


async def test_a_dpop_token_without_the_key_is_refused_with_what_to_do() -> None:
    storage = MemoryTokenStorage()
    issuer = TokenServer(Issuer(), metadata=DPOP_METADATA)
    endpoint = GuardedEndpoint(issuer, dpop_guard())
    async with serving(issuer, endpoint):
        kept = Tokens("tok-9", token_type="DPoP")
        await storage.save_tokens(canonical_resource(endpoint.mcp), kept)
        with pytest.raises(OAuthError, match="is DPoP-bound, but this OAuth flow has no DPoP key"):
            async with connected(endpoint, bot(dpop=False, storage=storage)):
                pass
    assert endpoint.mcp_requests() == []  # the token never left


def test_the_challenge_of_the_scheme_the_token_went_with_is_read() -> None:
    both = ['Bearer realm="mcp", DPoP error="insufficient_scope", scope="write"']
    assert bearer_challenge(both, "dpop").error == "insufficient_scope"
    assert bearer_challenge(both, "dpop").scope == ("write",)
    assert bearer_challenge(both).error is None  # a Bearer token: the Bearer challenge
    dpop_only = ['DPoP algs="ES256", resource_metadata="https://mcp.example/prm"']
    assert bearer_challenge(dpop_only).resource_metadata == "https://mcp.example/prm"


# --------------------------------------------------------------------------- nonces


async def test_the_token_request_is_sent_again_once_with_the_servers_nonce() -> None:
    issuer = TokenServer(Issuer(nonce="as-nonce-1"), metadata=DPOP_METADATA)
    endpoint = GuardedEndpoint(issuer, dpop_guard())
    async with serving(issuer, endpoint), connected(endpoint, bot()):
        pass
    first, second = issuer.token_requests()
    first_claims, second_claims = (
        decoded(first.headers["dpop"])[1],
        decoded(second.headers["dpop"])[1],
    )
    assert "nonce" not in first_claims
    assert second_claims["nonce"] == "as-nonce-1"
    assert first_claims["jti"] != second_claims["jti"]
    assert first.form == second.form  # the same grant


async def test_the_resource_request_is_sent_again_once_and_the_nonce_kept() -> None:
    issuer = TokenServer(Issuer(), metadata=DPOP_METADATA)
    endpoint = GuardedEndpoint(issuer, dpop_guard(nonce="rs-nonce-1"))
    async with serving(issuer, endpoint), connected(endpoint, bot()) as mcp:
        await mcp.list_tools()
    nonces = [decoded(seen.headers["dpop"])[1].get("nonce") for seen in endpoint.mcp_requests()
              if "dpop" in seen.headers]  # fmt: skip
    # server/discover without, then with the nonce; every later request with it at once.
    assert nonces[:2] == [None, "rs-nonce-1"]
    assert set(nonces[1:]) == {"rs-nonce-1"}
    assert len(nonces) >= 3
    assert len(issuer.token_requests()) == 1  # a nonce is no reason for a new token


async def test_a_token_endpoint_asking_for_a_new_nonce_again_is_not_asked_a_third_time() -> None:
    issuer = TokenServer(Issuer(nonce="n", always_new=True), metadata=DPOP_METADATA)
    endpoint = GuardedEndpoint(issuer, dpop_guard())
    with pytest.raises(OAuthError, match=r"\(400 use_dpop_nonce\)"):
        async with serving(issuer, endpoint), connected(endpoint, bot()):
            pass
    _, second = issuer.token_requests()
    assert decoded(second.headers["dpop"])[1]["nonce"] == "n-1"


async def test_a_resource_asking_for_a_new_nonce_again_ends_the_request() -> None:
    issuer = TokenServer(Issuer(), metadata=DPOP_METADATA)
    endpoint = GuardedEndpoint(issuer, dpop_guard(nonce="r", always_new=True))
    with pytest.raises(OAuthError, match="refused the DPoP proof for its nonce again"):
        async with serving(issuer, endpoint), connected(endpoint, bot()):
            pass
    # Without a token, then with the token and no nonce, then with r-1: and no more.
    tokenless, no_nonce, with_nonce = endpoint.mcp_requests()
    assert "authorization" not in tokenless.headers
    assert "nonce" not in decoded(no_nonce.headers["dpop"])[1]
    assert decoded(with_nonce.headers["dpop"])[1]["nonce"] == "r-1"
    assert len(issuer.token_requests()) == 1
