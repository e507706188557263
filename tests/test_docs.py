"""The tutorial runs as written: its Python blocks, concatenated, form a working server."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(path: Path) -> str:
    return "\n".join(re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S))


async def test_tutorial_server_runs_as_written() -> None:
    module = types.ModuleType("bookshelf")
    sys.modules["bookshelf"] = module  # pydantic resolves the tutorial's models through it
    try:
        exec(compile(python_blocks(DOCS / "tutorial.md"), "tutorial.md", "exec"), vars(module))
        await module.try_it()
        await module.try_it_like_a_user()
    finally:
        del sys.modules["bookshelf"]


def test_readme_example_registers_a_tool() -> None:
    readme = (DOCS.parent / "README.md").read_text()
    source = python_blocks(DOCS.parent / "README.md").replace("server.run()", "")
    assert "server.run()" in readme
    namespace: dict[str, object] = {}
    exec(compile(source, "README.md", "exec"), namespace)
    server = namespace["server"]
    assert list(server.registry.tools) == ["add"]  # type: ignore[attr-defined]
