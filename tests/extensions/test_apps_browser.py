"""MCP Apps against the official host side, in headless Chromium.

The host page (``tests/support/ext_apps/host.html``) is a web host built on the official MCP Apps
SDK's ``AppBridge`` and the official TypeScript client, loaded unbundled as ES modules
through an import map (``tests/support/ext_apps_host.py`` installs the pinned packages). It
connects to the mcpserve server of ``tests/support/servers/apps.py`` over HTTP, in either era, finds
the tool's app in ``tools/list``, reads it, renders it in a sandboxed iframe under the CSP
the resource declares, and bridges it to the server. The view (``ext_apps/greeter.html``)
is built on the official ``App`` client, which it may load only from the origin its
``csp.resourceDomains`` names. What is asserted is what each side shows: the view's DOM
and what the host saw.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from browser import INSTALL_HINT, Browser, find_chromium
from ext_apps_host import apps_server, install

pytestmark = [pytest.mark.subprocess, pytest.mark.browser, pytest.mark.node]

VIEW = "document.querySelector('h1')?.textContent === 'Greeter'"
CLICK_AGAIN = (
    "document.querySelector('#again') ? (document.querySelector('#again').click(), true) : null"
)


@pytest.fixture(scope="module")
def installed() -> Path:
    return install()


@pytest.fixture(scope="module")
def base(installed: Path) -> Iterator[str]:
    with apps_server(installed) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if find_chromium() is None:
        pytest.fail(f"These tests drive headless Chromium, which is not installed: {INSTALL_HINT}",
                    pytrace=False)  # fmt: skip
    with Browser.launch() as launched:
        yield launched


def render(browser: Browser, base: str, era: str) -> dict[str, Any]:
    """The host page in ``era``, once the view shows the tool's result; the host's report."""
    browser.errors.clear()
    browser.navigate(f"{base}host.html?era={era}")
    state = browser.wait_for(
        "['rendering', 'failed'].includes(document.body.dataset.state)"
        " && document.body.dataset.state",
        what="the host to render the app",
    )
    report: dict[str, Any] = browser.evaluate("window.report")
    assert state == "rendering", report.get("error")
    browser.wait_for_frame(
        f"{VIEW} && ['ready', 'failed'].includes(document.body.dataset.state)"
        " && document.body.dataset.result === 'shown'",
        what="the view to show the result",
    )
    browser.wait_for("window.report.sizes.length > 0", what="the view to report its size")
    return browser.evaluate("window.report")  # type: ignore[no-any-return]


def view_texts(browser: Browser) -> dict[str, str]:
    shown: list[dict[str, str]] = browser.frame_evaluate(
        f"{VIEW} ? Object.fromEntries([...document.querySelectorAll('output')]"
        ".map((node) => [node.id, node.textContent])) : null"
    )
    found = [texts for texts in shown if texts]
    assert len(found) == 1, shown
    return found[0]


@pytest.mark.parametrize(("era", "wire"), [("auto", "modern"), ("legacy", "legacy")])
def test_the_official_host_renders_the_app_and_its_view_calls_a_tool_through_it(
    browser: Browser, base: str, era: str, wire: str
) -> None:
    report = render(browser, base, era)
    assert report["era"] == wire
    assert report["protocolVersion"] == ("2026-07-28" if wire == "modern" else "2025-11-25")
    texts = view_texts(browser)
    assert texts["input"] == "Ada"  # ui/notifications/tool-input
    assert texts["result"] == "Hello, Ada!"  # ui/notifications/tool-result
    assert texts["host"] == "ext-apps-test-host"  # the host's ui/initialize answer
    assert texts["shouted"] == "HELLO FROM THE VIEW!"  # tools/call: view -> host -> server
    assert texts["refused"] == "yes"  # the host read model_only's visibility
    assert report["appCalls"] == ["shout", "model_only"]
    assert browser.errors == []


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_the_server_declares_the_extension_and_links_tools_in_both_eras(
    browser: Browser, base: str, era: str
) -> None:
    report = render(browser, base, era)
    assert report["extensions"] == {"io.modelcontextprotocol/ui": {}}
    assert report["tools"]["greet"] == {
        "ui": {"resourceUri": "ui://greeter/view"},
        "ui/resourceUri": "ui://greeter/view",
    }
    assert report["tools"]["shout"]["ui"] == {
        "resourceUri": "ui://greeter/view",
        "visibility": ["app"],
    }
    assert report["tools"]["model_only"] == {"ui": {"visibility": ["model"]}}
    origin = base.rstrip("/")
    ui = {
        "csp": {"resourceDomains": [origin]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": True,
    }
    assert report["mimeType"] == "text/html;profile=mcp-app"
    assert report["ui"] == ui  # on the content item
    assert report["listed"]["_meta"] == {"ui": ui}  # and on the resources/list entry
    assert report["listed"]["mimeType"] == "text/html;profile=mcp-app"
    # The host's client declared the extension: the tool saw it, in either era.
    assert report["result"]["structuredContent"] == {"greeting": "Hello, Ada!", "apps": True}
    assert report["sizes"][-1]["height"] > 0


def test_the_example_view_written_without_the_sdk_works_in_the_official_host(
    browser: Browser, installed: Path
) -> None:
    with apps_server(installed, serve="examples/apps.py") as url:
        browser.errors.clear()
        args = quote(json.dumps({"dice": 4}))
        browser.navigate(f"{url}host.html?era=auto&tool=roll&args={args}")
        browser.wait_for("document.body.dataset.state === 'rendering'", what="the host to render")
        total = browser.wait_for_frame(
            "document.querySelectorAll('.die').length === 4"
            " && document.querySelector('#total').textContent",
            what="the dice",
        )
        report: dict[str, Any] = browser.evaluate("window.report")
        assert total == f"Total: {report['result']['structuredContent']['total']} (d6)"
        assert report["initialized"] is True
        clicked = browser.frame_evaluate(CLICK_AGAIN)
        assert True in clicked
        browser.wait_for("window.report.appCalls.includes('reroll')", what="the reroll")
        browser.wait_for("window.report.sizes.length > 0", what="the view's size")
        assert browser.errors == []
