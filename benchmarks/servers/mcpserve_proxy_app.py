"""mcpserve's proxy of an upstream URL: ``Server.proxy(url)`` and nothing else.

``mcpserve_proxy_app.py http PORT UPSTREAM_URL`` serves it over HTTP with the suite's
uvicorn settings (``_shared.serve_http``), as ``mcpserve_app.py`` serves the suite's server.
"""

from __future__ import annotations

import sys

from _shared import serve_http

from mcpserve import Server

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "http":
        raise SystemExit("usage: mcpserve_proxy_app.py http PORT UPSTREAM_URL")
    proxy = Server.proxy(sys.argv[3], name="bench-proxy")
    serve_http(proxy.http_app(), int(sys.argv[2]))
