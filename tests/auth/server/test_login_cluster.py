"""A login through two instances behind haproxy (``login_cluster.py``): the steps of one login
land on either instance, and every record (the registered client, the pending login, the
consent, the codes, the refresh tokens, the provider's tokens) is on the shared Redis, so
each step completes wherever it lands. The official Python and TypeScript clients log in,
and a provider token due for renewal is renewed once for calls spread over both instances.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from login_cluster import LoginCluster, login_cluster
from login_stack import REDIRECT, LoginUser, MemoryStorage, python_client
from redis_server import RedisServer
from ts_client import ts_client

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.node,
    pytest.mark.redis,
    pytest.mark.balancer,
]

STATEFUL_STEPS = ("/register", "/authorize", "/auth/consent", "/auth/callback", "/token")


async def structured(client: Client, tool: str) -> Any:
    result = await client.call_tool(tool, {})
    assert not result.is_error, result
    return result.structured_content or json.loads(result.content[0].text)  # type: ignore[union-attr]


def assert_login_crossed_instances(cluster: LoginCluster) -> None:
    """Each instance served some of the login's stateful steps: a step found records the
    other instance wrote."""
    per_instance = [
        sum(counts) for counts in zip(*(cluster.served(p) for p in STATEFUL_STEPS), strict=True)
    ]
    assert all(count > 0 for count in per_instance), {
        step: cluster.served(step) for step in STATEFUL_STEPS
    }


def token_requests(cluster: LoginCluster) -> int:
    endpoint = cluster.provider.token_endpoint
    line = f'HTTP Request: POST {endpoint} "HTTP/1.1 200 OK"'
    return sum(log.read_text().count(line) for log in cluster.logs)


async def test_the_python_client_logs_in_across_two_instances_and_one_renewal_serves_both(
    tmp_path: Path, redis: RedisServer
) -> None:
    async with login_cluster(tmp_path, redis, access_token_ttl=40) as cluster:
        user = LoginUser("erin")
        storage = MemoryStorage()
        async with python_client(cluster, user, storage) as client:
            me = await structured(client, "whoami")
            assert await structured(client, "provider_userinfo") == {"status": 200, "sub": "erin"}
            assert token_requests(cluster) == 1
            await asyncio.sleep(11)  # the provider's token is now within 30 s of its end
            answers = await asyncio.gather(
                *(structured(client, "provider_userinfo") for _ in range(6))
            )
            renewals = token_requests(cluster) - 1

    assert me["principal"] == "erin"
    assert me["aud"] == cluster.url
    assert len(user.consent_pages()) == 1
    assert_login_crossed_instances(cluster)
    assert answers == [{"status": 200, "sub": "erin"}] * 6
    assert renewals == 1  # one renewal, whichever instance made it
    assert all(count > 0 for count in cluster.served("/mcp"))


async def test_the_typescript_client_logs_in_across_two_instances(
    tmp_path: Path, redis: RedisServer, ts_install: tuple[str, Path]
) -> None:
    async with (
        login_cluster(tmp_path, redis) as cluster,
        asyncio.timeout(90),
        ts_client(*ts_install) as ts,
    ):
        oauth = {"kind": "authorization_code", "redirectUrl": REDIRECT, "clientName": "TS"}
        await ts.ask("connectOAuth", url=cluster.url, mode="auto", oauth=oauth)
        before = await ts.send("oauth")
        answer = await LoginUser("frank").follow(before["authorizationUrls"][-1])
        callback = f"{REDIRECT}?code={answer['code']}&iss={cluster.base_url}"
        await ts.send("finishAuth", callbackUrl=callback)
        me = await ts.send("call", name="whoami", arguments={})
        userinfo = await ts.send("call", name="provider_userinfo", arguments={})
        await ts.send("close")

    assert me["structured"]["principal"] == "frank"
    assert userinfo["structured"] == {"status": 200, "sub": "frank"}
    assert_login_crossed_instances(cluster)
