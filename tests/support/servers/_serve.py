"""How the small test servers serve when run as scripts: HTTP on 127.0.0.1 when
``MCPSERVE_TEST_HTTP_PORT`` is set, stdio otherwise."""

from __future__ import annotations

import os

from mcpserve import Server


def serve(server: Server) -> None:
    port = os.environ.get("MCPSERVE_TEST_HTTP_PORT")
    if port:
        server.run("http", host="127.0.0.1", port=int(port), log_level="warning")
    else:
        server.run()
