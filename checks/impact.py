"""Model impact of failing rows: how much worse the model does on them than on passing rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from driftline.checks.columns import Columns


def _predicted_labels(frame: pd.DataFrame, columns: Columns) -> np.ndarray | None:
    if columns.prediction and columns.prediction in frame:
        return frame[columns.prediction].to_numpy()
    if columns.score and columns.score in frame and columns.task in (None, "binary"):
        return (frame[columns.score].to_numpy(dtype=float) >= 0.5).astype(int)
    return None


def _row_loss(frame: pd.DataFrame, columns: Columns) -> np.ndarray | None:
    """Per-row loss: 0/1 error for classification, absolute error for regression; None without labels."""
    if not columns.label or columns.label not in frame:
        return None
    truth = frame[columns.label].to_numpy()
    if columns.task == "regression":
        pred_col = columns.prediction or columns.score
        if not pred_col or pred_col not in frame:
            return None
        return np.abs(frame[pred_col].to_numpy(dtype=float) - truth.astype(float))
    predicted = _predicted_labels(frame, columns)
    if predicted is None:
        return None
    return (predicted != truth).astype(float)


def model_impact(frame: pd.DataFrame, failing: np.ndarray, columns: Columns) -> float | None:
    """Performance on passing rows minus performance on failing rows (positive: failing rows are worse).

    Performance is accuracy for classification and negative MAE for regression. Without labels it is
    the absolute change in the mean prediction (score if present) between failing and passing rows.
    None when either group is empty or the frame has neither labels nor predictions.
    """
    failing = np.asarray(failing, dtype=bool)
    if not failing.any() or failing.all():
        return None
    loss = _row_loss(frame, columns)
    if loss is not None:
        ok = ~np.isnan(loss)
        fail, pas = loss[failing & ok], loss[~failing & ok]
        if len(fail) == 0 or len(pas) == 0:
            return None
        return float(fail.mean() - pas.mean())
    pred_col = columns.score or columns.prediction
    if not pred_col or pred_col not in frame or not pd.api.types.is_numeric_dtype(frame[pred_col]):
        return None
    values = frame[pred_col].to_numpy(dtype=float)
    return float(abs(np.nanmean(values[failing]) - np.nanmean(values[~failing])))
