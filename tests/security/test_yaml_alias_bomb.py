"""Also found: a "billion laughs" spec (aliases of aliases) is refused at once, after counting at most
`MAX_SPEC_VALUES` values, instead of loading and later expanding to billions; ordinary aliases load."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.tasks.config.spec import MAX_SPEC_VALUES, SpecError, load_spec

HEAD = "name: m\nreference: {path: r.parquet}\nbatches: {path: 'b/{batch}.parquet'}\n"


def _bomb(levels: int) -> str:
    """Retrain parameters (free-form, so validation accepts them) nesting nine aliases a level."""
    lines = [
        HEAD + "checks: [drift.numeric]",
        "retrain:",
        "  parameters:",
        '    l0: &l0 ["lol", "lol", "lol"]',
    ]
    lines += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_spec_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(10))  # 3 * 9**9, about a billion strings
    with pytest.raises(SpecError, match=f"expands to more than {MAX_SPEC_VALUES:,} values"):
        load_spec(path)


def test_ordinary_anchors_and_aliases_still_load(tmp_path: Path) -> None:
    path = tmp_path / "monitor.yaml"
    path.write_text(
        HEAD
        + "checks:\n"
        + "- {check: drift.numeric, thresholds: &bands {psi: [0.1, 0.2, 0.3]}}\n"
        + "- {check: drift.prediction, thresholds: *bands}\n"
    )
    spec = load_spec(path)
    assert [c.thresholds for c in spec.checks] == [{"psi": [0.1, 0.2, 0.3]}] * 2
