"""The three key-value stores held to the same tests: :class:`MemoryKeyValue`,
:class:`SQLiteKeyValue` (a file in ``tmp_path``) and :class:`RedisKeyValue` (a real
``redis-server``: the run's ``redis`` fixture, each test in a namespace of its own).

Every store: values come back as the bytes they were; a record is gone once its life
passes; ``put`` replaces a value and its life; ``add`` writes only over an absent or expired
record; ``take`` gives a value once, to one of any number of concurrent takers; ``incr``
counts within a window that its first increment opens; a life that is not a positive,
finite number of seconds and a value that is not bytes are refused alike; namespaces are
apart. Then what only the durable stores do: two store objects (and, for SQLite, two
processes) on one file or one Redis share records and race fairly; expired rows are swept;
a Redis nobody listens on, or a file SQLite cannot open, raises ``StoreUnavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis import Redis as SyncRedis

from mcpserve.backends.keyvalue import (
    KeyValueStore,
    MemoryKeyValue,
    StoreUnavailable,
    keyvalue_from_url,
)
from mcpserve.backends.redis.keyvalue import RedisKeyValue
from mcpserve.backends.sqlite import keyvalue as sqlite_keyvalue
from mcpserve.backends.sqlite.keyvalue import SQLiteKeyValue
from redis_server import REDIS_PARAM, RedisServer
from wire_helpers import free_port

STORES = ["memory", "sqlite", REDIS_PARAM]
SHARED = ["sqlite", REDIS_PARAM]
#: A life meant to pass during a test (seconds): far longer than the steps before the first
#: look take, even on a loaded machine.
SHORT = 0.5
#: How long a test waits to see a SHORT life over: well past it.
PAST = SHORT * 2
#: A life no test outlives.
LONG = 60.0
BYTES = [b"", b"\x00", b"\xff\xfe\x80 not UTF-8", "é✓".encode(), b"x" * 100_000]
#: Past ten years (MAX_TTL): a life whose end Redis's clock cannot hold (1e300 s) included.
BAD_LIVES = [0, 0.0, -1, -0.001, math.nan, math.inf, -math.inf, 315_360_001, 1e300]


class Place:
    """Where one test's records live: stores opened on it share them, as other processes
    or instances would (memory: one store per namespace, this process only)."""

    def __init__(self, kind: str, tmp_path: Path, redis: RedisServer | None) -> None:
        self.kind = kind
        self.path = tmp_path / "kv.sqlite3"
        self.redis = redis
        self.namespace = f"kv-test-{uuid.uuid4().hex}"
        self.opened: list[KeyValueStore] = []
        self._memory: dict[str, MemoryKeyValue] = {}

    def open(self, namespace: str | None = None) -> KeyValueStore:
        namespace = namespace if namespace is not None else self.namespace
        if self.kind == "memory":
            return self._memory.setdefault(namespace, MemoryKeyValue())
        store: KeyValueStore
        if self.kind == "sqlite":
            store = SQLiteKeyValue(self.path, namespace=namespace)
        else:
            assert self.redis is not None
            store = RedisKeyValue(self.redis.url, namespace=namespace)
        self.opened.append(store)
        return store

    async def fresh(self, namespace: str | None = None) -> KeyValueStore:
        """:meth:`open`, connected already: a first use (creating the file, connecting) costs
        no test part of a SHORT life."""
        store = self.open(namespace)
        assert await store.get("warm-up") is None
        return store

    async def aclose(self) -> None:
        for store in self.opened:
            await store.aclose()


async def _place(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    server = request.getfixturevalue("redis") if kind == "redis" else None
    return Place(kind, tmp_path, server)


@pytest.fixture(params=STORES)
async def place(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Place]:
    made = await _place(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture(params=SHARED)
async def shared(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Place]:
    made = await _place(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await made.aclose()


# -- every store -----------------------------------------------------------------------------


async def test_values_round_trip_as_bytes(place: Place) -> None:
    store = await place.fresh()
    for number, value in enumerate(BYTES):
        await store.put(f"key-{number}", value, LONG)
    for number, value in enumerate(BYTES):
        got = await store.get(f"key-{number}")
        assert type(got) is bytes
        assert got == value
    assert await store.get("never-written") is None


async def test_keys_are_any_text(place: Place) -> None:
    store = await place.fresh()
    keys = ["", "'", "' OR '1'='1", "*", "?", "%", "a:b", "{x}", "line\nbreak", "é✓", "k" * 5000]
    for number, key in enumerate(keys):
        await store.put(key, str(number).encode(), LONG)
    for number, key in enumerate(keys):
        assert await store.get(key) == str(number).encode()
    assert await store.get("k" * 4999) is None


async def test_a_record_is_gone_once_its_life_passes(place: Place) -> None:
    store = await place.fresh()
    await store.put("short", b"soon gone", SHORT)
    await store.put("long", b"stays", LONG)
    assert await store.get("short") == b"soon gone"
    await asyncio.sleep(PAST)
    assert await store.get("short") is None
    assert await store.take("short") is None
    assert await store.get("long") == b"stays"


async def test_get_many_reads_each_key_in_order_absent_and_expired_as_none(place: Place) -> None:
    store = await place.fresh()
    await store.put("b", b"bee", LONG)
    await store.put("short", b"soon gone", SHORT)
    await store.put("a", b"ay", None)
    assert await store.get_many(["a", "missing", "b", "short", "a"]) == [
        b"ay",
        None,
        b"bee",
        b"soon gone",
        b"ay",
    ]
    await asyncio.sleep(PAST)
    assert await store.get_many(["short", "b"]) == [None, b"bee"]
    assert await store.get_many([]) == []
    other = await place.fresh(f"{place.namespace}-other")  # another namespace: none of these
    assert await other.get_many(["a", "b"]) == [None, None]


async def test_put_replaces_the_value_and_its_life(place: Place) -> None:
    store = await place.fresh()
    await store.put("lengthened", b"first", SHORT)
    await store.put("lengthened", b"second", LONG)
    await store.put("shortened", b"first", LONG)
    await store.put("shortened", b"second", SHORT)
    assert await store.get("shortened") == b"second"
    await asyncio.sleep(PAST)
    assert await store.get("lengthened") == b"second"
    assert await store.get("shortened") is None


async def test_put_without_a_life_keeps_the_record_until_it_is_deleted(place: Place) -> None:
    store = await place.fresh()
    await store.put("forever", b"kept", None)
    await store.put("was-short", b"first", SHORT)
    await store.put("was-short", b"kept too", None)  # a record put without a life loses its old one
    await store.put("becomes-short", b"first", None)
    await store.put("becomes-short", b"gone", SHORT)
    await asyncio.sleep(PAST)
    await store.put("sweeps", b"", LONG)  # a write that sweeps expired records keeps these
    assert await store.get("forever") == b"kept"
    assert await store.get("was-short") == b"kept too"
    assert await store.get("becomes-short") is None
    assert await store.add("forever", b"refused", LONG) is False
    await store.delete("forever")
    assert await store.get("forever") is None


async def test_add_writes_only_over_an_absent_or_expired_record(place: Place) -> None:
    store = await place.fresh()
    assert await store.add("lock", b"mine", LONG) is True
    assert await store.add("lock", b"yours", LONG) is False
    assert await store.get("lock") == b"mine"

    await store.put("expiring", b"old", SHORT)
    assert await store.add("expiring", b"refused", LONG) is False
    await asyncio.sleep(PAST)
    assert await store.add("expiring", b"new", SHORT) is True
    assert await store.get("expiring") == b"new"
    await asyncio.sleep(PAST)  # the added record lives its own life, not the old one's
    assert await store.get("expiring") is None
    assert await store.add("expiring", b"again", LONG) is True


async def test_take_gives_the_value_once(place: Place) -> None:
    store = await place.fresh()
    await store.put("code", b"\x00secret", LONG)
    assert await store.take("code") == b"\x00secret"
    assert await store.take("code") is None
    assert await store.get("code") is None
    assert await store.take("never-written") is None
    await store.put("empty", b"", LONG)
    assert await store.take("empty") == b""  # an empty value is a value, not an absence
    assert await store.take("empty") is None


async def test_of_twenty_concurrent_takes_exactly_one_gets_the_value(place: Place) -> None:
    # Through two store objects where the store is shared (two instances, two connections).
    stores = [await place.fresh(), await place.fresh()]
    for round_ in range(5):
        await stores[0].put(f"code-{round_}", f"value-{round_}".encode(), LONG)
        taken = await asyncio.gather(*(stores[n % 2].take(f"code-{round_}") for n in range(20)))
        assert [v for v in taken if v is not None] == [f"value-{round_}".encode()]


async def test_incr_counts_from_one_and_restarts_after_its_window(place: Place) -> None:
    store = await place.fresh()
    assert [await store.incr("hits", SHORT) for _ in range(3)] == [1, 2, 3]
    assert await store.get("hits") == b"3"  # the count as decimal digits, in every store
    assert await store.incr("other", SHORT) == 1  # each key counts on its own
    await asyncio.sleep(PAST)
    assert await store.get("hits") is None
    assert await store.incr("hits", SHORT) == 1


async def test_incr_keeps_the_window_its_first_increment_opened(place: Place) -> None:
    store = await place.fresh()
    assert await store.incr("hits", SHORT) == 1
    assert await store.incr("hits", LONG) == 2  # a later, longer ttl does not extend it
    await asyncio.sleep(PAST)
    assert await store.incr("hits", LONG) == 1


async def test_incr_counts_on_from_digits_that_put_wrote(place: Place) -> None:
    store = await place.fresh()
    await store.put("hits", b"41", SHORT)
    assert await store.incr("hits", LONG) == 42
    await asyncio.sleep(PAST)  # the record keeps the life put gave it
    assert await store.get("hits") is None


@pytest.mark.parametrize("held", [b"", b"abc", b"1.5", b"\xff", b"1" * 30])
async def test_incr_of_a_key_that_holds_no_counter_raises_value_error(
    place: Place, held: bytes
) -> None:
    store = await place.fresh()
    await store.put("hits", held, LONG)
    with pytest.raises(ValueError, match=r"^'hits' holds something other than a counter"):
        await store.incr("hits", LONG)
    assert await store.get("hits") == held


async def test_take_token_spends_a_full_bucket_then_says_how_long_to_wait(place: Place) -> None:
    store = await place.fresh()
    assert [await store.take_token("calls", 2.0, 3) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = await store.take_token("calls", 2.0, 3)  # empty: a token comes every 0.5 s
    assert 0.3 < wait <= 0.5
    assert await store.take_token("other", 2.0, 3) == 0.0  # each key has its own bucket
    await asyncio.sleep(wait + 0.05)
    assert await store.take_token("calls", 2.0, 3) == 0.0  # refilled at the rate
    assert await store.take_token("calls", 2.0, 3) > 0


async def test_take_token_refills_no_further_than_the_burst(place: Place) -> None:
    store = await place.fresh()
    assert await store.take_token("calls", 20.0, 2) == 0.0
    await asyncio.sleep(0.3)  # six tokens' worth of time: the bucket holds two
    assert [await store.take_token("calls", 20.0, 2) for _ in range(2)] == [0.0, 0.0]
    assert await store.take_token("calls", 20.0, 2) > 0


async def test_of_twenty_concurrent_token_takers_the_burst_get_one(shared: Place) -> None:
    stores = [shared.open(), shared.open()]
    waits = await asyncio.gather(*(stores[n % 2].take_token("calls", 0.01, 5) for n in range(20)))
    assert sorted(w == 0.0 for w in waits) == [False] * 15 + [True] * 5


@pytest.mark.parametrize("held", [b"", b"abc", b"1.5", b"1 2 3", b"nan 1"])
async def test_take_token_of_a_key_that_holds_no_bucket_raises_value_error(
    place: Place, held: bytes
) -> None:
    store = await place.fresh()
    await store.put("calls", held, LONG)
    with pytest.raises(ValueError, match=r"^'calls' holds something other than a token bucket"):
        await store.take_token("calls", 1.0, 1)
    assert await store.get("calls") == held


@pytest.mark.parametrize(
    ("rate", "burst"), [(0, 1), (-1, 1), (math.nan, 1), (1, 0.5), (1, math.inf)]
)
async def test_take_token_refuses_a_bucket_that_is_not_positive_and_finite(
    place: Place, rate: float, burst: float
) -> None:
    store = await place.fresh()
    with pytest.raises(ValueError, match="must be a"):
        await store.take_token("calls", rate, burst)


async def test_delete_removes_a_record_and_an_absent_key_is_fine(place: Place) -> None:
    store = await place.fresh()
    await store.put("consent", b"yes", LONG)
    await store.delete("consent")
    assert await store.get("consent") is None
    await store.delete("consent")
    await store.delete("never-written")
    assert await store.add("consent", b"again", LONG) is True


@pytest.mark.parametrize("ttl", BAD_LIVES)
async def test_a_life_that_is_not_a_positive_number_up_to_ten_years_raises_value_error(
    place: Place, ttl: float
) -> None:
    store = await place.fresh()
    await store.put("live", b"kept", LONG)
    assert await store.incr("counter", LONG) == 1
    refused = [
        store.put("new", b"v", ttl),
        store.put("live", b"v", ttl),
        store.add("new", b"v", ttl),
        store.add("live", b"v", ttl),  # refused for its ttl, not only because it is live
        store.incr("new", ttl),
        store.incr("counter", ttl),
    ]
    for attempt in refused:
        with pytest.raises(ValueError, match=r"^ttl must be a positive number of seconds, at most"):
            await attempt
    assert await store.get("new") is None
    assert await store.get("live") == b"kept"
    assert await store.get("counter") == b"1"


async def test_a_value_that_is_not_bytes_raises_type_error(place: Place) -> None:
    store = await place.fresh()
    await store.put("live", b"kept", LONG)
    for attempt in (store.put("live", "text", LONG), store.add("new", "text", LONG)):  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^A value must be bytes, not str$"):
            await attempt
    assert await store.get("live") == b"kept"
    assert await store.get("new") is None


async def test_namespaces_do_not_see_each_others_keys(place: Place) -> None:
    ours = await place.fresh()
    theirs = await place.fresh(place.namespace + "-other")
    await ours.put("code", b"ours", LONG)
    assert await theirs.get("code") is None
    assert await theirs.take("code") is None
    assert await theirs.add("code", b"theirs", LONG) is True
    assert await theirs.incr("hits", LONG) == 1
    assert await ours.incr("hits", LONG) == 1
    await theirs.delete("code")
    assert await ours.take("code") == b"ours"


# -- the stores that share ------------------------------------------------------------------


async def test_stores_of_one_namespace_share_records(shared: Place) -> None:
    one, two = await shared.fresh(), await shared.fresh()
    await one.put("client", b"registered", LONG)
    assert await two.get("client") == b"registered"
    assert await two.add("client", b"again", LONG) is False
    assert await one.incr("hits", LONG) == 1
    assert await two.incr("hits", LONG) == 2
    assert await two.take("client") == b"registered"
    assert await one.get("client") is None


async def test_redis_keeps_each_record_under_the_namespace_with_its_life(
    redis: RedisServer,
) -> None:
    namespace = f"kv-test-{uuid.uuid4().hex}"
    store = RedisKeyValue(redis.url, namespace=namespace)
    prefix = f"mcpserve:{{{namespace}}}:kv:"
    try:
        await store.put("put", b"\xff", LONG)
        await store.add("added", b"", LONG)
        await store.incr("counted", LONG)
        await store.put("tiny", b"v", 0.0001)  # rounds up to Redis's least, 1 ms
        await asyncio.sleep(0.05)
        with SyncRedis.from_url(redis.url, socket_timeout=5.0) as client:
            assert sorted(client.keys(prefix + "*")) == [
                f"{prefix}{key}".encode() for key in ("added", "counted", "put")
            ]
            assert client.get(prefix + "put") == b"\xff"
            assert client.get(prefix + "counted") == b"1"
            for key in ("put", "added", "counted"):
                assert LONG * 1000 - 5000 < client.pttl(prefix + key) <= LONG * 1000
    finally:
        await store.aclose()


async def test_redis_keeps_a_record_put_without_a_life_without_expiry(redis: RedisServer) -> None:
    namespace = f"kv-test-{uuid.uuid4().hex}"
    store = RedisKeyValue(redis.url, namespace=namespace)
    key = f"mcpserve:{{{namespace}}}:kv:forever"
    try:
        await store.put("forever", b"v", LONG)
        await store.put("forever", b"w", None)
        with SyncRedis.from_url(redis.url, socket_timeout=5.0) as client:
            assert client.get(key) == b"w"
            assert client.pttl(key) == -1  # exists, no expiry
    finally:
        await store.aclose()


async def test_a_redis_nobody_listens_on_raises_store_unavailable_quickly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    store = RedisKeyValue(url, namespace="down")
    attempts = [store.get("k"), store.put("k", b"v", LONG), store.add("k", b"v", LONG),
                store.take("k"), store.delete("k"), store.incr("k", LONG)]  # fmt: skip
    try:
        with caplog.at_level(logging.DEBUG):
            for attempt in attempts:
                started = time.monotonic()
                with pytest.raises(StoreUnavailable) as raised:
                    await asyncio.wait_for(attempt, 10.0)
                assert time.monotonic() - started < 3.0
                assert str(raised.value).startswith("The key-value store could not ")
                assert "\n" not in str(raised.value)
        assert not store.available
        noted = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(noted) == 1, [r.getMessage() for r in noted]  # once per outage
        assert noted[0].name == "mcpserve.keyvalue"
        assert noted[0].exc_info is None  # a sentence, not a traceback
        assert f"Redis at {url} is unavailable" in noted[0].getMessage()
    finally:
        await store.aclose()


# -- SQLite ---------------------------------------------------------------------------------

CHILD = """
import asyncio, random, sys, time
from mcpserve.backends.sqlite.keyvalue import SQLiteKeyValue

async def main() -> None:
    store = SQLiteKeyValue(sys.argv[1], namespace=sys.argv[2])
    codes = list(range(int(sys.argv[3])))
    random.Random(1).shuffle(codes)
    await store.put("from-child", b"child wrote this", 60)
    print((await store.get("from-parent")).decode(), flush=True)
    sys.stdin.readline()  # go
    half = len(codes) // 2
    taken = [i for i in codes[:half] if await store.take(f"code-{i}") is not None]
    print(len(taken), flush=True)
    deadline = time.monotonic() + 30
    while await store.get("parent-taking") is None and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    taken += [i for i in codes[half:] if await store.take(f"code-{i}") is not None]
    print(" ".join(map(str, taken)), flush=True)
    await store.aclose()

asyncio.run(main())
"""


@pytest.mark.subprocess
async def test_sqlite_takes_race_fairly_between_two_processes(tmp_path: Path) -> None:
    # The child takes half the codes alone, then both processes take every code, each in
    # its own random order, at the same time: each code must be taken exactly once.
    path, namespace, codes = tmp_path / "kv.sqlite3", "race", 600
    store = SQLiteKeyValue(path, namespace=namespace)
    child = None
    try:
        await store.put("from-parent", b"parent wrote this", LONG)
        for i in range(codes):
            await store.put(f"code-{i}", str(i).encode(), LONG)
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, str(path), namespace, str(codes),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert child.stdin is not None
        assert child.stdout is not None
        assert await asyncio.wait_for(child.stdout.readline(), 30.0) == b"parent wrote this\n"
        assert await store.get("from-child") == b"child wrote this"
        child.stdin.write(b"go\n")
        await child.stdin.drain()
        assert await asyncio.wait_for(child.stdout.readline(), 30.0) == b"%d\n" % (codes // 2)
        await store.put("parent-taking", b"", LONG)
        order = list(range(codes))
        random.Random(2).shuffle(order)
        ours = [i for i in order if await store.take(f"code-{i}") is not None]
        theirs = [int(i) for i in (await asyncio.wait_for(child.stdout.readline(), 60.0)).split()]
        assert sorted(ours + theirs) == list(range(codes))  # each code taken exactly once
        # And both took some while both were taking (the child had half before).
        assert ours
        assert len(theirs) > codes // 2
        assert await asyncio.wait_for(child.wait(), 30.0) == 0
    finally:
        if child is not None and child.returncode is None:
            child.kill()
            await child.wait()
        await store.aclose()


async def test_sqlite_records_outlive_the_store_that_wrote_them(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite3"
    store = SQLiteKeyValue(path, namespace="auth")
    await store.put("refresh", b"token", LONG)
    await store.incr("hits", LONG)
    await store.aclose()
    again = SQLiteKeyValue(path, namespace="auth")
    try:
        assert await again.get("refresh") == b"token"
        assert await again.incr("hits", LONG) == 2
    finally:
        await again.aclose()


async def test_sqlite_sweeps_expired_rows_in_batches(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite3"
    store = SQLiteKeyValue(path, namespace="auth")

    def rows() -> int:
        with contextlib.closing(sqlite3.connect(path)) as db:
            (count,) = db.execute("SELECT COUNT(*) FROM keyvalue").fetchone()
            return int(count)

    forgotten = sqlite_keyvalue.SWEEP_BATCH + 50
    try:
        for i in range(forgotten):
            await store.put(f"code-{i}", b"never read", SHORT)
        await store.put("kept", b"live", LONG)
        assert rows() == forgotten + 1
        await asyncio.sleep(PAST)
        await store.put("one", b"", LONG)  # sweeps one batch
        assert rows() == forgotten - sqlite_keyvalue.SWEEP_BATCH + 2
        assert await store.add("two", b"", LONG)  # and the rest
        assert await store.incr("three", LONG) == 1
        assert rows() == 4
        assert await store.get("kept") == b"live"
    finally:
        await store.aclose()


async def test_an_unusable_sqlite_file_raises_store_unavailable_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for path in (tmp_path / "missing" / "kv.sqlite3", tmp_path):
        store = SQLiteKeyValue(path, namespace="auth")
        try:
            with caplog.at_level(logging.WARNING, logger="mcpserve.keyvalue"):
                for attempt in (store.put("k", b"v", LONG), store.get("k")):
                    with pytest.raises(StoreUnavailable) as raised:
                        await attempt
                    message = str(raised.value)
                    assert message.startswith(f"The key-value store in {path} could not ")
                    assert "\n" not in message
            assert not store.available
        finally:
            await store.aclose()
    noted = [r for r in caplog.records if r.name == "mcpserve.keyvalue"]
    assert len(noted) == 2  # once for each store, not for each attempt
    assert all(r.exc_info is None for r in noted)


# -- memory ---------------------------------------------------------------------------------


async def test_memory_drops_records_never_read_after_sweep_every_writes() -> None:
    store = MemoryKeyValue(sweep_every=5)
    for key in ("a", "b", "c"):
        await store.put(key, b"never read", SHORT)
    await store.put("kept", b"live", LONG)
    await asyncio.sleep(PAST)
    assert len(store) == 4  # expired, but nothing has swept yet
    await store.put("fifth", b"", LONG)  # the fifth write sweeps
    assert len(store) == 2
    assert await store.get("kept") == b"live"


# -- choosing a store -------------------------------------------------------------------------


async def test_keyvalue_from_url_picks_each_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(keyvalue_from_url("memory://", namespace="auth"), MemoryKeyValue)
    monkeypatch.chdir(tmp_path)
    absolute = tmp_path / "absolute.db"
    for url, file in (("sqlite:///relative.db", tmp_path / "relative.db"),
                      (f"sqlite:///{absolute}", absolute)):  # fmt: skip
        store = keyvalue_from_url(url, namespace="auth")
        assert isinstance(store, SQLiteKeyValue)
        try:
            await store.put("k", b"v", LONG)
            assert file.exists()
        finally:
            await store.aclose()
    redis_store = keyvalue_from_url("redis://127.0.0.1:6379/2", namespace="auth")
    assert isinstance(redis_store, RedisKeyValue)
    assert redis_store.namespace == "auth"
    await redis_store.aclose()


@pytest.mark.redis
async def test_a_store_from_a_redis_url_works(redis: RedisServer) -> None:
    store = keyvalue_from_url(redis.url, namespace=f"kv-test-{uuid.uuid4().hex}")
    try:
        await store.put("k", b"v", LONG)
        assert await store.take("k") == b"v"
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgres://db/auth", r"^Unknown store 'postgres://db/auth': use memory://"),
        ("memcached://", r"^Unknown store"),
        ("redis:/host", r"^Unknown store"),
        ("sqlite:relative.db", r"^Unknown store"),
        ("sqlite://", r"^sqlite:// needs a path"),
        ("sqlite:///", r"^sqlite:// needs a path"),
        ("sqlite://relative.db", r"^sqlite:// needs a path"),
        ("redis://localhost:notaport/0", r"^Malformed Redis URL 'redis://localhost:notaport/0'"),
        ("redis://localhost:99999/0", r"^Malformed Redis URL"),
        ("redis://localhost:6379/notadb", r"^Malformed Redis URL .* names a database"),
        ("redis://:hunter2@localhost:6379/x", r"^Malformed Redis URL 'redis://\*\*\*@localhost"),
    ],
)
def test_keyvalue_from_url_refuses_an_unknown_or_malformed_url(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as raised:
        keyvalue_from_url(url, namespace="auth")
    assert "\n" not in str(raised.value)
    assert "hunter2" not in str(raised.value)


async def test_stores_opening_a_new_sqlite_file_at_once_wait_for_each_other(
    tmp_path: Path,
) -> None:
    """Each store's first use switches the new file to WAL; SQLite answers the losers of that
    race "database is locked" at once, so the setup waits its turn as any write does."""
    for round_number in range(20):
        path = tmp_path / f"fresh-{round_number}.sqlite3"
        stores = [SQLiteKeyValue(path, namespace="race") for _ in range(8)]
        try:
            counts = await asyncio.gather(*(store.incr("opened", LONG) for store in stores))
        finally:
            for store in stores:
                await store.aclose()
        assert sorted(counts) == list(range(1, 9))
