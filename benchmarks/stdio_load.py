"""stdio load: newline-delimited JSON-RPC straight into a server's pipes.

Two drivers share the bookkeeping:

* **pipelined**: keep ``window`` requests in flight (writes are batched; the server may
  answer out of order, answers are matched by id);
* **sequential**: one request at a time, the next leaves only after the previous answer.

Every answer is read: an error answer, an answer to an unknown id, a round 1 that does not
ask, or a missing progress notification fails the run instead of being counted. Answers
longer than ``BIG_LINE`` (the 1 MiB resource, the 50-tool list) are fully parsed and
checked once per window, then only their id is read, so the driver keeps up.
``input_required`` scenarios answer each round-1 result with its round-2 retry at once.
"""

from __future__ import annotations

import json
import os
import selectors
import time
from dataclasses import dataclass, field
from typing import Any

from common import CheckFailed, JSONDict, Scenario, check_exchange, is_progress
from proc import Server

try:
    import orjson

    loads: Any = orjson.loads
except ImportError:  # the driver runs under any Python; orjson only makes it cheaper
    loads = json.loads

BIG_LINE = 4096
ANSWER_TIMEOUT = 60.0


def _dumps(message: JSONDict) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _percentile(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * percent / 100))] if ordered else 0.0


def _id_of_big(raw: bytes) -> int:
    """The id of a huge answer line without parsing the megabyte around it."""
    for part in (raw[:256], raw[-256:]):
        at = part.find(b'"id":')
        if at >= 0:
            digits = part[at + 5 :].lstrip()
            end = 0
            while end < len(digits) and digits[end : end + 1].isdigit():
                end += 1
            return int(digits[:end])
    raise CheckFailed("an answer line without an id")


@dataclass
class _Window:
    """Bookkeeping of one measured window."""

    scenario: Scenario
    pending: dict[int, tuple[int, float]] = field(default_factory=dict)  # id -> (round, sent)
    out: bytearray = field(default_factory=bytearray)
    answers: int = 0
    completed: int = 0
    notes: int = 0
    big_checked: bool = False
    checked: bool = False
    latencies: list[float] = field(default_factory=list)


class StdioDriver:
    """Drives one stdio server process; ids keep growing across windows."""

    def __init__(self, server: Server) -> None:
        assert server.process.stdin is not None
        assert server.process.stdout is not None
        self.server = server
        self.stdin = server.process.stdin.fileno()
        self.stdout = server.process.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.next_id = 1
        self.parts: list[bytes] = []

    def close(self) -> None:
        self.selector.close()

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _line(self, scenario: Scenario, request_id: int, params: JSONDict | None = None) -> bytes:
        if params is None:
            head = f'{{"jsonrpc":"2.0","id":{request_id},'.encode()
            return head + scenario.body(0)[len(b'{"jsonrpc":"2.0","id":0,') :] + b"\n"
        message = {"jsonrpc": "2.0", "id": request_id, "method": scenario.method}
        return _dumps({**message, "params": params})

    def _read_lines(self) -> list[bytes]:
        """Complete lines from one read of stdout (blocking or not, as the fd is set)."""
        try:
            chunk = os.read(self.stdout, 1 << 20)
        except BlockingIOError:
            return []
        if not chunk:
            raise CheckFailed(f"server closed stdout (exit code {self.server.process.poll()})")
        if b"\n" not in chunk:
            self.parts.append(chunk)
            return []
        self.parts.append(chunk)
        *lines, rest = b"".join(self.parts).split(b"\n")
        self.parts = [rest] if rest else []
        return [line for line in lines if line.strip()]

    # -- one checked exchange, outside any measurement -----------------------------------

    def exchange(self, scenario: Scenario, timeout: float = 30.0) -> None:
        """One checked request (both rounds for input_required)."""
        result = check_exchange(scenario, self._one(self._line(scenario, self._id()), timeout))
        if scenario.two_rounds:
            line = self._line(scenario, self._id(), scenario.retry_params(result))
            check_exchange(scenario.second_round(), self._one(line, timeout))

    def _one(self, line: bytes, timeout: float) -> list[JSONDict]:
        os.set_blocking(self.stdin, True)
        os.set_blocking(self.stdout, False)
        os.write(self.stdin, line)
        messages: list[JSONDict] = []
        deadline = time.monotonic() + timeout
        self.selector.register(self.stdout, selectors.EVENT_READ)
        try:
            while time.monotonic() < deadline:
                if not self.selector.select(max(0.0, deadline - time.monotonic())):
                    continue
                for raw in self._read_lines():
                    messages.append(loads(raw))
                    if "id" in messages[-1] and "method" not in messages[-1]:
                        return messages
        finally:
            self.selector.unregister(self.stdout)
        raise CheckFailed(f"no answer within {timeout} s; got {messages[:3]}")

    # -- measured windows ------------------------------------------------------------------

    def run(self, scenario: Scenario, duration: float, window: int) -> dict[str, Any]:
        """Send for ``duration`` seconds with ``window`` in flight (1 = sequential), then
        drain every answer. Requests/s counts both rounds of an input_required exchange."""
        state = _Window(scenario)
        cpu_before = self.server.cpu()
        started = time.monotonic()
        if window == 1:
            self._sequential(state, started + duration)
        else:
            self._pipelined(state, started + duration, window)
        wall = time.monotonic() - started
        cpu = self.server.cpu() - cpu_before
        if scenario.progress and state.notes != 10 * state.answers:
            raise CheckFailed(f"{state.notes} progress notifications for {state.answers} answers")
        return {
            "requests": state.answers,
            "rps": state.answers / wall,
            "cpu_us": cpu * 1e6 / state.answers,
            "cpu_util": cpu / wall,
            "round_trips": state.completed if scenario.two_rounds else None,
            "p50_ms": _percentile(state.latencies, 50) * 1000,
            "p99_ms": _percentile(state.latencies, 99) * 1000,
        }

    def _sequential(self, state: _Window, stop: float) -> None:
        os.set_blocking(self.stdin, True)
        os.set_blocking(self.stdout, True)  # one blocking read per answer: the leanest loop
        while time.monotonic() < stop or state.pending:
            if not state.pending:
                request_id = self._id()
                state.pending[request_id] = (1, time.monotonic())
                state.out += self._line(state.scenario, request_id)
            if state.out:
                os.write(self.stdin, state.out)
                state.out.clear()
            for raw in self._read_lines():
                self._handle(state, raw)

    def _pipelined(self, state: _Window, stop: float, window: int) -> None:
        os.set_blocking(self.stdin, False)
        os.set_blocking(self.stdout, False)
        deadline = stop + ANSWER_TIMEOUT
        while True:
            now = time.monotonic()
            sending = now < stop
            if not sending and not state.pending:
                return
            if now > deadline:
                raise CheckFailed(f"{len(state.pending)} answers still missing after the window")
            while sending and len(state.pending) < window:
                request_id = self._id()
                state.pending[request_id] = (1, now)
                state.out += self._line(state.scenario, request_id)
            events = {self.stdout: selectors.EVENT_READ}
            if state.out:
                events[self.stdin] = selectors.EVENT_WRITE
            for fd, mask in events.items():
                self.selector.register(fd, mask)
            try:
                ready = self.selector.select(1.0)
            finally:
                for fd in events:
                    self.selector.unregister(fd)
            for key, _ in ready:
                if key.fd == self.stdin:
                    del state.out[: os.write(self.stdin, state.out)]
                else:
                    for raw in self._read_lines():
                        self._handle(state, raw)

    def _handle(self, state: _Window, raw: bytes) -> None:
        """Account for one line from the server."""
        if len(raw) > BIG_LINE and state.big_checked:
            message: JSONDict = {"id": _id_of_big(raw), "result": None}
        else:
            message = loads(raw)
            state.big_checked = state.big_checked or len(raw) > BIG_LINE
        if "method" in message:
            state.notes += is_progress(message)  # other notifications (logs) are not ours
            return
        entry = state.pending.pop(message.get("id"), None)  # type: ignore[arg-type]
        if entry is None:
            raise CheckFailed(f"answer to an unknown id: {str(message)[:300]}")
        state.answers += 1
        state.latencies.append(time.monotonic() - entry[1])
        if "error" in message:
            raise CheckFailed(f"error answer under load: {str(message)[:300]}")
        scenario = state.scenario
        if scenario.two_rounds and entry[0] == 1:
            result = message["result"]
            if result.get("resultType") != "input_required":
                raise CheckFailed(f"round 1 did not ask: {str(message)[:300]}")
            retry_id = self._id()
            state.pending[retry_id] = (2, time.monotonic())
            state.out += self._line(scenario, retry_id, scenario.retry_params(result))
            return
        if not state.checked and message["result"] is not None:
            (scenario.second_round() if scenario.two_rounds else scenario).check(message["result"])
            state.checked = True
        state.completed += 1
