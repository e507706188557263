"""Headless Chromium driven over the DevTools protocol, for the dev page's tests.

No new dependency: Debian's ``chromium`` is started with ``--remote-debugging-pipe``, which
speaks the DevTools protocol on two inherited file descriptors. Commands are written to its
fd 3 and replies and events read from its fd 4, each message one JSON text ended by a NUL
byte. A reader thread splits that stream into messages; a command waits for the reply
carrying its id. The page is reached through one target attached in "flat" mode, so each
page command names its session.

Everything is bounded: every command and every wait has a timeout and says what it waited
for when it runs out, and the browser (its whole process group: Chromium forks renderers)
is killed on the way out, whatever happened.

The page is driven the way a user would, through the DOM: :meth:`Browser.click` and
:meth:`Browser.fill` run a few lines of JavaScript that find an element by CSS selector and
click it, or set its value and fire ``input`` and ``change``, as typing does. Uncaught
exceptions and console errors are collected in :attr:`Browser.errors`.

Frames: Chromium runs a sandboxed or cross-origin iframe (an MCP App's view, say) as a
target of its own, which the page's session attaches to automatically. :meth:`frames`
lists every frame of the page and of those targets, and :meth:`frame_evaluate` and
:meth:`wait_for_frame` run an expression in each frame's own isolated world: the frame's
DOM, none of its scripts' variables. Errors in those targets count in :attr:`errors` too.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

TIMEOUT = 15.0
#: A frame may go away while it is asked something: a shorter wait keeps polls moving.
FRAME_TIMEOUT = 5.0
INSTALL_HINT = "apt-get install chromium"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class BrowserError(AssertionError):
    """The browser failed, refused a command, or a wait ran out."""


def find_chromium() -> str | None:
    """The Chromium executable: ``$CHROMIUM``, else ``chromium`` (or ``chromium-browser``)."""
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name) or shutil.which(name, path="/usr/bin:/usr/lib/chromium")
        if found:
            return found
    return None


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header (its IHDR chunk), checking it is a PNG."""
    if not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError(f"not a PNG: {data[:16]!r}")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


class Browser:
    """One headless Chromium with one page; use :meth:`launch`."""

    def __init__(self, process: subprocess.Popen[bytes], commands: int, replies: int) -> None:
        self.process = process
        self._commands = commands
        self._replies = replies
        self._next_id = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self._ready = threading.Condition()
        self._closed = False
        self.session: str | None = None
        #: Targets attached to the page (out-of-process iframes): session id -> target info.
        self.children: dict[str, dict[str, Any]] = {}
        self._prepared: set[str] = set()
        self._waiting_on: dict[int, str] = {}  # command id -> the child session it went to
        self._worlds: dict[tuple[str, str, str], int] = {}
        #: Uncaught exceptions and console errors seen in the page, as text.
        self.errors: list[str] = []
        self._reader = threading.Thread(target=self._read, name="cdp-reader", daemon=True)
        self._reader.start()

    @classmethod
    @contextlib.contextmanager
    def launch(cls, *, width: int = 1280, height: int = 900) -> Iterator[Browser]:
        executable = find_chromium()
        if executable is None:
            raise BrowserError(
                f"Chromium is not installed; the dev page tests need it: {INSTALL_HINT}"
            )
        profile = tempfile.mkdtemp(prefix="mcpserve-chromium-")
        # Ours: we write to `to_browser`, Chromium reads its end as fd 3, and so on.
        browser_reads, to_browser = os.pipe()
        from_browser, browser_writes = os.pipe()
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-sync",
            "--mute-audio",
            "--disable-features=Translate,MediaRouter,OptimizationHints",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        # bash puts our pipe ends on fds 3 and 4, then becomes Chromium (exec). (Not sh: dash
        # takes only one-digit fd numbers; and no preexec_fn: unsafe with threads running.)
        script = f'exec "$0" "$@" 3<&{browser_reads} 4>&{browser_writes}'
        log = open(os.path.join(profile, "chromium.log"), "wb")  # noqa: SIM115 (closed below)
        try:
            process = subprocess.Popen(
                [shutil.which("bash") or "/bin/bash", "-c", script, executable, *flags],
                pass_fds=(browser_reads, browser_writes),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # its own process group, so all of it can be killed
            )
        except OSError:
            log.close()
            raise
        finally:
            os.close(browser_reads)
            os.close(browser_writes)
        browser = cls(process, to_browser, from_browser)
        try:
            browser._open_page(width, height)
            yield browser
        except BrowserError as exc:
            log.flush()
            tail = _tail(os.path.join(profile, "chromium.log"))
            raise BrowserError(f"{exc}\n--- chromium log (last lines) ---\n{tail}") from None
        finally:
            browser.close()
            log.close()
            shutil.rmtree(profile, ignore_errors=True)

    # -- the protocol -------------------------------------------------------------------------

    def _read(self) -> None:
        buffer = b""
        try:
            while True:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                while b"\0" in buffer:
                    raw, buffer = buffer.split(b"\0", 1)
                    self._received(json.loads(raw))
        except OSError:
            pass
        finally:
            with self._ready:
                self._closed = True
                self._ready.notify_all()

    def _received(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._ready:
                self._answers[message["id"]] = message
                self._ready.notify_all()
            return
        method, params = message.get("method"), message.get("params", {})
        if method == "Target.attachedToTarget":
            with self._ready:
                self.children[params["sessionId"]] = params.get("targetInfo", {})
        elif method == "Target.detachedFromTarget":
            gone = params.get("sessionId", "")
            with self._ready:  # its commands will never be answered: fail them now
                self.children.pop(gone, None)
                for number, session in list(self._waiting_on.items()):
                    if session == gone:
                        self._answers[number] = {"id": number, "error": {"message": "detached"}}
                self._ready.notify_all()
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"uncaught: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            args = [arg.get("value", arg.get("description")) for arg in params.get("args", [])]
            self.errors.append("console.error: " + " ".join(map(str, args)))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            # Network entries are answers the page handles itself (an HTTP 400 it shows);
            # anything else at error level (a CSP violation, a script error) is a fault.
            if entry.get("level") == "error" and entry.get("source") != "network":
                self.errors.append(f"{entry.get('source')}: {entry.get('text')}")

    def command(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page: bool = True,
        timeout: float = TIMEOUT,
        session: str | None = None,
    ) -> dict[str, Any]:
        """Send one command (to the page's session unless ``page=False``, or to ``session``,
        an attached frame's); its result."""
        self._next_id += 1
        number = self._next_id
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
            with self._ready:
                if session != self.session and session not in self.children:
                    raise BrowserError(f"{method}: the frame's target is gone")
                self._waiting_on[number] = session
        elif page and self.session is not None:
            message["sessionId"] = self.session
        try:
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        except OSError as exc:
            raise BrowserError(f"Chromium is gone (sending {method}): {exc}") from None
        deadline = time.monotonic() + timeout
        with self._ready:
            while number not in self._answers:
                left = deadline - time.monotonic()
                if self._closed:
                    raise BrowserError(f"Chromium closed the pipe before answering {method}")
                if left <= 0:
                    raise BrowserError(f"No answer to {method} within {timeout} s")
                self._ready.wait(left)
            answer = self._answers.pop(number)
            self._waiting_on.pop(number, None)
        if "error" in answer:
            raise BrowserError(f"{method} failed: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def _open_page(self, width: int, height: int) -> None:
        target = self.command("Target.createTarget", {"url": "about:blank"}, page=False, timeout=30)
        attached = self.command(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, page=False
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.command(f"{domain}.enable")
        self.command("Target.setAutoAttach", _AUTO_ATTACH)
        self.command(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def close(self) -> None:
        """Kill the browser and everything it started; close our pipe ends."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        for fd in (self._commands, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._reader.join(timeout=5)

    # -- driving the page ---------------------------------------------------------------------

    def evaluate(self, expression: str, *, timeout: float = TIMEOUT) -> Any:
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.command(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"JavaScript failed: {text}\n  in: {expression[:300]}")
        return result.get("result", {}).get("value")

    def navigate(self, url: str, *, timeout: float = TIMEOUT) -> None:
        self.command("Page.navigate", {"url": url})
        self.wait_for(
            f"location.href === {json.dumps(url)} && document.readyState === 'complete'",
            timeout=timeout,
            what=f"{url} to load",
        )

    def wait_for(self, expression: str, *, timeout: float = TIMEOUT, what: str = "") -> Any:
        """Poll ``expression`` until it is truthy; its value. Fails naming ``what``.

        The value travels as JSON, so the expression must give a plain value: an element
        would arrive as ``{}``, never truthy (use :meth:`wait_for_selector`)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(
                f"(() => {{ const value = ({expression});"
                " if (value instanceof Node) throw new TypeError("
                "'wait_for needs a plain value, not an element');"
                " return value; })()"
            )
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(
                    f"Waited {timeout} s for {what or expression}; errors: {self.errors}"
                )
            time.sleep(0.05)

    def wait_for_selector(self, selector: str, *, timeout: float = TIMEOUT) -> None:
        self.wait_for(
            f"document.querySelector({json.dumps(selector)}) !== null",
            timeout=timeout,
            what=f"an element {selector}",
        )

    def click(self, selector: str) -> None:
        self.wait_for_selector(selector)
        self.evaluate(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            node.scrollIntoView({{block: "center"}});
            node.click();
        }})()""")

    def fill(self, selector: str, value: str) -> None:
        """Set an input's, textarea's or select's value and fire the events typing fires."""
        self.wait_for_selector(selector)
        self.evaluate(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            node.focus();
            node.value = {json.dumps(value)};
            node.dispatchEvent(new Event("input", {{bubbles: true}}));
            node.dispatchEvent(new Event("change", {{bubbles: true}}));
        }})()""")

    def check(self, selector: str, on: bool = True) -> None:
        """Tick (or untick) a checkbox, firing ``change`` as a click does."""
        self.wait_for_selector(selector)
        self.evaluate(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            node.checked = {json.dumps(on)};
            node.dispatchEvent(new Event("change", {{bubbles: true}}));
        }})()""")

    def choose(self, selector: str, label: str) -> None:
        """Pick the option of a ``<select>`` whose text is ``label``."""
        self.wait_for_selector(selector)
        found = self.evaluate(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            const option = [...node.options].find((o) => o.textContent === {json.dumps(label)});
            if (!option) return false;
            node.value = option.value;
            node.dispatchEvent(new Event("change", {{bubbles: true}}));
            return true;
        }})()""")
        if not found:
            raise BrowserError(f"{selector} has no option {label!r}")

    def text(self, selector: str) -> str:
        self.wait_for_selector(selector)
        value = self.evaluate(f"document.querySelector({json.dumps(selector)}).textContent")
        return str(value)

    def texts(self, selector: str) -> list[str]:
        found = self.evaluate(
            f"[...document.querySelectorAll({json.dumps(selector)})]"
            ".map((node) => node.textContent)"
        )
        return [str(item) for item in found]

    def frames(self) -> list[tuple[str, str, str]]:
        """Every frame: ``(session, frame id, URL)``, the page's own first."""
        with self._ready:  # the page's own target is announced too: it is not a child
            children = [child for child in self.children if child != self.session]
        for child in children:
            if child not in self._prepared:  # its errors count; the frames it nests attach
                self._prepared.add(child)
                for method, params in (("Runtime.enable", {}), ("Log.enable", {}),
                                       ("Target.setAutoAttach", _AUTO_ATTACH)):  # fmt: skip
                    with contextlib.suppress(BrowserError):  # it may be gone already
                        self.command(method, params, session=child)
        found: list[tuple[str, str, str]] = []
        for session in [self.session, *children]:
            if session is None:
                continue
            try:
                tree = self.command("Page.getFrameTree", session=session,
                                    timeout=FRAME_TIMEOUT)["frameTree"]  # fmt: skip
            except BrowserError:
                continue  # detached meanwhile
            pending = [tree]
            while pending:
                node = pending.pop()
                frame = node["frame"]
                found.append((session, frame["id"], frame.get("url", "")))
                pending.extend(node.get("childFrames", []))
        return found

    def frame_evaluate(self, expression: str) -> list[Any]:
        """``expression``'s value in every frame (in an isolated world: the frame's DOM,
        not its scripts' globals), for the frames where it ran."""
        values = []
        for session, frame, _url in self.frames():
            key = (session, frame, "")
            for _attempt in range(2):
                try:
                    if key not in self._worlds:
                        world = self.command("Page.createIsolatedWorld",
                                             {"frameId": frame, "worldName": "mcpserve-test"},
                                             session=session, timeout=FRAME_TIMEOUT)  # fmt: skip
                        self._worlds[key] = world["executionContextId"]
                    result = self.command(
                        "Runtime.evaluate",
                        {"expression": expression, "contextId": self._worlds[key],
                         "returnByValue": True, "awaitPromise": True},
                        session=session,
                        timeout=FRAME_TIMEOUT,
                    )  # fmt: skip
                except BrowserError:
                    self._worlds.pop(key, None)  # the frame navigated: a new world
                    continue
                if "exceptionDetails" not in result:
                    values.append(result.get("result", {}).get("value"))
                break
        return values

    def wait_for_frame(self, expression: str, *, timeout: float = TIMEOUT, what: str = "") -> Any:
        """Poll every frame until ``expression`` is truthy in one; that value."""
        deadline = time.monotonic() + timeout
        while True:
            for value in self.frame_evaluate(expression):
                if value:
                    return value
            if time.monotonic() > deadline:
                raise BrowserError(
                    f"Waited {timeout} s for {what or expression} in a frame; "
                    f"frames: {[url for _, _, url in self.frames()]}; errors: {self.errors}"
                )
            time.sleep(0.05)

    def screenshot(self) -> bytes:
        """A PNG of the viewport."""
        result = self.command("Page.captureScreenshot", {"format": "png"}, timeout=30)
        return base64.b64decode(result["data"])


_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True}


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
