"""The catalog: maps public dotted names (`drift.numeric`, `subset.auc`, ...) to check classes.

Lookups are lazy: a name's module is imported the first time the name is asked for (see
`catalog_index.CATALOG`); checks registered at run time by other modules are found as well.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from driftline.checks.base import Check
from driftline.checks.catalog_index import CATALOG
from driftline.checks.errors import CheckInputError

_REGISTRY: dict[str, type[Check]] = {}
_LOADED = False

# Modules of the `checks` package that hold infrastructure, not catalog entries.
_INFRASTRUCTURE = {
    "base",
    "catalog_index",
    "columns",
    "errors",
    "registry",
    "result",
    "runner",
    "impact",
    "fingerprint",
}


def register(cls: type[Check]) -> type[Check]:
    """Class decorator adding a check to the catalog under `cls.name`."""
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(
            f"check name {cls.name!r} is registered twice ({existing.__qualname__}, {cls.__qualname__})"
        )
    _REGISTRY[cls.name] = cls
    return cls


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
    """Every check name, sorted, without importing the check modules."""
    return sorted(set(CATALOG) | set(_REGISTRY))


def get(name: str) -> type[Check]:
    """The check class registered as `name` (importing its module only); an unknown name is an error
    listing close matches."""
    if name not in _REGISTRY and name in CATALOG:
        importlib.import_module(CATALOG[name])
    try:
        return _REGISTRY[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, names(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; run `driftline checks` for the catalog"
        raise CheckInputError(f"unknown check {name!r}{hint}") from None


def create(name: str, params: Mapping[str, Any] | None = None) -> Check:
    """Instantiate a check by name; an unknown parameter is an error naming it and the valid ones."""
    cls = get(name)
    params = dict(params or {})
    valid = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - valid)
    if unknown:
        raise CheckInputError(f"{name}: unknown parameter(s) {unknown}; valid parameters: {sorted(valid)}")
    try:
        return cls(**params)
    except TypeError as exc:
        raise CheckInputError(f"{name}: {exc}") from exc


def describe(name: str) -> dict[str, Any]:
    """Catalog entry for listings: name, family, summary, needs, parameters, default thresholds."""
    cls = get(name)
    return {
        "name": name,
        "family": cls.family,
        "summary": cls.summary(),
        "needs": sorted(cls.needs),
        "parameters": {k: v for k, v in cls.parameters().items() if k not in ("thresholds",)},
        "thresholds": {k: list(v) for k, v in cls.default_thresholds.items()},
    }
