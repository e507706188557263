"""The layers import one way: read from the source, every ``import`` statement counted
(at module level, inside functions and under ``TYPE_CHECKING``).

``client/`` imports nothing of the server side (``server/``, ``transports/``, ``proxy/``,
``extensions/``, ``compose/``), no module inside the package imports the package face
(``mcpserve/__init__.py``), and no import cycle runs through a client module: what both
peers need lives where both may import it (``docs/decisions.md``, "The client apart from the
server").

``transports/`` imports nothing of ``server/``: a transport reads the server through the
endpoint it is given (``transports/endpoint.py``). The buses that ``backends/`` implements
import the bus ``server/bus.py`` declares, never the other way round.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mcpserve"
SERVER_SIDE = ("server", "transports", "proxy", "extensions", "compose")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(path): path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts
}


def imports_of(module: str) -> Iterator[tuple[int, str]]:
    """``(line, module imported)`` for every import statement of ``module``; a name imported
    from a package counts as its submodule when there is one, else as the package."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield node.lineno, submodule if submodule in MODULES else source


IMPORTS = {module: list(imports_of(module)) for module in MODULES}


def graph() -> dict[str, set[str]]:
    return {
        module: {target for _, target in imports if target in MODULES} - {module}
        for module, imports in IMPORTS.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in edges[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component: set[str] = set()
            while module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(component)

    for module in edges:
        if module not in index:
            visit(module)
    return found


def test_the_modules_are_found() -> None:
    assert {"mcpserve", "mcpserve.client.client", "mcpserve.server.server"} <= set(MODULES)


def test_the_client_imports_nothing_of_the_server_side() -> None:
    forbidden = tuple(f"mcpserve.{layer}" for layer in SERVER_SIDE)
    crossings = [
        f"{module}:{line} imports {target}"
        for module in MODULES
        if module.startswith("mcpserve.client")
        for line, target in IMPORTS[module]
        if target in forbidden or target.startswith(tuple(f"{f}." for f in forbidden))
    ]
    assert crossings == []


def test_no_module_inside_the_package_imports_the_face() -> None:
    crossings = [
        f"{module}:{line}"
        for module in MODULES
        if module != "mcpserve"
        for line, target in IMPORTS[module]
        if target == "mcpserve"
    ]
    assert crossings == []


def test_no_import_cycle_runs_through_the_client() -> None:
    through_client = [
        sorted(component)
        for component in cycles(graph())
        if any(module.startswith("mcpserve.client") for module in component)
    ]
    assert through_client == []


def crossings_from(layer: str, into: str) -> list[str]:
    """Every import from a module of ``layer`` into a module of ``into``."""
    source, target_layer = f"mcpserve.{layer}", f"mcpserve.{into}"
    return [
        f"{module}:{line} imports {target}"
        for module in MODULES
        if module == source or module.startswith(source + ".")
        for line, target in IMPORTS[module]
        if target == target_layer or target.startswith(target_layer + ".")
    ]


def test_the_transports_import_nothing_of_the_server() -> None:
    assert crossings_from("transports", "server") == []


def test_no_import_cycle_runs_through_the_buses_or_the_transports() -> None:
    through = [
        sorted(component)
        for component in cycles(graph())
        if any(
            module.startswith(("mcpserve.transports", "mcpserve.backends"))
            or module == "mcpserve.server.bus"
            for module in component
        )
    ]
    assert through == []
