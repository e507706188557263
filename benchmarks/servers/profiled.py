"""Run a benchmark server under cProfile, profiling only between two signals.

    python profiled.py OUT.prof APP.py ARGS...

SIGUSR1 starts profiling the main thread (where the event loop runs), SIGUSR2 stops and
writes ``OUT.prof``. Start-up and warm-up stay out of the profile, and the server does not
have to exit cleanly for the profile to be written.
"""

from __future__ import annotations

import cProfile
import os
import runpy
import signal
import sys
from types import FrameType

profiler = cProfile.Profile()
output = sys.argv[1]


def start(signum: int, frame: FrameType | None) -> None:
    profiler.enable()


def stop(signum: int, frame: FrameType | None) -> None:
    profiler.disable()
    profiler.dump_stats(output + ".tmp")
    os.replace(output + ".tmp", output)  # appears whole


signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
app = sys.argv[2]
sys.argv = sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(app)))
runpy.run_path(app, run_name="__main__")
