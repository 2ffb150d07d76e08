"""A cached profile is keyed by the code that fitted it: other code refits instead of loading it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.fingerprint import code_fingerprint
from driftline.tasks.references.profiles import ProfileCache

SOURCE = '''
from dataclasses import dataclass
from typing import ClassVar
from driftline.checks.base import Check

@dataclass(kw_only=True)
class Custom(Check):
    """A custom check."""
    name: ClassVar[str] = "custom.check"
    family: ClassVar[str] = "custom"

    def fit(self, reference, columns):
        return {VERSION!r}

    def evaluate(self, current, profile, columns):
        return []
'''


def _load(tmp_path: Path, version: str) -> type:
    path = tmp_path / f"custom_{version}.py"
    path.write_text(SOURCE.replace("{VERSION!r}", repr(version)))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.Custom


def test_catalog_checks_share_the_catalog_code_key() -> None:
    numeric, categorical = registry.get("drift.numeric"), registry.get("drift.categorical")
    assert code_fingerprint(numeric) == code_fingerprint(categorical)


def test_a_custom_check_whose_file_changed_gets_another_cache_key(tmp_path: Path) -> None:
    first, second = _load(tmp_path, "v1"), _load(tmp_path, "v2")
    cache = ProfileCache(None)
    keys = {cache.key(cls(), Columns(), "ref-hash") for cls in (first, second)}
    assert len(keys) == 2
    assert code_fingerprint(first) != code_fingerprint(registry.get("drift.numeric"))
