"""FastMCP's proxy of an upstream URL, as its documentation writes one: ``create_proxy``.

``fastmcp_proxy_app.py http PORT UPSTREAM_URL`` serves it over HTTP with the suite's uvicorn
settings (``_shared.serve_http``), stateless with JSON answers, as ``fastmcp_app.py`` does.
"""

from __future__ import annotations

import sys

from _shared import serve_http
from fastmcp.server import create_proxy

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "http":
        raise SystemExit("usage: fastmcp_proxy_app.py http PORT UPSTREAM_URL")
    proxy = create_proxy(sys.argv[3], name="bench-proxy")
    serve_http(proxy.http_app(stateless_http=True, json_response=True), int(sys.argv[2]))
