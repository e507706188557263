"""A team handbook served as skills: instructions an agent loads when a task calls for them.

Each folder of ``examples/skills/`` with a ``SKILL.md`` is a skill (``git-workflow``,
``release-notes``), served with its other files as ``skill://`` resources. One more skill,
``on-call``, is generated: its body is written on every read, so its entry says
``"resources": "dynamic"`` instead of listing digests. A client that implements the skills
extension lists them with ``skills/list`` and reads what it needs with ``resources/read``;
any other client sees the same files as ordinary resources.

Run it over stdio, or over HTTP::

    python examples/skills.py
    mcpserve run examples/skills.py --http --port 8000
"""

from __future__ import annotations

import datetime
from pathlib import Path

from mcpserve import CachePolicy, Server

ROTA = ["ada", "grace", "linus", "margaret"]

server = Server(
    "team-handbook",
    version="1.0.0",
    instructions="The team's conventions, as skills: list them with skills/list.",
    # The handbook is the same for everyone and changes only with a deploy.
    cache=CachePolicy(ttl_ms=600_000, scope="public"),
)
# Read and checked now: a skill that breaks a rule stops the server, naming the file.
server.add_skills(Path(__file__).parent / "skills")


@server.skill(cache=CachePolicy(ttl_ms=0, scope="public"))
def on_call() -> str:
    """Find out who is on call this week and how to reach them. Use when something is down."""
    week = datetime.date.today().isocalendar().week
    person = ROTA[week % len(ROTA)]
    return (
        f"# On call\n\nThis week (week {week}) {person} is on call: page them with "
        f"`/page {person}`. If they do not answer within 15 minutes, page the next person "
        f"on the rota: {', '.join(ROTA)}.\n"
    )


if __name__ == "__main__":
    server.run()
