"""What a check's results are about (`Check.role`), and the groups of roles the views read: kept
apart from `checks.base` so the command line and the views read them without importing pandas."""

from collections.abc import Mapping

# Ranking, retraining, the comparison line, the history store and the site read this, never check names.
ROLES: Mapping[str, str] = {
    "feature_drift": "a shift of the input features or of their relations",
    "output_drift": "a shift of what the model outputs (its predictions or scores)",
    "label_drift": "a shift of the label",
    "performance": "the model's performance, measured against labels",
    "estimate": "the model's performance estimated without labels (`estimates` names the realised check)",
    "fairness": "a gap between protected groups",
    "subset": "a subset's performance against the whole batch or the reference",
    "attribution": "the slices that explain the model's errors",
    "data_quality": "abnormal, missing or invalid input values, the schema, expectations",
    "behaviour": "the model's answers to tests of its behaviour (perturbed inputs, test suites)",
    "summary": "a description of the data, never graded",
    "other": "not declared: ranked and alerted as an input-level check",
}
# Roles that judge the model itself rather than one input: ranked before the features.
MODEL_ROLES = frozenset({"output_drift", "label_drift", "performance", "estimate", "fairness"})
# Roles of drift checks: the site's drift share counts their graded results.
DRIFT_ROLES = frozenset({"feature_drift", "output_drift", "label_drift"})
# Roles whose failure is the model's own: by default only these start retraining (`retrain.on`).
RETRAIN_ROLES = frozenset({"performance", "estimate"})
