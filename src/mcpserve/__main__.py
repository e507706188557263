"""``python -m mcpserve``: the ``mcpserve`` command, for when the script is not on PATH."""

if __name__ == "__main__":  # not when a spawned uvicorn reloader child imports it
    from .cli import main

    main()
