"""The attribution figures render to PNG from a result's JSON details."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.tasks.attribution_plots import cross_matrix_png, segment_tree_png

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
COLUMNS = Columns(label="label", score="score", numeric=("age",), categorical=("grade",))


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 2000
    signal = rng.normal(size=n)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "grade": rng.choice(list("ABCD"), n),
            "label": (signal + rng.normal(size=n) > 0).astype(int),
            "score": signal,
            "other": signal + rng.normal(size=n),
        }
    )


def _details(name: str, frame: pd.DataFrame, **params) -> dict:
    (summary, *_rest) = run_check(registry.create(name, params), frame, COLUMNS, reference=frame, strict=True)
    return summary.to_dict()["details"]  # through JSON form, as the run report reads it


def _image_size(png: bytes) -> tuple[int, int]:
    from matplotlib.image import imread

    height, width = imread(io.BytesIO(png)).shape[:2]
    return width, height


def test_cross_matrix_png(frame: pd.DataFrame) -> None:
    png = cross_matrix_png(_details("attribution.pairs", frame, features=["grade"]))
    assert png.startswith(PNG_SIGNATURE)
    assert min(_image_size(png)) > 100


@pytest.mark.parametrize(
    ("name", "params"), [("attribution.auc", {}), ("attribution.compare", {"candidate_score": "other"})]
)
def test_segment_tree_png(frame: pd.DataFrame, name: str, params: dict) -> None:
    png = segment_tree_png(_details(name, frame, max_depth=2, **params))
    assert png.startswith(PNG_SIGNATURE)
    assert min(_image_size(png)) > 100


def test_tree_png_accepts_a_single_slice() -> None:
    tree = {
        "overall": 0.4,
        "nodes": [
            {
                "node": 0,
                "condition": "all data",
                "children": [-1, -1],
                "rows": 3,
                "mean": None,
                "false_discovery": True,
            }
        ],
    }
    assert segment_tree_png({"tree": tree}).startswith(PNG_SIGNATURE)
