"""A rolling restart under load loses no request: ``deploy/haproxy.cfg`` run verbatim, its
health check on ``/readyz``, and mcpserve's drain on SIGTERM (``transports/drain.py``).

Three instances share Redis and ``MCPSERVE_STATE_KEYS`` (``tests/support/cluster.py``) and
drain for 3 s. While a bounded load runs through haproxy (raw 2026-07-28 calls, and the
official ``mcp`` client in the handshake era, whose session lives in Redis), each instance
in turn gets SIGTERM, exits, and is started again on its port. Every request of the load
must be answered, and haproxy's own log must show each instance taken out (DOWN, while it
was still answering: the drain) and back in (UP): without the health check following
``/readyz`` the balancer would send requests to an instance that has stopped listening.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.types import TextContent

from cluster import Cluster, cluster
from wire_helpers import TIMEOUT, call, post

pytestmark = [pytest.mark.subprocess, pytest.mark.redis, pytest.mark.balancer]

DRAIN_SECONDS = 3.0
#: A restart's stop takes the drain, then at most the grace uvicorn gives what is still open
#: (the HTTP default, 20 s: a stream a client has not closed yet may hold it that long on a
#: busy machine), then uvicorn's end.
STOP_WITHIN = DRAIN_SECONDS + 20.0 + 10.0
#: No load loop runs more than this many requests, whatever happens.
MAX_REQUESTS = 5000


class Load:
    """Requests sent and their outcomes, per client; each client stops when told to."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.answered: Counter[int] = Counter()  # pid -> answers it gave
        self.failures: list[str] = []
        self.sent = 0

    async def run(self, name: str, once: Callable[[], Awaitable[int]]) -> None:
        for _ in range(MAX_REQUESTS):
            if self.stop.is_set():
                return
            self.sent += 1
            try:
                self.answered[await asyncio.wait_for(once(), TIMEOUT)] += 1
            except Exception as exc:  # every failure counts, whatever its kind
                self.failures.append(f"{name}: {type(exc).__name__}: {exc}")
            await asyncio.sleep(0.01)


async def modern_calls(where: Cluster, load: Load, name: str) -> None:
    """2026-07-28 ``tools/call whoami`` through the balancer: 200 and a pid, every time."""
    async with httpx2.AsyncClient(base_url=where.base_url, timeout=TIMEOUT) as http:
        number = 0

        async def once() -> int:
            nonlocal number
            number += 1
            reply = await post(http, call(number, "whoami", {}))
            assert reply.status == 200, (reply.status, reply.body[:300])
            return int(reply.result["content"][0]["text"])

        await load.run(name, once)


async def handshake_era_calls(where: Cluster, load: Load, name: str) -> None:
    """The official client in the handshake era: one session, kept in Redis, throughout."""
    async with Client(where.url, mode="legacy", read_timeout_seconds=TIMEOUT) as client:

        async def once() -> int:
            result = await client.call_tool("whoami", {})
            assert result.is_error is False, result
            (block,) = result.content
            assert isinstance(block, TextContent), block
            return int(block.text)

        await load.run(name, once)


async def test_rolling_restart_under_load_loses_no_request(tmp_path: Path) -> None:
    env = {"MCPSERVE_DRAIN_SECONDS": str(DRAIN_SECONDS)}
    with cluster(tmp_path, "haproxy", env=env) as where:
        load = Load()
        clients = [
            asyncio.create_task(modern_calls(where, load, "modern-1")),
            asyncio.create_task(modern_calls(where, load, "modern-2")),
            asyncio.create_task(handshake_era_calls(where, load, "handshake-1")),
            asyncio.create_task(handshake_era_calls(where, load, "handshake-2")),
        ]
        old_pids = set(where.pids)
        try:
            await asyncio.sleep(1.0)  # the load is under way
            for instance in where.instances:
                mark = len(where.balancer_log())
                old = instance.pid
                instance.process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                # Taken out while it drains: the process still runs when haproxy says so.
                down = await where.wait_balancer_log(
                    f"Server mcpserve/mcp{instance.number} is DOWN", after=mark
                )
                assert instance.alive, "haproxy noticed only once the process had gone"
                assert time.monotonic() - signalled < DRAIN_SECONDS
                await asyncio.to_thread(instance.process.wait, STOP_WITHIN)
                await asyncio.to_thread(where.restart, instance)
                await where.wait_balancer_log(
                    f"Server mcpserve/mcp{instance.number} is UP", after=down
                )
                await served_by(load, instance.pid)
                assert instance.pid != old
            await asyncio.sleep(0.5)
        finally:
            load.stop.set()
            outcomes = await asyncio.gather(*clients, return_exceptions=True)
        assert [o for o in outcomes if o is not None] == [], outcomes
        assert load.failures == [], load.failures[:10]
        # Every request was answered, by the old instances and by the new ones.
        assert sum(load.answered.values()) == load.sent
        assert old_pids <= set(load.answered), (old_pids, load.answered)
        assert where.pids <= set(load.answered), (where.pids, load.answered)
        assert load.sent > 100, load.sent


async def served_by(load: Load, pid: int, within: float = TIMEOUT) -> None:
    """Until the process ``pid`` (a restarted instance) has answered a request of the load."""
    deadline = time.monotonic() + within
    while not load.answered[pid]:
        assert time.monotonic() < deadline, f"the restarted instance {pid} got no request"
        await asyncio.sleep(0.05)
