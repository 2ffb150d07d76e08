"""The catalog: maps public dotted names (`drift.numeric`, `subset.auc`, ...) to check classes.

Lookups are lazy: a name's module is imported the first time the name is asked for (see
`catalog_index.CATALOG`); checks registered at run time by other modules are found as well, and so are
custom checks (`checks.custom`): a `module:Class` path, or a name published by an installed package.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from driftline.checks.catalog_index import CATALOG
from driftline.checks.custom import imported_check, is_import_path, origin, published, published_check
from driftline.checks.errors import CheckInputError

if TYPE_CHECKING:
    from driftline.checks.base import Check

_REGISTRY: dict[str, type[Check]] = {}
_LOADED = False

# Modules of the `checks` package that hold infrastructure, not catalog entries.
_INFRASTRUCTURE = {
    "base",
    "catalog_index",
    "columns",
    "custom",
    "errors",
    "registry",
    "result",
    "runner",
    "impact",
    "fingerprint",
    "mergeable",
    "testing",
}


def register(cls: type[Check]) -> type[Check]:
    """Class decorator adding a check to the catalog under `cls.name`."""
    existing = _REGISTRY.get(cls.name)
    if existing is not None and not _same_class(existing, cls):
        raise ValueError(
            f"check name {cls.name!r} is registered twice ({existing.__qualname__}, {cls.__qualname__})"
        )
    _REGISTRY[cls.name] = cls
    return cls


def _same_class(a: type[Check], b: type[Check]) -> bool:
    """The same class, or the same class imported again (its module reloaded, or a copy of its module
    beside another spec)."""
    return a is b or origin(a) == origin(b)


def load_catalog() -> None:
    """Import every module of the `checks` package so their `@register` decorators run (listings and
    the test that keeps the static table true)."""
    global _LOADED
    if _LOADED:
        return
    from driftline import checks

    for info in pkgutil.iter_modules(checks.__path__):
        if info.name not in _INFRASTRUCTURE and not info.name.startswith("_"):
            importlib.import_module(f"driftline.checks.{info.name}")
    _LOADED = True


def names() -> list[str]:
    """Every check name, sorted, without importing the check modules: the catalog, the checks
    registered at run time and those installed packages publish."""
    return sorted(set(CATALOG) | set(_REGISTRY) | set(published()))


def get(name: str, base_dir: Path | None = None) -> type[Check]:
    """The check class registered as `name` (importing its module only), or the custom check a
    `module:Class` path names (looked up in `base_dir` first) or a package publishes; an unknown name
    is an error listing close matches."""
    if is_import_path(name):
        return _registered(imported_check(name, base_dir))
    if name not in _REGISTRY and name in CATALOG:
        importlib.import_module(CATALOG[name])
    if name not in _REGISTRY and name in published():
        return _registered(published_check(name))
    try:
        return _REGISTRY[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, names(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; run `driftline checks` for the catalog"
        raise CheckInputError(f"unknown check {name!r}{hint}") from None


def known(name: str) -> type[Check] | None:
    """The class registered as `name` (a catalog check, importing its catalog module, or a check this
    process loaded already); None for any other name. For names read back from results or the history:
    a stored name is data, so nothing else is imported (no `module:Class` path, no entry point)."""
    if name not in _REGISTRY and name in CATALOG:
        importlib.import_module(CATALOG[name])
    return _REGISTRY.get(name)


def family_of(check: str) -> str:
    """A result's check family: its class's (`known`), or the first part of its name for one no class
    declares (a run-level result such as `run.drifted_features`, a check this process never loaded)."""
    cls = known(check)
    return cls.family if cls is not None else check.split(".", 1)[0]


def declaration(check: str) -> type[Check]:
    """The class declaring what `check`'s results are (`known`), or the `Check` defaults for a name no
    class declares."""
    found = known(check)
    if found is not None:
        return found
    from driftline.checks.base import Check  # not at import: the CLI's help reads the registry

    return Check


def _registered(cls: type[Check]) -> type[Check]:
    """A custom check class, registered under its name; a name the catalog or another class holds is
    a `CheckInputError`."""
    if CATALOG.get(cls.name, cls.__module__) != cls.__module__:
        raise CheckInputError(f"custom check {origin(cls)}: {cls.name!r} is a catalog name")
    try:
        return register(cls)
    except ValueError as exc:
        raise CheckInputError(f"custom check {origin(cls)}: {exc}") from None


def create(name: str, params: Mapping[str, Any] | None = None, base_dir: Path | None = None) -> Check:
    """Instantiate a check by name (or `module:Class` path, see `get`); an unknown parameter is an
    error naming it and the valid ones."""
    cls = get(name, base_dir)
    params = dict(params or {})
    valid = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - valid)
    if unknown:
        raise CheckInputError(f"{name}: unknown parameter(s) {unknown}; valid parameters: {sorted(valid)}")
    try:
        return cls(**params)
    except TypeError as exc:
        raise CheckInputError(f"{name}: {exc}") from exc


def describe(name: str, base_dir: Path | None = None) -> dict[str, Any]:
    """Catalog entry for listings: name, family, summary, needs, parameters, default thresholds, and
    where a check outside the catalog comes from."""
    cls = get(name, base_dir)
    return {
        "name": cls.name,
        "source": "catalog" if cls.name in CATALOG else origin(cls),
        "family": cls.family,
        "summary": cls.summary(),
        "needs": sorted(cls.needs),
        "parameters": {k: v for k, v in cls.parameters().items() if k not in ("thresholds",)},
        "thresholds": {k: list(v) for k, v in cls.default_thresholds.items()},
    }
