"""Worked examples with expected numbers, recomputed independently from the source documents."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

CASES_FILE = Path(__file__).with_name("cases.json")


def _decode(value: Any) -> Any:
    if value == "nan":
        return math.nan
    if value == "inf":
        return math.inf
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    return value


@cache
def _all_cases() -> tuple[dict[str, Any], ...]:
    return tuple(_decode(case) for case in json.loads(CASES_FILE.read_text()))


def golden_cases(*check_names: str) -> list[dict[str, Any]]:
    """The cases whose `check_name` is one of `check_names` ("nan"/"inf" strings decoded)."""
    return [c for c in _all_cases() if c["check_name"] in check_names]
