"""Three mcpserve instances behind a load balancer with no stickiness, sharing one Redis.

``tests/support/cluster.py`` starts redis-server, three instances
(``tests/support/servers/cluster_app.py`` with ``MCPSERVE_REDIS_URL`` and one
``MCPSERVE_STATE_KEYS``) and haproxy or nginx in round robin, running ``deploy/haproxy.cfg``
and ``deploy/nginx.conf`` as committed. Every scenario runs behind both. The clients are the
official ones: the Python SDK (``mcp``) in modes ``legacy``, ``auto`` and ``2026-07-28``,
and the TypeScript SDK (``@modelcontextprotocol/client``, ``tests/support/ts/``) in modes
``legacy`` and ``auto``; raw HTTP where a test must choose the instance itself.

Where a request landed is read, not guessed: every tool answers its pid, and the instances
log each HTTP request (pid, method, session) to a shared file. So the assertions are about
the thing itself: one handshake-era session served by every instance; an elicitation
answered by a POST that reached another instance than the one waiting for it; a change
made on one instance reaching a client's stream on another; a log level set on one
instance honoured on another; a multi round-trip retry completed elsewhere; a GET stream
resumed on another instance; DELETE ending the session everywhere; an instance killed with
clients carrying on; and a Redis outage that 2026-07-28 requests do not notice and
handshake-era ones report (HTTP 503) until Redis is back.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ElicitResult, TextContent

from cluster import BALANCERS, Cluster, Instance, cluster
from legacy_schema import (
    HTTPXExchange,
    LegacyHTTPClient,
    legacy_call,
    legacy_request,
)
from servers.cluster_app import NAME, VERSION, WATCHED
from ts_client import ts_client
from wire_helpers import TIMEOUT, Reply, call, post

pytestmark = [pytest.mark.subprocess, pytest.mark.redis, pytest.mark.balancer]

MODES = ["legacy", "auto", "2026-07-28"]
TS_MODES = ["legacy", "auto"]
OTHER = "watched://other"
ELICITATION = {"elicitation": {"form": {}}}
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
WARNING_AND_ERROR = [("warning", "warning message"), ("error", "error message")]
OUTAGE_TIMEOUT = 20.0


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module", params=BALANCERS)
def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """One cluster per balancer for the tests that leave it as they found it."""
    with cluster(tmp_path_factory.mktemp(f"cluster-{request.param}"), request.param) as made:
        yield made


@pytest.fixture(autouse=True)
def _logs_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a failed test, the tails of its clusters' logs (the files stay in tmp_path)."""
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed > failed:
        for value in request.node.funcargs.values():
            if isinstance(value, Cluster):
                print(f"==== cluster logs in {value.directory}\n{value.logs()}", file=sys.stderr)


# --------------------------------------------------------------------------- helpers


@asynccontextmanager
async def official(where: Cluster, mode: str, **options: Any) -> AsyncIterator[Client]:
    """The official Python client connected through the balancer."""
    async with Client(where.url, mode=mode, read_timeout_seconds=TIMEOUT, **options) as client:
        yield client


def only_text(result: Any) -> str:
    assert len(result.content) == 1, result
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


async def whoami(client: Client) -> int:
    return int(only_text(await client.call_tool("whoami", {})))


async def modern(
    instance: Instance,
    tool: str,
    arguments: dict[str, Any],
    *,
    capabilities: dict[str, Any] | None = None,
    **params: Any,
) -> Reply:
    """A 2026-07-28 ``tools/call`` sent straight to ``instance`` (no balancer)."""
    message = call(1, tool, arguments)
    if capabilities is not None:
        message["params"]["_meta"][CAPABILITIES_KEY] = capabilities
    message["params"].update(params)
    async with httpx2.AsyncClient(base_url=instance.base_url, timeout=TIMEOUT) as http:
        return await post(http, message)


async def touch(instance: Instance, uri: str) -> None:
    """Change ``uri`` through ``instance``; its answer must come from that very process."""
    reply = await modern(instance, "touch", {"uri": uri})
    assert reply.status == 200, reply
    assert reply.result["content"] == [{"type": "text", "text": str(instance.pid)}]


def away_from(where: Cluster, *pids: int) -> Instance:
    """A live instance that is none of ``pids`` (the last of them may be given way to)."""
    for count in range(len(pids), 0, -1):
        candidates = where.others(*pids[:count])
        if candidates:
            return candidates[0]
    raise AssertionError(f"no live instance other than {pids}")


async def eventually(condition: Any, what: str, within: float = TIMEOUT) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"never happened within {within} s: {what}"
        await asyncio.sleep(0.02)


class Steered:
    """A raw handshake-era client whose next exchange goes to the instance given to :meth:`on`.

    Messages are checked against the era's schema (``legacy_schema.EraChecker``).
    """

    def __init__(self, https: dict[int, httpx2.AsyncClient]) -> None:
        self.https = https
        self.to = next(iter(https.values()))
        self.legacy = LegacyHTTPClient(self._open)

    async def _open(self, method: str, headers: dict[str, str], body: bytes) -> HTTPXExchange:
        return await HTTPXExchange.open(self.to, method, "/mcp", headers, body)

    def on(self, instance: Instance) -> LegacyHTTPClient:
        self.to = self.https[instance.number]
        return self.legacy


@asynccontextmanager
async def steered(where: Cluster) -> AsyncIterator[Steered]:
    https = {
        instance.number: httpx2.AsyncClient(base_url=instance.base_url, timeout=TIMEOUT)
        for instance in where.instances
    }
    steer = Steered(https)
    try:
        yield steer
    finally:
        await steer.legacy.close()
        for http in https.values():
            await http.aclose()


def _updated_uris(into: list[str]) -> Any:
    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            into.append(str(message.params.uri))

    return on_message


async def landed(where: Cluster, method: str, after: int) -> dict[str, Any]:
    """The record of the first ``method`` request logged from index ``after`` on: which
    instance served it (``pid``) and, in a session, its ``mcp-session-id``."""
    return await where.wait_record(lambda r: r.get("method") == method, method, after=after)


async def stream_pid(where: Cluster, session: str, after: int = 0) -> int:
    """The pid of the instance serving ``session``'s GET stream (opened from ``after`` on)."""
    record = await where.wait_record(
        lambda r: r["http"] == "GET" and r.get("mcp-session-id") == session,
        f"the GET stream of session {session}",
        after=after,
    )
    assert record["status"] == 200, record
    return int(record["pid"])


# --------------------------------------------------------------------------- Python client


@pytest.mark.parametrize("mode", MODES)
async def test_tools_spread_over_every_instance(shared: Cluster, mode: str) -> None:
    """Round robin spreads one connection's calls over all three instances: for a legacy
    client, one handshake-era session is served by every process."""
    logs: list[tuple[str, Any]] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    options: dict[str, Any] = {"logging_callback": on_log}
    if mode != "legacy":
        options["log_level"] = "warning"  # the 2026-07-28 per-request opt-in
    async with official(shared, mode, **options) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        if mode != "2026-07-28":
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == (NAME, VERSION)
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.is_error is False
        assert added.structured_content == {"total": 5}
        assert only_text(added) == '{"total":5}'
        pids = [await whoami(client) for _ in range(6)]
        assert set(pids) == shared.pids, pids
        if mode == "legacy":
            with pytest.warns(MCPDeprecationWarning):
                await client.set_logging_level("warning")
        chatty = json.loads(only_text(await client.call_tool("chatty", {})))
        assert chatty["sent"] == ["warning", "error"]
        assert logs == WARNING_AND_ERROR


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_round_trip(shared: Cluster, mode: str) -> None:
    """A handshake-era question is answered by a POST that another instance receives; a
    2026-07-28 retry (``inputResponses`` + ``requestState``) runs on another instance."""
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ann"})

    async with official(shared, mode, elicitation_callback=elicit) as client:
        before = len(shared.records())
        answer = json.loads(only_text(await client.call_tool("ask_name", {})))
    assert asked == ["What is your name?"]
    assert answer["greeting"] == "Hello, Ann!"
    if mode == "legacy":
        assert len(answer["pids"]) == 1, answer
        asking = answer["pids"][0]
        # The result may arrive before the 202 to the answer's POST: wait for its record.
        answered = await shared.wait_record(lambda r: "answer" in r, "the answer", after=before)
        assert answered["status"] == 202, answered
        assert answered["pid"] != asking, "the answer reached the asking instance itself"
    records = shared.records()[before:]
    calls = [r for r in records if r.get("method") == "tools/call"]
    if mode == "legacy":
        assert [r["pid"] for r in calls] == [asking]
        assert [r for r in records if "answer" in r] == [answered]
    else:
        first, retry = answer["pids"]
        assert first != retry, "the retry ran on the instance of the first attempt"
        assert [r["pid"] for r in calls] == [first, retry]


@pytest.mark.parametrize("mode", MODES)
async def test_resource_update_made_through_another_instance(shared: Cluster, mode: str) -> None:
    """The change is made by a request sent straight to an instance that serves neither the
    client's stream nor (legacy) its subscribe; the update for the exact URI arrives."""
    updated: list[str] = []
    async with official(shared, mode, message_handler=_updated_uris(updated)) as client:
        before = len(shared.records())
        if mode == "legacy":
            with pytest.warns(MCPDeprecationWarning):
                await client.subscribe_resource(WATCHED)
            subscribe = await landed(shared, "resources/subscribe", before)
            streaming = await stream_pid(shared, subscribe["mcp-session-id"])
            elsewhere = away_from(shared, streaming, subscribe["pid"])
            assert elsewhere.pid != streaming
            await touch(elsewhere, OTHER)  # not subscribed: must not arrive
            await touch(elsewhere, WATCHED)
            await eventually(lambda: WATCHED in updated, f"updated {WATCHED} on the GET stream")
            # One channel keeps order: had OTHER leaked, it would have come first.
            assert updated == [WATCHED]
        else:
            async with client.listen(resource_subscriptions=[WATCHED]) as subscription:
                listen = await landed(shared, "subscriptions/listen", before)
                elsewhere = away_from(shared, listen["pid"])
                await touch(elsewhere, OTHER)
                await touch(elsewhere, WATCHED)
                event = await asyncio.wait_for(anext(subscription), TIMEOUT)
            assert isinstance(event, ResourceUpdated), event
            assert event.uri == WATCHED


async def test_log_level_set_on_one_instance_is_honoured_by_the_others(shared: Cluster) -> None:
    logs: list[tuple[str, Any]] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    async with official(shared, "legacy", logging_callback=on_log) as client:
        for level, expected in (("warning", ["warning", "error"]), ("error", ["error"])):
            logs.clear()
            before = len(shared.records())
            with pytest.warns(MCPDeprecationWarning):
                await client.set_logging_level(level)  # type: ignore[arg-type]
            setter = (await landed(shared, "logging/setLevel", before))["pid"]
            results = [
                json.loads(only_text(await client.call_tool("chatty", {}))) for _ in range(3)
            ]
            assert [r["sent"] for r in results] == [expected] * 3
            assert {r["pid"] for r in results} - {setter}, (setter, results)
            assert logs == [(name, f"{name} message") for name in expected] * 3


# --------------------------------------------------------------------------- raw HTTP


async def test_multi_round_trip_retry_on_another_instance(shared: Cluster) -> None:
    """The first attempt on one instance, the retry sent straight to another: the shared
    state key opens the other's ``requestState``."""
    one, two = shared.instances[:2]
    first = await modern(one, "ask_name", {}, capabilities=ELICITATION)
    assert first.status == 200
    assert first.result["resultType"] == "input_required"
    (key,) = first.result["inputRequests"]
    assert first.result["inputRequests"][key]["method"] == "elicitation/create"
    retry = await modern(
        two,
        "ask_name",
        {},
        capabilities=ELICITATION,
        inputResponses={key: {"action": "accept", "content": {"name": "Bo"}}},
        requestState=first.result["requestState"],
    )
    assert retry.result["resultType"] == "complete"
    answer = json.loads(retry.result["content"][0]["text"])
    assert answer == {"greeting": "Hello, Bo!", "pids": [one.pid, two.pid]}


async def test_one_session_on_three_instances(shared: Cluster) -> None:
    """``initialize`` on one instance, the GET stream on a second, resumed with its
    ``Last-Event-ID`` on the third, subscribe and the change on others again; then DELETE
    on one ends the session on all three, its stream included."""
    one, two, three = shared.instances
    async with steered(shared) as steer:
        reply = await steer.on(one).initialize()
        assert reply.status == 200
        assert reply.result["serverInfo"] == {"name": NAME, "version": VERSION}
        pinged = await steer.on(two).post(legacy_request(1, "ping"))
        assert (pinged.status, pinged.result) == (200, {})

        stream = await steer.on(two).get()
        assert stream.status == 200, await stream.body()
        priming = await stream.next_event()
        assert priming is not None
        assert priming.id
        await stream.close()

        resumed = await steer.on(three).get(priming.id)
        assert resumed.status == 200, await resumed.body()
        assert resumed.is_sse
        subscribed = await steer.on(one).post(
            legacy_request(2, "resources/subscribe", {"uri": WATCHED})
        )
        assert subscribed.result == {}
        touched = await steer.on(two).post(legacy_call(3, "touch", {"uri": WATCHED}))
        assert touched.result["content"] == [{"type": "text", "text": str(two.pid)}]
        assert await resumed.next_message() == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": WATCHED},
        }

        assert (await steer.on(two).delete()).status == 200
        for instance in (one, two, three):
            gone = await steer.on(instance).post(legacy_request(4, "ping"))
            assert gone.status == 404, (instance.number, gone)
        # The session's end reaches its stream on another instance, which closes.
        rest = await resumed.read_all(within=TIMEOUT)
        assert [event.message for event in rest if event.message is not None] == []


# --------------------------------------------------------------------------- TypeScript


@pytest.mark.parametrize("mode", TS_MODES)
async def test_typescript_client(shared: Cluster, ts_install: tuple[str, Path], mode: str) -> None:
    node, installed = ts_install
    legacy = mode == "legacy"
    async with ts_client(node, installed) as ts:
        connected = await ts.send("connect", url=shared.url, mode=mode, answer={"name": "Tess"})
        assert connected == {
            "era": "legacy" if legacy else "modern",
            "protocolVersion": "2025-11-25" if legacy else "2026-07-28",
            "server": {"name": NAME, "version": VERSION},
            "session": legacy,
        }
        added = await ts.send("call", name="add", arguments={"a": 2, "b": 3})
        assert added == {"isError": False, "texts": ['{"total":5}'], "structured": {"total": 5}}
        pids = [
            int((await ts.send("call", name="whoami", arguments={}))["texts"][0]) for _ in range(6)
        ]
        assert set(pids) == shared.pids, pids

        before = len(shared.records())
        asked = await ts.send("call", name="ask_name", arguments={})
        answer = json.loads(asked["texts"][0])
        assert answer["greeting"] == "Hello, Tess!"
        if legacy:
            (asking,) = answer["pids"]
            answered = await shared.wait_record(lambda r: "answer" in r, "answer", after=before)
            assert (answered["status"], answered["pid"] != asking) == (202, True), answered
            assert [r for r in shared.records()[before:] if "answer" in r] == [answered]
        else:
            first, retry = answer["pids"]
            assert first != retry
        taken = await ts.send("take")
        assert taken["asked"] == ["What is your name?"]

        before = len(shared.records())
        if legacy:
            await ts.send("setLevel", level="warning")
            setter = (await landed(shared, "logging/setLevel", before))["pid"]
            results = [
                json.loads((await ts.send("call", name="chatty", arguments={}))["texts"][0])
                for _ in range(3)
            ]
            assert [r["sent"] for r in results] == [["warning", "error"]] * 3
            assert {r["pid"] for r in results} - {setter}, (setter, results)
            taken = await ts.send("take")
            assert taken["logs"] == [list(entry) for entry in WARNING_AND_ERROR] * 3

            before = len(shared.records())
            await ts.send("subscribe", uri=WATCHED)
            subscribe = await landed(shared, "resources/subscribe", before)
            streaming = await stream_pid(shared, subscribe["mcp-session-id"])
            elsewhere = away_from(shared, streaming, subscribe["pid"])
        else:
            listening = await ts.send("listen", uri=WATCHED)
            assert listening == {"honored": {"resourceSubscriptions": [WATCHED]}}
            listen = await landed(shared, "subscriptions/listen", before)
            elsewhere = away_from(shared, listen["pid"])
        await touch(elsewhere, OTHER)
        await touch(elsewhere, WATCHED)
        waited = await ts.send("waitUpdated", uri=WATCHED, timeoutMs=int(TIMEOUT * 1000))
        assert waited == {"updated": [WATCHED]}
        await ts.send("close")


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("balancer", BALANCERS)
async def test_an_instance_killed_mid_run(
    balancer: str, tmp_path: Path, ts_install: tuple[str, Path]
) -> None:
    """The instance holding a legacy client's GET stream dies (SIGKILL). The balancer
    takes it out; every client carries on: calls, an elicitation, and the GET stream
    reopened with its ``Last-Event-ID`` on a survivor, where updates arrive again."""
    node, installed = ts_install
    updated: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Kit"})

    with cluster(tmp_path, balancer) as where:
        async with (
            official(
                where, "legacy", message_handler=_updated_uris(updated), elicitation_callback=elicit
            ) as old,
            official(where, "2026-07-28") as new,
            ts_client(node, installed) as ts,
        ):
            await ts.send("connect", url=where.url, mode="legacy", answer={"name": "Tess"})
            before = len(where.records())
            with pytest.warns(MCPDeprecationWarning):
                await old.subscribe_resource(WATCHED)
            session = (await landed(where, "resources/subscribe", before))["mcp-session-id"]
            victim = where.instance(await stream_pid(where, session))
            await ts.send("subscribe", uri=WATCHED)

            after_kill = len(where.records())
            where.kill(victim)
            survivors = {instance.pid for instance in where.others(victim.pid)}

            pids = [await whoami(old) for _ in range(6)]
            assert set(pids) == survivors, pids
            assert {await whoami(new) for _ in range(4)} == survivors
            ts_pids = {
                int((await ts.send("call", name="whoami", arguments={}))["texts"][0])
                for _ in range(4)
            }
            assert ts_pids == survivors
            answer = json.loads(only_text(await old.call_tool("ask_name", {})))
            assert answer["greeting"] == "Hello, Kit!"
            asked = await ts.send("call", name="ask_name", arguments={})
            assert json.loads(asked["texts"][0])["greeting"] == "Hello, Tess!"

            # The Python client reopens its GET stream with Last-Event-ID; a survivor
            # serves it (never 404 while the session lives).
            resumed = await where.wait_record(
                lambda r: (
                    r["http"] == "GET"
                    and r.get("mcp-session-id") == session
                    and "last-event-id" in r
                ),
                "the resumed GET stream",
                after=after_kill,
            )
            assert (resumed["status"], resumed["pid"] in survivors) == (200, True), resumed
            elsewhere = where.others(victim.pid)[0]
            deadline = time.monotonic() + TIMEOUT
            while WATCHED not in updated:  # notifications sent before it reopened are gone
                assert time.monotonic() < deadline, "no update on the reopened GET stream"
                await touch(elsewhere, WATCHED)
                await asyncio.sleep(0.3)
            waited = await ts.send("waitUpdated", uri=WATCHED, timeoutMs=int(TIMEOUT * 1000))
            assert WATCHED in waited["updated"]
            await ts.send("close")
        if balancer == "haproxy":  # and the health check took the dead instance out
            down = f"Server mcpserve/mcp{victim.number} is DOWN"
            log = where.balancer.logs[0]
            await eventually(lambda: down in log.read_text(), f"haproxy logging {down!r}")


async def test_redis_outage(tmp_path: Path) -> None:
    """Redis stops: handshake-era requests (which need the shared sessions) get a JSON-RPC
    error with HTTP 503 on every instance, 2026-07-28 requests are served as before. Redis
    restarts on the same port: the handshake era is served again, by itself."""
    with cluster(tmp_path, "haproxy") as where:
        one, two, three = where.instances
        async with steered(where) as steer:
            assert (await steer.on(one).initialize()).status == 200
            session = steer.legacy.session_id
            assert (await steer.on(two).post(legacy_request(1, "ping"))).result == {}

            where.redis.stop()
            for number, instance in enumerate((two, three), start=2):
                reply = await steer.on(instance).post(legacy_call(number, "whoami", {}))
                assert reply.status == 503, (instance.number, reply)
                assert reply.message["id"] == number
                assert reply.error == {
                    "code": -32603,
                    "message": "The shared session store is unavailable; try again shortly",
                }
                # The log says why, once per outage.
                log = instance.log.read_text()
                assert log.count(f"Shared sessions: Redis at {where.redis.url} is unavailable") == 1
            refused = await steer.on(one).initialize(request_id=9)
            assert refused.status == 503, refused
            for instance in where.instances:
                served = await modern(instance, "whoami", {})
                assert served.result["content"] == [{"type": "text", "text": str(instance.pid)}]
            # Through the balancer too, once no instance is ready (/readyz follows Redis):
            # haproxy falls back to the live ones (deploy/haproxy.cfg).
            await where.wait_balancer_log("backend mcpserve has no server available!")
            outage_seen = len(where.balancer_log())
            async with httpx2.AsyncClient(base_url=where.base_url, timeout=TIMEOUT) as http:
                for number in range(3):
                    through = await post(http, call(number, "whoami", {}))
                    assert through.status == 200, through

            where.redis.start()  # the same port, empty: sessions may be gone
            deadline = time.monotonic() + OUTAGE_TIMEOUT
            while True:
                steer.legacy.session_id = session
                reply = await steer.on(two).post(legacy_call(20, "whoami", {}))
                if reply.status == 404:  # the restarted Redis forgot it: a new session
                    started = await steer.on(one).initialize(request_id=21)
                    if started.status == 200:
                        session = steer.legacy.session_id
                        continue
                    reply = started
                if reply.status == 200:
                    assert reply.result["content"] == [{"type": "text", "text": str(two.pid)}]
                    break
                assert reply.status == 503, reply
                assert time.monotonic() < deadline, f"not served again within {OUTAGE_TIMEOUT} s"
                await asyncio.sleep(0.2)
        assert (
            f"Shared sessions: Redis at {where.redis.url} is reachable again" in two.log.read_text()
        )
        for instance in where.instances:  # ready again, each back in the balancer's rotation
            await where.wait_balancer_log(f"mcpserve/mcp{instance.number} is UP", after=outage_seen)
        async with official(where, "legacy") as client:
            assert {await whoami(client) for _ in range(6)} == where.pids
