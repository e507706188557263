"""Instructions counted by valgrind's cachegrind: per request on each path, and at start-up.

Wall time on a shared machine moves by tens of percent between identical runs; the number
of instructions a process executes moves by about 0.1%. So every figure here is a count,
made with ``valgrind --tool=cachegrind --cache-sim=no`` (no cache simulation: only the
instruction count, ``I refs``, is read).

**Per request.** The same path is counted twice, serving ``low`` and then ``high``
exchanges of one scenario; the difference divided by the extra requests is what one request
costs. Interpreter start, imports, building the server, the first requests (which fill
caches) and shutdown are in both runs and cancel out.

* ``inprocess``: ``inprocess.py --count N``, the in-memory client calling the server in one
  process, both counted (that is the path);
* ``stdio``: ``servers/mcpserve_app.py stdio`` (``server.run()``) under valgrind. This
  process is the driver, outside valgrind (``stdio_load.StdioDriver``): one request at a
  time, each answer read and checked before the next request leaves, then stdin is closed
  and the server exits. One at a time because then every read of the server finds exactly
  one line: pipelined, the count would depend on how lines happen to batch;
* ``http``: the README's ``server.run("http")`` (``servers/mcpserve_readme_app.py``) under
  valgrind, sent the scenario's exact request over one keep-alive connection, one exchange
  at a time, each answer checked (``httpload.validate``); then SIGINT (a Ctrl-C), which
  uvicorn handles by stopping gracefully, so the process exits normally and valgrind writes
  its summary.

On the stdio and HTTP paths only the server process is counted. Over HTTP a little of the
count follows the clock rather than the requests: uvicorn wakes every 0.1 s (its ``Date``
header, its exit flag), about 220,000 instructions a second when idle. Under valgrind a
request takes milliseconds, so that is about 0.5% of an HTTP request's count, and it moves
with the machine's speed: why the HTTP count repeats to 0.2% where the others do to 0.1%.

**Start-up.** ``import mcpserve``: a process that imports it, minus a bare interpreter
(``-c pass``) in the same environment. Cold start: the stdio server started, answering one
``echo`` request and exiting when stdin closes, counted whole.

Two things make counts repeatable, and ``env`` must allow both (``ab.py``'s does):

* a fixed hash seed. With Python's default random one, each process lays out its dicts
  and sets differently, and the count of the same requests moves by about 2% between
  runs; with ``PYTHONHASHSEED`` fixed (``HASH_SEED`` unless ``env`` sets another), by about
  0.1% in process and over stdio and 0.2% over HTTP (there the server's event loop also
  wakes on a timer). Another seed gives another layout, and two versions of the code can
  compare differently under two seeds (by up to about 1%): ``ab.py`` counts with several;
* bytecode caches. Each path runs once uncounted first so that they exist, as on any
  deployed machine; otherwise the first counted run would also pay for compiling the
  source. That needs ``PYTHONDONTWRITEBYTECODE`` unset in ``env``.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import envs
from common import SCENARIOS, CheckFailed, Scenario
from httpload import validate
from proc import Server, free_port
from stdio_load import StdioDriver

HERE = Path(__file__).resolve().parent
HASH_SEED = "0"
#: Seconds any one step may take: under valgrind Python runs 30 to 50 times slower.
TIMEOUT = 900.0
_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")

Environment = dict[str, str]
#: Runs one path for ``count`` exchanges, under cachegrind when a report file is given.
Serve = Callable[[Environment, Scenario, Path, int, Path | None], None]


def require_valgrind() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("counting instructions needs valgrind (Debian: apt-get install valgrind)")


def _command(command: list[str], report: Path | None) -> list[str]:
    """``command``, under cachegrind with its summary in ``report`` when one is given."""
    if report is None:
        return command
    return [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        f"--log-file={report}",
        *command,
    ]


def _seeded(env: Environment) -> Environment:
    return {**env, "PYTHONHASHSEED": env.get("PYTHONHASHSEED", HASH_SEED)}


def _read_count(report: Path) -> int:
    found = _I_REFS.search(report.read_text()) if report.exists() else None
    if found is None:
        raise CheckFailed(f"valgrind wrote no instruction count; see {report}")
    return int(found.group(1).replace(",", ""))


def _run(command: list[str], env: Environment) -> None:
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        script = [Path(word).name for word in command if word.endswith(".py")]
        what = script[0] if script else " ".join(command[-2:])
        raise CheckFailed(f"{what} exited with {done.returncode}: {last}")


def _wait_exit(server: Server, log: Path) -> None:
    try:
        code = server.process.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"the server did not exit within {TIMEOUT:.0f} s; see {log}") from None
    if code != 0:
        raise CheckFailed(f"the server exited with {code}; see {log}")


def _serve_in_process(
    env: Environment, scenario: Scenario, logs: Path, count: int, report: Path | None
) -> None:
    script = [envs.python_of("mcpserve"), str(HERE / "inprocess.py"), "mcpserve"]
    _run(_command([*script, "--scenarios", scenario.key, "--count", str(count)], report), env)


def _serve_stdio(
    env: Environment, scenario: Scenario, logs: Path, count: int, report: Path | None
) -> None:
    log = logs / "stdio-server.log"
    command = _command(envs.server_command("mcpserve", "stdio"), report)
    server = Server(command, None, log=log, stdio=True, env=env)
    driver = StdioDriver(server)
    try:
        for _ in range(count):
            driver.exchange(scenario, timeout=TIMEOUT)
        assert server.process.stdin is not None
        server.process.stdin.close()  # EOF: the server finishes and exits
        _wait_exit(server, log)
    finally:
        driver.close()
        server.stop()


def _serve_http(
    env: Environment, scenario: Scenario, logs: Path, count: int, report: Path | None
) -> None:
    log = logs / "http-server.log"
    port = free_port()
    command = _command(envs.server_command("mcpserve-readme", "http", str(port)), report)
    server = Server(command, None, log=log, env=env)
    try:
        server.wait_http(port, timeout=TIMEOUT)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        try:
            for _ in range(count):
                validate(port, scenario, connection)
        finally:
            connection.close()  # before the stop: uvicorn waits for open connections
        os.killpg(server.pid, signal.SIGINT)  # Ctrl-C: uvicorn stops, and the process exits 0
        _wait_exit(server, log)
    finally:
        server.stop()


PATHS: dict[str, Serve] = {
    "inprocess": _serve_in_process,
    "stdio": _serve_stdio,
    "http": _serve_http,
}


def per_request(
    path: str, env: Environment, scenario: Scenario, low: int, high: int, logs: Path
) -> float:
    """Instructions of one ``scenario`` request on ``path``: ``high`` exchanges less ``low``."""
    serve, env = PATHS[path], _seeded(env)
    serve(env, scenario, logs, 1, None)  # uncounted: writes the bytecode caches
    counts = []
    for exchanges in (low, high):
        report = logs / f"{path}-{scenario.key}-{exchanges}.cachegrind"
        serve(env, scenario, logs, exchanges, report)
        counts.append(_read_count(report))
    requests = (high - low) * (2 if scenario.two_rounds else 1)
    return (counts[1] - counts[0]) / requests


def import_cost(env: Environment, logs: Path) -> float:
    """Instructions of ``import mcpserve``, over a bare interpreter's start."""
    env, counts = _seeded(env), []
    for label, code in (("import", "import mcpserve"), ("bare", "pass")):
        command = [envs.python_of("mcpserve"), "-c", code]
        _run(command, env)  # uncounted: writes the bytecode caches
        report = logs / f"startup-{label}.cachegrind"
        _run(_command(command, report), env)
        counts.append(_read_count(report))
    return float(counts[0] - counts[1])


def cold_start(env: Environment, logs: Path) -> float:
    """Instructions of the stdio server's whole life: start, one ``echo`` answer, exit."""
    echo, env = SCENARIOS["echo"], _seeded(env)
    _serve_stdio(env, echo, logs, 1, None)  # uncounted: writes the bytecode caches
    report = logs / "startup-coldstart.cachegrind"
    _serve_stdio(env, echo, logs, 1, report)
    return float(_read_count(report))
