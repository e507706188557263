"""The authorization server's records (``auth/server/records.py``) on the in-memory store:
single use of codes and refresh tokens, the markers that tell reuse from a token never
issued, revocation of a login, and upstream tokens sealed so that whoever reads the store
(or moves a record) learns and gains nothing.
"""

from __future__ import annotations

import os

from mcpserve.auth.server.records import Records, TokenCipher, digest
from mcpserve.backends.keyvalue import MemoryKeyValue

RING = [("new", os.urandom(32)), ("old", os.urandom(32))]


def records(store: MemoryKeyValue | None = None, ring: list[tuple[str, bytes]] = RING) -> Records:
    return Records(
        store if store is not None else MemoryKeyValue(),
        TokenCipher(ring),
        code_ttl=60,
        refresh_ttl=3600,
        client_ttl=3600,
        consent_ttl=3600,
    )


async def test_a_code_is_redeemed_once_and_its_reuse_names_its_login() -> None:
    kept = records()
    code = await kept.issue_code({"login": "L1", "client_id": "c"})
    assert await kept.redeem_code(code) == ({"login": "L1", "client_id": "c"}, None)
    assert await kept.redeem_code(code) == (None, "L1")
    assert await kept.redeem_code("never-issued") == (None, None)


async def test_codes_and_refresh_tokens_are_stored_under_their_digest_only() -> None:
    store = MemoryKeyValue()
    kept = records(store)
    code = await kept.issue_code({"login": "L1"})
    token = await kept.issue_refresh({"login": "L1", "client_id": "c"})
    keys = list(store._records)
    assert keys == [f"code:{digest(code)}", f"refresh:{digest(token)}"]
    assert all(code not in key and token not in key for key in keys)


async def test_a_rotated_refresh_token_used_again_names_its_login_and_revocation_ends_it() -> None:
    kept = records()
    token = await kept.issue_refresh({"login": "L1", "client_id": "c"})
    assert (await kept.rotate_refresh(token))[0] == {"login": "L1", "client_id": "c"}
    assert await kept.rotate_refresh(token) == (None, "L1")
    assert not await kept.revoked("L1")
    await kept.save_upstream("L1", {"access_token": "up"})
    await kept.revoke_login("L1")
    assert await kept.revoked("L1")
    assert await kept.upstream("L1") is None


async def test_upstream_tokens_are_sealed_bound_to_their_login_and_open_after_rotation() -> None:
    store = MemoryKeyValue()
    kept = records(store)
    await kept.save_upstream("L1", {"access_token": "gho_secret"})
    sealed = await store.get("upstream:L1")
    assert sealed is not None
    assert b"gho_secret" not in sealed
    assert sealed.startswith(b"new.")
    # Moved to another login, it does not open.
    await store.put("upstream:L2", sealed, 60)
    assert await kept.upstream("L2") is None
    # Altered, it does not open.
    await store.put("upstream:L1", sealed[:-6] + b"AAAAAA", 60)
    assert await kept.upstream("L1") is None
    # Sealed under the old key, it opens while the old key is in the ring.
    older = records(store, ring=[RING[1]])
    await older.save_upstream("L3", {"access_token": "t"})
    assert await kept.upstream("L3") == {"access_token": "t"}
    assert await records(store, ring=[("other", os.urandom(32))]).upstream("L3") is None


async def test_one_upstream_lock_at_a_time() -> None:
    kept = records()
    assert await kept.lock_upstream("L1")
    assert not await kept.lock_upstream("L1")
    await kept.unlock_upstream("L1")
    assert await kept.lock_upstream("L1")
