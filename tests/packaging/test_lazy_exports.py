"""Packages that re-export on first use (`driftline.lazy`): every public name resolves to the object its
module defines, unknown names fail as for any module, and `dir()` lists the public names."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ("driftline", "driftline.checks", "driftline.tasks.alerts")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_its_modules_object(package: str):
    module = importlib.import_module(package)
    public = [name for name in module.__all__ if name != "__version__"]
    for name in public:
        defined = importlib.import_module(module._PUBLIC[name])
        assert getattr(module, name) is getattr(defined, name)
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("package", PACKAGES)
def test_an_unknown_name_is_an_attribute_error_naming_it(package: str):
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nonexistent'"):
        module.nonexistent  # noqa: B018


def test_a_submodule_is_still_imported_by_name():
    from driftline.checks import registry

    assert registry.__name__ == "driftline.checks.registry"
