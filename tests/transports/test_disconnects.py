"""Watching for an HTTP client's disconnect: a watcher only for requests that run a while.

The wire tests (``test_http_wire.py``) disconnect real clients from a real uvicorn; these
drive :class:`DisconnectWatch` with an ASGI ``receive`` of their own, to see when it is
called at all.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpserve.transports.disconnects import DisconnectWatch

AFTER = 0.05


class Receive:
    """An ASGI ``receive`` after the body was read: it waits until told the client left."""

    def __init__(self) -> None:
        self.calls = 0
        self.gone = asyncio.Event()

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        await self.gone.wait()
        return {"type": "http.disconnect"}


def own_tasks() -> set[asyncio.Task[Any]]:
    current = asyncio.current_task()
    return {task for task in asyncio.all_tasks() if task is not current and not task.done()}


async def test_requests_that_end_sooner_never_start_a_watcher() -> None:
    watch = DisconnectWatch(AFTER)
    receive = Receive()

    async def quick(i: int) -> dict[str, Any]:
        await asyncio.sleep(0.001)  # it awaits something: not an inline request
        return {"id": i}

    results = await asyncio.gather(*(watch.run(quick(i), receive, i) for i in range(200)))
    assert results == [{"id": i} for i in range(200)]
    await asyncio.sleep(AFTER * 3)  # the timer has fired: nothing was still running
    assert receive.calls == 0
    assert own_tasks() == set()


async def test_the_queue_is_looked_at_a_few_times_per_period_not_once_per_request() -> None:
    watch = DisconnectWatch(AFTER)
    looks = 0
    start_watchers = watch._start_watchers

    def counted() -> None:
        nonlocal looks
        looks += 1
        start_watchers()

    watch._start_watchers = counted  # type: ignore[method-assign]
    receive = Receive()

    async def quick() -> dict[str, Any]:
        await asyncio.sleep(0.002)
        return {}

    loop = asyncio.get_running_loop()
    started = loop.time()
    running = []
    for i in range(100):  # a request every millisecond or so, for 0.1 s and more
        running.append(asyncio.create_task(watch.run(quick(), receive, i)))
        await asyncio.sleep(0.001)
    await asyncio.gather(*running)
    await asyncio.sleep(AFTER * 2)
    periods = (loop.time() - started) / AFTER
    assert receive.calls == 0
    assert 1 <= looks <= 4 * periods + 2  # a timer per request would be 100 looks


async def test_a_long_request_is_cancelled_when_its_client_disconnects() -> None:
    watch = DisconnectWatch(AFTER)
    receive = Receive()
    outcome: list[str] = []

    async def forever() -> dict[str, Any]:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        return {}

    running = asyncio.create_task(watch.run(forever(), receive, 7))
    await asyncio.sleep(AFTER * 3)
    assert receive.calls == 1  # its watcher is waiting for the disconnect
    receive.gone.set()
    assert await asyncio.wait_for(running, 5) is None
    assert outcome == ["cancelled"]
    assert not running.cancelled()  # the watcher's cancellation does not leak out


async def test_a_client_that_left_before_the_watcher_started_is_noticed_when_it_starts() -> None:
    watch = DisconnectWatch(AFTER)
    receive = Receive()
    receive.gone.set()  # left at once
    started = asyncio.get_running_loop().time()
    assert await asyncio.wait_for(watch.run(asyncio.sleep(60, {}), receive, 1), 5) is None
    assert asyncio.get_running_loop().time() - started >= AFTER - 0.01


async def test_a_watcher_ends_with_its_request() -> None:
    watch = DisconnectWatch(AFTER)
    receive = Receive()

    async def slow() -> dict[str, Any]:
        await asyncio.sleep(AFTER * 3)
        return {"done": True}

    assert await watch.run(slow(), receive, 1) == {"done": True}
    assert receive.calls == 1
    await asyncio.sleep(0)  # the cancelled watcher finishes
    assert own_tasks() == set()


async def test_the_callers_own_cancellation_passes_through() -> None:
    watch = DisconnectWatch(AFTER)
    running = asyncio.create_task(watch.run(asyncio.sleep(60, {}), Receive(), 1))
    await asyncio.sleep(AFTER * 2)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_later_requests_are_watched_after_earlier_ones_ended() -> None:
    """The timer follows the queue: a request arriving while others are in flight, or
    after the queue emptied, gets its watcher on time."""
    watch = DisconnectWatch(AFTER)
    first, second, third = Receive(), Receive(), Receive()
    a = asyncio.create_task(watch.run(asyncio.sleep(AFTER * 1.5, {"a": 1}), first, 1))
    await asyncio.sleep(AFTER / 2)
    b = asyncio.create_task(watch.run(asyncio.sleep(60, {}), second, 2))
    assert await a == {"a": 1}
    await asyncio.sleep(AFTER * 2)
    assert (first.calls, second.calls) == (1, 1)
    second.gone.set()
    assert await asyncio.wait_for(b, 5) is None
    await asyncio.sleep(AFTER * 2)  # the queue is empty, the timer stopped
    c = asyncio.create_task(watch.run(asyncio.sleep(60, {}), third, 3))
    await asyncio.sleep(AFTER * 3)
    assert third.calls == 1
    third.gone.set()
    assert await asyncio.wait_for(c, 5) is None


def test_one_watch_serves_one_event_loop_after_another() -> None:
    watch = DisconnectWatch(AFTER)

    async def disconnected_long_request() -> Any:
        receive = Receive()
        running = asyncio.create_task(watch.run(asyncio.sleep(60, {}), receive, 1))
        await asyncio.sleep(AFTER * 3)
        receive.gone.set()
        outcome = await asyncio.wait_for(running, 5), receive.calls
        # A quick request last: the loop ends with the timer for it still pending.
        assert await watch.run(asyncio.sleep(0, {}), Receive(), 2) == {}
        return outcome

    assert asyncio.run(disconnected_long_request()) == (None, 1)
    assert asyncio.run(disconnected_long_request()) == (None, 1)
