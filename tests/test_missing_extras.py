"""A missing optional dependency is one line that names the extra to install.

Each case runs a fresh interpreter in which the dependency cannot be imported (a
``sys.meta_path`` finder refuses it, as on an install without its extra), does what a
user does, and reads what the user sees: the exception a library call raises, or what a
process that mcpserve ends (``server.run()``, the ``mcpserve`` command) prints.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wire_helpers import ROOT, child_env

pytestmark = pytest.mark.subprocess

BLOCKER = """
import sys

blocked = set(sys.argv[1].split(","))


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
sys.argv = ["python", *sys.argv[2:]]
"""

# What a library call raises, printed as the user's own `except` would see it.
RAISED = """
try:
{body}
except ModuleNotFoundError as exc:
    print(type(exc).__name__, exc.name, exc.__cause__, exc.__suppress_context__, sep="|")
    print(exc)
"""


def run_without(
    blocked: str, code: str, *args: str, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code, blocked, *args],
        cwd=str(cwd),
        env={
            name: value for name, value in child_env().items() if not name.startswith("MCPSERVE_")
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def raised(blocked: str, body: str) -> tuple[str, str]:
    done = run_without(blocked, RAISED.format(body=textwrap.indent(textwrap.dedent(body), "    ")))
    assert done.returncode == 0, done.stderr
    kind, message = done.stdout.splitlines()
    return kind, message


@pytest.mark.parametrize(
    ("blocked", "body", "message"),
    [
        (
            "jwt",
            "from mcpserve.auth import JWTVerifier",
            "mcpserve.auth.JWTVerifier needs PyJWT, which the auth extra installs: "
            'pip install "mcpserve[auth]"',
        ),
        (
            "httpx2",
            "from mcpserve.auth import IntrospectionVerifier",
            "mcpserve.auth.IntrospectionVerifier needs httpx2, which the auth extra installs: "
            'pip install "mcpserve[auth]"',
        ),
        (
            "httpx2",
            'from mcpserve import Client\nClient("http://127.0.0.1:1/mcp")',
            "A Client over HTTP needs httpx2, which the http extra installs: "
            'pip install "mcpserve[http]"',
        ),
        (
            "httpx2",
            "from mcpserve import OAuth",
            "mcpserve.OAuth needs httpx2, which the http extra installs: "
            'pip install "mcpserve[http]"',
        ),
        (
            "jwt",
            "from mcpserve.client.oauth.assertion import PrivateKeyJWT\n"
            "from cryptography.hazmat.primitives.asymmetric import ec\n"
            "from cryptography.hazmat.primitives import serialization as s\n"
            "pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(s.Encoding.PEM, "
            "s.PrivateFormat.PKCS8, s.NoEncryption())\n"
            'PrivateKeyJWT(pem).assertion("me", "https://as.example")',
            "private_key_jwt (a signed client assertion) needs PyJWT, which the auth extra "
            'installs: pip install "mcpserve[auth]"',
        ),
        (
            "jwt",
            "from mcpserve import OAuth\nOAuth(dpop=True)",
            "DPoP (signed proofs of possession) needs PyJWT, which the auth extra installs: "
            'pip install "mcpserve[auth]"',
        ),
        (
            "opentelemetry",
            'from mcpserve import Server\nServer("t", tracing=True).pipeline.dispatcher()',
            "Server(tracing=True) needs opentelemetry-api, which the otel extra installs: "
            'pip install "mcpserve[otel]"',
        ),
    ],
    ids=[
        "auth-jwt",
        "auth-httpx2",
        "client-http",
        "client-oauth",
        "private-key-jwt",
        "dpop",
        "tracing",
    ],
)
def test_a_library_call_raises_one_line_naming_the_extra(
    blocked: str, body: str, message: str
) -> None:
    kind, said = raised(blocked, body)
    # Our own type (a ModuleNotFoundError, for `except ImportError`), and nothing chained:
    # a traceback, if nothing catches it, ends in this line alone.
    assert kind == f"MissingExtra|{blocked}|None|True"
    assert said == message


SERVER = """
from mcpserve import Server

server = Server("notes")


@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    # The command's own progress line ("Loading app.py...") may come first; then the error.
    [line] = [line for line in done.stderr.strip().splitlines() if not line.startswith("Loading ")]
    return line


def test_a_script_with_a_redis_url_but_no_redis_says_one_line(tmp_path: Path) -> None:
    """``python app.py``: the Server is made at import, before ``server.run()``; the
    process still ends with the one line, and status 1."""
    script = tmp_path / "app.py"
    script.write_text(
        'from mcpserve import Server\nserver = Server("notes", '
        'redis_url="redis://127.0.0.1:1/0")\nserver.run()\n'
    )
    done = run_without(
        "redis", "import runpy; runpy.run_path('app.py', run_name='__main__')", cwd=tmp_path
    )
    assert one_line(done) == (
        "A Redis subscription bus (redis_url=, MCPSERVE_REDIS_URL) needs redis, which the redis "
        'extra installs: pip install "mcpserve[redis]"'
    )


def test_server_run_http_without_uvicorn_says_one_line() -> None:
    done = run_without("uvicorn", 'from mcpserve import Server\nServer("x").run("http", port=1)')
    assert one_line(done) == (
        'server.run("http") needs uvicorn, which the http extra installs: '
        'pip install "mcpserve[http]"'
    )


COMMAND = (
    "from mcpserve.cli import main\nimport sys\nsys.argv = ['mcpserve', *sys.argv[1:]]\nmain()"
)


def test_the_command_serving_a_server_that_imports_auth_without_pyjwt_says_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("from mcpserve.auth import JWTVerifier\n" + SERVER)
    done = run_without("jwt", COMMAND, "run", "app.py", cwd=tmp_path)
    assert one_line(done) == (
        "Error: mcpserve.auth.JWTVerifier needs PyJWT, which the auth extra installs: "
        'pip install "mcpserve[auth]"'
    )


def test_a_task_store_on_redis_without_redis_says_one_line(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        SERVER + '\nserver = Server("notes", task_store="redis://127.0.0.1:1/0")\n'
        "@server.tool(task='optional')\nasync def slow() -> str:\n    return 'done'\n"
    )
    done = run_without("redis", COMMAND, "inspect", "app.py", cwd=tmp_path)
    assert one_line(done) == (
        "Error: Task store on Redis needs redis, which the redis extra installs: "
        'pip install "mcpserve[redis]"'
    )


def test_the_command_without_click_names_the_cli_extra() -> None:
    done = run_without("click", COMMAND, "run", "examples/notes.py")
    assert one_line(done) == (
        "The mcpserve command needs click, which the cli extra installs: "
        'pip install "mcpserve[cli]"'
    )
    assert done.stdout == ""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serving_http_without_uvicorn_names_the_http_extra(workers: str) -> None:
    done = run_without(
        "uvicorn", COMMAND, "run", "examples/notes.py", "--http", "--port", "1",
        "--workers", workers,
    )  # fmt: skip
    line = one_line(done)
    assert line.startswith("Error: ")
    assert line.endswith(
        'needs uvicorn, which the http extra installs: pip install "mcpserve[http]"'
    )


def test_reloading_over_stdio_without_watchfiles_says_one_line(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(SERVER)
    done = run_without("watchfiles", COMMAND, "run", "app.py", "--reload", cwd=tmp_path)
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: mcpserve run --reload over stdio needs watchfiles, which the cli extra "
        'installs: pip install "mcpserve[cli]"'
    )
    assert "Traceback" not in done.stderr


def test_a_missing_module_that_is_no_extra_is_left_as_it_is(tmp_path: Path) -> None:
    """Only optional dependencies are explained: a typo in the user's code stays a typo."""
    (tmp_path / "app.py").write_text("import not_a_real_module\n" + SERVER)
    done = run_without("nothing", "import runpy; runpy.run_path('app.py')", cwd=tmp_path)
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'not_a_real_module'" in done.stderr


def test_the_blocker_blocks_only_what_it_names() -> None:
    """The tests above prove something: with nothing blocked, the same calls work."""
    kind, said = raised(
        "nothing", "from mcpserve.auth import JWTVerifier\nraise ModuleNotFoundError('x', name='x')"
    )
    assert kind == "ModuleNotFoundError|x|None|False"
    assert said == "x"


def test_the_reference_shows_the_message_as_it_is_written() -> None:
    from mcpserve._extras import missing_extra

    said = str(missing_extra("Server(tracing=True)", "opentelemetry"))
    assert f"```text\n{said}\n```" in (ROOT / "docs" / "reference.md").read_text()
