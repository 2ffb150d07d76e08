"""Values made storable before they reach the history database, whatever a batch carried.

PostgreSQL refuses a NUL character in any text or JSON value and a name longer than its column, and a
refused write would keep a monitor's runs out of the history. Every string loses its NUL characters
(and any unencodable surrogate), and a check, target or metric name longer than its column is cut and
suffixed with a hash of the whole name, deterministically, so a re-run writes the same key; the whole
name is kept in the result's `details` (`check_full`, `target_full`, `metric_full`). Other characters,
right-to-left overrides and zero-width ones included, are stored as they are: they are data, escaped
wherever they are shown.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from driftline.tasks.history.models import ResultRow

NUL = "\x00"
# Hex digits of the hash that ends a cut name: 64 bits keep distinct long names apart.
HASH_DIGITS = 16
CUT_MARK = "…"
# Result fields whose values are keyed by metric name.
BY_METRIC = ("metrics", "thresholds", "evidence")


def width(column: str) -> int:
    """The declared length of a `results` key column (`check`, `target`, `metric`)."""
    return ResultRow.__table__.c[column].type.length  # type: ignore[attr-defined]


def storable_text(text: str) -> str:
    """`text` without NUL characters, and with lone surrogates (not encodable as UTF-8) replaced."""
    text = text.replace(NUL, "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def storable(value: Any) -> Any:
    """`value` with every string in it, mapping keys included, made storable (`storable_text`)."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, Mapping):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value


def fitted(name: str, limit: int) -> str:
    """`name` when it fits in `limit` characters; else its start, a cut mark and a hash of the whole
    name, `limit` characters long, the same for the same name on every run."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:HASH_DIGITS]
    return f"{name[: limit - len(CUT_MARK) - HASH_DIGITS]}{CUT_MARK}{digest}"


def storable_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result (`CheckResult.to_dict()` form) whose strings and names the history database takes."""
    clean: dict[str, Any] = storable(result)
    details = dict(clean.get("details") or {})
    for field in ("check", "target"):
        name = clean.get(field)
        if isinstance(name, str) and len(name) > width(field):
            clean[field] = fitted(name, width(field))
            details[f"{field}_full"] = name
    names = {m: fitted(m, width("metric")) for m in clean.get("metrics") or {}}
    cut = {short: full for full, short in names.items() if short != full}
    if cut:
        details["metric_full"] = cut
        for field in BY_METRIC:
            if clean.get(field):
                clean[field] = {names.get(k, k): v for k, v in clean[field].items()}
    if details or "details" in clean:
        clean["details"] = details
    return clean


def storable_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A run record (the keyword arguments of `record_run`) with its results and details storable."""
    return {
        **record,
        "results": [storable_result(r) for r in record["results"]],
        "details": storable(record.get("details") or {}),
    }
