"""MCP Apps on the dev page, in headless Chromium: the page is the host.

The server is ``tests/support/servers/apps.py`` (served by ``serve_dev``, with the pinned official
App module the views load). Calling a tool that has an app makes the page read the app,
frame its sandbox (``/dev/sandbox.html``, under the CSP the app declared) and speak the
host side of the protocol itself (``dev/static/apps.js``): the view, built on the official
``App`` client, gets the call's input and result and calls tools through the page's own
connection, in either era. Asserted: the view's DOM (through ``Browser.frame_evaluate``),
what the page shows of the app, and what the sandbox lets a view do.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser import INSTALL_HINT, Browser, find_chromium
from ext_apps_host import apps_server, install, serving
from wire_helpers import free_port

pytestmark = [pytest.mark.subprocess, pytest.mark.browser, pytest.mark.node]

ERAS = ["modern", "handshake"]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    installed: Path = install()
    with apps_server(installed) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if find_chromium() is None:
        pytest.fail(f"These tests drive headless Chromium, which is not installed: {INSTALL_HINT}",
                    pytrace=False)  # fmt: skip
    with Browser.launch() as launched:
        yield launched


def open_page(browser: Browser, base: str, era: str) -> None:
    browser.errors.clear()
    browser.navigate(f"{base}?era={era}")
    browser.wait_for(
        "['ready', 'failed'].includes(document.body.dataset.status)", what="the page to connect"
    )
    assert browser.evaluate("document.body.dataset.status") == "ready", browser.text("#status")


def call(browser: Browser, tool: str, **arguments: str) -> None:
    browser.click(f'#catalog button.item[data-kind="tools"][data-name="{tool}"]')
    browser.wait_for_selector(f'#detail .item-detail[data-name="{tool}"]')
    for name, value in arguments.items():
        browser.fill(f"#call-form [name={name}]", value)
    browser.click("#call")


def in_view(browser: Browser, title: str, expression: str, what: str) -> object:
    """``expression``'s value in the view whose heading is ``title`` (any, when empty), once
    truthy."""
    heading = (
        f"document.querySelector('h1')?.textContent === {json.dumps(title)}" if title else "true"
    )
    return browser.wait_for_frame(f"{heading} && ({expression})", what=what)


@pytest.mark.parametrize("era", ERAS)
def test_calling_a_tool_with_an_app_runs_its_view_which_calls_tools_through_the_page(
    browser: Browser, base: str, era: str
) -> None:
    open_page(browser, base, era)
    assert browser.text('button.item[data-name="greet"] .item-tag') == "app"
    call(browser, "greet", name="Ada")
    shown = in_view(
        browser,
        "Greeter",
        "document.body.dataset.state === 'ready' && document.body.dataset.result === 'shown'"
        " && Object.fromEntries([...document.querySelectorAll('output')]"
        ".map((node) => [node.id, node.textContent]))",
        "the view to show the result",
    )
    assert shown == {
        "input": "Ada",
        "result": "Hello, Ada!",
        "host": "mcpserve-dev-page",
        "shouted": "HELLO FROM THE VIEW!",
        "refused": "yes",
    }
    browser.wait_for("document.querySelector('.app-view')?.dataset.state === 'ready'")
    events = browser.texts(".app-view .app-log li")
    handshake = [
        "view ui/initialize from greeter-view 1.0.0",
        "view ui/notifications/initialized",
        "host ui/notifications/tool-input",
        "host ui/notifications/tool-result",
    ]
    assert [event for event in events if event in handshake] == handshake  # in this order
    assert "call tools/call shout" in events
    assert "refused tools/call: The app may not call model_only: its visibility is model" in events
    # The call's own result, as the page shows any: the app declared to the tool in both eras.
    structured = json.loads(browser.text("#run-view pre.structured"))
    assert structured == {"greeting": "Hello, Ada!", "apps": True}
    # The view reported its size; the frame follows it.
    browser.wait_for("parseInt(document.querySelector('.app-frame').style.height) > 24")
    assert browser.evaluate(
        "document.querySelector('.app-frame-box').classList.contains('bordered')"
    )
    assert browser.errors == []


@pytest.mark.parametrize("era", ERAS)
def test_a_question_the_server_asks_during_a_views_call_is_answered_on_the_page(
    browser: Browser, base: str, era: str
) -> None:
    open_page(browser, base, era)
    call(browser, "open_guestbook")
    card = '.app-view .app-questions .input-request[data-method="elicitation/create"]'
    browser.wait_for_selector(card)
    assert browser.text(f"{card} .input-message") == "Who signs the guestbook?"
    browser.fill(f"{card} [name=name]", "Grace")
    browser.click(f"{card} button.accept")
    signed = in_view(
        browser,
        "Guestbook",
        "document.querySelector('#signed').textContent !== '(waiting)'"
        " && document.querySelector('#signed').textContent",
        "the signature",
    )
    assert signed == "Signed by Grace."
    assert browser.errors == []


def test_the_sandbox_isolates_the_view_and_enforces_the_policy_it_declared(
    browser: Browser, base: str
) -> None:
    open_page(browser, base, "modern")
    call(browser, "probe")
    seen = in_view(
        browser,
        "Probe",
        "document.querySelector('#fetch').textContent !== '(trying)'"
        " && [...document.querySelectorAll('p')].map((node) => node.textContent)",
        "the probe's findings",
    )
    assert seen == ["null", "isolated", "blocked"]  # opaque origin, no page access, no fetch
    assert [error for error in browser.errors if "connect-src 'none'" in error]
    assert not browser.evaluate(
        "document.querySelector('.app-frame-box').classList.contains('bordered')"
    )


def test_a_tool_linked_to_a_resource_that_is_not_an_app_says_so(
    browser: Browser, base: str
) -> None:
    open_page(browser, base, "modern")
    call(browser, "wrong")
    browser.wait_for("document.querySelector('.app-view')?.dataset.state === 'failed'")
    assert browser.text(".app-view .app-status") == (
        'Cannot show the app: ui://wrong/view is "text/html", not text/html;profile=mcp-app'
    )
    assert browser.evaluate("document.querySelector('.app-frame')") is None
    assert browser.errors == []


def test_calling_again_tears_the_previous_view_down_first(browser: Browser, base: str) -> None:
    open_page(browser, base, "modern")
    call(browser, "greet", name="Ada")
    browser.wait_for("document.querySelector('.app-view')?.dataset.state === 'ready'")
    first = browser.evaluate("document.querySelector('#run-view').dataset.method")
    browser.fill("#call-form [name=name]", "Alan")
    browser.click("#call")
    in_view(browser, "Greeter", "document.querySelector('#result').textContent === 'Hello, Alan!'",
            "the second result")  # fmt: skip
    assert first == "tools/call"
    assert browser.evaluate("document.querySelectorAll('.app-frame').length") == 1
    assert browser.errors == []


def test_mcpserve_dev_shows_the_example_app_whose_own_button_calls_through_the_page(
    browser: Browser,
) -> None:
    port = free_port()
    command = [sys.executable, "-m", "mcpserve.cli", "dev", "examples/apps.py", "--port", str(port)]
    with serving(command, port) as url:
        open_page(browser, url, "modern")
        call(browser, "roll", dice="3")
        first = in_view(browser, "", "document.querySelectorAll('.die').length === 3"
                        " && document.querySelector('#total').textContent", "the dice")  # fmt: skip
        browser.wait_for("document.querySelector('.app-view')?.dataset.state === 'ready'")
        assert str(first).startswith("Total: ")
        clicked = browser.frame_evaluate(
            "document.querySelector('#again')"
            " ? (document.querySelector('#again').click(), true) : null"
        )
        assert True in clicked
        browser.wait_for(
            "[...document.querySelectorAll('.app-log li')]"
            ".some((li) => li.textContent === 'call tools/call reroll')",
            what="the view's reroll to go through the page",
        )
        assert in_view(
            browser, "", "document.querySelectorAll('.die').length === 3", "the new dice"
        )
        assert browser.errors == []
