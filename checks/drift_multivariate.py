"""Multivariate drift: a change in the joint distribution of the features that no single column shows.

Two features that were correlated and no longer are keep both their marginals, so every per-column
drift check stays quiet. `drift.multivariate` compares the batch's rows with the reference's as
wholes, with one of two detectors (`method`):

- `reconstruction`, NannyML's data-reconstruction drift: numeric features mean-imputed, categorical
  ones imputed with their most frequent value and count-encoded (each value replaced by its share of
  the reference), all standardised; a PCA keeps the components explaining `variance` (65%) of the
  reference; a row's reconstruction error is the Euclidean distance between its standardised values
  and their projection on those components. Rows drawn from another joint distribution lie further
  from the reference's principal subspace.
- `classifier`: a gradient-boosted classifier learns to tell reference rows from batch rows; its
  cross-validated AUC is 0.5 when it cannot, and grows with how separable the two are.

Both are graded on a one-sided confidence bound (`checks.evidence`), so clean batches stay quiet at
every size. ±inf counts as missing; a feature with no value at all in the batch is an error (imputing
it would make a constant column, which `abnormal.nulls` reports as what it is).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from driftline.checks.base import Check, Metric
from driftline.checks.binning import value_counts
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.evidence import Evidence, auc_standard_error, normal
from driftline.checks.registry import register
from driftline.checks.result import CheckResult

METHODS = ("reconstruction", "classifier")
FOLDS = 5
SEED = 0
# The classifier's category codes: the 253 most frequent reference categories, then one code for the
# other reference categories and one for categories the reference never showed (at most 255 in all).
TOP_CATEGORIES = 253
OTHER_CODE, UNSEEN_CODE = TOP_CATEGORIES, TOP_CATEGORIES + 1

RECONSTRUCTION_METRIC = Metric(
    (0.02, 0.05, 0.1),
    change=(
        "relative change of the mean reconstruction error, batch mean / reference mean − 1; the "
        "reference's per-row errors are cross-fitted, so they are not biased low"
    ),
    uncertainty=(
        "normal, the delta-method standard error of the ratio of the two means, from the batch's and "
        "the reference's per-row errors"
    ),
)
DOMAIN_AUC_METRIC = Metric(
    (0.05, 0.1, 0.2),
    change=(
        "cross-validated AUC of a classifier telling batch rows from reference rows, minus the 0.5 it "
        "scores when they come from one population (0.05 / 0.1 / 0.2: an AUC of 0.55 / 0.6 / 0.7)"
    ),
    uncertainty=(
        "normal, with the Hanley–McNeil standard error at one fold's batch and reference row counts: "
        "the fold AUCs are positively correlated, so their mean is no surer than one of them"
    ),
)
NO_DRIFT_AUC = 0.5


# --- reading the features -------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureSpace:
    """The features compared and each categorical one's reference categories, most frequent first."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    vocabularies: tuple[tuple[str, ...], ...]

    @property
    def size(self) -> int:
        return len(self.numeric) + len(self.categorical)

    def read(self, frame: pd.DataFrame, side: str) -> tuple[np.ndarray, np.ndarray]:
        """Numeric values (NaN for missing and ±inf) and category codes (-1 for missing, the vocabulary's
        length for a category the reference never showed); a feature absent, not numeric or with no
        value at all is a `CheckInputError` naming it."""
        require_columns(frame, (*self.numeric, *self.categorical), side)
        rows = len(frame)
        numeric = _stack([_numeric_values(frame[c], c) for c in self.numeric], rows, float)
        pairs = zip(self.categorical, self.vocabularies, strict=True)
        codes = _stack([_category_codes(frame[c], v) for c, v in pairs], rows, np.int64)
        empty = [c for c, values in zip(self.numeric, numeric.T, strict=True) if np.isnan(values).all()]
        empty += [c for c, values in zip(self.categorical, codes.T, strict=True) if (values < 0).all()]
        if empty and rows:
            raise CheckInputError(f"column(s) {empty} have no value in the {side}")
        return numeric, codes


def feature_space(
    reference: pd.DataFrame, numeric: tuple[str, ...], categorical: tuple[str, ...]
) -> FeatureSpace:
    """The features and the reference's vocabulary of each categorical one (ties in name order)."""
    require_columns(reference, (*numeric, *categorical), "reference")
    vocabularies = []
    for name in categorical:
        counts, _ = value_counts(reference[name])
        vocabularies.append(tuple(counts.sort_index().sort_values(ascending=False, kind="stable").index))
    return FeatureSpace(tuple(numeric), tuple(categorical), tuple(vocabularies))


def require_columns(frame: pd.DataFrame, names: tuple[str, ...], side: str) -> None:
    """A `CheckInputError` naming the features the frame does not have."""
    absent = [c for c in names if c not in frame.columns]
    if absent:
        raise CheckInputError(f"the {side} has no column(s) {absent}")


def _stack(columns: list[np.ndarray], rows: int, dtype: type) -> np.ndarray:
    """Columns side by side as one (rows × columns) matrix, also when there is none."""
    return np.column_stack(columns).astype(dtype) if columns else np.empty((rows, 0), dtype=dtype)


def _numeric_values(series: pd.Series, name: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(series.dtype):
        raise CheckInputError(f"column {name!r} is not numeric (dtype {series.dtype})")
    values = series.to_numpy(dtype=float, na_value=np.nan)
    return np.where(np.isfinite(values), values, np.nan)


def _category_codes(series: pd.Series, vocabulary: tuple[str, ...]) -> np.ndarray:
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    lookup = pd.Index(vocabulary).get_indexer(pd.Index(uniques).astype(str))
    lookup = np.r_[np.where(lookup < 0, len(vocabulary), lookup), -1].astype(np.int64)
    return lookup[codes]  # the sentinel -1 of a missing value picks the trailing -1


# --- reconstruction error -------------------------------------------------------------------------


@dataclass(frozen=True)
class Encoding:
    """Imputation and count encoding fitted on reference rows: the numeric features' means, the
    categorical ones' most frequent codes, and each code's share of the rows once imputed (0 for a
    category those rows never showed), as NannyML's imputers and `CountEncoder(normalize=True)` do."""

    means: np.ndarray
    modes: np.ndarray
    shares: tuple[np.ndarray, ...]

    @classmethod
    def fit(cls, numeric: np.ndarray, codes: np.ndarray, sizes: tuple[int, ...]) -> Encoding:
        """The encoding of these rows (`sizes`: each categorical feature's vocabulary length)."""
        present = ~np.isnan(numeric)
        totals = np.nansum(numeric, axis=0)
        means = np.where(present.any(axis=0), totals / np.maximum(present.sum(axis=0), 1), 0.0)
        counts = [np.bincount(codes[codes[:, j] >= 0, j], minlength=n + 1) for j, n in enumerate(sizes)]
        modes = np.array([np.argmax(c) for c in counts], dtype=np.int64)
        for count, mode, missing in zip(counts, modes, (codes < 0).sum(axis=0), strict=True):
            count[mode] += missing
        return cls(means, modes, tuple(c / len(codes) for c in counts))

    def encoded(self, numeric: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Rows imputed and count-encoded: numeric features first, then categorical ones."""
        filled = np.where(np.isnan(numeric), self.means, numeric)
        present = np.where(codes < 0, self.modes, codes)
        return np.column_stack([filled, *(share[present[:, j]] for j, share in enumerate(self.shares))])


@dataclass(frozen=True)
class Reconstruction:
    """Transforms fitted on reference rows: the encoding, the standardisation and the principal
    components kept (rows of `components`), and the share of the variance they explain."""

    encoding: Encoding
    center: np.ndarray
    scale: np.ndarray
    components: np.ndarray
    explained: float

    def errors(self, numeric: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Each row's Euclidean distance, standardised, to its projection on the principal components."""
        z = (self.encoding.encoded(numeric, codes) - self.center) / self.scale
        return np.linalg.norm(z - z @ self.components.T @ self.components, axis=1)


def fit_reconstruction(
    numeric: np.ndarray, codes: np.ndarray, sizes: tuple[int, ...], keep: int | float
) -> Reconstruction:
    """The transforms fitted on these rows. `keep` reads as scikit-learn's `PCA(n_components=keep)`:
    a number of components, or (a float) the share of the variance the fewest components kept must
    exceed, then at most all but one so that some error remains to compare."""
    encoding = Encoding.fit(numeric, codes, sizes)
    encoded = encoding.encoded(numeric, codes)
    center, spread = encoded.mean(axis=0), encoded.std(axis=0)
    scale = np.where(spread > 10 * np.finfo(float).eps * np.maximum(np.abs(center), 1.0), spread, 1.0)
    z = (encoded - center) / scale
    eigenvalues, vectors = np.linalg.eigh(z.T @ z / max(len(z) - 1, 1))
    eigenvalues, vectors = np.clip(eigenvalues[::-1], 0.0, None), vectors[:, ::-1]
    if not eigenvalues.sum() > 0:
        raise NotApplicable("every feature is constant in the reference: there is no structure to compare")
    if isinstance(keep, float):
        share = np.cumsum(eigenvalues) / eigenvalues.sum()
        keep = min(int(np.searchsorted(share, keep, side="right")) + 1, len(eigenvalues) - 1)
    explained = float(eigenvalues[:keep].sum() / eigenvalues.sum())
    return Reconstruction(encoding, center, scale, vectors[:, :keep].T.copy(), explained)


def cross_fitted_errors(
    numeric: np.ndarray, codes: np.ndarray, sizes: tuple[int, ...], keep: int
) -> np.ndarray:
    """The reference's per-row errors, each from transforms fitted without its fold (FOLDS seeded
    folds, `keep` components each): errors of rows the PCA was fitted on are biased low."""
    fold = np.random.default_rng(SEED).permutation(len(numeric)) % FOLDS
    errors = np.empty(len(numeric))
    for f in range(FOLDS):
        held = fold == f
        fitted = fit_reconstruction(numeric[~held], codes[~held], sizes, keep)
        errors[held] = fitted.errors(numeric[held], codes[held])
    return errors


@dataclass(frozen=True)
class ReconstructionProfile:
    """The features, the transforms fitted on the whole reference and the mean, standard deviation
    and count of the reference's cross-fitted per-row errors."""

    space: FeatureSpace
    transform: Reconstruction
    error_mean: float
    error_std: float
    rows: int


def error_change(errors: np.ndarray, profile: ReconstructionProfile) -> Evidence:
    """Evidence of batch mean error / reference mean error − 1: the delta-method standard error of a
    ratio of two independent means, from each side's per-row spread."""
    mean, reference = float(errors.mean()), profile.error_mean
    batch_var = float(errors.var(ddof=1)) / len(errors)
    reference_var = profile.error_std**2 / profile.rows
    se = math.sqrt(batch_var / reference**2 + mean**2 * reference_var / reference**4)
    return normal(mean / reference - 1.0, se)


# --- domain classifier ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassifierProfile:
    """The features and a seeded random sample of reference rows in the classifier's encoding."""

    space: FeatureSpace
    sample: np.ndarray


def classifier_rows(space: FeatureSpace, numeric: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Rows as the classifier reads them: numeric values, then category codes (the reference's most
    frequent categories, one code for its other ones, one for unseen ones), NaN for missing."""
    sizes = np.array([len(v) for v in space.vocabularies], dtype=np.int64)
    capped = np.where(codes >= sizes, UNSEEN_CODE, np.minimum(codes, OTHER_CODE)).astype(float)
    capped[codes < 0] = np.nan
    return np.hstack([numeric, capped])


def domain_auc(reference: np.ndarray, batch: np.ndarray, categorical: np.ndarray) -> list[float]:
    """The test-fold AUCs of a gradient-boosted classifier telling batch rows from reference rows over
    FOLDS stratified folds (seeded, early stopping on a validation split of each training fold), on one
    OpenMP thread: a run already evaluates checks side by side, and on a busy two-core machine the
    estimator's own threads made an 8,000-row evaluation take 2-16 s instead of 0.2-1.3 s."""
    rows = np.vstack([reference, batch])
    is_batch = np.r_[np.zeros(len(reference)), np.ones(len(batch))]
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    aucs = []
    with threadpool_limits(1, user_api="openmp"):
        for train, test in folds.split(rows, is_batch):
            model = HistGradientBoostingClassifier(
                categorical_features=categorical if categorical.any() else None,
                early_stopping=True,
                random_state=SEED,
            )
            model.fit(rows[train], is_batch[train])
            aucs.append(float(roc_auc_score(is_batch[test], model.predict_proba(rows[test])[:, 1])))
    return aucs


def fold_mean_standard_error(auc: float, batch_rows: int, reference_rows: int) -> float:
    """Standard error of the mean of the FOLDS test-fold AUCs: Hanley–McNeil's at one fold's row
    counts. Each fold's AUC has that error, but not independently: a row's label teaches the models
    that score its neighbours in the other folds, so the fold AUCs are positively correlated (about
    0.2 on clean samples) and their mean is 1.25-1.4 times noisier than one AUC over all rows. With a
    correlation of at most 1, the mean is never noisier than one fold."""
    return auc_standard_error(auc, batch_rows // FOLDS, reference_rows // FOLDS)


def batch_sample(rows: np.ndarray, limit: int) -> np.ndarray:
    """At most `limit` of the batch's rows (a seeded draw), sorted by their values: the folds, and so
    the AUC, do not depend on the batch's row order, and the cost stays bounded on large batches."""
    ordered = rows[np.lexsort(rows.T[::-1])]
    if len(ordered) <= limit:
        return ordered
    return ordered[np.sort(np.random.default_rng(SEED).choice(len(ordered), limit, replace=False))]


# --- the check --------------------------------------------------------------------------------------


@register
@dataclass(kw_only=True)
class MultivariateDrift(Check):
    """Multivariate drift: the batch's rows against the reference's as wholes, by PCA reconstruction
    error (the default) or by a domain classifier's cross-validated AUC.

    `method: reconstruction` grades `reconstruction_error_change`, the relative change of the mean
    reconstruction error (batch / reference − 1). Relative rather than absolute: the error's scale
    grows with the number of features and of components left out, so an absolute threshold would
    mean another shift on every monitor, while "rows lie 5% further from the reference's principal
    subspace" means the same everywhere. Thresholds 0.02 / 0.05 / 0.1; two correlated census
    features (age and schooling) decorrelated within a batch raise it by about 0.1.

    `method: classifier` grades `domain_auc_change`, the classifier's cross-validated AUC minus 0.5
    (what it scores on two samples of one population), thresholds 0.05 / 0.1 / 0.2 (an AUC of 0.55 /
    0.6 / 0.7); `domain_auc` is reported beside it. The classifier sees at most `sample_rows` batch
    rows (a seeded draw) and `reference_ratio` reference rows per batch row it sees, from a seeded
    sample of `sample_rows` reference rows kept in the profile, so its cost stays bounded.

    Needs numeric features (and at least two features); categorical ones join them. Below 100 batch
    rows it is skipped: the mean of skewed per-row errors and a cross-validated AUC need them.
    """

    name: ClassVar[str] = "drift.multivariate"
    subject: ClassVar[str | None] = "reconstruction error"
    family: ClassVar[str] = "drift"
    role: ClassVar[str] = "feature_drift"
    needs: ClassVar[frozenset[str]] = frozenset({"numeric"})
    min_verdict_rows: ClassVar[int] = 100
    declared_metrics: ClassVar[Mapping[str, Metric]] = {
        "reconstruction_error_change": RECONSTRUCTION_METRIC,
        "domain_auc_change": DOMAIN_AUC_METRIC,
    }

    method: str = "reconstruction"
    variance: float = 0.65
    reference_ratio: float = 3.0
    sample_rows: int = 20_000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in METHODS:
            raise CheckInputError(f"{self.name}: method must be one of {list(METHODS)}, got {self.method!r}")
        if not 0 < self.variance < 1:
            raise CheckInputError(f"{self.name}: variance must be between 0 and 1, got {self.variance}")
        if not self.reference_ratio >= 1:
            raise CheckInputError(
                f"{self.name}: reference_ratio must be at least 1, got {self.reference_ratio}"
            )
        if self.sample_rows < self.min_verdict_rows:
            raise CheckInputError(f"{self.name}: sample_rows must be at least {self.min_verdict_rows}")

    def fit(self, reference: pd.DataFrame, columns: Columns) -> ReconstructionProfile | ClassifierProfile:
        numeric = self.feature_columns(columns, "numeric")
        categorical = self.feature_columns(columns, "categorical")
        if len(numeric) + len(categorical) < 2:
            raise NotApplicable(f"{self.name}: needs at least two features, got {[*numeric, *categorical]}")
        if len(reference) < self.min_verdict_rows:
            rows, least = len(reference), self.min_verdict_rows
            raise NotApplicable(f"the reference has {rows} row(s): {self.name} needs at least {least}")
        space = feature_space(reference, numeric, categorical)
        values, codes = space.read(reference, "reference")
        if self.method == "classifier":
            order = np.random.default_rng(SEED).permutation(len(reference))[: self.sample_rows]
            return ClassifierProfile(space, classifier_rows(space, values[order], codes[order]))
        return self._reconstruction_profile(space, values, codes)

    def _reconstruction_profile(
        self, space: FeatureSpace, values: np.ndarray, codes: np.ndarray
    ) -> ReconstructionProfile:
        """The transforms fitted on the whole reference, and the reference's cross-fitted errors."""
        sizes = tuple(len(v) for v in space.vocabularies)
        transform = fit_reconstruction(values, codes, sizes, float(self.variance))
        errors = cross_fitted_errors(values, codes, sizes, len(transform.components))
        if not errors.mean() > 0:
            raise NotApplicable("the reference's rows lie on their principal components: no error to compare")
        mean, std = float(errors.mean()), float(errors.std(ddof=1))
        return ReconstructionProfile(space, transform, mean, std, len(errors))

    def evaluate(
        self, current: pd.DataFrame, profile: ReconstructionProfile | ClassifierProfile, columns: Columns
    ) -> list[CheckResult]:
        numeric, codes = profile.space.read(current, "batch")
        details = {
            "features": profile.space.size,
            "imputed_values": int(np.isnan(numeric).sum() + (codes < 0).sum()),
            "unseen_values": int((codes >= np.array([len(v) for v in profile.space.vocabularies])).sum()),
        }
        if isinstance(profile, ClassifierProfile):
            return [self._classified(profile, numeric, codes, details)]
        return [self._reconstructed(profile, numeric, codes, details)]

    def _reconstructed(
        self, profile: ReconstructionProfile, numeric: np.ndarray, codes: np.ndarray, details: dict[str, Any]
    ) -> CheckResult:
        errors = profile.transform.errors(numeric, codes)
        change = error_change(errors, profile)
        metrics = {
            "reconstruction_error": float(errors.mean()),
            "reference_error": profile.error_mean,
            "reconstruction_error_change": change.estimate,
        }
        details |= {
            "components": len(profile.transform.components),
            "explained_variance": profile.transform.explained,
            "reference_rows": profile.rows,
        }
        evidence = {"reconstruction_error_change": change}
        return self.result("*", metrics, rows=len(errors), details=details, evidence=evidence)

    def _classified(
        self, profile: ClassifierProfile, numeric: np.ndarray, codes: np.ndarray, details: dict[str, Any]
    ) -> CheckResult:
        batch = batch_sample(classifier_rows(profile.space, numeric, codes), self.sample_rows)
        reference = profile.sample[: math.ceil(self.reference_ratio * len(batch))]
        categorical = np.arange(profile.space.size) >= len(profile.space.numeric)
        aucs = domain_auc(reference, batch, categorical)
        auc = float(np.mean(aucs))
        change = normal(auc - NO_DRIFT_AUC, fold_mean_standard_error(auc, len(batch), len(reference)))
        metrics = {"domain_auc": auc, "domain_auc_change": change.estimate}
        details |= {"batch_rows": len(batch), "reference_rows": len(reference), "fold_aucs": aucs}
        evidence = {"domain_auc_change": change}
        return self.result("*", metrics, rows=len(numeric), details=details, evidence=evidence)
