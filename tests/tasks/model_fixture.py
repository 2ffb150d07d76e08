"""A tiny fitted classifier importable as `tests.tasks.model_fixture:load` (used by the model tests)."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression


def load() -> LogisticRegression:
    """A logistic regression on two features, fitted on fixed data."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    return LogisticRegression().fit(x, (x[:, 0] + x[:, 1] > 0).astype(int))
