"""Tool search: a large catalogue behind two tools, for clients with a small context.

With ``Server(tool_search=True)``, ``tools/list`` lists two tools instead of the catalogue:

* ``search_tools(query, limit=10)`` ranks the tools this caller may use by BM25 over their
  names, titles, descriptions and parameters (names count three times, titles twice), and
  returns their list entries best first (``structuredContent.tools``);
* ``call_tool(name, arguments)`` calls one of them. It is not a tool of its own: the
  request is resolved to the named tool when it is prepared, so the scopes it needs, its
  argument validation, the ``tools/call`` middleware (which finds the named tool on
  ``ctx.request.target``), the visibility rule and its answer are exactly those of a
  direct ``tools/call`` of it. A name the caller may not use is -32602 "Unknown tool".

The index is built once per registry version (so once, until something changes) from the
tools every caller may see (tags and switches, :mod:`.entries.catalogue`); what only some
callers may see (scopes, the visibility rule) is filtered per request, after ranking.
The ranking is our own BM25 (``docs/decisions.md``, "Tool search ranks with its own
BM25"): a few dozen lines of the standard library, and an index of 1,000 tools answers a query in
under a millisecond at the median (``docs/performance.md``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import Field

from .._types import JSONDict
from .context.context import Context
from .entries.kinds import ToolEntry
from .entries.tools import Tool
from .registry import Registry

SEARCH_TOOLS = "search_tools"
CALL_TOOL = "call_tool"
#: How much more a word counts in a tool's name and title than in its description.
NAME_WEIGHT, TITLE_WEIGHT = 3, 2
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(text: str) -> list[str]:
    """Lower-case words of ``text``; ``getUserID`` and ``get_user_id`` give the same."""
    return [word.lower() for word in _WORDS.findall(text)]


def document(wire: JSONDict) -> Counter[str]:
    """The weighted words a tool is found by."""
    counts: Counter[str] = Counter()
    for _ in range(NAME_WEIGHT):
        counts.update(words(wire.get("name", "")))
    for _ in range(TITLE_WEIGHT):
        counts.update(words(wire.get("title") or ""))
    counts.update(words(wire.get("description") or ""))
    properties = wire.get("inputSchema", {}).get("properties", {})
    if isinstance(properties, dict):
        for name, schema in properties.items():
            counts.update(words(name))
            if isinstance(schema, dict) and isinstance(schema.get("description"), str):
                counts.update(words(schema["description"]))
    return counts


class BM25:
    """Okapi BM25 over a fixed set of documents (k1 = 1.2, b = 0.75)."""

    K1, B = 1.2, 0.75

    def __init__(self, documents: Iterable[tuple[str, Counter[str]]]) -> None:
        self.keys: list[str] = []
        self.lengths: list[int] = []
        #: word -> [(document index, count)], so a query reads only its words' postings.
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for key, counts in documents:
            index = len(self.keys)
            self.keys.append(key)
            self.lengths.append(sum(counts.values()))
            for word, count in counts.items():
                self.postings.setdefault(word, []).append((index, count))
        average = sum(self.lengths) / len(self.lengths) if self.lengths else 0.0
        #: Per document, BM25's length normalisation, computed once.
        self.norms = [self.K1 * (1 - self.B + self.B * n / average) for n in self.lengths]

    def ranked(self, query: str) -> list[str]:
        """The keys of the documents that share a word with ``query``, best first (ties in
        registration order)."""
        scores: dict[int, float] = {}
        total = len(self.keys)
        for word in set(words(query)):
            postings = self.postings.get(word)
            if not postings:
                continue
            idf = math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
            weight = idf * (self.K1 + 1)
            norms = self.norms
            for index, count in postings:
                scores[index] = scores.get(index, 0.0) + weight * count / (count + norms[index])
        best = sorted(scores, key=lambda index: (-scores[index], index))
        return [self.keys[index] for index in best]


class ToolSearch:
    """The two tools of a searched catalogue, and the index behind ``search_tools``."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._index: tuple[int, BM25] = (-1, BM25(()))
        self.search_tool = Tool(
            self.search,
            pool=_no_pool,
            name=SEARCH_TOOLS,
            description=(
                "Find the tools for a task: give a few words of what you want to do; the "
                "best matching tools come first, with their input schemas. Then run one "
                f"with {CALL_TOOL}."
            ),
        )
        self.call_tool = Tool(
            _call_tool,
            pool=_no_pool,
            name=CALL_TOOL,
            description=(
                f"Run a tool found with {SEARCH_TOOLS}: its name, and its arguments as its "
                "input schema says."
            ),
        )

    def entries(self) -> list[JSONDict]:
        return [self.search_tool.wire, self.call_tool.wire]

    def find(self, params: JSONDict) -> ToolEntry | None:
        """What a ``tools/call`` runs: the search, the tool ``call_tool`` names, or a tool
        called by its own name."""
        name = params.get("name")
        if name == SEARCH_TOOLS:
            return self.search_tool
        if name == CALL_TOOL:
            name = inner_name(params)
        return self.registry.tool(name) if type(name) is str else None

    def index(self) -> BM25:
        version, index = self._index
        if version != self.registry.version:
            registry = self.registry
            index = BM25(
                (name, document(tool.wire))
                for name, tool in registry.tools.items()
                if not registry.hidden("tools", name, tool)
            )
            self._index = (registry.version, index)
        return index

    async def search(
        self,
        query: Annotated[str, Field(description="What you want to do, in a few words")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many tools")] = 10,
    ) -> dict[str, list[JSONDict]]:
        """The list entries of the tools that match ``query``, best first."""
        auth = ctx.request.auth
        found: list[JSONDict] = []
        rule = self.registry.visibility
        for name in self.index().ranked(query):
            tool = self.registry.tool(name)
            if tool is None or (auth.checked and not tool.scopes <= auth.scopes):
                continue
            if rule is not None:
                allowed = rule.allows(ctx, "tool", tool.wire)
                if not (allowed if isinstance(allowed, bool) else await allowed):
                    continue
            found.append(tool.wire)
            if len(found) == limit:
                break
        return {"tools": found}


def inner_name(params: JSONDict) -> Any:
    """The ``name`` argument of a ``call_tool`` request (None when it has none)."""
    arguments = params.get("arguments")
    return arguments.get("name") if isinstance(arguments, dict) else None


def inner_arguments(arguments: JSONDict | None) -> JSONDict | None:
    """The ``arguments`` argument of a ``call_tool`` request: the named tool's."""
    inner = (arguments or {}).get("arguments")
    return inner if isinstance(inner, dict) else None


def _call_tool(
    name: Annotated[str, Field(description=f"The tool's name, as {SEARCH_TOOLS} gave it")],
    arguments: Annotated[dict[str, Any] | None, Field(description="The tool's arguments")] = None,
) -> Any:
    """Never run: a ``call_tool`` request runs the tool it names (:meth:`ToolSearch.find`);
    this function gives ``call_tool`` its input schema."""
    raise AssertionError("call_tool runs the tool it names")  # pragma: no cover


def _no_pool() -> Any:
    raise AssertionError("the tool search tools run on the event loop")  # pragma: no cover
