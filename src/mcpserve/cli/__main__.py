"""``python -m mcpserve.cli``: the ``mcpserve`` command, for when the script is not on PATH."""

from . import main

if __name__ == "__main__":  # not when a spawned uvicorn reloader child imports it
    main()
