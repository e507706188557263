"""What SIGTERM and SIGINT do to a process serving HTTP: the one place that decides it.

uvicorn installs its own handlers for both signals when it starts serving (its graceful
shutdown: stop accepting, wait for open connections, run the lifespan's end). The app
factory then chains ours in front of them (:func:`drain_on_exit_signals`), so that:

SIGTERM (an orchestrator or a deploy retiring this instance)
    1. At once, ``/readyz`` answers 503 (:attr:`ServingState.draining`): the balancer's next
       health checks take the instance out of rotation.
    2. For ``drain_seconds`` nothing else changes: requests still arrive, from balancers
       that have not noticed yet, and are accepted and answered.
    3. Then the instance stops (:attr:`ServingState.stopping`): every open
       ``subscriptions/listen`` ends with its final result and handshake-era GET streams
       end, each with an SSE ``retry`` hint so the client reconnects (through the
       balancer, to another instance); and uvicorn's own handler runs. uvicorn gives the
       requests still running ``shutdown_grace`` seconds (its ``timeout_graceful_shutdown``),
       cancels what is left, and runs the lifespan's end. Tasks running in the process get
       the same grace, counted from the stop (``Endpoint.stopping``): the lifespan's end
       waits for them until then, and fails those still running. Handshake-era sessions
       kept in Redis outlive the process: their clients carry on with the next instance.

SIGINT (Ctrl-C at a terminal)
    No balancer to wait for: steps 1 and 3 at once (``docs/decisions.md``, "SIGINT does not
    drain").

A second signal during the drain window ends the wait: the stop begins at once (and a
second Ctrl-C is uvicorn's force-quit, as it always was). Under ``--workers N`` uvicorn's
supervisor sends each worker SIGTERM, and each worker, having installed this handler in its
own app factory, drains the same way.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from types import FrameType
from typing import Any

from .endpoint import Endpoint, Servable, endpoint_of
from .health import ServingState

#: The default drain window: long enough for a balancer checking every second or two to
#: take the instance out, well within Kubernetes' default 30 s grace with ``shutdown_grace``.
DEFAULT_DRAIN_SECONDS = 5.0
#: The default time in-flight requests get once the drain is over, over HTTP.
DEFAULT_HTTP_SHUTDOWN_GRACE = 20.0


class Drain:
    """One process's response to its exit signals (see the module's docstring)."""

    def __init__(
        self,
        server: Endpoint | Servable,
        state: ServingState | None = None,
        drain_seconds: float = 0.0,
        shutdown_grace: float | None = 0.0,
    ) -> None:
        self.endpoint = endpoint_of(server)
        self.events = self.endpoint.events
        #: What the server's background work (tasks) may take once the drain is over.
        self.shutdown_grace = shutdown_grace
        self.state = state if state is not None else ServingState(started=True)
        self.drain_seconds = drain_seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        self._signalled = False

    def install(self) -> None:
        """Chain the handlers in front of those installed now for SIGINT and SIGTERM.

        Call it from the main thread, on the event loop, once uvicorn is serving (in an app
        factory); elsewhere signals cannot be handled, and nothing is installed."""
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None  # no loop to wait on: every signal stops at once
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(sig)

            def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
                self.on_signal(signum, frame, previous)

            signal.signal(sig, handler)

    def on_signal(self, signum: int, frame: FrameType | None, previous: Any) -> None:
        """A signal arrived (in the main thread, between two steps of the event loop)."""
        self.state.draining = True
        again = self._signalled
        self._signalled = True
        wait = self.drain_seconds if signum == signal.SIGTERM and not again else 0.0
        if wait <= 0 or self._loop is None or self._loop.is_closed():
            self.stop(signum, frame, previous)
            return
        # Timers are the loop's to set: a signal handler may run in the middle of its work.
        self._loop.call_soon_threadsafe(self._wait_then_stop, wait, signum, frame, previous)

    def _wait_then_stop(
        self, wait: float, signum: int, frame: FrameType | None, previous: Any
    ) -> None:
        assert self._loop is not None
        if not self._stopped:
            self._timer = self._loop.call_later(wait, self.stop, signum, frame, previous)

    def stop(self, signum: int, frame: FrameType | None, previous: Any) -> None:
        """End the streams that never end by themselves, then hand over to uvicorn's handler."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._stopped:
            self._stopped = True
            self.state.stopping = True
            self.endpoint.stopping(self.shutdown_grace)
            self.events.end_listens()
        if callable(previous):
            previous(signum, frame)


def drain_on_exit_signals(
    server: Endpoint | Servable,
    state: ServingState | None,
    drain_seconds: float,
    shutdown_grace: float | None = 0.0,
) -> Drain:
    """Install the drain (module docstring) for ``server``, whose HTTP app reports ``state``
    (``HTTPApp.state``) on ``/readyz``; the server's tasks get ``shutdown_grace`` (give
    uvicorn the same ``timeout_graceful_shutdown``). Returns it."""
    drain = Drain(server, state, drain_seconds, shutdown_grace)
    drain.install()
    return drain
