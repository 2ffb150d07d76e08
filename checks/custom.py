"""Checks written outside the catalog: `module:Class` in a spec (the module looked up beside the spec
first, like `model:`), or a name a package publishes under the `driftline.checks` entry point group.

A custom check is a `Check` subclass like any built-in (see docs/custom_checks.md); once loaded it is
registered under its `name`, so results, grading, alerts and the report find it as they find the
catalog's.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

from driftline.checks.errors import CheckInputError
from driftline.checks.spec_modules import import_beside, plain_name

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from driftline.checks.base import Check

ENTRY_POINT_GROUP = "driftline.checks"
CONTRACT = "a check is a driftline.checks.Check subclass with `name` and `family` (docs/custom_checks.md)"


def origin(cls: type) -> str:
    """Where a check class comes from, as a spec names it: `module:Class`, without the namespace of a
    spec folder's modules."""
    return f"{plain_name(cls.__module__)}:{cls.__qualname__}"


def is_import_path(name: str) -> bool:
    """Whether a spec's `check:` names a class (`module:Class`) rather than a catalog name."""
    return ":" in name


class ImportPathError(ValueError):
    """An import path (`module:attribute`) that is malformed or names nothing importable."""


def imported(path: str, base_dir: Path | None, form: str) -> Any:
    """The object `module:attribute` names, its module looked up in `base_dir` first (loaded under the
    folder's own namespace, `checks.spec_modules`); an `ImportPathError` when `path` is not of the
    `form` given or cannot be imported."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ImportPathError(f"expected the form {form}")
    try:
        module = import_beside(module_name, base_dir)
    except (ImportError, AttributeError, TypeError) as exc:  # TypeError: a class's declarations
        raise ImportPathError(str(exc)) from exc
    if not hasattr(module, attribute):
        raise ImportPathError(f"module {module_name!r} has no attribute {attribute!r}")
    return getattr(module, attribute)


def imported_check(path: str, base_dir: Path | None = None) -> type[Check]:
    """The check class `module:Class` names, its module looked up in `base_dir` first; anything else
    is a `CheckInputError` saying what a custom check must be."""
    try:
        target = imported(path, base_dir, "package.module:Class")
    except ImportPathError as exc:
        raise CheckInputError(f"check {path!r}: {exc}") from exc
    return require_check_class(target, path)


def require_check_class(target: object, origin: str) -> type[Check]:
    """`target` when it is a concrete `Check` subclass with a name and a family, else a `CheckInputError`."""
    from driftline.checks.base import Check  # the module that defined `target` has imported it

    if not (isinstance(target, type) and issubclass(target, Check)):
        raise CheckInputError(f"check {origin!r}: {target!r} is not a Check subclass; {CONTRACT}")
    if inspect.isabstract(target):
        missing = ", ".join(sorted(target.__abstractmethods__))
        raise CheckInputError(f"check {origin!r}: {target.__name__} does not define {missing}")
    for attribute in ("name", "family"):
        if not isinstance(getattr(target, attribute, None), str):
            raise CheckInputError(f"check {origin!r}: {target.__name__} has no `{attribute}`; {CONTRACT}")
    return target


def entry_points_in(group: str) -> dict[str, EntryPoint]:
    """What installed packages publish under the entry point `group` (checks, sources, alert
    channels), by name."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=group)}


def load_entry(entry: EntryPoint, what: str, error: type[Exception]) -> Any:
    """The object `entry` names; an import that fails is `error`, naming `what`, the entry point and
    the cause."""
    try:
        return entry.load()
    except Exception as exc:
        cause = f"{type(exc).__name__}: {exc}"
        raise error(f"{what} {entry.name!r} ({entry.value}): cannot load: {cause}") from exc


@functools.cache
def published() -> dict[str, EntryPoint]:
    """The checks installed packages publish under the `driftline.checks` entry point group, by name."""
    return entry_points_in(ENTRY_POINT_GROUP)


def published_check(name: str) -> type[Check]:
    """The class a package publishes as `name`; its `name` must be the entry point's."""
    entry = published()[name]
    target = load_entry(entry, "check", CheckInputError)
    cls = require_check_class(target, entry.value)
    if cls.name != name:
        raise CheckInputError(f"check {name!r}: the entry point's class {entry.value} is named {cls.name!r}")
    return cls
