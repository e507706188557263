"""The names ``import mcpserve`` offers, and ``__all__`` saying exactly which."""

import runpy
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest

import mcpserve

ROOT = Path(__file__).resolve().parents[1]


def public_attributes() -> set[str]:
    return {
        name
        for name, value in vars(mcpserve).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


@pytest.mark.parametrize("name", mcpserve.__all__)
def test_every_name_in_all_is_an_attribute(name: str) -> None:
    assert hasattr(mcpserve, name)


def test_every_public_attribute_is_listed_in_all() -> None:
    assert public_attributes() - set(mcpserve.__all__) == set()


def test_all_has_no_duplicates() -> None:
    assert len(mcpserve.__all__) == len(set(mcpserve.__all__))


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from mcpserve import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(mcpserve.__all__)


def test_version_is_a_string() -> None:
    assert isinstance(mcpserve.__version__, str)
    assert mcpserve.__version__


def test_the_version_file_the_build_reads_stands_alone_and_is_the_packages_version() -> None:
    # Loaded by path, as the build backend reads it: no package face, no relative import.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    version_file = ROOT / pyproject["tool"]["hatch"]["version"]["path"]
    namespace = runpy.run_path(str(version_file))
    assert namespace["__version__"] == mcpserve.__version__


# Optional machinery that `import mcpserve` must not load: each costs start-up time that a
# stdio server spawned on demand would pay on every start.
LAZY_MODULES = (
    "uvicorn",  # the HTTP server
    "httptools",
    "uvloop",
    "redis",  # the Redis subscription bus
    "cryptography",  # sealed requestState
    "click",  # the CLI
    "httpx2",
    "jwt",  # token verification, for servers with auth=
    "mcpserve.auth",
    "jsonschema",  # only for hand-written inputSchema
    "opentelemetry",
    "prometheus_client",  # /metrics, for servers with metrics=True
    "mcpserve.metrics.prometheus",
    "mcpserve.metrics.otel",
    "mcpserve.metrics.operations",  # the measured method table, for servers that record metrics
    "mcpserve.client",  # for tests and tools, not servers
    "mcpserve.proxy",  # only for proxies and gateways (Server.proxy, Server.gateway)
    "mcpserve.transports",
    "mcpserve.cli",
    "mcpserve.extensions.tasks.records",  # the tasks extension, for servers with task tools
    "mcpserve.extensions.tasks.runner",
    "mcpserve.protocol.request_state",
    "mcpserve.protocol.http_headers",  # the per-request checks of Streamable HTTP
    "mcpserve.backends.redis.bus",
    "mcpserve.backends.redis.link",  # shared sessions and the Redis task store
    "mcpserve.backends.redis.tasks",
    "mcpserve.backends.sqlite.tasks",
    "mcpserve.server.entries.uri_template",  # only for resource templates
    "mcpserve.server.context.input_requests",  # only for servers that ask the client for input
    "mcpserve.protocol.input_answers",  # the answers to those questions, for them and clients
    "mcpserve.protocol.tasks",  # the task states, for servers with task tools and clients
    "mcpserve.server.entries.media",  # only for tools and prompts that return images, audio, links
    "mcpserve.server.entries.prompts",  # only for servers with prompts
    "mcpserve.server.entries.completions",  # only for servers that complete arguments
    "mcpserve.compose.mount.mount",  # only for servers that mount others
    "mcpserve.compose.mount.entries",
    "mcpserve.compose.mount.listers",
    "mcpserve.compose.transform",  # only for servers that transform tools
    "mcpserve.extensions.apps",  # the apps extension, for servers with MCP Apps
    "mcpserve.extensions.skills.extension",  # the skills extension, for servers with skills
    "mcpserve.extensions.skills.skill",
    "mcpserve.protocol.frontmatter",
    "mcpserve.compose.openapi",  # only for servers built from an OpenAPI document
    "concurrent.futures.thread",  # the pool starts with the first blocking handler
)
# pydantic's validation and schema machinery waits for the first schema built (a
# registration): `import mcpserve` costs about what `import asyncio, pydantic, orjson` does
# (docs/performance.md), and a client never pays for it.
AT_FIRST_SCHEMA = (
    "pydantic.main",
    "pydantic.type_adapter",
    "pydantic.json_schema",
    "mcpserve.server.schema.generator",
    "mcpserve.server.context.forms",
)


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


@pytest.mark.subprocess
def test_import_loads_nothing_optional() -> None:
    modules = _modules_after("import mcpserve")
    assert "mcpserve.server.server" in modules  # the probe itself works
    assert [name for name in LAZY_MODULES if _loaded(modules, name)] == []
    assert [name for name in AT_FIRST_SCHEMA if _loaded(modules, name)] == []
    # pydantic's field machinery (and pydantic.types behind it) waits for the first tool.
    assert "pydantic.fields" not in modules


@pytest.mark.subprocess
def test_a_client_loads_no_schema_machinery() -> None:
    modules = _modules_after("from mcpserve import Client, Server\nClient(Server('s'))")
    assert "mcpserve.client.client" in modules
    assert [name for name in AT_FIRST_SCHEMA if _loaded(modules, name)] == []


@pytest.mark.subprocess
def test_a_server_with_a_tool_and_a_plain_resource_still_loads_nothing_optional() -> None:
    code = (
        "from mcpserve import Server\n"
        "server = Server('s')\n"
        "@server.tool\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "@server.resource('file:///readme', mime_type='text/plain')\n"
        "def readme() -> str:\n"
        "    return 'hi'\n"
    )
    modules = _modules_after(code)
    assert [name for name in LAZY_MODULES if _loaded(modules, name)] == []


@pytest.mark.subprocess
def test_a_server_answering_without_metrics_loads_neither_prometheus_nor_the_measuring() -> None:
    code = (
        "import asyncio\n"
        "from mcpserve import Server\n"
        "server = Server('s', metrics=False, tracing=False)\n"
        "@server.tool\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "message = {'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call', 'params': {'name': 'echo',\n"
        "    'arguments': {'text': 'hi'}, '_meta': {'io.modelcontextprotocol/protocolVersion':\n"
        "    '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}}}}\n"
        "answer = asyncio.run(server.handle(message))\n"
        "assert answer['result']['content'][0]['text'] == 'hi', answer\n"
    )
    modules = _modules_after(code)
    assert "mcpserve.server.pipeline" in modules  # it answered
    loaded = [name for name in ("prometheus_client", "opentelemetry", "mcpserve.metrics.operations")
              if _loaded(modules, name)]  # fmt: skip
    assert loaded == []


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("Client", "mcpserve.client.client"),
        ("Elicit", "mcpserve.server.context.input_requests"),
        ("ElicitResult", "mcpserve.protocol.input_answers"),
        ("Image", "mcpserve.server.entries.media"),
        ("Message", "mcpserve.server.entries.prompts"),
        ("Mount", "mcpserve.compose.mount.mount"),
        ("Completion", "mcpserve.server.entries.completions"),
        ("MemoryTaskStore", "mcpserve.extensions.tasks.records"),
        ("TaskHandle", "mcpserve.client.tasks"),
        ("TaskCancelled", "mcpserve.client.tasks"),
        ("Skill", "mcpserve.extensions.skills.skill"),
        ("fetch_openapi", "mcpserve.compose.openapi"),
    ],
)
def test_lazy_names_load_on_first_use(name: str, module: str) -> None:
    assert module in _modules_after(f"from mcpserve import {name}")
    assert module not in _modules_after("import mcpserve")


@pytest.mark.subprocess
def test_a_client_that_takes_no_task_does_not_load_the_tasks_machinery() -> None:
    modules = _modules_after("from mcpserve import Client")
    assert "mcpserve.client.client" in modules
    assert "mcpserve.client.tasks" not in modules
    assert "mcpserve.extensions.tasks.records" not in modules


def test_lazy_names_are_listed_and_unknown_names_are_not_invented() -> None:
    assert "Client" in dir(mcpserve)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        mcpserve.Nope  # noqa: B018


def test_public_records_compare_hash_and_show_by_value() -> None:
    result = mcpserve.ToolResult(content=["3 rows"], structured={"rows": 3})
    assert result == mcpserve.ToolResult(content=["3 rows"], structured={"rows": 3})
    assert result != mcpserve.ToolResult(content=["3 rows"])
    assert repr(result) == (
        "ToolResult(content=['3 rows'], is_error=False, meta=None, structured={'rows': 3})"
    )
    alice = mcpserve.Auth("alice", frozenset({"read"}))
    assert alice == mcpserve.Auth(principal="alice", scopes=frozenset({"read"}))
    assert {alice: 1}[mcpserve.Auth("alice", frozenset({"read"}))] == 1
    assert mcpserve.CachePolicy(60_000, "public") != mcpserve.CachePolicy(60_000, "private")
    assert mcpserve.InputRequired() == mcpserve.InputRequired({}, None)
    # Same fields, different record: not equal.
    assert mcpserve.Contents(text="x") != mcpserve.ToolResult(content=["x"])
