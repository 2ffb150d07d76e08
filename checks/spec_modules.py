"""Modules beside a spec (`model:`, `check: module:Class`), each folder's under a namespace of its own.

Python caches modules by name, so two monitors whose folders both hold a `model.py` would share the
first one loaded. Here a folder's module `model` is loaded as `driftline_spec_<hash>.model`, the hash
taken of the folder's resolved path: each folder gets its own module, and loading the same folder again
finds it. While it is imported, the plain names of the folder's modules (`import helpers`, `from
helpers import x`) resolve to the same folder's modules; afterwards those plain names are free again.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

NAMESPACE = "driftline_spec_"
_LOCK = threading.RLock()


def namespace(folder: Path) -> str:
    """The package name the modules of `folder` are loaded under."""
    return NAMESPACE + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]


def plain_name(module: str) -> str:
    """`module` without the namespace of its spec folder (`driftline_spec_<hash>.model` → `model`)."""
    head, dot, rest = module.partition(".")
    return rest if dot and head.startswith(NAMESPACE) else module


def local_names(folder: Path) -> frozenset[str]:
    """The top-level module names `folder` holds: its `.py` files and its packages."""
    files = (p.stem for p in folder.glob("*.py"))
    return frozenset([*files, *(p.parent.name for p in folder.glob("*/__init__.py"))])


def top_level(module: str) -> str:
    return module.partition(".")[0]


def import_beside(module: str, folder: Path | None) -> ModuleType:
    """`module` from `folder` when the folder holds it (under the folder's namespace), else from the
    usual import path."""
    names = local_names(folder) if folder is not None else frozenset()
    if folder is None or top_level(module) not in names:
        return importlib.import_module(module)
    folder = folder.resolve()
    with _LOCK, _plain_names(namespace(folder), names):
        return importlib.import_module(f"{_package(folder)}.{module}")


def _package(folder: Path) -> str:
    """The namespace package of `folder`, created on first use; its modules are the folder's files."""
    name = namespace(folder)
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        sys.modules[name] = importlib.util.module_from_spec(spec)
    return name


@contextmanager
def _plain_names(package: str, names: frozenset[str]) -> Iterator[None]:
    """Within the block, a plain import of one of the folder's module `names` that nothing has imported
    yet gives the module of the folder's `package`; afterwards those plain names are free again. A
    module already imported under such a name (the standard library's `code`, say) stays what it is."""
    finder = _FolderFinder(package, names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        ours = [
            name
            for name, module in sys.modules.items()
            if top_level(name) in names and getattr(module, "__name__", "").startswith(f"{package}.")
        ]
        for name in ours:
            del sys.modules[name]


class _FolderFinder(importlib.abc.MetaPathFinder):
    """Finds a plain name of one of a folder's modules as the module of the folder's package."""

    def __init__(self, package: str, names: frozenset[str]) -> None:
        self.package, self.names = package, names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if top_level(fullname) not in self.names:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(f"{self.package}.{fullname}"))


class _Alias(importlib.abc.Loader):
    """Gives the namespaced module `target` for its plain name, keeping the module's own spec (the
    import system sets the plain name's on it)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.spec: Any = None

    def create_module(self, spec: Any) -> ModuleType:
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec
