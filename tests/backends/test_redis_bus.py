"""The Redis subscription bus against a real ``redis-server`` (the run's ``redis`` fixture;
the outage tests stop one of their own).

* two :class:`RedisBus` instances in this process: each event is delivered once per bus (a
  bus delivers its own events locally and skips them when Redis echoes them back);
* two server processes (``tests/support/servers/subs_redis.py`` over HTTP, ``MCPSERVE_BUS``
  set): a change or resource update on one reaches a listener on the other;
* an outage: Redis stops while a listener is open, local changes still arrive, Redis comes
  back on the same port, the bus reconnects and changes flow between processes again;
* ``bus_from_url`` and ``MCPSERVE_BUS``.

redis-server is required: a machine without it fails here, naming the package to install.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest

from listens import ACK, Listen, open_listen, open_stream, poll, tool
from mcpserve import Server
from mcpserve.backends.buses import bus_from_url
from mcpserve.backends.redis.bus import DEFAULT_CHANNEL, RedisBus, redact
from mcpserve.server.bus import LocalBus
from redis_server import RedisServer
from wire_helpers import SERVERS, TIMEOUT, HTTPServerProcess, http_server_process

SUBS_REDIS = SERVERS / "subs_redis.py"
TOOLS = "notifications/tools/list_changed"
UPDATED = "notifications/resources/updated"
DOC = "file:///shared/doc.txt"
OUTAGE_TIMEOUT = 20.0


def channel() -> str:
    return f"mcpserve-test:{uuid.uuid4().hex}"


class Collector:
    """A bus ``deliver`` callback that records events and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait_for(self, event: dict[str, Any], within: float = TIMEOUT) -> None:
        async def arrived() -> None:
            while event not in self.events:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(arrived(), within)


@pytest.fixture
async def buses(redis: RedisServer) -> AsyncIterator[list[tuple[RedisBus, Collector]]]:
    """Two started RedisBus instances on one fresh channel, both subscribed."""
    name = channel()
    pairs = [(RedisBus(redis.url, channel=name), Collector()) for _ in range(2)]
    try:
        for bus, collector in pairs:
            await bus.start(collector)
        for bus, _ in pairs:
            await asyncio.wait_for(bus.connected.wait(), TIMEOUT)
        yield pairs
    finally:
        for bus, _ in pairs:
            await bus.stop()


# =========================================================================== in one process


async def test_two_buses_deliver_every_event_exactly_once(
    buses: list[tuple[RedisBus, Collector]],
) -> None:
    (one, heard_by_one), (two, heard_by_two) = buses
    assert one.origin != two.origin
    first = {"type": "tools"}
    update = {"type": "updated", "uri": "file:///a.txt"}
    await one.publish(first)
    assert heard_by_one.events == [first]  # delivered locally, before Redis
    await heard_by_two.wait_for(first)
    await two.publish(update)
    # Redis keeps one channel's order: once ``update`` reached bus one, its own ``first``
    # would have come back before it, had it not been skipped.
    await heard_by_one.wait_for(update)
    await one.publish({"type": "prompts"})
    await heard_by_two.wait_for({"type": "prompts"})
    assert heard_by_one.events == [first, update, {"type": "prompts"}]
    assert heard_by_two.events == [first, update, {"type": "prompts"}]


async def test_buses_on_other_channels_hear_nothing(
    redis: RedisServer, buses: list[tuple[RedisBus, Collector]]
) -> None:
    (one, _), (_, heard_by_two) = buses
    elsewhere = Collector()
    other = RedisBus(redis.url, channel=channel())
    await other.start(elsewhere)
    try:
        await asyncio.wait_for(other.connected.wait(), TIMEOUT)
        await one.publish({"type": "resources"})
        await heard_by_two.wait_for({"type": "resources"})
        await other.publish({"type": "tools"})  # its own: delivered locally only
        await one.publish({"type": "prompts"})
        await heard_by_two.wait_for({"type": "prompts"})
        assert elsewhere.events == [{"type": "tools"}]
        assert {"type": "tools"} not in heard_by_two.events
    finally:
        await other.stop()


async def test_malformed_messages_are_logged_and_skipped(
    redis: RedisServer, buses: list[tuple[RedisBus, Collector]], caplog: pytest.LogCaptureFixture
) -> None:
    import redis.asyncio as redis_asyncio

    (one, heard_by_one), (two, heard_by_two) = buses
    raw = redis_asyncio.Redis.from_url(redis.url)
    try:
        await raw.publish(one.channel, b"not json")
        await raw.publish(one.channel, orjson.dumps({"event": {"type": "tools"}}))  # no origin
        await raw.publish(one.channel, orjson.dumps({"origin": "x", "event": ["tools"]}))
    finally:
        await raw.aclose()
    # Both readers have passed the junk once each has heard an event published after it.
    await two.publish({"type": "resources"})
    await heard_by_one.wait_for({"type": "resources"})
    await one.publish({"type": "prompts"})
    await heard_by_two.wait_for({"type": "prompts"})
    assert heard_by_one.events == [{"type": "resources"}, {"type": "prompts"}]
    malformed = [r for r in caplog.records if "malformed" in r.getMessage()]
    assert len(malformed) == 2 * 2  # two junk messages, seen by two buses; a non-dict
    assert all(r.name == "mcpserve.bus" for r in malformed)  # event is dropped quietly


async def test_stopped_bus_delivers_nothing_more(redis: RedisServer) -> None:
    heard = Collector()
    bus = RedisBus(redis.url, channel=channel())
    await bus.start(heard)
    await asyncio.wait_for(bus.connected.wait(), TIMEOUT)
    await bus.stop()
    await bus.publish({"type": "tools"})  # after stop: no local delivery, no error
    assert heard.events == []


# =========================================================================== bus_from_url


@pytest.mark.parametrize("url", ["memory://", "", "memory", "local"])
def test_bus_from_url_memory(url: str) -> None:
    assert isinstance(bus_from_url(url), LocalBus)


@pytest.mark.parametrize(
    "url",
    ["redis://127.0.0.1:6379/0", "rediss://cache.example:6380/2", "unix:///run/redis.sock"],
)
def test_bus_from_url_redis(url: str) -> None:
    bus = bus_from_url(url)
    assert isinstance(bus, RedisBus)
    assert bus.url == url
    assert bus.channel == DEFAULT_CHANNEL
    assert not bus.connected.is_set()  # nothing connects before start()


@pytest.mark.parametrize("url", ["kafka://broker:9092", "http://127.0.0.1:6379", "redis", "x"])
def test_bus_from_url_unknown_scheme(url: str) -> None:
    with pytest.raises(ValueError, match="Unknown subscription bus"):
        bus_from_url(url)


def test_mcpserve_bus_env_selects_the_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSERVE_BUS", raising=False)
    assert isinstance(bus_from_url(), LocalBus)
    assert isinstance(Server("plain").subscriptions.bus, LocalBus)

    monkeypatch.setenv("MCPSERVE_BUS", "redis://127.0.0.1:6399/3")
    bus = Server("shared").subscriptions.bus
    assert isinstance(bus, RedisBus)
    assert bus.url == "redis://127.0.0.1:6399/3"
    assert isinstance(bus_from_url(), RedisBus)
    assert isinstance(Server("explicit", bus="memory://").subscriptions.bus, LocalBus)

    monkeypatch.setenv("MCPSERVE_BUS", "nats://127.0.0.1:4222")
    with pytest.raises(ValueError, match="Unknown subscription bus"):
        Server("broken")


def test_passwords_are_redacted_from_logged_urls() -> None:
    assert redact("redis://user:s3cret@cache:6379/0") == "redis://***@cache:6379/0"
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


# =========================================================================== two processes


def redis_process(marker_dir: Path, url: str) -> Any:
    args = [sys.executable, str(SUBS_REDIS), "--port", "{port}"]
    return http_server_process(marker_dir, args=args, env={"MCPSERVE_BUS": url})


async def wait_connected(client: httpx2.AsyncClient, within: float = TIMEOUT) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        status = await tool(client, "bus_status", {})
        assert status["bus"] == "RedisBus", status
        if status["connected"]:
            return status  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise AssertionError(f"the bus did not connect within {within} s: {status}")
        await asyncio.sleep(0.05)


@pytest.fixture(scope="module")
def processes(
    redis: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[HTTPServerProcess, HTTPServerProcess]]:
    directory = tmp_path_factory.mktemp("redis-processes")
    with redis_process(directory, redis.url) as a, redis_process(directory, redis.url) as b:
        yield a, b


@pytest.fixture
async def clients(
    processes: tuple[HTTPServerProcess, HTTPServerProcess],
) -> AsyncIterator[tuple[httpx2.AsyncClient, httpx2.AsyncClient]]:
    a, b = processes
    async with (
        httpx2.AsyncClient(base_url=f"http://127.0.0.1:{a.port}", timeout=TIMEOUT) as on_a,
        httpx2.AsyncClient(base_url=f"http://127.0.0.1:{b.port}", timeout=TIMEOUT) as on_b,
    ):
        await wait_connected(on_a)
        await wait_connected(on_b)
        yield on_a, on_b


@pytest.mark.subprocess
async def test_a_change_on_one_process_reaches_a_listener_on_the_other(
    clients: tuple[httpx2.AsyncClient, httpx2.AsyncClient],
) -> None:
    on_a, on_b = clients
    filters = {"toolsListChanged": True, "resourceSubscriptions": [DOC]}
    async with open_stream(on_b, "on-b", filters) as stream:
        assert await stream.ack() == filters
        await tool(on_a, "change", {"name": f"t_{uuid.uuid4().hex[:8]}"})
        await stream.expect(TOOLS)
        await tool(on_a, "touch", {"uri": "file:///unsubscribed.txt"})
        await tool(on_a, "touch", {"uri": DOC})
        event = await stream.expect(UPDATED)
        assert event["params"]["uri"] == DOC
    assert [e["method"] for e in stream.events] == [ACK, TOOLS, UPDATED]


@pytest.mark.subprocess
async def test_a_process_delivers_its_own_changes_once(
    clients: tuple[httpx2.AsyncClient, httpx2.AsyncClient],
) -> None:
    on_a, on_b = clients
    filters = {"toolsListChanged": True, "resourceSubscriptions": [DOC]}
    async with open_stream(on_a, 7, filters) as stream:
        await stream.ack()
        await tool(on_a, "change", {"name": f"t_{uuid.uuid4().hex[:8]}"})
        await tool(on_a, "touch", {"uri": DOC})
        await stream.expect(TOOLS)
        await stream.expect(UPDATED)
        # A change from B comes after A's own events would have echoed back from Redis.
        await tool(on_b, "change", {"name": f"t_{uuid.uuid4().hex[:8]}"})
        await stream.expect(TOOLS)
    assert [e["method"] for e in stream.events] == [ACK, TOOLS, UPDATED, TOOLS]


# =========================================================================== an outage


async def _wait_until(condition: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {within} s")
        await asyncio.sleep(0.02)


@pytest.mark.redis  # a redis-server of its own, stopped and started
async def test_first_publish_after_an_outage_reaches_the_other_bus(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """BUG (redis_bus.py): ``Redis.from_url`` builds connections without retries, so the
    first publish after Redis restarts goes out on the pooled connection the old server
    closed, fails with "Connection closed by server", and is lost for every other process
    although the reader has already reconnected."""
    redis = RedisServer(tmp_path)
    redis.start()
    name = channel()
    (one, heard_by_one), (two, heard_by_two) = pairs = [
        (RedisBus(redis.url, channel=name), Collector()) for _ in range(2)
    ]
    try:
        for bus, collector in pairs:
            await bus.start(collector)
            await asyncio.wait_for(bus.connected.wait(), TIMEOUT)
        await one.publish({"type": "tools"})
        await heard_by_two.wait_for({"type": "tools"})

        redis.stop()
        await _wait_until(
            lambda: not (one.connected.is_set() or two.connected.is_set()),
            OUTAGE_TIMEOUT,
            "noticing the outage",
        )
        redis.start()
        for bus, _ in pairs:
            await asyncio.wait_for(bus.connected.wait(), OUTAGE_TIMEOUT)
        assert (one.outages, two.outages) == (1, 1)

        await one.publish({"type": "prompts"})
        failed = [r.getMessage() for r in caplog.records if "could not publish" in r.getMessage()]
        assert failed == [], failed
        await heard_by_two.wait_for({"type": "prompts"}, within=5)
        assert heard_by_one.events == [{"type": "tools"}, {"type": "prompts"}]
    finally:
        for bus, _ in pairs:
            await bus.stop()
        redis.stop()


def _extra() -> str:
    return "extra"


@pytest.mark.subprocess
@pytest.mark.redis  # a redis-server of its own, stopped and started
async def test_outage_local_delivery_then_reconnect(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis stops under an open listener; local changes still arrive; Redis restarts on the
    same port; both processes reconnect, log the outage, and share changes again."""
    caplog.set_level(logging.INFO, logger="mcpserve.bus")
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        with redis_process(tmp_path, redis.url) as other:
            async with httpx2.AsyncClient(
                base_url=f"http://127.0.0.1:{other.port}", timeout=TIMEOUT
            ) as on_other:
                await wait_connected(on_other)
                bus = RedisBus(redis.url)
                here = Server("here", bus=bus)
                here.add_tool(_extra, name="base")
                async with here.running():
                    await asyncio.wait_for(bus.connected.wait(), TIMEOUT)
                    listen: Listen = await open_listen(here, "l", {"toolsListChanged": True})
                    await tool(on_other, "change", {"name": "before"})
                    await listen.expect(TOOLS)

                    redis.stop()
                    here.add_tool(_extra, name="during")  # still delivered locally
                    await listen.expect(TOOLS)
                    await _wait_until(
                        lambda: not bus.connected.is_set(),
                        OUTAGE_TIMEOUT,
                        "noticing the outage here",
                    )
                    await poll(
                        on_other,
                        "bus_status",
                        {"bus": "RedisBus", "connected": False, "outages": 1},
                        within=OUTAGE_TIMEOUT,
                    )

                    redis.start()  # the same port
                    await asyncio.wait_for(bus.connected.wait(), OUTAGE_TIMEOUT)
                    await poll(
                        on_other,
                        "bus_status",
                        {"bus": "RedisBus", "connected": True, "outages": 1},
                        within=OUTAGE_TIMEOUT,
                    )
                    assert bus.outages == 1
                    # The outage and the recovery were logged, here and there.
                    messages = [r.getMessage() for r in caplog.records if r.name == "mcpserve.bus"]
                    assert any(f"connection to {redis.url} lost" in m for m in messages)
                    assert any(f"reconnected to {redis.url}" in m for m in messages)
                    log = other.log.read_text()
                    assert f"connection to {redis.url} lost" in log, log
                    assert f"reconnected to {redis.url}" in log, log

                    await tool(on_other, "change", {"name": "after"})
                    try:
                        await asyncio.wait_for(listen.expect(TOOLS), 5)
                    except TimeoutError:
                        pytest.fail(
                            "after the reconnect, a change made on the other process never "
                            "arrived; its log:\n" + other.log.read_text()[-1500:]
                        )
                await listen.result()
                assert listen.methods == [ACK, TOOLS, TOOLS, TOOLS]
    finally:
        redis.stop()
