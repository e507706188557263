"""Every Python block of the README, the tutorial and the guides runs as a reader types it.

A document's Python blocks run in order, in one namespace: a module named after the file the
document builds (the first Python block's ``# bookshelf.py`` line, else ``docs_<name>``),
with a fresh temporary directory as the working directory and on ``sys.path``. So what a
block defines, the next one uses, exactly as in the file the reader pastes them into.

* A block whose first line names another file (``# asgi.py``, ``# test_bookshelf.py``) is
  that file: it is written to the working directory and run as its own module, so the
  document's later blocks and commands import it.
* A block that holds ``if __name__ == "__main__":`` is run as a script is, with ``__name__``
  set to ``"__main__"``, so what it guards runs too (against the stand-ins below).
* Blocks are file content: a top-level ``await`` is a syntax error, as in a file, and async
  code runs through ``asyncio.run(...)``.
* ``python signature`` blocks show how to call a public callable; they are compared with its
  real signature (``test_docs_reference.py``) instead of being run.
* ``<!-- test-setup ... -->`` comments run hidden Python where a reader has something the
  page does not show; ``<!-- test-output: EXPRESSION -->`` says the next ``json`` block is
  what ``EXPRESSION`` gives, evaluated in the document's namespace with ``request(method,
  params)`` (a request to the document's ``server`` through an in-memory ``Client``).
* ``console`` commands that run Python are run: ``python -c CODE`` in this process against
  the document's modules, ``uvicorn MODULE:FACTORY --factory`` by calling the factory as
  uvicorn would. The others are checked in ``test_docs_blocks.py``; ``mcpserve`` commands
  in ``test_docs_cli.py``.

Nothing is skipped. What cannot run here is replaced by the stand-ins of
:func:`stand_ins`, the one place they are listed, each with its reason.

Why our own runner: Sybil comes closest (a namespace per document, hidden blocks), but its
pytest hook collects only files pytest walks (the docs are outside ``tests/``) and JSON,
configuration and signature blocks would still need our own checks; pytest-examples runs each
block on its own, not as one file; pytest-markdown-docs needs a marker on every fence and a
command-line flag. The rules above take a page of code and no dependency.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import signal
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from test_docs_reference import check_signature

import mcpserve.dev
import mcpserve.transports.stdio
from markdown_blocks import DOCUMENTS, Block, blocks, console_commands
from mcpserve import Client
from mcpserve.server.config import ServerOptions

MAIN_GUARD = 'if __name__ == "__main__":'
PYTHON = ("python", "py")


# ------------------------------------------------------------------------------ stand-ins

#: The API the guides call at https://api.example.com: a small pet store, its OpenAPI
#: document at /openapi.json, and its two read operations.
PET_STORE = {
    "openapi": "3.1.0",
    "info": {"title": "Pet store", "version": "1.0.0"},
    "paths": {
        "/pets": {"get": {"operationId": "listPets", "tags": ["pets"],
                          "responses": {"200": {"description": "The pets"}}}},
        "/pets/{petId}": {"get": {
            "operationId": "getPet", "tags": ["pets"],
            "parameters": [{"name": "petId", "in": "path", "required": True,
                            "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "A pet"}}}},
        "/stock": {"post": {"operationId": "countStock", "tags": ["stock"],
                            "responses": {"200": {"description": "Counted"}}}},
    },
}  # fmt: skip


def example_api(request: httpx2.Request) -> httpx2.Response:
    if request.url.path == "/openapi.json":
        return httpx2.Response(200, json=PET_STORE)
    if request.url.path == "/pets":
        return httpx2.Response(200, json=[{"id": 1, "name": "Rex"}])
    return httpx2.Response(404, json={"detail": "Not found"})


@contextlib.contextmanager
def signals_restored() -> Iterator[None]:
    """Put back the SIGINT and SIGTERM handlers that loading an app chains its own to."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Replace what would serve forever or reach the internet; returns what was served.

    1. ``uvicorn.Server.run`` loads the app as uvicorn does (calling a factory, as it would
       in each worker) and returns instead of serving on the documented port: the blocks
       name port 8000, which other programs on the machine may hold, and serving never ends.
    2. The dev page's ``_bind`` binds a free port instead of the documented one, for the
       same reason (``serve_dev`` binds before uvicorn runs).
    3. ``serve_stdio`` serves a stdin that ends at once: the server starts (its lifespan
       runs) and stops, where the real one would wait for a client on the test's stdin.
    4. HTTP requests to ``*.example.com``, the documentation's placeholder domain, are
       answered by :func:`example_api`; every other request goes out as usual.
    """
    served: list[Any] = []

    def run_without_serving(self: uvicorn.Server, sockets: Any = None) -> None:
        with signals_restored():
            self.config.load()
        assert callable(self.config.loaded_app)
        served.append(self.config)

    def bind_any_port(host: str, port: int) -> Any:
        return real_bind(host, 0)

    async def serve_stdio_until_eof(server: Any, **options: Any) -> None:
        inspect.signature(real_serve_stdio).bind(server, **options)  # the options it takes
        reader = asyncio.StreamReader()
        reader.feed_eof()
        written: list[bytes] = []
        grace = options.get("shutdown_grace", 5.0)
        await mcpserve.transports.stdio.serve_stream(server, reader, written.append,
                                                     shutdown_grace=grace)  # fmt: skip
        served.append(server)

    def handle(request: httpx2.Request) -> httpx2.Response | None:
        if (request.url.host or "").endswith(".example.com"):
            return example_api(request)
        return None

    sync_send, async_send = (
        httpx2.HTTPTransport.handle_request,
        (httpx2.AsyncHTTPTransport.handle_async_request),
    )

    def send(self: Any, request: httpx2.Request) -> httpx2.Response:
        return handle(request) or sync_send(self, request)

    async def send_async(self: Any, request: httpx2.Request) -> httpx2.Response:
        return handle(request) or await async_send(self, request)

    real_bind = mcpserve.dev._bind
    real_serve_stdio = mcpserve.transports.stdio.serve_stdio
    monkeypatch.setattr(uvicorn.Server, "run", run_without_serving)
    monkeypatch.setattr(mcpserve.dev, "_bind", bind_any_port)
    monkeypatch.setattr(mcpserve.transports.stdio, "serve_stdio", serve_stdio_until_eof)
    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", send)
    monkeypatch.setattr(httpx2.AsyncHTTPTransport, "handle_async_request", send_async)
    return served


# ------------------------------------------------------------------------------ the runner


class DocumentRun:
    """One document's blocks, run in order in its working directory."""

    def __init__(self, document: Path, workdir: Path) -> None:
        self.document = document
        self.workdir = workdir
        self.blocks = blocks(document)
        self.name = module_name(self.blocks, document)
        self.module = self.new_module(self.name)
        self.expected_output: Any = None

    def new_module(self, name: str) -> types.ModuleType:
        module = types.ModuleType(name)
        module.__file__ = str(self.workdir / f"{name}.py")
        sys.modules[name] = module  # pydantic resolves a module's models through it
        return module

    def run(self) -> None:
        for block in self.blocks:
            if block.language in PYTHON and "signature" in block.options:
                check_signature(block, vars(self.module))
            elif block.language in PYTHON:
                self.python(block)
            elif block.language == "test-setup":
                self.execute(block, vars(self.module))
            elif block.language == "test-output":
                self.expected_output = block
            elif block.language == "json" and self.expected_output is not None:
                self.compare_output(self.expected_output, block)
                self.expected_output = None
            elif block.language in ("console", "bash"):
                self.console(block)

    def python(self, block: Block) -> None:
        name = block.file_name
        if name is None or name[:-3] == self.name:
            self.execute(block, vars(self.module))
            return
        (self.workdir / name).write_text(block.code)
        self.execute(block, vars(self.new_module(name[:-3])))

    def execute(self, block: Block, namespace: dict[str, Any]) -> None:
        code = compile(block.source, str(block.document), "exec")
        name = namespace["__name__"]
        if MAIN_GUARD in block.code:
            namespace["__name__"] = "__main__"
        try:
            exec(code, namespace)
        finally:
            namespace["__name__"] = name

    def compare_output(self, directive: Block, block: Block) -> None:
        namespace = {**vars(self.module), "request": self.request}
        actual = eval(compile(directive.code, str(directive.document), "eval"), namespace)
        assert json.loads(block.code) == actual, f"{block.where} is not what the server gives"

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        async def send() -> Any:
            async with Client(self.module.server) as client:
                return await client.request(method, params)

        return asyncio.run(send())

    def console(self, block: Block) -> None:
        for command in console_commands(block):
            words = command.words
            if words[:2] == ["python", "-c"]:
                exec(compile(words[2], f"{block.where} (python -c)", "exec"), {})
            elif words[0] == "uvicorn" and "--factory" in words:
                module, _, factory = words[1].partition(":")
                with signals_restored():  # a factory may chain the exit signals' handlers
                    app = getattr(sys.modules[module], factory)()
                assert callable(app), f"{block.where}: {words[1]} made no ASGI app"


def module_name(found: list[Block], document: Path) -> str:
    """The module a document's Python blocks build: the file its first block names."""
    python = [block for block in found if block.language in PYTHON]
    first = python[0].file_name if python else None
    return first[:-3] if first else f"docs_{document.stem}"


def project_files(document: Path) -> dict[str, str]:
    """The files of a reader who typed the document in: its module, every Python block that
    names no other file, one after the other; and each file another block names."""
    found = blocks(document)
    own = f"{module_name(found, document)}.py"
    files: dict[str, str] = {own: ""}
    for block in found:
        if block.language in PYTHON and "signature" not in block.options:
            name = block.file_name or own
            files[name] = files[name] + block.code if name == own else block.code
    return files


def runnable(document: Path) -> bool:
    return any(block.language in PYTHON for block in blocks(document))


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before, environment = set(sys.modules), dict(os.environ)
    yield tmp_path
    os.environ.clear()
    os.environ.update(environment)  # what a document's setup exported
    for name in set(sys.modules) - before:
        module_file = getattr(sys.modules[name], "__file__", None) or ""
        if module_file.startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.mark.parametrize(
    "document", [doc for doc in DOCUMENTS if runnable(doc)], ids=lambda doc: doc.name
)
def test_the_python_blocks_of_a_document_run_in_order(
    document: Path, workdir: Path, stand_ins: list[Any]
) -> None:
    DocumentRun(document, workdir).run()


TUTORIAL = next(doc for doc in DOCUMENTS if doc.name == "tutorial.md")


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_the_tutorials_tests_pass_under_pytest_asyncio_in_strict_and_auto_mode(
    mode: str, tmp_path: Path
) -> None:
    for name, code in project_files(TUTORIAL).items():
        (tmp_path / name).write_text(code)
    [command] = [
        command.words
        for block in blocks(TUTORIAL)
        if block.language == "console"
        for command in console_commands(block)
        if command.words[0] == "pytest"
    ]
    assert command == ["pytest", "test_bookshelf.py"]
    done = subprocess.run(
        [sys.executable, "-m", *command, "-p", "no:cacheprovider", "-o", f"asyncio_mode={mode}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


GUIDE_TO_TESTING = next(doc for doc in DOCUMENTS if doc.name == "testing.md")


@pytest.mark.subprocess
def test_the_testing_guides_tests_pass_under_pytest(tmp_path: Path) -> None:
    files = project_files(GUIDE_TO_TESTING)
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    [command] = [
        command.words
        for block in blocks(GUIDE_TO_TESTING)
        if block.language == "console"
        for command in console_commands(block)
        if command.words[0] == "pytest"
    ]
    assert command == ["pytest", "test_orders.py"]
    done = subprocess.run(
        [sys.executable, "-m", *command, "-p", "no:cacheprovider", "-o", "asyncio_mode=strict"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


# ------------------------------------------------------------------------------ the rules

FENCE = "```"


def run_page(workdir: Path, text: str) -> None:
    page = workdir / "page.md"
    page.write_text(text.replace("~~~", FENCE))
    DocumentRun(page, workdir).run()


SERVER = """~~~python
from mcpserve import Server

server = Server("page")


@server.tool
def count() -> int:
    return 3
~~~
"""


def test_a_block_runs_in_the_namespace_of_the_blocks_before_it_and_as_a_script(
    workdir: Path, stand_ins: list[Any]
) -> None:
    run_page(workdir, SERVER + '~~~python\nif __name__ == "__main__":\n    server.run()\n~~~\n')
    [served] = stand_ins
    assert served.name == "page"


def test_a_top_level_await_is_a_syntax_error_as_in_a_file(workdir: Path) -> None:
    with pytest.raises(SyntaxError, match="'await' outside function"):
        run_page(workdir, "~~~python\nimport asyncio\nawait asyncio.sleep(0)\n~~~\n")


def test_shown_output_must_be_what_the_server_answers(workdir: Path) -> None:
    directive = (
        '<!-- test-output: request("tools/call", {"name": "count"})["structuredContent"] -->'
    )
    run_page(workdir, SERVER + directive + "\n~~~json\n3\n~~~\n")
    with pytest.raises(AssertionError, match="is not what the server gives"):
        run_page(workdir, SERVER + directive + "\n~~~json\n4\n~~~\n")


def test_a_call_shape_must_match_the_signature(workdir: Path) -> None:
    shape = '~~~python signature\nServer(name, version="0.1.0", *, {rest})\n~~~\n'
    names = ["lifespan", *ServerOptions.__annotations__]  # then **options: ServerOptions
    run_page(workdir, shape.format(rest=", ".join(f"{name}=..." for name in names)))
    with pytest.raises(AssertionError, match="Server is documented as"):
        run_page(workdir, shape.format(rest=", ".join(f"{name}=..." for name in names[1:])))
    wrong_default = shape.format(rest=", ".join(f"{name}=..." for name in names))
    with pytest.raises(AssertionError, match=r"version defaults to '0\.1\.0', not '1\.0'"):
        run_page(workdir, wrong_default.replace('"0.1.0"', '"1.0"'))
