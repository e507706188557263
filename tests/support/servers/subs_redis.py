"""A server for the Redis subscription-bus tests: HTTP on 127.0.0.1, bus from ``MCPSERVE_BUS``.

``python tests/support/servers/subs_redis.py --port N`` with ``MCPSERVE_BUS=redis://127.0.0.1:P/0``.
Several of these processes on one Redis form one logical MCP server: a change made in one
reaches listeners in all. Logs (including the bus's outage warnings) go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys

from mcpserve import Server

server = Server("subs-redis", version="3.0.0")


def _extra_tool() -> str:
    return "extra"


@server.tool
def change(name: str) -> str:
    """Add a tool named ``name``: ``notifications/tools/list_changed`` everywhere."""
    server.add_tool(_extra_tool, name=name)
    return f"added {name}"


@server.tool
async def touch(uri: str) -> str:
    """Publish ``notifications/resources/updated`` for ``uri`` on the bus."""
    await server.notify_resource_updated(uri)
    return f"touched {uri}"


@server.tool
def bus_status() -> dict[str, object]:
    """The bus type, whether it is connected to Redis, and how many outages it saw."""
    bus = server.subscriptions.bus
    connected = getattr(bus, "connected", None)
    return {
        "bus": type(bus).__name__,
        "connected": bool(connected is not None and connected.is_set()),
        "outages": getattr(bus, "outages", 0),
    }


@server.tool
def listeners() -> int:
    """How many ``subscriptions/listen`` streams are open in this process."""
    return len(server.subscriptions.listeners)


@server.resource("file:///shared/doc.txt", mime_type="text/plain")
def doc() -> str:
    """A document every process serves."""
    return "shared"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    server.run("http", host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
