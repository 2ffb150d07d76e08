"""The driftline check catalog: pure computations on pandas/numpy, fitted on a reference, run per batch.

The public names are imported on first use (`driftline.lazy`), so importing a light module of the
package (`catalog_index`, `errors`) never imports pandas, numpy or scipy.
"""

from driftline.lazy import exports

_PUBLIC = {
    "Check": "driftline.checks.base",
    "Metric": "driftline.checks.base",
    "Columns": "driftline.checks.columns",
    "infer_columns": "driftline.checks.columns",
    "CheckInputError": "driftline.checks.errors",
    "NotApplicable": "driftline.checks.errors",
    "Mergeable": "driftline.checks.mergeable",
    "create": "driftline.checks.registry",
    "describe": "driftline.checks.registry",
    "get": "driftline.checks.registry",
    "names": "driftline.checks.registry",
    "register": "driftline.checks.registry",
    "CheckResult": "driftline.checks.result",
    "severity_for": "driftline.checks.result",
    "worst_severity": "driftline.checks.result",
    "run_check": "driftline.checks.runner",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = exports(__name__, _PUBLIC)
