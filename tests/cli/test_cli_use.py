"""``mcpserve inspect``, ``call``, ``read`` and ``prompt`` against small servers written to
temporary files: in this process through click's runner, and over stdio in real
subprocesses."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mcpserve.cli import main
from wire_helpers import child_env

SHELF = '''
import os

from mcpserve import Audio, Context, Image, Server, ToolError

server = Server("shelf", "2.0.0")


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def lookup(isbn: str, count: int = 1, tags: list[str] | None = None, draft: bool = False) -> dict:
    """Find a book by its ISBN.

    Args:
        isbn: The 13-digit ISBN.
    """
    return {"isbn": isbn, "count": count, "tags": tags, "draft": draft}


@server.tool
def hello(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


@server.tool
def cover():
    return [Image(b"\\x89PNG" + bytes(2044), "image/png"), Audio(bytes(100), "audio/wav")]


@server.tool
def borrow(isbn: str) -> str:
    raise ToolError(f"{isbn} is already out")


@server.tool
def where() -> dict:
    return {"pid": os.getpid(), "parent": os.getppid()}


@server.tool
async def shelve(ctx: Context) -> str:
    await ctx.progress(1, 2, "first shelf")
    await ctx.progress(2, 2)
    return "shelved"


@server.resource("shelf://readme", mime_type="text/plain", description="About the shelf.")
def readme() -> str:
    return "Books, mostly."


@server.resource("shelf://logo", mime_type="image/png")
def logo() -> bytes:
    return bytes(300)


@server.resource("books://{isbn}", mime_type="application/json")
def book(isbn: str) -> str:
    return isbn


@server.prompt
def review(title: str, tone: str = "kind") -> str:
    """Write a review."""
    return f"Review {title}, {tone}ly."
'''

ASKING = """
from typing import Literal

from pydantic import BaseModel, Field

from mcpserve import Context, Server

server = Server("asking")


class Loan(BaseModel):
    reader: str
    weeks: int
    renewable: bool
    branch: Literal["north", "south"]
    note: str | None = Field(default=None, description="Anything else")


@server.tool
async def lend(ctx: Context) -> dict:
    answer = await ctx.elicit("Who borrows it?", Loan)
    if not answer.accepted:
        return {"action": answer.action}
    return {"action": "accept", "loan": answer.content}


@server.tool
async def blurb(ctx: Context) -> str:
    reply = await ctx.sample("Write a blurb for Dune", max_tokens=50)
    return f"blurb: {reply.text} ({reply.model})"


@server.tool
async def roots(ctx: Context) -> list[str]:
    return [root.uri for root in await ctx.list_roots()]
"""


@pytest.fixture
def restore_imports() -> Iterator[None]:
    """Loading a target adds it to sys.modules and its folder to sys.path: undo both."""
    modules, path = set(sys.modules), list(sys.path)
    yield
    for name in set(sys.modules) - modules:
        del sys.modules[name]
    sys.path[:] = path


@pytest.fixture
def write(tmp_path: Path, restore_imports: None) -> Callable[[str, str], Path]:
    def write(source: str, name: str = "shelf_app.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return path

    return write


def mcpserve(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def shelf(write: Callable[[str, str], Path]) -> str:
    return str(write(SHELF, "shelf_app.py"))


@pytest.fixture
def asking(write: Callable[[str, str], Path]) -> str:
    return str(write(ASKING, "asking_app.py"))


# --------------------------------------------------------------------------- inspect


def test_inspect_shows_each_tool_with_its_arguments_types_defaults_and_options(
    shelf: str,
) -> None:
    result = mcpserve("inspect", shelf)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("shelf 2.0.0\n\nTools (6)\n  lookup\n")
    lookup = result.stdout.split("\n\n")[1]
    assert lookup.splitlines()[2:] == [
        "    Find a book by its ISBN.",
        "    options: read-only, idempotent",
        "    ARGUMENT  TYPE             REQUIRED  DEFAULT  DESCRIPTION",
        "    isbn      string           yes                The 13-digit ISBN.",
        "    count     integer          no        1",
        "    tags      string[] | null  no        null",
        "    draft     boolean          no        false",
    ]
    assert "  cover\n    no arguments" in result.stdout


def test_inspect_shows_resources_templates_and_prompts_as_tables(shelf: str) -> None:
    result = mcpserve("inspect", shelf)
    sections = result.stdout.split("\n\n")
    assert sections[-3:] == [
        "Resources (2)\n"
        "  URI             NAME    MIME TYPE   DESCRIPTION\n"
        "  shelf://readme  readme  text/plain  About the shelf.\n"
        "  shelf://logo    logo    image/png",
        "Resource templates (1)\n"
        "  URI TEMPLATE    NAME  MIME TYPE\n"
        "  books://{isbn}  book  application/json",
        "Prompts (1)\n"
        "  NAME    ARGUMENTS     DESCRIPTION\n"
        "  review  title, tone?  Write a review.\n",
    ]


def test_inspect_json_prints_the_server_and_its_lists_as_they_came(shelf: str) -> None:
    result = mcpserve("inspect", shelf, "--json")
    found = json.loads(result.stdout)
    assert found["server"] == {"name": "shelf", "version": "2.0.0"}
    assert [tool["name"] for tool in found["tools"]] == [
        "lookup", "hello", "cover", "borrow", "where", "shelve",
    ]  # fmt: skip
    assert found["tools"][0]["inputSchema"]["properties"]["isbn"]["type"] == "string"
    assert [r["uri"] for r in found["resources"]] == ["shelf://readme", "shelf://logo"]
    assert found["resourceTemplates"][0]["uriTemplate"] == "books://{isbn}"
    assert found["prompts"][0]["arguments"] == [
        {"name": "title", "required": True},
        {"name": "tone", "required": False},
    ]


# --------------------------------------------------------------------------- call: arguments


def test_call_keeps_an_all_digit_value_a_string_for_a_string_argument(shelf: str) -> None:
    result = mcpserve("call", shelf, "lookup", "isbn=9780441013593", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["structuredContent"]["isbn"] == "9780441013593"


def test_call_reads_integers_booleans_and_json_arrays_as_the_schema_says(shelf: str) -> None:
    args = ["isbn=1", "count=3", "draft=true", 'tags=["sf","classic"]']
    result = mcpserve("call", shelf, "lookup", *args, "--json")
    assert json.loads(result.stdout)["structuredContent"] == {
        "isbn": "1", "count": 3, "tags": ["sf", "classic"], "draft": True,
    }  # fmt: skip


def test_call_refuses_a_value_that_does_not_fit_naming_the_argument_and_type(
    shelf: str,
) -> None:
    result = mcpserve("call", shelf, "lookup", "isbn=1", "count=three")
    assert result.exit_code == 2
    assert "Error: Argument 'count' expects integer, got 'three'" in result.stderr
    assert "Calling" not in result.stderr  # refused before anything was sent


def test_call_refuses_a_non_json_array_showing_the_json_syntax(shelf: str) -> None:
    result = mcpserve("call", shelf, "lookup", "isbn=1", "tags=sf")
    assert result.exit_code == 2
    assert "Argument 'tags' expects string[] | null, got 'sf'" in result.stderr
    assert """tags='["a","b"]'""" in result.stderr


def test_call_refuses_a_word_without_equals_showing_the_key_value_syntax(shelf: str) -> None:
    result = mcpserve("call", shelf, "lookup", "9780441013593")
    assert result.exit_code == 2
    assert "Expected KEY=VALUE (e.g. isbn=9780441013593" in result.stderr
    assert "got '9780441013593'" in result.stderr


def test_call_names_a_missing_required_argument_and_how_to_give_it(shelf: str) -> None:
    result = mcpserve("call", shelf, "lookup", "count=2")
    assert result.exit_code == 2
    assert "Missing argument 'isbn' (string): add isbn=VALUE" in result.stderr


def test_call_refuses_an_argument_the_tool_does_not_take_naming_the_closest(shelf: str) -> None:
    """``yaer=1965`` for ``year``: refused before the call, not dropped by the server."""
    result = mcpserve("call", shelf, "lookup", "isbn=1", "conut=3")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "Loading shelf_app.py...\n"
        "Error: Tool 'lookup' has no argument 'conut' (did you mean count?); it takes: isbn, "
        "count, tags, draft\n"
    )


def test_a_usage_error_found_after_parsing_is_one_line_without_clicks_usage_header(
    shelf: str,
) -> None:
    result = mcpserve("call", shelf, "lookup", "count=three", "isbn=1")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Loading shelf_app.py...",
        "Error: Argument 'count' expects integer, got 'three'",
    ]


def test_a_word_that_is_not_key_value_is_refused_before_the_target_is_loaded(
    shelf: str,
) -> None:
    result = mcpserve("call", shelf, "lookup", "9780441013593")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: Expected KEY=VALUE")  # no "Loading" first


def test_call_of_a_tool_the_server_lacks_lists_the_tools_it_has(shelf: str) -> None:
    result = mcpserve("call", shelf, "lend")
    assert result.exit_code == 2
    assert (
        "has no tool 'lend' (its tools: lookup, hello, cover, borrow, where, shelve)"
        in result.stderr
    )


# --------------------------------------------------------------------------- call: output


def test_call_prints_text_content_as_plain_text(shelf: str) -> None:
    result = mcpserve("call", shelf, "hello", "name=Ada")
    assert result.exit_code == 0
    assert result.stdout == "Hello, Ada!\n"
    assert result.stderr == "Loading shelf_app.py...\nCalling hello...\n"


def test_call_prints_structured_content_once_as_indented_json(shelf: str) -> None:
    result = mcpserve("call", shelf, "lookup", "isbn=42")
    expected = {"isbn": "42", "count": 1, "tags": None, "draft": False}
    assert result.stdout == json.dumps(expected, indent=2) + "\n"


def test_call_summarises_images_and_audio_by_type_and_size(shelf: str) -> None:
    result = mcpserve("call", shelf, "cover")
    assert result.stdout == "[image: image/png, 2.0 KiB]\n[audio: audio/wav, 100 bytes]\n"


def test_a_tools_progress_is_shown_on_stderr_as_it_happens(shelf: str) -> None:
    result = mcpserve("call", shelf, "shelve")
    assert result.stdout == "shelved\n"
    assert result.stderr.endswith(
        "Calling shelve...\n  progress 1/2: first shelf\n  progress 2/2\n"
    )


def test_a_tool_error_goes_to_stderr_and_exits_with_status_1(shelf: str) -> None:
    result = mcpserve("call", shelf, "borrow", "isbn=42")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.endswith("42 is already out\n")


def test_call_json_prints_the_raw_result_and_still_exits_1_on_a_tool_error(shelf: str) -> None:
    result = mcpserve("call", shelf, "borrow", "isbn=42", "--json")
    assert result.exit_code == 1
    raw = json.loads(result.stdout)
    assert raw["isError"] is True
    assert raw["content"] == [{"type": "text", "text": "42 is already out"}]


# --------------------------------------------------------------------------- asking the user


def test_an_elicitation_asks_for_each_field_by_its_type_and_sends_the_answers(
    asking: str,
) -> None:
    answers = "accept\nGrace\nthree\n3\nyes\nwest\nsouth\n\n"
    result = mcpserve("call", asking, "lend", input=answers)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "action": "accept",
        "loan": {"reader": "Grace", "weeks": 3, "renewable": True, "branch": "south"},
    }
    assert "The server asks: Who borrows it?" in result.stderr
    assert "'three' is not a valid integer" in result.stderr  # asked again
    assert "'west' is not one of: north, south" in result.stderr


def test_an_elicitation_field_with_a_description_shows_it_in_the_prompt(asking: str) -> None:
    result = mcpserve("call", asking, "lend", input="accept\nGrace\n3\nno\nnorth\nby Friday\n")
    assert "note (Anything else): " in result.stderr
    assert json.loads(result.stdout)["loan"]["note"] == "by Friday"


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_declining_or_cancelling_an_elicitation_reaches_the_tool(asking: str, action: str) -> None:
    result = mcpserve("call", asking, "lend", input=f"{action}\n")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"action": action}
    assert "reader" not in result.stderr  # no field was asked for


def test_a_sampling_request_is_answered_with_the_text_the_user_types(asking: str) -> None:
    result = mcpserve("call", asking, "blurb", input="Spice and sand.\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == "blurb: Spice and sand. (mcpserve-cli (typed at the terminal))\n"
    assert "  [user] Write a blurb for Dune" in result.stderr


def test_the_roots_a_tool_gets_are_the_current_directory(
    asking: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = mcpserve("call", asking, "roots", "--json")
    assert json.loads(result.stdout)["structuredContent"] == [tmp_path.as_uri()]


# --------------------------------------------------------------------------- read and prompt


def test_read_prints_a_text_resource_as_it_is(shelf: str) -> None:
    result = mcpserve("read", shelf, "shelf://readme")
    assert result.exit_code == 0
    assert result.stdout == "Books, mostly.\n"


def test_read_summarises_a_binary_resource_by_type_and_size(shelf: str) -> None:
    result = mcpserve("read", shelf, "shelf://logo")
    assert result.stdout == "[shelf://logo: image/png, 300 bytes]\n"


def test_read_json_prints_the_raw_contents(shelf: str) -> None:
    result = mcpserve("read", shelf, "shelf://logo", "--json")
    contents = json.loads(result.stdout)["contents"]
    assert contents == [
        {"uri": "shelf://logo", "blob": base64.b64encode(bytes(300)).decode(),
         "mimeType": "image/png"},
    ]  # fmt: skip


def test_reading_an_unknown_resource_exits_1_with_the_servers_error(shelf: str) -> None:
    result = mcpserve("read", shelf, "shelf://nothing")
    assert result.exit_code == 1
    assert 'Error: The server answered error -32602: Resource not found (data: {"uri": ' in (
        result.stderr
    )


def test_prompt_prints_each_message_under_its_role(shelf: str) -> None:
    result = mcpserve("prompt", shelf, "review", "title=Dune", "tone=harsh")
    assert result.exit_code == 0, result.output
    assert result.stdout == "[user]\nReview Dune, harshly.\n"


def test_prompt_names_a_missing_required_argument(shelf: str) -> None:
    result = mcpserve("prompt", shelf, "review", "tone=harsh")
    assert result.exit_code == 2
    assert "Missing argument 'title': add title=VALUE" in result.stderr


def test_prompt_refuses_an_argument_it_does_not_take_listing_those_it_does(shelf: str) -> None:
    result = mcpserve("prompt", shelf, "review", "title=Dune", "mood=dark")
    assert result.exit_code == 2
    assert "Error: Prompt 'review' has no argument 'mood'; it takes: title, tone\n" in (
        result.stderr
    )


def test_prompt_suggests_the_argument_a_typo_was_meant_for(shelf: str) -> None:
    result = mcpserve("prompt", shelf, "review", "titel=Dune")
    assert result.exit_code == 2
    assert "has no argument 'titel' (did you mean title?); it takes: title, tone" in (result.stderr)


# --------------------------------------------------------------------------- finding the server


def test_a_missing_target_file_is_named_with_the_folder_it_was_looked_for_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = mcpserve("inspect", "nowhere.py")
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: No such file: nowhere.py (looked in {tmp_path}); give the path to the Python "
        "file that creates your Server\n"
    )


def test_a_file_without_a_server_says_how_to_create_or_name_one(
    write: Callable[[str, str], Path],
) -> None:
    path = write("VALUE = 1\n", "plain.py")
    result = mcpserve("inspect", str(path))
    assert result.exit_code == 2
    assert "defines no Server object at module level" in result.stderr
    assert f"{path}:NAME" in result.stderr


def test_a_file_with_two_servers_asks_for_one_by_name(write: Callable[[str, str], Path]) -> None:
    source = "from mcpserve import Server\nfirst = Server('a')\nsecond = Server('b')\n"
    path = write(source, "two.py")
    result = mcpserve("inspect", str(path))
    assert result.exit_code == 2
    assert f"defines 2 Server objects (first, second); name the one to use: {path}:first" in (
        result.stderr
    )
    named = mcpserve("inspect", f"{path}:second", "--json")
    assert json.loads(named.stdout)["server"]["name"] == "b"


def test_a_name_that_is_not_a_server_lists_the_servers_there(shelf: str) -> None:
    result = mcpserve("inspect", f"{shelf}:shelf")
    assert result.exit_code == 2
    assert f"has no Server named 'shelf' (Server objects found: {shelf}:server)" in result.stderr


# --------------------------------------------------------------------------- over stdio


def run_cli(
    *args: str, input: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpserve.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        cwd=cwd,
    )


def call_where(module: str, shelf: str) -> tuple[int, dict[str, Any], str]:
    """``python -m MODULE call SHELF where --stdio``: the command's pid, the tool's answer
    (the server's parent pid among it) and the command's stderr."""
    command = [sys.executable, "-m", module, "call", shelf, "where", "--stdio"]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdout=pipe, stderr=pipe, stdin=subprocess.DEVNULL,
                          env=child_env(), text=True) as process:  # fmt: skip
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    return process.pid, json.loads(stdout), stderr


@pytest.mark.subprocess
def test_call_with_stdio_runs_the_tool_in_a_child_process_of_the_command(shelf: str) -> None:
    pid, where, stderr = call_where("mcpserve.cli", shelf)
    assert where["parent"] == pid
    assert "Starting shelf_app.py over stdio..." in stderr


@pytest.mark.subprocess
def test_python_dash_m_mcpserve_is_the_same_command(shelf: str) -> None:
    pid, where, _ = call_where("mcpserve", shelf)
    assert where["parent"] == pid  # the command ran the server
    listed = subprocess.run([sys.executable, "-m", "mcpserve", "--help"], capture_output=True,
                            text=True, timeout=60, env=child_env())  # fmt: skip
    assert listed.returncode == 0
    assert {"run", "call", "inspect", "proxy", "dev"} <= {
        line.split()[0] for line in listed.stdout.split("Commands:")[1].splitlines() if line.strip()
    }


@pytest.mark.subprocess
def test_an_elicitation_over_stdio_is_answered_at_the_terminal(asking: str) -> None:
    done = run_cli("call", asking, "lend", "--stdio", input="accept\nLin\n2\nno\nnorth\n\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["loan"] == {
        "reader": "Lin", "weeks": 2, "renewable": False, "branch": "north",
    }  # fmt: skip


@pytest.mark.subprocess
def test_a_target_that_fails_over_stdio_shows_its_own_error_then_the_fix(
    write: Callable[[str, str], Path],
) -> None:
    path = write("VALUE = 1\n", "plain.py")
    done = run_cli("inspect", str(path), "--stdio")
    assert done.returncode == 1
    assert "defines no Server object at module level" in done.stderr  # the child's
    assert f"plain.py stopped before it answered; its error is printed above (try: mcpserve " \
        f"run {path})" in done.stderr  # fmt: skip


@pytest.mark.subprocess
def test_call_inspect_and_read_reach_a_running_server_by_its_url(tmp_path: Path) -> None:
    from wire_helpers import http_server_process

    with http_server_process(tmp_path) as served:
        runner = CliRunner()
        called = runner.invoke(main, ["call", served.url, "add", "a=2", "b=40", "--json"])
        inspected = runner.invoke(main, ["inspect", served.url, "--json"])
        refused = runner.invoke(main, ["call", served.url, "add", "--stdio"])
    assert called.exit_code == 0, called.output
    assert json.loads(called.stdout)["structuredContent"] == {"total": 42}
    assert inspected.exit_code == 0, inspected.output
    assert "add" in [tool["name"] for tool in json.loads(inspected.stdout)["tools"]]
    assert refused.exit_code == 2
    assert "a URL is already running" in refused.output


def test_an_unreachable_url_names_the_fix() -> None:
    from wire_helpers import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    result = CliRunner().invoke(main, ["inspect", url])
    assert result.exit_code == 1
    assert f"Cannot reach {url}" in result.output
    assert "is the server running there?" in result.output


# --------------------------------------------------------------------------- access options


def test_access_options_are_refused_for_a_file_target(shelf: str) -> None:
    result = mcpserve("call", shelf, "hello", "name=x", "--oauth")
    assert result.exit_code == 2
    assert "--header, --oauth and --client-id are for a server at a URL" in result.output


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--client-secret", "s"], "--client-secret needs --client-id"),
        (["--client-id", "c"], "--client-id needs --client-secret (client credentials)"),
        (["--header", "no colon"], "--header 'no colon' is not NAME: VALUE"),
        (["--header", "bad name: v"], "--header 'bad name: v' is not NAME: VALUE"),
        (["--oauth", "-H", "authorization: Bearer t"], "--header Authorization sends a token"),
    ],
)
def test_access_options_that_do_not_fit_together_are_a_usage_error(
    options: list[str], message: str
) -> None:
    result = mcpserve("inspect", "http://127.0.0.1:9/mcp", *options)
    assert result.exit_code == 2
    assert message in result.output
    assert "Connecting" not in result.output


# --------------------------------------------------------------------------- --log-level

LOGS = """
import os

from mcpserve import Context, Server

server = Server("logs", client_logging=True)


@server.tool
async def work(ctx: Context) -> str:
    await ctx.log("debug", "looking closely")
    await ctx.log("info", "working")
    await ctx.log("error", {"left": 2}, logger="shelf")
    return "done"


if os.environ.get("REFUSE_MODERN"):  # a server that predates 2026-07-28, over HTTP
    import uvicorn

    inner = server.http_app("/mcp")

    async def app(scope, receive, send):
        if scope["type"] == "http" and any(
            name == b"mcp-protocol-version" and value.startswith(b"2026")
            for name, value in scope["headers"]
        ):
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 400, "headers": []})
            await send({"type": "http.response.body", "body": b"unsupported version"})
            return
        await inner(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["MCPSERVE_TEST_HTTP_PORT"]),
                log_level="warning")
"""

SHOWN_AT_INFO = '[info] working\n[error shelf] {"left": 2}\n'


@pytest.fixture
def logs(write: Callable[[str, str], Path]) -> str:
    return str(write(LOGS, "logs_app.py"))


def log_lines(stderr: str) -> str:
    return "".join(line + "\n" for line in stderr.splitlines() if line.startswith("["))


def test_log_level_shows_the_servers_log_messages_of_that_level_and_above(logs: str) -> None:
    result = mcpserve("call", logs, "work", "--log-level", "info")
    assert result.exit_code == 0, result.output
    assert result.stdout == "done\n"  # stdout keeps the result only
    assert log_lines(result.stderr) == SHOWN_AT_INFO


def test_without_log_level_no_log_message_is_asked_for(logs: str) -> None:
    result = mcpserve("call", logs, "work")
    assert log_lines(result.stderr) == ""


@pytest.mark.subprocess
def test_log_level_over_stdio(logs: str) -> None:
    done = run_cli("call", logs, "work", "--stdio", "--log-level", "debug")
    assert done.returncode == 0, done.stderr
    assert log_lines(done.stderr) == "[debug] looking closely\n" + SHOWN_AT_INFO


@pytest.mark.subprocess
@pytest.mark.parametrize("era", ["2026-07-28", "handshake"])
def test_log_level_at_a_url_in_either_era(logs: str, tmp_path: Path, era: str) -> None:
    """2026-07-28: the level goes in each request's ``_meta``; the handshake era: in
    ``logging/setLevel`` after ``initialize``."""
    from wire_helpers import http_server_process

    if era == "handshake":
        args, env = [sys.executable, logs], {"REFUSE_MODERN": "1"}
    else:
        args, env = [sys.executable, "-m", "mcpserve.cli", "run", logs, "--http", "--port",
                     "{port}"], {}  # fmt: skip
    with http_server_process(tmp_path, args=args, env=env) as served:
        done = run_cli("call", served.url, "work", "--log-level", "info")
    assert done.returncode == 0, done.stderr
    assert log_lines(done.stderr) == SHOWN_AT_INFO


def test_log_level_says_when_the_server_sends_no_log_messages(shelf: str) -> None:
    result = mcpserve("call", shelf, "hello", "name=Ada", "--log-level", "info")
    assert result.exit_code == 0
    assert "shelf_app.py sends no log messages (it declares no logging capability" in (
        result.stderr
    )


# --------------------------------------------------------------------------- task tools

TASKS = """
from mcpserve import Server

server = Server("jobs")


@server.tool(task="optional")
async def rebuild(shards: int = 4) -> str:
    \"\"\"Rebuild the index.\"\"\"
    return "rebuilt"


@server.tool(task="required")
async def migrate() -> str:
    return "migrated"


@server.tool
def ping() -> str:
    return "pong"
"""


@pytest.fixture
def jobs(write: Callable[[str, str], Path]) -> str:
    return str(write(TASKS, "jobs_app.py"))


def options_of(stdout: str) -> dict[str, str]:
    """Each tool's ``options:`` line, by tool name (an empty string for none)."""
    found: dict[str, str] = {}
    for block in stdout.split("\n\n"):
        lines = block.splitlines()
        if lines and lines[0].startswith("  ") and not lines[0].startswith("   "):
            name = lines[0].strip()
            found[name] = next((line.strip() for line in lines if "options:" in line), "")
    return found


def test_inspect_marks_the_task_tools_of_a_target_it_imports(jobs: str) -> None:
    result = mcpserve("inspect", jobs)
    assert result.exit_code == 0, result.output
    assert options_of(result.stdout.split("Tools (3)\n")[1]) == {
        "rebuild": "options: task (optional)",
        "migrate": "options: task (required)",
        "ping": "",
    }
    assert "Tasks:" not in result.stdout  # each task tool is marked: no need to say more


def test_inspect_json_keeps_the_tools_as_the_server_listed_them(jobs: str) -> None:
    found = json.loads(mcpserve("inspect", jobs, "--json").stdout)
    assert all("execution" not in tool for tool in found["tools"])


@pytest.mark.subprocess
def test_inspect_over_stdio_says_the_server_runs_tasks_it_cannot_name(jobs: str) -> None:
    """The 2026-07-28 tasks extension lists no per-tool field: only the capability shows."""
    done = run_cli("inspect", jobs, "--stdio")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "jobs 0.1.0\nTasks: some calls may run as tasks (io.modelcontextprotocol/tasks); its "
        "tool list does not say which\n\nTools (3)\n"
    )


def test_inspect_marks_a_tool_whose_listing_declares_its_task_support() -> None:
    """A 2025-11-25 server lists ``execution.taskSupport``; ``forbidden`` is no mark."""
    from mcpserve.cli.output import inspection_text

    tools = [
        {"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": support}}
        for name, support in (("a", "optional"), ("b", "required"), ("c", "forbidden"))
    ]
    text = inspection_text({"server": {"name": "old"}, "tools": tools})
    assert options_of(text.split("Tools (3)\n")[1]) == {
        "a": "options: task (optional)",
        "b": "options: task (required)",
        "c": "",
    }
