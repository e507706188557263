"""Two instances of ``tests/support/servers/oidc_login.py`` behind haproxy, sharing Redis and
one state key ring, in front of oidc-provider: a login whose steps land on either instance.

haproxy runs the committed ``deploy/haproxy.cfg`` with its third ``server`` line removed (two
instances; the file lists three), in round robin with no stickiness. The balancer's port is
chosen first: it is the ``base_url`` both instances publish and the redirect URI registered
at the provider. Every process is stopped on the way out, by its own process id.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from login_stack import LOGIN_SERVER
from mcpserve.protocol.request_state import generate_key
from oidc_server import AuthorizationServer, OAuthClient, authorization_server
from redis_server import RedisServer
from wire_helpers import ROOT, child_env, free_port

HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0


@dataclass
class LoginCluster:
    base_url: str
    provider: AuthorizationServer
    logs: list[Path]

    @property
    def url(self) -> str:
        return f"{self.base_url}/mcp"

    def served(self, path: str) -> list[int]:
        """For each instance, how many requests to ``path`` its access log shows."""
        counts = []
        for log in self.logs:
            text = log.read_text()
            counts.append(text.count(f'"GET {path}') + text.count(f'"POST {path}'))
        return counts


def _haproxy() -> str:
    found = shutil.which("haproxy") or shutil.which("/usr/sbin/haproxy")
    if found is None:
        pytest.fail(
            "haproxy is not installed; the login cluster test needs it: apt-get install haproxy"
        )
    return found


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)


def _wait_for(url: str, processes: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            if httpx2.get(url, timeout=2, trust_env=False).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        for process in processes:
            if process.poll() is not None:
                tails = "\n".join(log.read_text()[-2000:] for log in logs)
                raise AssertionError(f"{process.args} exited early:\n{tails}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer within {START_TIMEOUT} s")
        time.sleep(0.05)


@contextlib.contextmanager
def _balanced_instances(
    directory: Path, env: dict[str, str], balancer_port: int
) -> Iterator[list[Path]]:
    """Two instances and haproxy in front of them; their logs. Stopped on the way out."""
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        ports = [free_port(), free_port()]
        for number, port in enumerate(ports, 1):
            log = directory / f"instance-{number}.log"
            logs.append(log)
            with log.open("wb") as sink:
                started.append(
                    subprocess.Popen(
                        [sys.executable, str(LOGIN_SERVER)],
                        cwd=str(ROOT),
                        env={**env, "MCPSERVE_TEST_HTTP_PORT": str(port)},
                        stdin=subprocess.DEVNULL,
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                )
        for port in ports:
            metadata = f"http://127.0.0.1:{port}/.well-known/oauth-authorization-server"
            _wait_for(metadata, started, logs)
        config = directory / "haproxy.cfg"
        lines = HAPROXY_CFG.read_text().splitlines()
        kept = [line for line in lines if "MCPSERVE_BACKEND_3" not in line]
        config.write_text("\n".join(kept) + "\n")
        balancer_env = child_env(
            MCPSERVE_LB_BIND=f"127.0.0.1:{balancer_port}",
            MCPSERVE_BACKEND_1=f"127.0.0.1:{ports[0]}",
            MCPSERVE_BACKEND_2=f"127.0.0.1:{ports[1]}",
        )
        haproxy_log = directory / "haproxy.log"
        with haproxy_log.open("wb") as sink:
            started.append(
                subprocess.Popen(
                    [_haproxy(), "-db", "-f", str(config)],
                    cwd=str(directory),
                    env=balancer_env,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            )
        base_url = f"http://127.0.0.1:{balancer_port}"
        _wait_for(f"{base_url}/.well-known/oauth-authorization-server", started, [haproxy_log])
        yield logs
    finally:
        for process in reversed(started):
            _stop(process)


@contextlib.asynccontextmanager
async def login_cluster(
    directory: Path, redis: RedisServer, *, access_token_ttl: int = 600
) -> AsyncIterator[LoginCluster]:
    balancer_port, provider_port = free_port(), free_port()
    base_url = f"http://127.0.0.1:{balancer_port}"
    client = OAuthClient("mcpserve-notes", secrets.token_urlsafe(24))
    env = child_env(
        MCPSERVE_REDIS_URL=redis.url,
        MCPSERVE_STATE_KEYS=generate_key(),
        MCPSERVE_TEST_ISSUER=f"http://127.0.0.1:{provider_port}",
        MCPSERVE_TEST_CLIENT_ID=client.client_id,
        MCPSERVE_TEST_CLIENT_SECRET=str(client.client_secret),
        MCPSERVE_TEST_BASE_URL=base_url,
    )
    with _balanced_instances(directory, env, balancer_port) as logs:
        async with authorization_server(
            ["http://127.0.0.1/unused"],
            ["notes:read"],
            port=provider_port,
            registration=False,
            upstream=client,
            upstream_redirect_uris=[f"{base_url}/auth/callback"],
            access_token_ttl=access_token_ttl,
        ) as provider:
            yield LoginCluster(base_url, provider, logs)
