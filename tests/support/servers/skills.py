"""A server with skills, for the skills extension's wire tests: every skill below the
directory ``MCPSERVE_TEST_SKILLS`` names, and one generated skill, ``clock``, whose body
counts its reads. Run as a script: stdio, or HTTP with ``MCPSERVE_TEST_HTTP_PORT``."""

from __future__ import annotations

import itertools
import os

from mcpserve import CachePolicy, Server

server = Server("skills-test", version="1.0.0", cache=CachePolicy(60_000, "public"))
server.add_skills(os.environ["MCPSERVE_TEST_SKILLS"])
_reads = itertools.count(1)


@server.skill
def clock() -> str:
    """Read the server's clock; generated on every read."""
    return f"# Clock\n\nRead number {next(_reads)}.\n"


if __name__ == "__main__":
    from _serve import serve  # beside this script

    serve(server)
