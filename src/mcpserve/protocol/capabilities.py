"""Comparing what a request's client declared with what a feature needs.

Capabilities are nested objects: ``{"sampling": {"tools": {}}}`` needs ``sampling`` and,
inside it, ``tools``. An empty object needs only the key itself. One spec rule is special:
a client that declares ``elicitation: {}`` supports form mode (client/elicitation.mdx).
"""

from __future__ import annotations

from .._types import JSONDict


def missing_capabilities(required: JSONDict, declared: JSONDict) -> JSONDict:
    """The part of ``required`` that ``declared`` lacks; empty when nothing is missing."""
    missing: JSONDict = {}
    for key, needed in required.items():
        have = declared.get(key)
        if not isinstance(have, dict):
            missing[key] = needed
            continue
        if key == "elicitation" and not have:
            have = {"form": {}}
        if isinstance(needed, dict) and needed:
            inner = missing_capabilities(needed, have)
            if inner:
                missing[key] = inner
    return missing
