"""The operators' contract without a scheduler: execute() with a stand-in task context.

Outcome mapping (as `driftline run` maps it to exit codes), the XCom payload, backfill runs without
alerts, connections for the history database and Slack, and the check operator against scipy.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from scipy import stats
from sqlalchemy import create_engine, text

from driftline_airflow.batches import chosen_batch, stray_run_note
from driftline_airflow.connections import resolve_store_url, sqlalchemy_url, with_slack_connection
from driftline_airflow.driver import BACKFILL_SKIP, AirflowDriver
from driftline_airflow.operators import DriftlineCheckOperator, DriftlineMonitorOperator
from driftline_airflow.xcom import MAX_FAILING, failing_checks, verdict

SPEC = """\
name: unit
reference: {{path: ref.csv}}
batches: {{path: "batches/{{batch}}.csv"}}
columns: {{numeric: [x]}}
checks: [drift.numeric]
fail_on: high
execution: {{isolation: thread, workers: 1}}
alerts: {alerts}
"""


class FakeTI:
    """The parts of a runtime task instance the operators use."""

    id = "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
    log_url = None

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value, allow_nan=False)  # XCom is strict JSON
        self.pushed[key] = value


def context(run_type: str = "manual") -> dict[str, Any]:
    return {"ti": FakeTI(), "dag_run": SimpleNamespace(run_type=run_type)}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small monitor: a normal reference, a batch like it, a shifted batch, an empty batch."""
    rng = np.random.default_rng(3)
    (tmp_path / "batches").mkdir()
    pd.DataFrame({"x": rng.normal(0, 1, 2000)}).to_csv(tmp_path / "ref.csv", index=False)
    pd.DataFrame({"x": rng.normal(0, 1, 1000)}).to_csv(tmp_path / "batches" / "2024-01-01.csv", index=False)
    pd.DataFrame({"x": rng.normal(1.5, 1, 1000)}).to_csv(tmp_path / "batches" / "2024-01-02.csv", index=False)
    (tmp_path / "batches" / "2024-01-03.csv").write_text("x\n")
    (tmp_path / "monitor.yaml").write_text(SPEC.format(alerts="{console: true}"))
    monkeypatch.setenv("DRIFTLINE_DATABASE_URL", f"sqlite:///{tmp_path / 'history.db'}")
    return tmp_path


def monitor(project: Path, batch: str, **kwargs: Any) -> DriftlineMonitorOperator:
    return DriftlineMonitorOperator(
        task_id="monitor", spec_path=str(project / "monitor.yaml"), batch_id=batch, **kwargs
    )


def stored(project: Path) -> list[tuple[str, str]]:
    with create_engine(f"sqlite:///{project / 'history.db'}").connect() as conn:
        return [tuple(r) for r in conn.execute(text("SELECT batch_id, status FROM runs ORDER BY id"))]


def test_passing_batch_returns_the_summary(project: Path) -> None:
    ctx = context()
    summary = monitor(project, "2024-01-01").execute(ctx)
    assert summary["status"] == "passed" and summary["batch_id"] == "2024-01-01" and summary["rows"] == 1000
    assert summary["failing_checks"] == [] and "return_value" not in ctx["ti"].pushed
    assert Path(summary["report_path"]).is_file()
    # the report link: the HTML report's file URI when no template is configured
    html = project / ".driftline" / "reports" / "unit" / "2024-01-01" / "report.html"
    assert ctx["ti"].pushed["driftline_report_url"] == summary["report_url"] == html.as_uri()
    assert html.is_file()
    assert stored(project) == [("2024-01-01", "passed")]


def test_drifted_batch_fails_after_pushing_the_summary(project: Path) -> None:
    ctx = context()
    with pytest.raises(
        AirflowFailException, match=r"worst severity high reached fail_on=high \(drift.numeric\[x\]"
    ):
        monitor(project, "2024-01-02").execute(ctx)
    pushed = ctx["ti"].pushed["return_value"]
    assert pushed["status"] == "failed" and pushed["failing_checks"][0]["target"] == "x"
    assert pushed["alerts"]["destination"] == "console" and pushed["alerts"]["delivered"] == 1
    assert [(c["kind"], c["target"]) for c in pushed["alerts"]["changes"]] == [("opened", "x")]
    assert stored(project) == [("2024-01-02", "failed")]


def test_fail_on_none_lets_the_task_succeed_but_stores_the_verdict(project: Path) -> None:
    summary = monitor(project, "2024-01-02", fail_on="none").execute(context())
    assert summary["status"] == "failed" and summary["failing_checks"] == []
    assert stored(project) == [("2024-01-02", "failed")]


def test_lower_fail_on_fails_a_batch_the_spec_passes(project: Path) -> None:
    with pytest.raises(ValueError, match="fail_on must be one of"):
        monitor(project, "2024-01-01", fail_on="severe")
    summary = monitor(project, "2024-01-02", fail_on="high", alerts=False)
    with pytest.raises(AirflowFailException):
        summary.execute(context())


def test_empty_batch_is_skipped_and_stored(project: Path) -> None:
    ctx = context()
    with pytest.raises(AirflowSkipException, match="empty"):
        monitor(project, "2024-01-03").execute(ctx)
    assert ctx["ti"].pushed["return_value"]["status"] == "empty"
    assert stored(project) == [("2024-01-03", "empty")]


def test_bad_spec_and_missing_batch_fail_without_retry(project: Path) -> None:
    (project / "bad.yaml").write_text("name: bad\nchecks: []\n")
    with pytest.raises(AirflowFailException, match=r"bad\.yaml"):
        DriftlineMonitorOperator(task_id="m", spec_path=str(project / "bad.yaml")).execute(context())
    with pytest.raises(AirflowFailException, match=r"2030-01-01\.csv: no such file"):
        monitor(project, "2030-01-01").execute(context())


def test_backfill_runs_store_results_without_alerts(project: Path) -> None:
    spec = (
        SPEC.format(alerts="{console: true}")
        + "retrain: {min_severity: high, 'on': [drift], command: [touch, started]}\n"
    )
    (project / "monitor.yaml").write_text(spec)
    ctx = context("backfill")
    with pytest.raises(AirflowFailException):
        monitor(project, "2024-01-02").execute(ctx)
    pushed = ctx["ti"].pushed["return_value"]
    assert pushed["alerts"] == {"skipped": "alerts disabled for this run"}
    # the XCom says what happened: the command was not started, the retraining conf is there for the DAG
    assert pushed["retraining"] == {"command": {"skipped": BACKFILL_SKIP}}
    assert pushed["retrain_conf"]["batch_id"] == "2024-01-02"
    assert not (project / "started").exists()
    ctx = context("backfill")
    with pytest.raises(AirflowFailException):
        monitor(project, "2024-01-02", backfill_alerts=True).execute(ctx)
    pushed = ctx["ti"].pushed["return_value"]
    assert "skipped" not in pushed["alerts"]
    assert pushed["retraining"]["command"] == {"returncode": 0} and (project / "started").exists()
    assert pushed["retraining"]["incidents"]  # requested once for the incident the failure opened
    assert stored(project) == [("2024-01-02", "failed")]  # one copy of the batch


def failing(check: str, target: str, severity: str = "high", importance: float | None = None) -> Any:
    from driftline.checks.result import CheckResult

    details = {"importance": {"share": importance, "rank": 1, "of": 9}} if importance is not None else {}
    return CheckResult(check=check, target=target, severity=severity, details=details)


def run_summary(results: list[Any]) -> Any:
    from driftline.tasks.run.pipeline import RunSummary

    return RunSummary("m", "b1", "2024-01-01T00:00:00", 100, "failed", "high", results)


def test_verdict_lists_model_failures_first_and_all_of_them() -> None:
    features = [failing("drift.numeric", f"f{i}") for i in range(7)]
    features[6] = failing("drift.numeric", "f6", importance=0.4)  # the feature the model relies on most
    model = [failing("drift.prediction", "prediction"), failing("performance.overall", "accuracy")]
    medium = failing("performance.calibration", "ece", severity="medium")
    summary = run_summary([*features, medium, *model])
    assert verdict(summary, "high") == (
        "m batch b1: worst severity high reached fail_on=high (drift.prediction[prediction], "
        "performance.overall[accuracy], drift.numeric[f6], drift.numeric[f0], drift.numeric[f1], "
        "drift.numeric[f2], drift.numeric[f3], +2 more)"
    )
    # at fail_on=medium the medium model-level result is listed too, after the high ones
    assert "performance.overall[accuracy], performance.calibration[ece], drift.numeric[f6]" in verdict(
        summary, "medium"
    )
    many_model = [failing("fairness.statistical_parity", f"SEX={i}") for i in range(8)]
    text = verdict(run_summary([*features[:3], *many_model]), "high")
    assert all(f"fairness.statistical_parity[SEX={i}]" in text for i in range(8))
    assert "more" not in text and text.index("SEX=7") < text.index("drift.numeric[f0]")


def test_xcom_failing_checks_keep_every_model_failure() -> None:
    features = [failing("drift.numeric", f"f{i}") for i in range(25)]
    listed = failing_checks(run_summary([*features, failing("performance.overall", "auc")]), "high")
    assert [c["target"] for c in listed] == ["auc"] + [f"f{i}" for i in range(MAX_FAILING)]


def test_a_target_cannot_forge_a_log_line() -> None:
    text = verdict(run_summary([failing("drift.numeric", "x\nERROR fake\x1b[31m")]), "high")
    assert "\n" not in text and "\x1b" not in text and "x\\nERROR fake\\x1b[31m" in text


def run_context(
    run_type: str,
    logical: datetime | None = None,
    interval_start: datetime | None = None,
    conf: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A task context the way Airflow 3 builds it: date keys only when the run has a logical date."""
    ctx = {"ti": FakeTI(), "dag_run": SimpleNamespace(run_type=run_type, conf=conf or {})}
    if logical is not None:
        ctx.update(logical_date=logical, data_interval_start=interval_start)
    return ctx


def test_batch_of_each_kind_of_run() -> None:
    june, dec = datetime(2018, 6, 1, tzinfo=UTC), datetime(2018, 12, 1, tzinfo=UTC)
    today = datetime(2026, 6, 1, tzinfo=UTC)
    # the UI's Trigger button: no logical date, an empty conf or one naming the batch
    assert chosen_batch(run_context("manual"), None, "%Y-%m")[0] is None
    assert chosen_batch(run_context("manual", conf={"batch_id": "2017-06"}), None, "%Y-%m")[0] == "2017-06"
    # a manual run given a logical date: Airflow infers its interval from today, the date names the batch
    assert chosen_batch(run_context("manual", dec, today), None, "%Y-%m")[0] == "2018-12"
    # scheduled and backfill runs: the start of their interval
    assert chosen_batch(run_context("backfill", june, june), None, "%Y-%m-%d")[0] == "2018-06-01"
    assert chosen_batch(run_context("scheduled", dec, june), None, "%Y-%m")[0] == "2018-06"
    # the conf wins over the operator's batch_id, which wins over the run's date
    assert chosen_batch(run_context("backfill", june, june), "2017-12", "%Y-%m")[0] == "2017-12"
    ctx = run_context("backfill", june, june, conf={"batch_id": "2016-06"})
    assert chosen_batch(ctx, "2017-12", "%Y-%m")[0] == "2016-06"
    with pytest.raises(ValueError, match="conf gives batch_id 7"):
        chosen_batch(run_context("manual", conf={"batch_id": 7}), None, "%Y-%m")


def test_only_a_manual_run_with_a_logical_date_is_told_about_backfills() -> None:
    dec = datetime(2018, 12, 1, tzinfo=UTC)
    note = stray_run_note(run_context("manual", dec, dec))
    assert note is not None and "2018-12-01" in note and "--reprocess-behavior completed" in note
    assert stray_run_note(run_context("manual")) is None
    assert stray_run_note(run_context("backfill", dec, dec)) is None


def test_a_run_without_logical_date_monitors_the_newest_batch(project: Path) -> None:
    ctx = run_context("manual")
    with pytest.raises(AirflowSkipException):  # the newest batch, 2024-01-03, is empty
        DriftlineMonitorOperator(task_id="m", spec_path=str(project / "monitor.yaml")).execute(ctx)
    assert ctx["ti"].pushed["return_value"]["batch_id"] == "2024-01-03"
    ctx = run_context("manual", conf={"batch_id": "2024-01-01"})
    summary = DriftlineMonitorOperator(task_id="m", spec_path=str(project / "monitor.yaml")).execute(ctx)
    assert summary["batch_id"] == "2024-01-01"
    with pytest.raises(AirflowFailException, match="give the batch id as text"):
        monitor(project, None).execute(run_context("manual", conf={"batch_id": ["2024-01-01"]}))


def test_templated_fields() -> None:
    assert set(DriftlineMonitorOperator.template_fields) == {"spec_path", "batch_id", "store_url"}
    # no template by default: a run without a logical date has no `data_interval_start` to render
    assert DriftlineMonitorOperator(task_id="m", spec_path="s.yaml").batch_id is None
    templated = set(DriftlineCheckOperator.template_fields)
    assert {"check", "reference", "current", "check_params", "model"} <= templated


# --- connections -------------------------------------------------------------------------------------


def test_database_url_from_connection_fields() -> None:
    pg = SimpleNamespace(
        conn_id="db",
        conn_type="postgres",
        host="db.local",
        port=5432,
        login="ml",
        password="p@ss/w",
        schema="drift",
        extra_dejson={},
    )
    assert sqlalchemy_url(pg) == "postgresql+psycopg://ml:p%40ss%2Fw@db.local:5432/drift"
    explicit = SimpleNamespace(conn_id="db", conn_type="generic", extra_dejson={"url": "sqlite:///x.db"})
    assert sqlalchemy_url(explicit) == "sqlite:///x.db"
    with pytest.raises(ValueError, match="conn type 'mysql'"):
        sqlalchemy_url(SimpleNamespace(conn_id="db", conn_type="mysql", extra_dejson={}))


def pg_connection(**fields: Any) -> SimpleNamespace:
    base = {
        "conn_id": "db",
        "conn_type": "postgres",
        "host": "db.local",
        "port": 5432,
        "login": "ml",
        "password": "pw",
        "schema": "drift",
        "extra_dejson": {},
    }
    return SimpleNamespace(**{**base, **fields})


def test_connection_extras_reach_the_driver_as_query_parameters() -> None:
    from sqlalchemy import make_url
    from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg

    extras = {"sslmode": "verify-full", "sslrootcert": "/etc/ssl/ca b&c.pem", "connect_timeout": 10}
    url = make_url(sqlalchemy_url(pg_connection(extra_dejson={**extras, "cursor": "dictcursor"})))
    # what psycopg is given to connect with (the PostgreSQL hook's own `cursor` extra left out)
    _, kwargs = PGDialect_psycopg().create_connect_args(url)
    assert {k: kwargs[k] for k in extras} == {k: str(v) for k, v in extras.items()}
    assert "cursor" not in kwargs and kwargs["host"] == "db.local" and kwargs["dbname"] == "drift"
    # an explicit URL keeps its own query and gains the other extras
    given = {"url": "postgresql+psycopg://u@h/d?application_name=drift", "sslmode": "require"}
    url = make_url(sqlalchemy_url(pg_connection(extra_dejson=given)))
    assert dict(url.query) == {"application_name": "drift", "sslmode": "require"}
    sqlite = SimpleNamespace(conn_id="db", conn_type="sqlite", host="/tmp/h.db", extra_dejson={"timeout": 5})
    assert sqlalchemy_url(sqlite) == "sqlite:////tmp/h.db?timeout=5"
    with pytest.raises(ValueError, match="extra 'options' is a dict"):
        sqlalchemy_url(pg_connection(extra_dejson={"options": {"a": 1}}))
    with pytest.raises(ValueError, match="extra 'iam' asks for a cloud token"):
        sqlalchemy_url(pg_connection(extra_dejson={"iam": True, "aws_conn_id": "aws"}))


def test_a_schema_holding_url_syntax_stays_the_database_name() -> None:
    from sqlalchemy import make_url

    url = make_url(sqlalchemy_url(pg_connection(schema="prod?host=evil&sslmode=disable")))
    assert (url.host, url.database, dict(url.query)) == ("db.local", "prod?host=evil&sslmode=disable", {})


@pytest.mark.parametrize("host", ["evil.local/x", "db.local?sslmode=disable"])
def test_a_host_holding_url_syntax_is_refused(host: str) -> None:
    # SQLAlchemy writes a host as it is: a host that would read back as another one is refused
    with pytest.raises(ValueError, match=re.escape(f"connection 'db': its host '{host}' cannot be written")):
        sqlalchemy_url(pg_connection(host=host))


def test_login_and_password_are_url_encoded() -> None:
    from sqlalchemy import make_url

    url = make_url(sqlalchemy_url(pg_connection(login="m l@x", password="p@ss/w:?#&=")))
    assert (url.username, url.password, url.host, url.database) == (
        "m l@x",
        "p@ss/w:?#&=",
        "db.local",
        "drift",
    )


def test_store_url_precedence(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from driftline.tasks.config.spec import load_spec

    spec = load_spec(project / "monitor.yaml")
    monkeypatch.setenv("AIRFLOW_CONN_UNIT_DB", json.dumps({"conn_type": "sqlite", "host": "/tmp/conn.db"}))
    assert resolve_store_url(spec, "sqlite:///op.db", "unit_db") == "sqlite:///op.db"  # operator argument
    assert (
        resolve_store_url(spec, None, "unit_db") is None
    )  # $DRIFTLINE_DATABASE_URL is set: the core reads it
    monkeypatch.delenv("DRIFTLINE_DATABASE_URL")
    assert resolve_store_url(spec, None, "unit_db") == "sqlite:////tmp/conn.db"  # then the connection
    assert resolve_store_url(spec, None, "undefined_conn") is None  # then the core's default
    with_url = spec.model_copy(update={"store_url": "sqlite:///spec.db"})
    assert resolve_store_url(with_url, None, "unit_db") == "sqlite:///spec.db"


class FakeSlack(BaseHTTPRequestHandler):
    """Answers every Slack Web API method with ok, recording the method and the bearer token."""

    calls: ClassVar[list[tuple[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        FakeSlack.calls.append((self.path, self.headers.get("Authorization", "")))
        body = json.dumps({"ok": True, "ts": "1.0", "channel": "C1", "messages": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def slack_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeSlack)
    FakeSlack.calls = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/api/"
    server.shutdown()


def test_slack_token_from_the_connection_reaches_slack(
    project: Path, slack_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from driftline.tasks.config.spec import load_spec

    alerts = f'{{min_severity: medium, slack: {{channel: "#ml", base_url: "{slack_api}"}}}}'
    (project / "monitor.yaml").write_text(SPEC.format(alerts=alerts))
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.setenv(
        "AIRFLOW_CONN_DRIFTLINE_SLACK", json.dumps({"conn_type": "slack", "password": "xoxb-conn"})
    )
    spec = with_slack_connection(load_spec(project / "monitor.yaml"), "driftline_slack")
    assert spec.alerts.slack.token_block == "driftline_slack"
    assert AirflowDriver(spec).secret("driftline_slack") == "xoxb-conn"

    with pytest.raises(AirflowFailException):
        monitor(project, "2024-01-02").execute(context())
    posts = [auth for path, auth in FakeSlack.calls if path.endswith("chat.postMessage")]
    assert posts == ["Bearer xoxb-conn"]

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-env")  # the environment variable wins
    assert (
        with_slack_connection(load_spec(project / "monitor.yaml"), "driftline_slack").alerts.slack.token_block
        is None
    )


def test_slack_webhook_from_the_connection(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from driftline.tasks.config.spec import load_spec

    (project / "monitor.yaml").write_text(SPEC.format(alerts="{slack: {webhook_url_env: UNIT_HOOK}}"))
    monkeypatch.delenv("UNIT_HOOK", raising=False)
    monkeypatch.setenv(
        "AIRFLOW_CONN_HOOK",
        json.dumps({"conn_type": "slackwebhook", "password": "https://hooks.example/T/B/x"}),
    )
    slack = with_slack_connection(load_spec(project / "monitor.yaml"), "hook").alerts.slack
    assert (
        slack.webhook_url.get_secret_value() == "https://hooks.example/T/B/x"
        and slack.webhook_url_env is None
    )
    assert "hooks.example" not in repr(slack)


# --- the check operator ------------------------------------------------------------------------------


@pytest.fixture
def tables(tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    rng = np.random.default_rng(11)
    ref = pd.DataFrame({"x": rng.normal(0, 1, 1500), "y": rng.integers(0, 2, 1500)})
    cur = pd.DataFrame({"x": rng.normal(0.4, 1.2, 900), "y": rng.integers(0, 2, 900)})
    ref.to_parquet(tmp_path / "ref.parquet")
    cur.to_csv(tmp_path / "cur.csv", index=False)
    with sqlite3.connect(tmp_path / "src.db") as conn:
        ref.to_sql("ref", conn, index=False)
        cur.to_sql("cur", conn, index=False)
    return ref, cur, tmp_path


def ks(results: list[dict[str, Any]], target: str) -> float:
    (hit,) = [r for r in results if r["target"] == target]
    return hit["metrics"]["ks_statistic"]


def test_check_operator_on_files_matches_scipy(tables: tuple[pd.DataFrame, pd.DataFrame, Path]) -> None:
    ref, cur, folder = tables
    op = DriftlineCheckOperator(
        task_id="check",
        check="drift.numeric",
        reference=str(folder / "ref.parquet"),
        current=str(folder / "cur.csv"),
        check_params={"numeric": ["x"], "bins": 10},
    )
    results = op.execute(context())
    assert [r["target"] for r in results] == ["x"]
    assert ks(results, "x") == pytest.approx(stats.ks_2samp(ref["x"], cur["x"]).statistic, abs=1e-12)
    assert results[0]["details"]["bins"] == 10


def test_check_operator_on_sql_queries(
    tables: tuple[pd.DataFrame, pd.DataFrame, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, cur, folder = tables
    monkeypatch.setenv(
        "AIRFLOW_CONN_SOURCE_DB", json.dumps({"conn_type": "sqlite", "host": str(folder / "src.db")})
    )
    op = DriftlineCheckOperator(
        task_id="check",
        check=["drift.numeric"],
        reference={"sql": "SELECT x FROM ref", "url": f"sqlite:///{folder / 'src.db'}"},
        current={
            "sql": "SELECT x FROM cur WHERE x > :low",
            "conn_id": "source_db",
            "parameters": {"low": -10},
        },
        columns={"numeric": ["x"]},
    )
    results = op.execute(context())
    assert ks(results, "x") == pytest.approx(stats.ks_2samp(ref["x"], cur["x"]).statistic, abs=1e-12)


def test_check_operator_bad_input_and_fail_on(tables: tuple[pd.DataFrame, pd.DataFrame, Path]) -> None:
    _, _, folder = tables
    files = {"reference": str(folder / "ref.parquet"), "current": str(folder / "cur.csv")}
    with pytest.raises(AirflowFailException, match=r"no\.such"):
        DriftlineCheckOperator(task_id="c", check="no.such", **files).execute(context())
    with pytest.raises(AirflowFailException, match=r"missing\.csv: no such file"):
        DriftlineCheckOperator(
            task_id="c",
            check="drift.numeric",
            reference=str(folder / "missing.csv"),
            current=files["current"],
        ).execute(context())
    ctx = context()
    with pytest.raises(AirflowFailException, match="reached fail_on=low"):
        DriftlineCheckOperator(
            task_id="c", check="drift.numeric", check_params={"numeric": ["x"]}, fail_on="low", **files
        ).execute(ctx)
    assert ctx["ti"].pushed["return_value"][0]["target"] == "x"


MODEL_MODULE = """
import numpy as np
from sklearn.linear_model import LogisticRegression


def build():
    x = np.linspace(-2, 2, 200).reshape(-1, 1)
    return LogisticRegression().fit(x, (x[:, 0] > 0.1).astype(int))
"""


def test_check_operator_scores_both_tables_with_a_model(
    tables: tuple[pd.DataFrame, pd.DataFrame, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sklearn.metrics import accuracy_score

    _, cur, folder = tables
    (folder / "operator_model.py").write_text(MODEL_MODULE)
    monkeypatch.syspath_prepend(str(folder))

    def scored_by(model: str) -> list[dict[str, Any]]:
        return DriftlineCheckOperator(
            task_id="check",
            check="performance.overall",
            reference=str(folder / "ref.parquet"),
            current=str(folder / "cur.csv"),
            columns={"numeric": ["x"], "label": "y"},
            model=model,
        ).execute(context())

    (accuracy,) = [r for r in scored_by("operator_model:build") if r["target"] == "accuracy"]
    import operator_model

    predicted = operator_model.build().predict(cur[["x"]].to_numpy())
    assert accuracy["status"] == "ok"
    assert accuracy["metrics"]["current"] == pytest.approx(accuracy_score(cur["y"], predicted))
    with pytest.raises(AirflowFailException, match="operator_model:missing"):
        scored_by("operator_model:missing")
