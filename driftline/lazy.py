"""PEP 562 re-exports: a package names its public objects and the modules that define them, and each
module is imported the first time one of its names is used, so importing the package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, which re-exports each of `names` from its module."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        """Import a public name's module on first use and keep the name in the package."""
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(module), name)
        return value

    def __dir__() -> list[str]:
        """The package's public names."""
        return sorted(namespace.get("__all__", names))

    return __getattr__, __dir__
