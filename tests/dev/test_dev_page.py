"""The dev page in a real browser: headless Chromium drives it against a real server.

The server below runs in a subprocess through :func:`mcpserve.dev.serve_dev` (run this file
as a script to try the page by hand), and the page talks to it over its real HTTP endpoint.
One browser (``tests/support/browser.py``) and one server serve the whole module; each test opens
the page afresh and fails if the page logged an uncaught exception or a console error
(a Content-Security-Policy violation included). What is asserted is what a user sees: the
DOM after clicking and typing, and, once, a screenshot decoded to be sure it is a real one.

Chromium comes from Debian's ``chromium`` package; without it these tests fail, saying so.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx2
import pytest
from pydantic import BaseModel, Field

from browser import INSTALL_HINT, Browser, BrowserError, find_chromium, png_size
from mcpserve import (
    Completion,
    Context,
    Header,
    Image,
    InputRequired,
    ResourceNotFound,
    Server,
    ToolError,
    ToolResult,
)
from wire_helpers import SUPPORT

pytestmark = [pytest.mark.subprocess, pytest.mark.browser]

HERE = Path(__file__).resolve()
STARTUP = 20.0


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour, so the page has an image a browser can decode."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    row = b"\0" + bytes(rgb) * width
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\0\0\0"
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


DOT = _png(8, 6, (200, 30, 30))

server = Server(
    "dev-page-test",
    version="3.1.4",
    instructions="A server for the dev page tests.",
    client_logging=True,
)


class Forecast(BaseModel):
    city: str
    celsius: float
    days: int


@server.tool(annotations={"readOnlyHint": True})
def forecast(
    city: Annotated[str, Field(description="Which city")],
    days: int = 1,
    units: Literal["metric", "imperial"] = "metric",
) -> Forecast:
    """The weather to come."""
    return Forecast(city=city, celsius=21.5 if units == "metric" else 70.7, days=days)


@server.tool
def snapshot(label: str) -> ToolResult:
    """A picture, with its size as structured content."""
    return ToolResult(
        content=[f"Snapshot {label}", Image(DOT)],
        structured={"label": label, "width": 8, "height": 6},
    )


class SignUp(BaseModel):
    name: str
    age: int
    plan: Literal["free", "pro"]
    newsletter: bool = False


@server.tool
async def sign_up(ctx: Context) -> str:
    """Sign someone up, asking who first."""
    answer = await ctx.elicit("Who is signing up?", SignUp)
    if not answer.accepted:
        return f"Nobody signed up ({answer.action})."
    data = answer.data
    news = "with" if data.newsletter else "without"
    return f"Signed up {data.name}, {data.age}, on {data.plan}, {news} newsletter."


SHIPPING_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "address": {"type": "object", "properties": {"street": {"type": "string"}}},
    },
    "required": ["name", "address"],
}


@server.tool
def ship(ctx: Context):  # type: ignore[no-untyped-def]
    """Ask for an address as a nested object, as a server outside the spec might (mcpserve's
    own ctx.elicit refuses such a form), until the answer holds one or is no answer."""
    answer = ctx.input_responses.get("where")
    content = (answer or {}).get("content") or {}
    accepted = answer is not None and answer["action"] == "accept"
    if answer is None or (accepted and not isinstance(content.get("address"), dict)):
        question = {"mode": "form", "message": "Ship it where?", "requestedSchema": SHIPPING_FORM}
        return InputRequired({"where": {"method": "elicitation/create", "params": question}})
    return f"answered {answer['action']}"


@server.tool
def explode() -> str:
    """Always fails."""
    raise ToolError("The reactor is on fire")


@server.tool
async def countdown(start: int, ctx: Context) -> str:
    """Count, reporting progress and logging."""
    for step in range(1, start + 1):
        await ctx.progress(step, total=start, message=f"step {step}")
    await ctx.log("info", f"counted to {start}")
    return "Liftoff"


@server.tool
async def consult(ctx: Context) -> str:
    """Ask the client's model, then for its roots."""
    reply = await ctx.sample("Name a colour", max_tokens=10)
    roots = await ctx.list_roots()
    return f"Model said {reply.text!r}; roots: {', '.join(root.uri for root in roots)}"


@server.tool
def regional(region: Annotated[str, Header("Region")]) -> str:
    """A tool whose argument is mirrored in a header."""
    return f"Served {region}"


class Proceed(BaseModel):
    go: bool


@server.tool(task="optional")
async def long_job(ctx: Context) -> str:
    """Work as a task for a client that takes one, asking once on the way."""
    await ctx.progress(1, 2, message="halfway there")
    answer = await ctx.elicit("Carry on?", Proceed)
    return "finished" if answer.accepted and answer.data.go else "stopped"


@server.tool(task="optional")
async def endless_job() -> str:
    """A task that runs until it is cancelled."""
    await asyncio.Event().wait()
    return "never"


@server.tool
def add_tool(name: str) -> str:
    """Register one more tool (its list changes)."""
    server.add_tool(lambda: "new", name=name)
    return f"Added {name}"


@server.tool
async def touch(note_id: str) -> str:
    """Announce that a note changed."""
    await server.notify_resource_updated(f"notes://{note_id}")
    return f"Touched notes://{note_id}"


@server.resource("notes://index", mime_type="text/plain")
def notes_index() -> str:
    """Every note."""
    return "first\nsecond"


@server.resource("notes://{note_id}", mime_type="text/plain")
def note(note_id: str) -> str:
    """One note."""
    if note_id == "missing":
        raise ResourceNotFound(f"notes://{note_id}")
    return f"Note {note_id}"


@server.prompt
def summarize(topic: str, style: str = "short") -> str:
    """Ask for a summary."""
    return f"Summarize {topic}, {style}."


STYLES = ["brief", "bullet points", "detailed", "short"]


@server.completion(prompt="summarize", argument="style")
def styles(value: str, arguments: dict[str, str]) -> Completion:
    """Styles starting with what is typed; for a topic of "poems", only "short"."""
    choices = ["short"] if arguments.get("topic") == "poems" else STYLES
    found = [style for style in choices if style.startswith(value)]
    return Completion(found[:1], total=len(found))


@server.completion(resource="notes://{note_id}", argument="note_id")
def note_ids(value: str) -> list[str]:
    return [n for n in ("n1", "n2", "other") if n.startswith(value)]


# --------------------------------------------------------------------------- fixtures


@dataclass
class Dev:
    page: str
    endpoint: str
    process: subprocess.Popen[str]
    output: list[str]
    reader: threading.Thread


def start_dev() -> Dev:
    """This file run as a script, serving on a free port; returns once it printed its URLs."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith("MCPSERVE_ALLOWED")
    }
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = str(SUPPORT)  # the script imports the test helpers, not beside it
    process = subprocess.Popen(
        [sys.executable, str(HERE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in process.stdout or ():
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = Dev("", "", process, [], reader)
    deadline = time.monotonic() + STARTUP
    while not any("Press Ctrl-C" in line for line in started.output):
        try:
            started.output.append(lines.get(timeout=0.1))
        except queue.Empty:
            if process.poll() is None and time.monotonic() < deadline:
                continue
            process.kill()
            stop(started)  # reaps it and closes its output
            output = "".join(started.output)
            raise AssertionError(
                f"serve_dev printed no URLs (exit {process.returncode}):\n{output}"
            ) from None
    text = "".join(started.output)
    page = re.search(r"dev page:\s+(\S+)", text)
    endpoint = re.search(r"MCP endpoint:\s+(\S+)", text)
    assert page, text
    assert endpoint, text
    started.page, started.endpoint = page.group(1), endpoint.group(1)
    return started


def stop(dev: Dev) -> int:
    """Ctrl-C, as a user stops it; killed if it has not exited in 10 s."""
    process = dev.process
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        raise AssertionError("serve_dev did not stop on SIGINT within 10 s") from None
    finally:
        dev.reader.join(timeout=5)  # it reads to the end of the output, then stops
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    started = start_dev()
    try:
        yield started
    finally:
        stop(started)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if find_chromium() is None:
        pytest.fail(
            f"The dev page tests drive headless Chromium, which is not installed: {INSTALL_HINT}",
            pytrace=False,
        )
    with Browser.launch() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser, dev: Dev) -> Iterator[Browser]:
    """The page, freshly loaded and connected; the test fails if the page logged errors."""
    open_page(browser, dev)
    yield browser
    assert browser.errors == [], browser.errors


def open_page(browser: Browser, dev: Dev, era: str = "modern") -> None:
    browser.errors.clear()
    browser.navigate(f"{dev.page}?era={era}")
    browser.wait_for(
        "document.body.dataset.status === 'ready' ? true"
        " : document.body.dataset.status === 'failed' ? 'failed' : false",
        what="the page to connect",
    )
    assert browser.evaluate("document.body.dataset.status") == "ready", browser.text("#status")


def pick(browser: Browser, kind: str, name: str) -> None:
    browser.click(f'#catalog button.item[data-kind="{kind}"][data-name="{name}"]')
    browser.wait_for_selector(f'#detail .item-detail[data-name="{name}"]')


def finished(browser: Browser) -> str:
    """Wait for the run to end (done, error or failed); its state."""
    state: str = browser.wait_for(
        "(() => { const run = document.querySelector('#run-view');"
        " return run && ['done', 'error', 'failed'].includes(run.dataset.state)"
        " ? run.dataset.state : false; })()",
        what="the call to finish",
    )
    return state


def waiting_for_input(browser: Browser) -> None:
    browser.wait_for(
        "document.querySelector('#run-view')?.dataset.state === 'input'",
        what="the server's question",
    )


def result_texts(browser: Browser) -> list[str]:
    """The text blocks of the run's result (not those of the questions it asked)."""
    return browser.texts("#run-view .run-result .block-text")


def endpoint_names(dev: Dev, method: str, key: str, field: str) -> list[str]:
    """What the endpoint itself lists, asked without the page."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}
    answer = httpx2.post(dev.endpoint, json=body, headers=headers, timeout=10).json()
    return [item[field] for item in answer["result"][key]]


# --------------------------------------------------------------------------- serving


def test_serve_dev_prints_both_urls_serves_page_and_endpoint_and_stops_on_ctrl_c() -> None:
    started = start_dev()
    try:
        assert started.page.endswith("/")
        assert started.endpoint == started.page + "mcp"
        assert started.output[0].startswith("mcpserve dev: dev-page-test 3.1.4")
        html = httpx2.get(started.page, timeout=10)
        assert html.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in html.headers["content-security-policy"]
        assert '<meta name="mcp-endpoint" content="/mcp">' in html.text
        script = httpx2.get(started.page + "dev/app.js", timeout=10)
        assert script.headers["content-type"].startswith("text/javascript")
        assert httpx2.post(started.page + "dev/app.js", timeout=10).status_code == 405
        assert "forecast" in endpoint_names(started, "tools/list", "tools", "name")
    finally:
        code = stop(started)
    assert code == 0, "".join(started.output)


# --------------------------------------------------------------------------- the 2026-07-28 wire


def test_the_lists_show_every_tool_resource_template_and_prompt(page: Browser, dev: Dev) -> None:
    shown = {
        kind: page.evaluate(
            f"[...document.querySelectorAll('#catalog button.item"
            f'[data-kind="{kind}"]\')].map((b) => b.dataset.name)'
        )
        for kind in ("tools", "resources", "templates", "prompts")
    }
    assert shown["tools"] == endpoint_names(dev, "tools/list", "tools", "name")
    assert {"forecast", "snapshot", "sign_up", "explode", "countdown"} <= set(shown["tools"])
    assert shown["resources"] == ["notes://index"]
    assert shown["templates"] == ["notes://{note_id}"]
    assert shown["prompts"] == ["summarize"]
    assert page.text("#tools-count") == str(len(shown["tools"]))
    assert page.text("#server-name") == "dev-page-test"
    assert page.text("#status").startswith("Connected: 2026-07-28")


def test_a_tool_form_has_a_field_per_property_and_a_call_shows_text_and_structured_content(
    page: Browser,
) -> None:
    pick(page, "tools", "forecast")
    names = page.evaluate("[...document.querySelectorAll('#call-form [name]')].map((n) => n.name)")
    assert names == ["city", "days", "units"]
    assert page.evaluate("document.querySelector('#call-form [name=days]').type") == "number"
    assert page.texts("#call-form [name=units] option") == ["(none)", "metric", "imperial"]
    assert (
        page.evaluate(
            "document.querySelector('#call-form [name=units]').selectedOptions[0].textContent"
        )
        == "metric"
    )  # the default
    assert page.text('#call-form .field[data-prop="city"] .field-hint') == "Which city"
    page.fill("#call-form [name=city]", "Oslo")
    page.fill("#call-form [name=days]", "3")
    page.choose("#call-form [name=units]", "imperial")
    page.click("#call")
    assert finished(page) == "done"
    structured = json.loads(page.text("#run-view pre.structured"))
    assert structured == {"city": "Oslo", "celsius": 70.7, "days": 3}
    assert json.loads(page.text("#run-view .run-result .block-text")) == structured


def test_a_required_field_left_empty_is_flagged_and_nothing_is_sent(page: Browser) -> None:
    pick(page, "tools", "forecast")
    sent = page.evaluate("document.querySelectorAll('#traffic-list li').length")
    page.click("#call")
    page.wait_for("document.querySelector('.field[data-prop=city]').classList.contains('invalid')")
    assert page.text('.field[data-prop="city"] .field-problem') == "Required"
    assert page.evaluate("document.querySelector('#run-view')") is None
    assert page.evaluate("document.querySelectorAll('#traffic-list li').length") == sent


def test_an_image_result_is_drawn_and_its_structured_content_shown(page: Browser) -> None:
    pick(page, "tools", "snapshot")
    page.fill("#call-form [name=label]", "red dot")
    page.click("#call")
    assert finished(page) == "done"
    page.wait_for("document.querySelector('#run-view .type-image img')?.complete")
    size = page.evaluate(
        "(() => { const img = document.querySelector('#run-view .type-image img');"
        " return [img.naturalWidth, img.naturalHeight]; })()"
    )
    assert size == [8, 6]  # the browser decoded the PNG the tool returned
    assert result_texts(page) == ["Snapshot red dot"]
    assert json.loads(page.text("#run-view pre.structured")) == {
        "label": "red dot",
        "width": 8,
        "height": 6,
    }


def test_an_elicitation_is_answered_in_a_form_built_from_its_requested_schema(
    page: Browser,
) -> None:
    pick(page, "tools", "sign_up")
    page.click("#call")
    waiting_for_input(page)
    card = '.input-request[data-method="elicitation/create"]'
    assert page.text(f"{card} .input-message") == "Who is signing up?"
    names = page.evaluate(f"[...document.querySelectorAll('{card} [name]')].map((n) => n.name)")
    assert names == ["name", "age", "plan", "newsletter"]
    assert page.texts(f"{card} [name=plan] option") == ["(choose one)", "free", "pro"]
    page.fill(f"{card} [name=name]", "Ann")
    page.click(f"{card} button.accept")  # age and plan are still missing: nothing is sent
    assert page.texts(f"{card} .field.invalid label") == ["age *", "plan *"]
    assert page.evaluate("document.querySelector('#run-view').dataset.state") == "input"
    page.fill(f"{card} [name=age]", "34")
    page.choose(f"{card} [name=plan]", "pro")
    page.check(f"{card} [name=newsletter]")
    page.click(f"{card} button.accept")
    assert finished(page) == "done"
    assert result_texts(page) == ["Signed up Ann, 34, on pro, with newsletter."]
    assert "after 2 rounds" in page.text("#run-view .run-status")


def test_a_form_with_an_object_field_is_refused_once_and_can_only_be_declined_or_cancelled(
    page: Browser,
) -> None:
    pick(page, "tools", "ship")
    page.click("#call")
    waiting_for_input(page)
    card = '.input-request[data-method="elicitation/create"]'
    assert page.text(f"{card} .form-refusal") == (
        "This form cannot be filled in: field 'address' is an object, and a form field is a "
        "string, a number, a boolean or a choice. Decline or cancel it."
    )
    assert page.evaluate(f"document.querySelector('{card} button.accept').disabled") is True
    assert page.evaluate(f"document.querySelectorAll('{card} [name]').length") == 0
    page.click(f"{card} button.cancel")
    assert finished(page) == "done"
    assert result_texts(page) == ["answered cancel"]
    assert page.evaluate("document.querySelectorAll('.input-request').length") == 1


def test_a_declined_elicitation_reaches_the_tool_as_declined(page: Browser) -> None:
    pick(page, "tools", "sign_up")
    page.click("#call")
    waiting_for_input(page)
    page.click('.input-request[data-method="elicitation/create"] button.decline')
    assert finished(page) == "done"
    assert result_texts(page) == ["Nobody signed up (decline)."]


def test_a_tool_error_is_shown_as_an_error(page: Browser) -> None:
    pick(page, "tools", "explode")
    page.click("#call")
    assert finished(page) == "error"
    assert page.text("#run-view .tool-error") == "The tool reported an error (isError: true)"
    assert result_texts(page) == ["The reactor is on fire"]


def test_a_json_rpc_error_is_shown_with_its_code_and_message(page: Browser) -> None:
    pick(page, "templates", "notes://{note_id}")
    page.fill("#call-form [name=note_id]", "missing")
    page.click("#call")
    assert finished(page) == "error"
    assert page.text("#run-view .rpc-error strong").startswith("JSON-RPC error -32")
    assert page.text("#run-view .rpc-error .error-message") == "Resource not found"


def test_progress_and_log_notifications_are_shown_as_they_arrive(page: Browser) -> None:
    pick(page, "tools", "countdown")
    page.fill("#call-form [name=start]", "3")
    page.click("#call")
    assert finished(page) == "done"
    assert page.evaluate("document.querySelector('#run-view progress').value") == 3
    assert page.evaluate("document.querySelector('#run-view progress').max") == 3
    assert page.text("#run-view .progress-text").strip() == "3 / 3 step 3"
    assert page.texts("#run-view .log-line") == ["[info] counted to 3"]


def test_sampling_and_roots_are_answered_by_hand(page: Browser) -> None:
    page.click("#add-root")
    page.fill("#roots-list li:last-child .root-uri", "file:///work/project")
    pick(page, "tools", "consult")
    page.click("#call")
    waiting_for_input(page)
    card = '.input-request[data-method="sampling/createMessage"]'
    assert "Name a colour" in page.text(f"{card} .sampled")
    page.fill(f"{card} [name=reply]", "teal")
    page.click(f"{card} button.send")
    page.wait_for_selector('.input-request[data-method="roots/list"]')
    roots = '.input-request[data-method="roots/list"]'
    waiting_for_input(page)
    assert page.evaluate(f"document.querySelector('{roots} .root-uri').value") == (
        "file:///work/project"
    )
    page.click(f"{roots} button.send")
    assert finished(page) == "done"
    assert result_texts(page) == ["Model said 'teal'; roots: file:///work/project"]


def test_an_argument_mirrored_in_a_header_reaches_the_tool_even_when_not_ascii(
    page: Browser,
) -> None:
    pick(page, "tools", "regional")
    page.fill("#call-form [name=region]", "Zürich")
    page.click("#call")
    assert finished(page) == "done"
    assert result_texts(page) == ["Served Zürich"]


def test_resources_and_templates_are_read_and_prompts_got(page: Browser) -> None:
    pick(page, "resources", "notes://index")
    page.click("#read")
    assert finished(page) == "done"
    assert result_texts(page) == ["first\nsecond"]
    pick(page, "templates", "notes://{note_id}")
    page.fill("#call-form [name=note_id]", "n 7")
    page.click("#call")
    assert finished(page) == "done"
    assert page.text("#run-view .resource-contents code.uri") == "notes://n%207"
    assert result_texts(page) == ["Note n 7"]
    pick(page, "prompts", "summarize")
    assert page.evaluate(
        "[...document.querySelectorAll('#call-form [name]')].map((n) => n.name)"
    ) == [
        "topic",
        "style",
    ]
    page.fill("#call-form [name=topic]", "tides")
    page.click("#call")
    assert finished(page) == "done"
    assert result_texts(page) == ["Summarize tides, short."]


def completions_shown(page: Browser, field: str) -> tuple[list[str], str]:
    """The values a field's datalist offers once the server answered, and the note beside."""
    page.wait_for(
        f"document.querySelector('#call-form [data-prop={field}]')?.dataset.completions"
        " !== undefined",
        what=f"completions for {field}",
    )
    values: list[str] = page.evaluate(
        f"[...document.querySelectorAll('#call-form [data-prop={field}] datalist option')]"
        ".map((o) => o.value)"
    )
    return values, page.text(f"#call-form [data-prop={field}] .field-completions")


def test_prompt_arguments_and_template_variables_complete_as_you_type(page: Browser) -> None:
    pick(page, "prompts", "summarize")
    page.fill("#call-form [name=style]", "b")
    assert completions_shown(page, "style") == (["brief"], "1 more")
    pick(page, "prompts", "summarize")  # afresh: the other arguments are the context
    page.fill("#call-form [name=topic]", "poems")
    page.fill("#call-form [name=style]", "")
    assert completions_shown(page, "style") == (["short"], "")
    pick(page, "templates", "notes://{note_id}")
    page.fill("#call-form [name=note_id]", "n")
    assert completions_shown(page, "note_id") == (["n1", "n2"], "")


def test_a_call_answered_with_a_task_is_followed_to_its_end(page: Browser) -> None:
    pick(page, "tools", "long_job")
    page.click("#call")
    waiting_for_input(page)
    assert page.evaluate("document.querySelector('#run-view').dataset.task").isalnum()
    assert page.text("#run-view .task-status") == "input_required: halfway there"
    card = '.input-request[data-method="elicitation/create"]'
    assert page.text(f"{card} .input-message") == "Carry on?"
    page.check(f"{card} [name=go]")
    page.click(f"{card} button.accept")
    assert finished(page) == "done"
    assert result_texts(page) == ["finished"]
    assert page.text("#run-view .task-status") == "completed: halfway there"


def test_cancelling_a_task_sends_tasks_cancel(page: Browser, dev: Dev) -> None:
    pick(page, "tools", "endless_job")
    page.click("#call")
    page.wait_for(
        "document.querySelector('#run-view .task-status')?.textContent === 'working'",
        what="the task to start",
    )
    task_id = page.evaluate("document.querySelector('#run-view').dataset.task")
    page.click("#run-view .cancel-run")
    assert page.evaluate("document.querySelector('#run-view').dataset.state") == "cancelled"
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
            "params": {"taskId": task_id, "_meta": meta}}  # fmt: skip
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get", "Mcp-Name": task_id}
    deadline = time.monotonic() + 10
    while True:  # the server ends the task once it has the page's tasks/cancel
        task = httpx2.post(dev.endpoint, json=body, headers=headers, timeout=10).json()["result"]
        if task["status"] == "cancelled" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert task["status"] == "cancelled"


def subscribe_and_listen(page: Browser) -> None:
    """Add notes://index to the subscriptions from its detail view, then Listen."""
    pick(page, "resources", "notes://index")
    page.click("#subscribe")
    assert page.evaluate("document.querySelector('#sub-uris').value") == "notes://index"
    page.click("#listen")
    page.wait_for(
        "document.querySelector('#sub-status').dataset.state === 'listening'",
        what="the subscription to start",
    )


def event_params(page: Browser, method: str) -> Any:
    """The params of the newest event of ``method`` in the subscriptions panel."""
    return json.loads(page.text(f'#sub-events [data-method="{method}"] pre.event-params'))


def call_tool(page: Browser, tool: str, **arguments: str) -> None:
    pick(page, "tools", tool)
    for name, value in arguments.items():
        page.fill(f"#call-form [name={name}]", value)
    page.click("#call")
    assert finished(page) == "done"


def test_the_subscriptions_panel_shows_changes_and_the_lists_follow(page: Browser) -> None:
    subscribe_and_listen(page)
    assert page.text("#sub-status").startswith("Listening (subscription")
    acknowledged = event_params(page, "notifications/subscriptions/acknowledged")
    assert acknowledged["notifications"]["resourceSubscriptions"] == ["notes://index"]
    assert acknowledged["notifications"]["toolsListChanged"] is True
    call_tool(page, "add_tool", name="fresh_tool")
    page.wait_for_selector('#sub-events [data-method="notifications/tools/list_changed"]')
    page.wait_for_selector('#catalog button.item[data-name="fresh_tool"]')
    call_tool(page, "touch", note_id="index")
    page.wait_for_selector('#sub-events [data-method="notifications/resources/updated"]')
    assert event_params(page, "notifications/resources/updated")["uri"] == "notes://index"
    page.click("#unlisten")
    page.wait_for("document.querySelector('#sub-status').textContent === 'Stopped.'")


def test_ctrl_c_ends_an_open_subscription_promptly_and_the_page_says_so(browser: Browser) -> None:
    own = start_dev()  # stopped here, so not the module's server
    try:
        open_page(browser, own)
        browser.click("#listen")
        browser.wait_for(
            "document.querySelector('#sub-status').dataset.state === 'listening'",
            what="the subscription to start",
        )
        own.process.send_signal(signal.SIGINT)
        assert own.process.wait(timeout=10) == 0
        browser.wait_for("document.querySelector('#sub-status').dataset.state === 'ended'")
        assert browser.text("#sub-status") == "The server ended the subscription."
    finally:
        stop(own)
    assert browser.errors == [], browser.errors


# --------------------------------------------------------------------------- the handshake era


def test_the_handshake_era_lists_tools_and_answers_an_elicitation_on_the_stream(
    browser: Browser, dev: Dev
) -> None:
    open_page(browser, dev, era="handshake")
    page = browser
    status = page.text("#status")
    assert re.fullmatch(r"Connected: 2025-11-25, session \S+", status), status
    shown = page.evaluate(
        "[...document.querySelectorAll('#catalog button.item"
        '[data-kind="tools"]\')].map((b) => b.dataset.name)'
    )
    assert shown == endpoint_names(dev, "tools/list", "tools", "name")
    pick(page, "tools", "forecast")
    page.fill("#call-form [name=city]", "Lima")
    page.click("#call")
    assert finished(page) == "done"
    assert json.loads(page.text("#run-view pre.structured"))["city"] == "Lima"
    pick(page, "tools", "sign_up")
    page.click("#call")
    waiting_for_input(page)
    card = '.input-request[data-method="elicitation/create"]'
    page.fill(f"{card} [name=name]", "Bo")
    page.fill(f"{card} [name=age]", "9")
    page.choose(f"{card} [name=plan]", "free")
    page.click(f"{card} button.accept")
    assert finished(page) == "done"
    assert result_texts(page) == ["Signed up Bo, 9, on free, without newsletter."]
    # Switching back ends the session and connects statelessly.
    page.choose("#era", "2026-07-28 (stateless, per-request _meta)")
    page.wait_for(
        "document.body.dataset.status === 'ready'"
        " && document.querySelector('#status').textContent.includes('stateless')"
    )
    assert any(
        line.endswith("DELETE end the session → 200")
        for line in page.texts("#traffic-list summary")
    )
    assert page.errors == [], page.errors


def test_the_handshake_era_subscriptions_use_the_session_stream(browser: Browser, dev: Dev) -> None:
    open_page(browser, dev, era="handshake")
    page = browser
    subscribe_and_listen(page)
    assert page.text("#sub-status").startswith("Listening on the session's GET stream")
    call_tool(page, "add_tool", name="legacy_tool")
    page.wait_for_selector('#sub-events [data-method="notifications/tools/list_changed"]')
    page.wait_for_selector('#catalog button.item[data-name="legacy_tool"]')
    call_tool(page, "touch", note_id="index")
    page.wait_for_selector('#sub-events [data-method="notifications/resources/updated"]')
    page.click("#unlisten")
    page.wait_for("document.querySelector('#sub-status').textContent === 'Stopped.'")
    sent = page.texts("#traffic-list summary")
    assert any("POST resources/subscribe → 200" in line for line in sent), sent
    assert any("POST resources/unsubscribe → 200" in line for line in sent), sent
    assert page.errors == [], page.errors


# --------------------------------------------------------------------------- screenshots


def test_a_screenshot_is_a_real_png_of_the_page_with_its_key_elements(
    page: Browser, tmp_path: Path
) -> None:
    pick(page, "tools", "snapshot")
    page.fill("#call-form [name=label]", "for the picture")
    page.click("#call")
    assert finished(page) == "done"
    shot = page.screenshot()
    (tmp_path / "dev-page.png").write_bytes(shot)  # kept by pytest for a look after a failure
    assert png_size(shot) == (1280, 900)
    assert len(shot) > 20_000, len(shot)  # a page of text and controls, not a blank frame
    visible = page.evaluate("""(() => {
        const shown = (selector) => {
            const node = document.querySelector(selector);
            if (!node) return false;
            const box = node.getBoundingClientRect();
            return box.width > 0 && box.height > 0
                && box.top < innerHeight && box.left < innerWidth;
        };
        return Object.fromEntries(["#era", "#status", "#tools-list", "#resources-list",
            "#templates-list", "#prompts-list", "#call-form", "#run-view .type-image img",
            "#subscriptions", "#roots", "#traffic"].map((s) => [s, shown(s)]));
    })()""")
    assert all(visible.values()), visible


def test_a_missing_chromium_fails_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setattr("shutil.which", lambda *args, **kwargs: None)
    with pytest.raises(BrowserError, match="apt-get install chromium"), Browser.launch():
        pass


if __name__ == "__main__":
    from mcpserve.dev import serve_dev

    serve_dev(server, port=int(os.environ.get("PORT", "0")))
