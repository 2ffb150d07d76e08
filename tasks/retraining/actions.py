"""Acting on a failing model without an orchestrator: run a command or call a webhook.

Each action happens once per (monitor, batch, reference): a marker file under the monitor's state
folder remembers that it was started, so re-running a batch does not retrain twice. Orchestrator
drivers add their own actions (a Prefect deployment run or event) on top of these.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import urllib.request
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from driftline.tasks.alerts.config import http_url_problem
from driftline.tasks.config.spec import RetrainSpec
from driftline.tasks.tools.files import write_private_file
from driftline.tasks.tools.safe_text import header_value

if TYPE_CHECKING:
    from driftline.tasks.run.context import RunContext

log = logging.getLogger(__name__)

FAILED_EVENT = "driftline.monitor.failed"
COMMAND_TIMEOUT_S = 600
WEBHOOK_TIMEOUT_S = 30


@dataclass(frozen=True)
class RetrainRequest:
    """What a retraining action is told: which monitor and batch failed, how badly, and why."""

    monitor: str
    batch_id: str
    run_key: str  # identifies the evaluation (monitor, batch, reference): the idempotency key
    severity: str
    failing_checks: list[dict[str, Any]]
    spec_path: str | None

    @property
    def key(self) -> str:
        return f"driftline:{self.monitor}:{self.batch_id}:{self.run_key}"

    def payload(self) -> dict[str, Any]:
        """The JSON a command (on stdin) or a webhook (as body) receives."""
        return {"event": FAILED_EVENT, "idempotency_key": self.key, **asdict(self)}


def _marker(state_dir: Path, request: RetrainRequest, action: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.key)
    return state_dir / "retrain" / f"{safe}.{action}"


def run_command(argv: list[str], request: RetrainRequest, cwd: Path) -> dict[str, Any]:
    """Start `argv` with the payload on stdin and DRIFTLINE_* variables; wait for it (bounded)."""
    env = {
        **os.environ,
        "DRIFTLINE_MONITOR": request.monitor,
        "DRIFTLINE_BATCH_ID": request.batch_id,
        "DRIFTLINE_SEVERITY": request.severity,
        "DRIFTLINE_SPEC_PATH": request.spec_path or "",
    }
    done = subprocess.run(
        argv,
        input=json.dumps(request.payload()),
        text=True,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return {"returncode": done.returncode}


def post_webhook(url: str, request: RetrainRequest) -> dict[str, Any]:
    """POST the payload as JSON, with the idempotency key as a header the receiver can deduplicate on
    (percent-encoded: a header is Latin-1, a batch id any script)."""
    body = json.dumps(request.payload()).encode()
    headers = {"Content-Type": "application/json", "Idempotency-Key": header_value(request.key)}
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=WEBHOOK_TIMEOUT_S) as reply:
        return {"status": reply.status}


def _webhook_url(spec: RetrainSpec) -> str | None:
    if spec.webhook_url:
        return spec.webhook_url
    return os.environ.get(spec.webhook_url_env) if spec.webhook_url_env else None


def _refused_url(spec: RetrainSpec, url: str) -> str | None:
    """Why the webhook URL (from the spec or its environment variable) is not called, or None."""
    problem = http_url_problem(url)
    return f"the webhook URL in ${spec.webhook_url_env} {problem}" if problem else None


def trigger_plain(spec: RetrainSpec, request: RetrainRequest, state_dir: Path) -> dict[str, Any]:
    """Run the spec's command and/or call its webhook, once per request key; returns what happened.

    A failure is reported in the outcome (and logged), never raised: the run is already stored.
    """
    actions: dict[str, Any] = {}
    if spec.command:
        actions["command"] = lambda: run_command(spec.command or [], request, state_dir.parent)
    if spec.webhook_url or spec.webhook_url_env:
        url = _webhook_url(spec) or ""
        refused = f"${spec.webhook_url_env} is not set" if not url else _refused_url(spec, url)
        actions["webhook"] = _missing(refused) if refused else (lambda: post_webhook(url, request))
    outcome: dict[str, Any] = {}
    for name, action in actions.items():
        marker = _marker(state_dir, request, name)
        if marker.exists():
            outcome[name] = {"skipped": "already started for this batch and reference"}
            continue
        try:
            outcome[name] = action()
        except Exception as exc:
            outcome[name] = {"error": f"{type(exc).__name__}: {exc}"}
            log.error("retraining %s failed: %s", name, outcome[name]["error"])
            continue
        write_private_file(marker, json.dumps(request.payload()).encode())
    return outcome


def _missing(reason: str) -> Any:
    def fail() -> dict[str, Any]:
        raise RuntimeError(reason)

    return fail


# What a run does about retraining: nothing (False), retrain a failing batch unless the monitor has a
# newer stored one (True), or retrain a failing batch whatever its age ("always": `backfill --retrain`).
Retraining = bool | Literal["always"]
RETRAIN_ALWAYS: Literal["always"] = "always"


def older_batch_skip(context: RunContext, batch_id: str, batch_time: datetime) -> dict[str, Any] | None:
    """Why retraining is left alone for this batch: the monitor stored a newer one (as for incidents),
    and it was not asked for whatever the batch's age; None when retraining goes ahead (also when the
    store cannot say: a failing model is retrained rather than missed)."""
    spec = context.spec
    if context.options.retrain == RETRAIN_ALWAYS:
        return None
    from sqlalchemy.orm import Session

    from driftline.tasks.alerts.incidents import newer_batch
    from driftline.tasks.history.db import connected_store

    try:
        with connected_store(context.database_url) as engine, Session(engine) as session:
            newer = newer_batch(session, spec.name, batch_id, batch_time)
    except Exception as exc:
        log.warning("newer batches not looked up, retraining anyway: %s: %s", type(exc).__name__, exc)
        return None
    if newer is None:
        return None
    reason = f"batch {batch_id} is older than batch {newer}: not retrained (backfill --retrain retrains it)"
    return {"skipped": reason}
