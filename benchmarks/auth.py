"""Auth: what verifying OAuth bearer tokens (JWTs) costs an mcpserve HTTP server.

HTTP ``tools/call echo`` at 16 connections under wrk, on the README's serving path
(``server.run("http", host=..., port=...)``, as ``servers/mcpserve_readme_app.py`` serves
the suite's server), one server process per configuration
(``servers/mcpserve_auth_app.py``):

* ``none``: no ``auth=``, the baseline;
* ``jwt``: ``auth=JWTVerifier(issuer, audience)`` with its default token cache, and the
  same valid RS256 JWT on every request (after the first, a cache hit);
* ``jwt-uncached``: ``JWTVerifier(..., cache=None)``: signature and claims verified on every
  request, which is what verification without a cache costs;
* ``jwt-many``: the ``jwt`` server, sent 1,000 distinct valid JWTs in rotation (a wrapper
  of ``wrk/mcp.lua`` written next to the request files swaps the ``Authorization`` header
  per request), so the cache holds 1,000 live entries.

The issuer is this script: a fresh RSA 2048 key, and a small ``http.server`` thread on
127.0.0.1 that serves ``/.well-known/oauth-authorization-server`` (the issuer's metadata,
naming its ``jwks_uri``) and the JWK Set. Tokens are signed with PyJWT: ``iss``, ``aud``
(the server's MCP URL), ``sub``, ``scope``, ``iat``, ``exp`` (in one hour), ``jti``, and the
``kid`` in the header. The servers fetch the keys once, on their first request; the issuer
counts every request it gets, and the run checks that none came during the load.

Correctness first, as in ``httpload.py``: before anything is measured, each configuration
answers the exact headers and body wrk will send (``Authorization`` included; for
``jwt-many`` every one of the 1,000 tokens), and the answer is checked. Each protected
server must refuse a request without a token, a token signed by another key, an expired
token, one for another audience and one from another issuer (401 with a ``Bearer``
challenge) and serve its protected resource metadata; the baseline must refuse the suite's
invalid echo variants (``httpload.checks_on``). The checks run again after the last round.

Method as in the suite's HTTP phase: servers pinned to the first CPU, wrk (``-t1``) and this
script to the second; a start-up warm-up per server, then rounds in which every
configuration runs back to back (a 1 s warm-up, then the measured window), each round
starting with a different one; medians over the rounds. Server CPU per request is read
from ``/proc``. Ratios are req/s of a configuration over ``none``'s (medians), and the same
per round; the targets are ``jwt/none >= 0.8`` and ``issued/none >= 0.8`` (``issued``: the
server is its clients' authorization server, ``OIDCProxy``, and verifies its own EdDSA
tokens). Also measured, in this process:
``ResourceServer.authenticate`` per call, cached and uncached.

Run it in the mcpserve venv (``run.py`` builds it, with the ``auth`` extra)::

    benchmarks/.venvs/mcpserve/bin/python benchmarks/auth.py [--duration 4] [--rounds 3]

It prints a Markdown table and writes ``results/auth.json`` (request files and server logs
go to ``results/logs/``). It is not one of ``run.py``'s phases.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime
import functools
import http.client
import http.server
import importlib.metadata
import json
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import envs
import httpload
from common import SCENARIOS, CheckFailed, JSONDict, check_exchange, parse_sse
from proc import Server, free_port, servers
from recorder import Recorder, log, summarize

HERE = Path(__file__).resolve().parent
APP = HERE / "servers" / "mcpserve_auth_app.py"
FRAMEWORK = "mcpserve-readme"  # the serving path measured: server.run("http")
CONNECTIONS = 16
ECHO = SCENARIOS["echo"]
MANY_TOKENS = 1000
SCOPE = "mcp:tools"
TARGETS = [
    {"ratio": "jwt/none", "case": "jwt", "versus": "none", "at_least": 0.8},
    {"ratio": "issued/none", "case": "issued", "versus": "none", "at_least": 0.8},
]

CONFIGS = {
    "none": "no auth (baseline)",
    "jwt": "JWTVerifier, default cache; one valid RS256 JWT on every request",
    "jwt-uncached": "JWTVerifier(cache=None): signature and claims verified on every request",
    "jwt-many": f"JWTVerifier, default cache; {MANY_TOKENS:,} distinct valid JWTs in rotation",
    "issued": "OIDCProxy: an EdDSA token the server issued itself (its own keys, its cache)",
}
#: The server each configuration runs (``BENCH_AUTH`` of ``mcpserve_auth_app.py``).
SERVER_MODE = {
    "none": "none",
    "jwt": "jwt",
    "jwt-uncached": "jwt-uncached",
    "jwt-many": "jwt",
    "issued": "issued",
}
VERSIONS = ["mcpserve", "PyJWT", "cryptography", "httpx2", "uvicorn", "httptools", "uvloop"]

# wrk/mcp.lua in plain mode, except that request() hands out one prepared request per token
# of REQUEST_FILE's ".tokens" twin (one token a line), in rotation. wrk runs with -t1: one
# rotation for all 16 connections.
ROTATE_LUA = """\
-- Written by benchmarks/auth.py: wrk/mcp.lua (plain mode), with the Authorization header
-- taken in rotation from the tokens in REQUEST_FILE's .tokens twin, one token a line.
dofile(MCP_LUA)

local mcp_init = init

function init(args)
  mcp_init(args)
  local file = assert(io.open(args[1], "rb"))
  local data = file:read("*a")
  file:close()
  local head, body = data:match("^(.-)\\n\\n(.*)$")
  local headers = {}
  for line in head:gmatch("[^\\n]+") do
    local name, value = line:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  rotation = {}
  for token in io.lines((args[1]:gsub("%.txt$", ".tokens"))) do
    headers["Authorization"] = "Bearer " .. token
    rotation[#rotation + 1] = wrk.format("POST", wrk.path, headers, body)
  end
  assert(#rotation > 0, "no tokens")
  turn = 0
end

function request()
  turn = turn % #rotation + 1
  return rotation[turn]
end
"""


# -- the issuer -----------------------------------------------------------------------------


class Issuer:
    """An authorization server on 127.0.0.1: an RSA 2048 key, its metadata and JWK Set
    served from a thread, and the tokens it signs. Counts the requests it answers."""

    KID = "bench-rs256-1"

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa
        from jwt.algorithms import RSAAlgorithm

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk: dict[str, Any] = dict(RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True))
        jwk.update(kid=self.KID, use="sig", alg="RS256")
        self.hits: dict[str, int] = {}
        lock = threading.Lock()
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with lock:
                    issuer.hits[self.path] = issuer.hits.get(self.path, 0) + 1
                document = issuer.documents.get(self.path)
                body = json.dumps(document).encode() if document else b'{"error":"not found"}'
                self.send_response(200 if document else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.documents: dict[str, Any] = {
            "/.well-known/oauth-authorization-server": {
                "issuer": self.url,
                "jwks_uri": f"{self.url}/jwks",
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "scopes_supported": [SCOPE],
            },
            "/jwks": {"keys": [jwk]},
        }
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def token(
        self,
        audience: str,
        *,
        subject: str = "bench-user",
        expires_in: float = 3600,
        issuer: str | None = None,
        key: Any = None,
    ) -> str:
        import jwt

        now = int(time.time())
        claims = {
            "iss": issuer or self.url,
            "aud": audience,
            "sub": subject,
            "client_id": "bench-client",
            "scope": SCOPE,
            "iat": now if expires_in > 0 else now + int(expires_in) - 60,
            "exp": now + int(expires_in),
            "jti": uuid.uuid4().hex,
        }
        headers = {"kid": self.KID, "typ": "at+jwt"}
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers=headers)

    def requests(self) -> int:
        return sum(self.hits.values())

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- requests: written for wrk, read back and checked ---------------------------------------


def request_file(config: str, token: str | None, directory: Path) -> Path:
    """The echo request with ``Authorization: Bearer <token>``, in ``wrk/mcp.lua``'s format."""
    headers = list(ECHO.headers())
    if token is not None:
        headers.append(("Authorization", f"Bearer {token}"))
    path = directory / f"request-auth-{config}.txt"
    head = "\n".join(f"{name}: {value}" for name, value in headers)
    path.write_bytes(head.encode() + b"\n\n" + ECHO.body())
    return path


def read_request(path: Path) -> tuple[dict[str, str], bytes]:
    """Headers and body of a request file, parsed as ``wrk/mcp.lua`` parses it."""
    head, _, body = path.read_bytes().partition(b"\n\n")
    headers = {}
    for line in head.decode().split("\n"):
        name, _, value = line.partition(":")
        headers[name] = value.lstrip()
    return headers, body


def tokens_of(request: Path) -> list[str] | None:
    """The rotating tokens of ``jwt-many`` (the request file's ``.tokens`` twin), if any."""
    twin = request.with_suffix(".tokens")
    return twin.read_text().split() if twin.exists() else None


def _post(
    connection: http.client.HTTPConnection, headers: dict[str, str], body: bytes
) -> tuple[int, http.client.HTTPResponse, bytes]:
    connection.request("POST", httpload.PATH, body, headers)
    response = connection.getresponse()
    return response.status, response, response.read()


def _check_echo(status: int, response: http.client.HTTPResponse, data: bytes) -> None:
    if status != 200:
        raise CheckFailed(f"HTTP {status}: {data[:300]!r}")
    kind = response.getheader("content-type", "")
    if kind.startswith("text/event-stream"):
        messages = parse_sse(data)
    elif kind.startswith("application/json"):
        messages = [json.loads(data)]
    else:
        raise CheckFailed(f"unexpected Content-Type {kind!r}")
    check_exchange(ECHO, messages)


def validate(port: int, request: Path) -> int:
    """Send the exact headers and body wrk will send (every token, for a rotation) and check
    each answer; how many requests were checked."""
    headers, body = read_request(request)
    tokens = tokens_of(request)
    variants = [headers]
    if tokens is not None:
        variants = [{**headers, "Authorization": f"Bearer {token}"} for token in tokens]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for variant in variants:
            _check_echo(*_post(connection, variant, body))
    finally:
        connection.close()
    return len(variants)


def refusals(port: int, issuer: Issuer, audience: str) -> dict[str, bool]:
    """Whether a protected server refuses what it must (True = refused with 401 and a
    ``Bearer`` challenge), and serves its protected resource metadata."""
    headers = dict(ECHO.headers())
    body = ECHO.body()
    bad = {
        "no Authorization header": None,
        "a token signed by another key": issuer.token(audience, key=issuer.other_key),
        "an expired token": issuer.token(audience, expires_in=-3600),
        "a token for another audience": issuer.token("http://127.0.0.1:1/mcp"),
        "a token from another issuer": issuer.token(audience, issuer="http://127.0.0.1:1"),
    }
    found: dict[str, bool] = {}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for what, token in bad.items():
            sent = headers if token is None else {**headers, "Authorization": f"Bearer {token}"}
            status, response, _ = _post(connection, sent, body)
            challenge = response.getheader("www-authenticate", "")
            found[what] = status == 401 and challenge.startswith("Bearer ")
        path = "/.well-known/oauth-protected-resource/mcp"
        connection.request("GET", path)
        response = connection.getresponse()
        data = response.read()
        try:
            document = json.loads(data) if response.status == 200 else {}
        except ValueError:
            document = {}
        found["protected resource metadata served"] = document.get(
            "resource"
        ) == audience and document.get("authorization_servers") == [issuer.url]
    finally:
        connection.close()
    return found


# The state key ring of the "issued" server: its signing keys derive from it, and so do the
# tokens this script makes for it, exactly as the server's /token endpoint would.
RING = f"bench:{base64.b64encode(os.urandom(32)).decode()}"


def issued_token(audience: str, *, ring: str = RING, expires_in: float = 3600) -> str:
    """A token as the ``issued`` server's /token endpoint issues it (with a login's sid)."""
    from mcpserve.auth.server.signing import SigningKeys, TokenIssuer
    from mcpserve.protocol.request_state import parse_keys

    issuer = TokenIssuer(
        SigningKeys(parse_keys(ring)),
        issuer=audience.removesuffix(httpload.PATH),
        audience=audience,
        ttl_seconds=abs(expires_in),
    )
    now = time.time() if expires_in > 0 else time.time() - 2 * abs(expires_in)
    return issuer.access_token("bench-user", [SCOPE], "bench-client", now=now,
                               extra={"sid": "bench-login"})  # fmt: skip


def issued_refusals(port: int, issuer: Issuer, audience: str) -> dict[str, bool]:
    """As :func:`refusals`, for the ``issued`` server: tokens of another ring, expired, for
    another audience, and one of another authorization server refused; its metadata names
    itself as the authorization server."""
    headers = dict(ECHO.headers())
    body = ECHO.body()
    other_ring = f"bench:{base64.b64encode(os.urandom(32)).decode()}"
    bad = {
        "no Authorization header": None,
        "a token signed by another ring's key": issued_token(audience, ring=other_ring),
        "an expired token": issued_token(audience, expires_in=-3600),
        "a token for another audience": issued_token("http://127.0.0.1:1/mcp"),
        "a token of another authorization server": issuer.token(audience),
    }
    found: dict[str, bool] = {}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for what, token in bad.items():
            sent = headers if token is None else {**headers, "Authorization": f"Bearer {token}"}
            status, response, _ = _post(connection, sent, body)
            challenge = response.getheader("www-authenticate", "")
            found[what] = status == 401 and challenge.startswith("Bearer ")
        connection.request("GET", "/.well-known/oauth-protected-resource/mcp")
        response = connection.getresponse()
        document = json.loads(response.read())
        itself = audience.removesuffix(httpload.PATH)
        found["names itself as the authorization server"] = document.get(
            "authorization_servers"
        ) == [itself]
    finally:
        connection.close()
    return found


# -- one configuration ----------------------------------------------------------------------


class Case:
    """One configuration: its server, where wrk sends what, and with which script."""

    def __init__(self, name: str, server: Server, port: int, request: Path, lua: Path) -> None:
        self.name = name
        self.server = server
        self.port = port
        self.request = request
        self.lua = lua

    def run(self, wrk: str, core: int, duration: float) -> dict[str, Any]:
        previous = httpload.LUA  # run_wrk reads its script from there
        httpload.LUA = self.lua
        try:
            return httpload.run_wrk(
                wrk,
                self.server,
                self.port,
                ECHO,
                self.request,
                connections=CONNECTIONS,
                duration=duration,
                core=core,
            )
        finally:
            httpload.LUA = previous


async def authenticate_cost(
    issuer: Issuer, token: str, audience: str, seconds: float
) -> dict[str, float]:
    """``ResourceServer.authenticate`` per call (µs of CPU), cached and uncached, in process."""
    from mcpserve.auth import JWTVerifier, ResourceServer
    from mcpserve.protocol.core import Auth

    found = {}
    header = f"Bearer {token}"
    for name, options in (("jwt", {}), ("jwt-uncached", {"cache": None})):
        verifier = JWTVerifier(issuer=issuer.url, audience=audience, **options)
        resource = ResourceServer(verifier)
        try:
            first = await resource.authenticate(header)
            if not isinstance(first, Auth) or first.principal != "bench-user":
                raise CheckFailed(f"in process, {name} refused the token: {first!r}")
            for _ in range(200):
                await resource.authenticate(header)
            calls, cpu, start = 0, time.process_time(), time.perf_counter()
            while time.perf_counter() - start < seconds:
                for _ in range(50):
                    await resource.authenticate(header)
                calls += 50
            found[name] = (time.process_time() - cpu) / calls * 1e6
        finally:
            await verifier.aclose()
    return found


# -- the run --------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per window")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before each window")
    parser.add_argument(
        "--start-warmup",
        type=float,
        default=None,
        help="seconds of load per server before the rounds (default 5; 2 if --duration < 4)",
    )
    parser.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help=f"comma-separated, of {', '.join(CONFIGS)} (none is always run)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    chosen = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = set(chosen) - set(CONFIGS)
    if unknown:
        parser.error(f"unknown configurations: {', '.join(sorted(unknown))}")
    args.configs = [c for c in CONFIGS if c in chosen or c == "none"]
    if args.start_warmup is None:
        args.start_warmup = 5.0 if args.duration >= 4 else 2.0
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def _rotated(items: list[str], rnd: int) -> list[str]:
    shift = rnd % len(items)
    return items[shift:] + items[:shift]


def _versions() -> dict[str, str]:
    found = {}
    for name in VERSIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def _ratios(summary: dict[str, dict[str, Any]], samples: list[dict[str, Any]]) -> list[JSONDict]:
    """Each configuration against ``none``: req/s (medians, and paired per round) and CPU."""
    base = summary.get("none") or {}
    by_round: dict[int, dict[str, float]] = {}
    for sample in samples:
        by_round.setdefault(sample["round"], {})[sample["case"]] = sample["rps"]
    found = []
    for name in CONFIGS:
        row = summary.get(name)
        if name == "none" or row is None:
            continue
        rps = row["rps"] / base["rps"] if row.get("rps") and base.get("rps") else None
        rounds = [by_round[r] for r in sorted(by_round)]
        paired = [r[name] / r["none"] for r in rounds if name in r and "none" in r]
        cpu = base.get("cpu_us")
        found.append(
            {
                "ratio": f"{name}/none",
                "case": name,
                "versus": "none",
                "rps_ratio": rps,
                "rps_ratio_per_round": paired,
                "cpu_ratio": row["cpu_us"] / cpu if row.get("cpu_us") and cpu else None,
                "extra_cpu_us_per_request": row["cpu_us"] - cpu
                if row.get("cpu_us") is not None and cpu is not None
                else None,
            }
        )
    return found


def revocation_note() -> str:
    """How the token cache bounds revocation, with the defaults this checkout has."""
    import inspect

    from mcpserve.auth import JWTVerifier, TokenCache

    cache = TokenCache()
    defaults = inspect.signature(JWTVerifier).parameters
    keys_max_age = defaults["keys_max_age"].default
    refresh = defaults["refresh_interval"].default
    return (
        "Caching does not change which tokens are accepted. A JWT cannot be revoked short of "
        "its issuer withdrawing the signing key: it is valid until its `exp` whether it is "
        "cached or verified afresh, and the uncached verifier accepts it just as long. The "
        "cache keeps a verified token for at most "
        f"{cache.max_age:g} s (`TokenCache.max_age`) and never past the token's own `exp`, and "
        f"holds at most {cache.max_entries:,} tokens (`max_entries`; the oldest stored goes "
        "first). What it can stretch is a key withdrawal: a key the issuer stops publishing "
        f"stops verifying new tokens once the key set is fetched again (after "
        f"{keys_max_age:g} s, or at most every {refresh:g} s when a token names an unknown "
        "`kid`), while tokens already cached under it stay accepted until their entry ends, "
        f"at most {cache.max_age:g} s later (never past `exp`). The tokens here expire an "
        f"hour after they are signed, so the {cache.max_age:g} s bound is the one that applies."
    )


def markdown(results: dict[str, Any]) -> str:
    summary = results["summary"]
    base = (summary.get("none") or {}).get("rps")
    lines = [
        f"HTTP `tools/call echo`, {CONNECTIONS} connections, README path "
        '(`server.run("http")`), medians of '
        f"{results['config']['rounds']} round(s) of {results['config']['duration']:g} s",
        "",
        "| configuration | req/s | vs none | p50 ms | p99 ms | server CPU µs/req | server busy |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in results["configs"]:
        row = summary.get(name)
        if row is None:
            reason = results["unsupported"].get(name, "not measured")
            lines.append(f"| `{name}` | n/a ({reason}) | | | | | |")
            continue
        ratio = f"{row['rps'] / base:.2f}x" if base else "n/a"
        lines.append(
            f"| `{name}` | {row['rps']:,.0f} | {ratio} | {row['p50_ms']:.2f} | "
            f"{row['p99_ms']:.2f} | {row['cpu_us']:.0f} | {row['cpu_util']:.0%} |"
        )
    lines.append("")
    for ratio in results["ratios"]:
        if ratio["rps_ratio"] is None:
            continue
        rounds = ", ".join(f"{r:.2f}" for r in ratio["rps_ratio_per_round"])
        extra = ratio["extra_cpu_us_per_request"]
        lines.append(
            f"* `{ratio['ratio']}` = {ratio['rps_ratio']:.2f} (per round: {rounds}); "
            f"server CPU {ratio['cpu_ratio']:.2f}x, {extra:+.0f} µs per request"
        )
    for target in results["targets"]:
        verdict = {True: "met", False: "NOT met", None: "not measured"}[target["met"]]
        value = "n/a" if target["value"] is None else f"{target['value']:.2f}"
        lines.append(f"* target `{target['ratio']} >= {target['at_least']}`: {value}, {verdict}")
    cost = results.get("inprocess_authenticate_us") or {}
    if cost:
        lines.append(
            "* in process, `ResourceServer.authenticate` per call: "
            + ", ".join(f"`{name}` {us:.1f} µs" for name, us in cost.items())
        )
    lines += ["", results["revocation"]]
    return "\n".join(lines)


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        import jwt  # noqa: F401

        import mcpserve.auth  # noqa: F401
    except ImportError as exc:
        raise SystemExit(
            f"{exc}: run this with benchmarks/.venvs/mcpserve/bin/python (benchmarks/run.py "
            "builds that venv with mcpserve's auth extra)"
        ) from None
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # servers start as deployed: with .pyc
    wrk = envs.ensure_wrk()
    cores = envs.ensure_taskset_cores()
    os.sched_setaffinity(0, {cores[1]})  # this process and wrk: the load core
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.UTC)
    log(f"auth: {', '.join(args.configs)}; {args.rounds} round(s) of {args.duration:g} s")
    rec = Recorder()
    checks: dict[str, Any] = {}
    issuer = Issuer()
    lua = logs / "auth-rotate.lua"
    lua.write_text(ROTATE_LUA.replace("MCP_LUA", json.dumps(str(httpload.LUA))))
    python = sys.executable
    try:
        probe = issuer.token("http://127.0.0.1:1/mcp")
        cost = asyncio.run(authenticate_cost(issuer, probe, "http://127.0.0.1:1/mcp", 0.5))
        hits_in_process = issuer.requests()
        cases: dict[str, Case] = {}
        tokens: dict[str, Any] = {}
        with servers() as started_servers:
            for name in args.configs:
                port = free_port()
                audience = f"http://127.0.0.1:{port}{httpload.PATH}"
                env = {
                    "BENCH_AUTH": SERVER_MODE[name],
                    "BENCH_AUTH_ISSUER": issuer.url,
                    "BENCH_AUTH_AUDIENCE": audience,
                    "BENCH_AUTH_RING": RING,
                }
                server = Server(
                    [python, str(APP), "http", str(port)],
                    cores[0],
                    log=logs / f"auth-{name}.log",
                    env=env,
                )
                started_servers.append(server)
                server.wait_http(port)
                token = None if name == "none" else issuer.token(audience)
                if name == "issued":
                    token = issued_token(audience)
                request = request_file(name, token, logs)
                request.with_suffix(".tokens").unlink(missing_ok=True)
                script = httpload.LUA
                if name == "jwt-many":
                    many = [issuer.token(audience, subject=f"user-{i}") for i in range(MANY_TOKENS)]
                    request.with_suffix(".tokens").write_text("\n".join(many) + "\n")
                    script = lua
                if token is not None:
                    tokens[name] = {"chars": len(token), "audience": audience}
                cases[name] = Case(name, server, port, request, script)
                if name == "none":
                    checks[name] = httpload.checks_on(port)
                elif name == "issued":
                    checks[name] = issued_refusals(port, issuer, audience)
                else:
                    checks[name] = refusals(port, issuer, audience)
                if not all(checks[name].values()):
                    raise SystemExit(f"{name}: a check that must hold does not: {checks[name]}")
            for name, case in list(cases.items()):
                try:
                    checked = validate(case.port, case.request)
                    log(f"  {name}: {checked} request(s) checked, as wrk will send them")
                except (CheckFailed, OSError, ValueError) as exc:
                    rec.skip(name, FRAMEWORK, f"wrong answer: {exc}"[:300])
                    del cases[name]
            if "none" not in cases:
                raise SystemExit("the baseline (none) answered wrongly: nothing to compare with")
            log(f"start-up warm-up: {args.start_warmup:g} s per server")
            for case in cases.values():
                with contextlib.suppress(CheckFailed, RuntimeError):  # the rounds will say
                    case.run(wrk, cores[1], args.start_warmup)
            hits_before = issuer.requests()
            order = list(cases)
            for rnd in range(args.rounds):
                log(f"auth round {rnd + 1}/{args.rounds}")
                for name in _rotated(order, rnd):
                    run = functools.partial(cases[name].run, wrk, cores[1])
                    rec.measure(name, FRAMEWORK, rnd, run, args.warmup, args.duration)
            hits_during = issuer.requests() - hits_before
            for name, case in cases.items():  # still right after all that load?
                if name in rec.unsupported:
                    continue
                try:
                    validate(case.port, case.request)
                except (CheckFailed, OSError, ValueError) as exc:
                    rec.skip(name, FRAMEWORK, f"wrong answer after the load: {exc}"[:300])
                    rec.samples = [s for s in rec.samples if s["case"] != name]
    finally:
        issuer.close()
    if hits_during:
        log(f"  the issuer was asked {hits_during} time(s) during the load")
    summary = {name: table[FRAMEWORK] for name, table in summarize(rec.samples).items()}
    ratios = _ratios(summary, rec.samples)
    measured = {r["case"]: r["rps_ratio"] for r in ratios}
    from mcpserve.auth import TokenCache

    cache = TokenCache()
    results: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "machine": envs.machine(),
        "mcpserve_commit": envs.checkout(),
        "versions": _versions(),
        "config": {
            "duration": args.duration,
            "rounds": args.rounds,
            "warmup": args.warmup,
            "start_warmup": args.start_warmup,
            "connections": CONNECTIONS,
            "scenario": "tools/call echo",
            "serving": 'servers/mcpserve_auth_app.py: server.run("http", host=..., port=...)',
        },
        "pinning": f"servers: CPU {cores[0]}; wrk (-t1) and the issuer: CPU {cores[1]}",
        "configs": {name: CONFIGS[name] for name in args.configs},
        "issuer": {
            "url": "http://127.0.0.1:PORT (a thread of this script)",
            "alg": "RS256",
            "key_bits": 2048,
            "kid": Issuer.KID,
            "claims": ["iss", "aud", "sub", "client_id", "scope", "iat", "exp", "jti"],
            "expires_in_s": 3600,
            "requests": dict(issuer.hits),
            "requests_in_process": hits_in_process,
            "requests_during_load": hits_during,
        },
        "tokens": tokens,
        "cache_defaults": {"max_entries": cache.max_entries, "max_age_s": cache.max_age},
        "checks": checks,
        "summary": summary,
        "ratios": ratios,
        "targets": [
            {
                **target,
                "value": measured.get(target["case"]),
                "met": None
                if measured.get(target["case"]) is None
                else measured[target["case"]] >= target["at_least"],
            }
            for target in TARGETS
        ],
        "inprocess_authenticate_us": cost,
        "revocation": revocation_note(),
        "unsupported": {name: fws[FRAMEWORK] for name, fws in rec.unsupported.items()},
        "samples": rec.samples,
    }
    results["seconds"] = round((datetime.datetime.now(datetime.UTC) - started).total_seconds())
    out = args.out / "auth.json"
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    print(markdown(results))
    log(f"done in {results['seconds']} s: {out}")


if __name__ == "__main__":
    main()
