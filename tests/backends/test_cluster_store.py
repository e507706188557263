"""``ctx.store`` across a cluster: three instances behind haproxy with no stickiness, sharing
one Redis (``MCPSERVE_REDIS_URL`` alone picks it as the store), reached by the official
Python client in both eras. A value kept by one instance is read by each of the others.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from mcp import Client
from mcp.types import TextContent

from cluster import Cluster, cluster
from wire_helpers import TIMEOUT

pytestmark = [pytest.mark.subprocess, pytest.mark.redis, pytest.mark.balancer]


@pytest.fixture(scope="module")
def haproxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("cluster-store"), "haproxy") as made:
        yield made


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_value_kept_on_one_instance_is_read_on_every_other(
    haproxy: Cluster, mode: str
) -> None:
    key = f"choice-{uuid.uuid4().hex}"
    async with Client(haproxy.url, mode=mode, read_timeout_seconds=TIMEOUT) as client:
        kept = await client.call_tool("keep", {"key": key, "value": {"lang": "fr", "n": [1]}})
        block = kept.content[0]
        assert isinstance(block, TextContent)
        writer = int(block.text)
        readers: set[int] = set()
        for _ in range(6):
            read = await client.call_tool("kept", {"key": key})
            assert read.is_error is False
            assert read.structured_content is not None
            assert read.structured_content["value"] == {"lang": "fr", "n": [1]}, json.dumps(
                read.structured_content
            )
            readers.add(read.structured_content["pid"])
    assert readers == haproxy.pids  # every instance read it, the two that did not write too
    assert writer in haproxy.pids
