"""Audit rubrics over Arrow data: top-k accuracy, SemEval/MUC-5 text-span matching, extended P/R.

Importing the package also registers its catalog checks (`rubric.*`, see `checks.py`).
"""

from driftline.checks.rubrics import checks as _checks  # noqa: F401  (registers the rubric.* checks)
from driftline.checks.rubrics.classification import TopKAccuracy, top_k
from driftline.checks.rubrics.enums import MatchCriterion, MatchingMode, MatchResult
from driftline.checks.rubrics.metrics import ExtendedPrecisionRecall
from driftline.checks.rubrics.text import TextSpanMatches, match_spans

__all__ = [
    "ExtendedPrecisionRecall",
    "MatchCriterion",
    "MatchResult",
    "MatchingMode",
    "TextSpanMatches",
    "TopKAccuracy",
    "match_spans",
    "top_k",
]
