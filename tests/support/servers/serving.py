"""A server run the way the README runs one, ``server.run("http")`` with default options, to
check what serving picks by itself: the event loop, the HTTP parser, the access log.

``MCPSERVE_TEST_ACCESS_LOG=1`` passes ``access_log=True``, ``MCPSERVE_TEST_PROXY_HEADERS=1``
``proxy_headers=True``.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcpserve import Server

server = Server("serving")


@server.tool
async def stack() -> dict[str, str]:
    """The event loop class and the uvicorn HTTP protocol this process serves with."""
    loop = type(asyncio.get_running_loop())
    protocols = sorted(
        name.rsplit(".", 1)[1].removesuffix("_impl")
        for name in sys.modules
        if name.startswith("uvicorn.protocols.http.") and name.endswith("_impl")
    )
    return {"loop": f"{loop.__module__}.{loop.__qualname__}", "http": ",".join(protocols)}


@server.tool
def proxy_middleware() -> bool:
    """Whether uvicorn wrapped the app in its X-Forwarded-* middleware in this process."""
    import gc

    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    return any(isinstance(thing, ProxyHeadersMiddleware) for thing in gc.get_objects())


if __name__ == "__main__":
    server.run(
        "http",
        port=int(os.environ["MCPSERVE_TEST_HTTP_PORT"]),
        access_log=os.environ.get("MCPSERVE_TEST_ACCESS_LOG") == "1",
        proxy_headers=os.environ.get("MCPSERVE_TEST_PROXY_HEADERS") == "1",
    )
