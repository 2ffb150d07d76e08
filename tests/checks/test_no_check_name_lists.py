"""Facts about checks live on the checks: no collection of check names, and no dispatch on a name's
prefix, outside `checks/` (a consumer reads `Check.role`, `estimates`, `signature` and the metric
declarations through the registry instead, so a custom check can declare them too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from driftline.checks import registry
from driftline.checks.catalog_index import CATALOG

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("tasks", "flows", "deployments/airflow/driftline_airflow")
COLLECTIONS = (ast.List, ast.Set, ast.Tuple, ast.Dict)
FAMILY_PREFIXES = frozenset(f"{name.split('.', 1)[0]}." for name in CATALOG)


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` assignments: a collection of such names is a collection of texts."""
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _strings(node: ast.AST, constants: dict[str, str]) -> list[str]:
    """The strings a collection literal holds directly (a dict's keys and values), constants resolved."""
    items = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts  # type: ignore[attr-defined]
    texts = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    return texts + [constants[i.id] for i in items if isinstance(i, ast.Name) and i.id in constants]


def offences(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, what) of every collection literal holding a check name, and every family prefix
    (`"fairness."`): a name-prefix dispatch."""
    tree = ast.parse(source)
    constants = _constants(tree)
    # A collection passed straight to a method is one value (a plan entry `(name, params, limit)`), not a
    # list; one passed to `frozenset(...)` and the like still is.
    passed = {
        id(a)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        for a in node.args
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, COLLECTIONS) and id(node) not in passed:
            held = _strings(node, constants)
            found += [(node.lineno, f"check name {n!r} in a collection") for n in held if n in names]
        if isinstance(node, ast.Constant) and node.value in FAMILY_PREFIXES:
            found.append((node.lineno, f"the name prefix {node.value!r}"))
    return sorted(set(found))


def test_the_scan_finds_a_list_and_a_prefix_test() -> None:
    names = frozenset({"drift.prediction", "performance.overall"})
    source = (
        'A = frozenset({"drift.prediction"})\nB = ("x", "performance.overall")\nok = c.startswith("drift.")\n'
        'N = "drift.prediction"\nC = [(N, len)]\nplan.insert(0, (N, {}, None))\n'
    )
    assert [line for line, _ in offences(source, names)] == [1, 2, 3, 5]
    assert offences('NAME = "drift.prediction"\nD = {"psi": 1}\n', names) == []


@pytest.mark.parametrize("folder", SCANNED)
def test_no_list_of_check_names_outside_checks(folder: str) -> None:
    registry.load_catalog()
    names = frozenset(registry.names())
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, what in offences(path.read_text(encoding="utf-8"), names)
    ]
    assert not found, "declare these on the checks (checks/base.py) instead:\n" + "\n".join(found)
