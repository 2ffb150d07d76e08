"""An example retraining flow: fit a candidate on the latest labelled batch and compare it with production.

Started by the monitor (`retrain.deployment` in the spec) or by the automation in
`deployments/prefect.yaml` when the event `driftline.monitor.failed` arrives. Replace the body with
your own training pipeline; keep the parameters, which the monitor and the automation pass.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import flow, get_run_logger

from driftline.checks.columns import infer_columns
from driftline.tasks.config.spec import load_spec
from driftline.tasks.sources import open_source


@flow(name="driftline-retrain")
def retrain(monitor: str, batch_id: str, severity: str, spec_path: str | None = None) -> dict[str, Any]:
    """Train a candidate on the reference plus the failing batch; report both models' AUC on the batch."""
    logger = get_run_logger()
    logger.info("retraining requested by monitor %s (batch %s, severity %s)", monitor, batch_id, severity)
    if spec_path is None:
        return {"monitor": monitor, "batch_id": batch_id, "trained": False, "reason": "no spec_path given"}
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    spec = load_spec(spec_path)
    limits = spec.execution.read_limits
    reference = open_source(spec, spec.reference, "reference").read(limits)
    batch = open_source(spec, spec.batches, "batches").read_batch(batch_id, limits).frame
    columns = infer_columns(reference, spec.columns)
    features = list(columns.features)
    train_part, holdout = train_test_split(batch, test_size=0.5, random_state=0)
    training = pd.concat([reference, train_part], ignore_index=True)
    categorical = [c for c in columns.categorical if c in features]
    training[categorical] = training[categorical].astype("category")
    holdout = holdout.astype({c: training[c].dtype for c in categorical})
    candidate = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0)
    candidate.fit(training[features], training[columns.label])
    candidate_auc = roc_auc_score(holdout[columns.label], candidate.predict_proba(holdout[features])[:, 1])
    production_auc = roc_auc_score(holdout[columns.label], holdout[columns.score]) if columns.score else None
    path = spec.base_dir / "models" / (re.sub(r"[^A-Za-z0-9_.-]", "_", f"{monitor}-{batch_id}") + ".pkl")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(candidate))
    logger.info("candidate AUC %.4f vs production %s; saved to %s", candidate_auc, production_auc, path)
    return {
        "monitor": monitor,
        "batch_id": batch_id,
        "trained": True,
        "candidate_auc": float(candidate_auc),
        "production_auc": None if production_auc is None else float(production_auc),
        "model_path": str(Path(path).resolve()),
    }
