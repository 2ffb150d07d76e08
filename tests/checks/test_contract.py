"""Every registered check through the public contract battery (`driftline.checks.testing`), one test per
check and case, so that a failure names both and the cases run in parallel under xdist."""

from __future__ import annotations

import pytest

from driftline.checks import registry
from driftline.checks.testing import Case, contract_cases

CASES = [
    pytest.param(case, id=f"{name}-{case.name}")
    for name in registry.names()
    for case in contract_cases(registry.get(name))
]


@pytest.mark.parametrize("case", CASES)
def test_check_keeps_the_contract(case: Case) -> None:
    case.run()
