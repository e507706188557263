"""Rate limits and the response cache hold across instances: three instances of
``tests/support/servers/cluster_app.py`` on one Redis (``MCPSERVE_REDIS_URL``, so the
middleware's default store is that Redis), each asked directly, with no balancer choosing,
and then through each balancer of ``deploy/`` (haproxy and nginx), whichever instance it
picks: a refusal's status and ``Retry-After`` reach the client through it unchanged.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from cluster import BALANCERS, Cluster, Instance, cluster
from wire_helpers import TIMEOUT, Reply, call, default_headers, post, request

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module", params=BALANCERS)
def instances(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp(f"middleware-cluster-{request.param}")
    env = {"MCPSERVE_TEST_CLUSTER_MIDDLEWARE": "1"}
    with cluster(directory, request.param, env=env) as made:
        yield made


async def ask(instance: Instance, message: dict[str, Any], **headers: str) -> Reply:
    async with httpx2.AsyncClient(base_url=instance.base_url, timeout=TIMEOUT) as http:
        return await post(http, message, {**default_headers(message), **headers})


async def test_one_callers_bucket_is_shared_by_every_instance(instances: Cluster) -> None:
    first, second, third = instances.instances
    caller = {"x-test-caller": f"caller-{uuid.uuid4()}"}
    for instance in (first, second, third):  # the burst of three, one on each instance
        reply = await ask(instance, call(1, "whoami", {}), **caller)
        assert reply.result["content"][0]["text"] == str(instance.pid)
    refused = await ask(second, call(2, "whoami", {}), **caller)
    assert refused.status == 429
    wait = refused.error["data"]["retryAfterSeconds"]
    assert 9 < wait <= 10
    assert refused.headers["retry-after"] == str(math.ceil(wait))
    other = await ask(second, call(3, "whoami", {}), **{"x-test-caller": f"c-{uuid.uuid4()}"})
    assert other.result["content"][0]["text"] == str(second.pid)  # another caller: its own


async def test_a_result_cached_by_one_instance_is_served_by_the_others(instances: Cluster) -> None:
    first, second, third = instances.instances
    key = uuid.uuid4().hex
    answers = [await ask(i, call(1, "cached_pid", {"key": key})) for i in (first, second, third)]
    assert [a.result["content"][0]["text"] for a in answers] == [f"{key} {first.pid}"] * 3


async def test_an_update_through_one_instance_drops_the_read_cached_by_another(
    instances: Cluster,
) -> None:
    first, second, third = instances.instances
    read = request(1, "resources/read", {"uri": "cached://doc"})

    async def text(instance: Instance) -> str:
        return (await ask(instance, read)).result["contents"][0]["text"]  # type: ignore[no-any-return]

    kept = await text(first)
    assert kept.startswith(f"{first.pid} #")
    assert await text(second) == kept
    touched = await ask(third, call(2, "touch", {"uri": "cached://doc"}))
    assert touched.result["content"][0]["text"] == str(third.pid)
    fresh = await text(second)  # the update's answer came after the cache learned of it
    assert fresh.startswith(f"{second.pid} #")
    assert await text(first) == fresh


async def test_through_the_balancer_a_callers_bucket_holds_whichever_instance_answers(
    instances: Cluster,
) -> None:
    caller = {"x-test-caller": f"caller-{uuid.uuid4()}"}
    answered_by: list[str] = []
    async with httpx2.AsyncClient(base_url=instances.base_url, timeout=TIMEOUT) as http:
        for number in range(3):
            message = call(number, "whoami", {})
            reply = await post(http, message, {**default_headers(message), **caller})
            answered_by.append(reply.result["content"][0]["text"])
        message = call(3, "whoami", {})
        refused = await post(http, message, {**default_headers(message), **caller})
    assert len(set(answered_by)) > 1  # spread over instances, and yet one bucket
    assert refused.status == 429
    wait = refused.error["data"]["retryAfterSeconds"]
    assert 9 < wait <= 10
    assert refused.headers["retry-after"] == str(math.ceil(wait))


async def test_through_the_balancer_every_instance_serves_the_one_cached_answer(
    instances: Cluster,
) -> None:
    key = uuid.uuid4().hex
    texts: list[str] = []
    async with httpx2.AsyncClient(base_url=instances.base_url, timeout=TIMEOUT) as http:
        for number in range(4):
            message = call(number, "cached_pid", {"key": key})
            reply = await post(http, message, default_headers(message))
            texts.append(reply.result["content"][0]["text"])
    first_pid = int(texts[0].split()[1])
    assert first_pid in instances.pids
    assert texts == [texts[0]] * 4
