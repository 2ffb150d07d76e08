"""The core's layout: `tasks/` holds role packages only, and no two of them import each other at load time.

Imports are read from the source (module level, outside `if TYPE_CHECKING:`), so a cycle is caught
before it turns into a partially initialised module on some import order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def _package_of(path: Path) -> str:
    """The role package a module of `tasks/` belongs to (its first folder)."""
    return path.relative_to(TASKS).parts[0]


class _LoadTimeImports(ast.NodeVisitor):
    """Collects the `driftline.tasks.<package>` names imported outside functions and type-checking blocks."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # imports in a body run when called
        return None

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        return None

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" not in ast.unparse(node.test):
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module:
            self._add(node.module)

    def _add(self, name: str) -> None:
        parts = name.split(".")
        if parts[:2] == ["driftline", "tasks"] and len(parts) > 2:
            self.found.add(parts[2])


def _load_time_imports(path: Path) -> set[str]:
    """The `driftline.tasks.<package>` names a module imports when it is loaded."""
    visitor = _LoadTimeImports()
    visitor.visit(ast.parse(path.read_text()))
    return visitor.found


def package_graph() -> dict[str, set[str]]:
    """Which role package imports which at load time."""
    graph: dict[str, set[str]] = {}
    for path in TASKS.rglob("*.py"):
        if path.parent == TASKS or "migrations" in path.parts:
            continue
        package = _package_of(path)
        graph.setdefault(package, set()).update(_load_time_imports(path) - {package})
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as the path that closes it, or None (depth-first search with colours)."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_tasks_holds_role_packages_only() -> None:
    assert [p.name for p in TASKS.glob("*.py")] == ["__init__.py"]


def test_no_role_package_imports_one_that_imports_it() -> None:
    graph = package_graph()
    assert {"run", "config", "sources", "alerts", "history"} <= set(graph)  # the reader sees the packages
    assert cycle_in(graph) is None, " -> ".join(cycle_in(graph) or [])


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b", "c"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ],
)
def test_cycle_search_finds_a_planted_cycle(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert cycle_in(graph) == cycle


def test_a_load_time_import_is_seen_and_a_deferred_one_is_not(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from driftline.tasks.run.pipeline import run_monitor\n"
        "import driftline.tasks.views.ranking\n"
        "if TYPE_CHECKING:\n    from driftline.tasks.alerts.config import AlertConfig\n"
        "def later():\n    from driftline.tasks.history.store import HistoryStore\n"
        "class C:\n    def f(self):\n        import driftline.tasks.site\n"
        "    import driftline.tasks.tools.files\n"
    )
    assert _load_time_imports(module) == {"run", "views", "tools"}
