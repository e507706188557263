"""The mcpserve benchmark server served the way the README says: ``server.run("http")``.

The same server definition as ``mcpserve_app.py`` (imported, not copied), served with no
option but the address, in a venv that has what ``pip install "mcpserve[http]"`` gives.
Whatever ``server.run`` picks (HTTP parser, event loop, access log) is what is measured, so
the figure shows what a user following the README gets next to the hand-tuned uvicorn of
``mcpserve_app.py``. HTTP only: over stdio the README path (``server.run()``) is exactly
what ``mcpserve_app.py stdio`` already runs.
"""

from __future__ import annotations

from _shared import parse_cli
from mcpserve_app import server

if __name__ == "__main__":
    transport, port, _sse = parse_cli()  # SSE is chosen per request by mcpserve itself
    if transport != "http":
        raise SystemExit("mcpserve_readme_app.py serves HTTP only; stdio is mcpserve_app.py's")
    server.run("http", host="127.0.0.1", port=port)
