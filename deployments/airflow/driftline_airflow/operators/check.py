"""`DriftlineCheckOperator`: catalog checks on a reference and a current table, results to XCom.

The `driftline evaluate` interface as a task: each table is a CSV or Parquet file, or a SQL query (run
through SQLAlchemy on a URL or an Airflow connection); the check is built from the catalog with its
parameters, the column roles are inferred from the reference, and every result goes to XCom.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from driftline_airflow.connections import get_connection, sqlalchemy_url
from driftline_airflow.xcom import strict_json

TableSource = str | Mapping[str, Any]


def _in_task() -> Any:
    """Checks evaluated in the task's own process, one at a time: Airflow already isolates and times
    out the task (`execution_timeout`), and its task process runs threads a fork would copy."""
    from driftline.tasks.config.spec import ExecutionSpec

    return ExecutionSpec(isolation="thread", workers=1)


def load_table(source: TableSource, role: str) -> Any:
    """A frame from a file path or URL (`s3://...`), or from `{"sql": QUERY, "url": URL}` /
    `{"sql": QUERY, "conn_id": ID}`."""
    from driftline.tasks.sources import read_sql, read_table

    if isinstance(source, str | Path):
        return read_table(source)
    if not isinstance(source, Mapping) or "sql" not in source:
        raise ValueError(f"{role}: give a file path or a mapping with `sql` and `url` or `conn_id`")
    url = source.get("url")
    if not url:
        conn_id = source.get("conn_id")
        conn = get_connection(conn_id)
        if conn is None:
            raise ValueError(f"{role}: no `url`, and connection {conn_id!r} is not defined")
        url = sqlalchemy_url(conn)
    return read_sql(str(url), str(source["sql"]), dict(source.get("parameters") or {}))


class DriftlineCheckOperator(BaseOperator):
    """Evaluate catalog check(s) on `current` against `reference` and return their results.

    :param check: a check name (`drift.numeric`) or a list of names. Templated.
    :param reference: the reference table: a CSV/Parquet path, or `{"sql": ..., "url": ...}` /
        `{"sql": ..., "conn_id": ...}`. Templated.
    :param current: the current table, in the same forms. Templated.
    :param check_params: check parameters and column roles (`bins: 20`, `label: y`,
        `numeric: [a, b]`), as `driftline evaluate --param`. (Named so to keep Airflow's own `params`.)
        Templated.
    :param columns: column roles, given apart from the check parameters (merged over them).
    :param model: the model's `module:attribute` import path (an estimator, or a callable returning
        one): both tables are scored first, so performance and fairness checks run on raw tables.
        Templated.
    :param fail_on: fail the task when a result reaches this severity; default never.
    """

    template_fields: Sequence[str] = ("check", "reference", "current", "check_params", "model")
    ui_color = "#e8f4f8"

    def __init__(
        self,
        *,
        check: str | list[str],
        reference: TableSource,
        current: TableSource,
        check_params: Mapping[str, Any] | None = None,
        columns: Mapping[str, Any] | None = None,
        model: str | None = None,
        fail_on: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.check = check
        self.reference = reference
        self.current = current
        self.check_params = dict(check_params or {})
        self.columns = dict(columns or {})
        self.model = model
        self.fail_on = fail_on

    def execute(self, context: Any) -> list[dict[str, Any]]:
        """Load both tables, run every check, push the results; fail on bad input or at `fail_on`."""
        from driftline.checks.columns import split_roles
        from driftline.checks.errors import CheckInputError
        from driftline.checks.result import worst_severity
        from driftline.tasks.config.spec import severity_at_least
        from driftline.tasks.run.evaluate import evaluate
        from driftline.tasks.sources import SourceError

        names = [self.check] if isinstance(self.check, str) else list(self.check)
        params, roles = split_roles(self.check_params)
        roles.update(self.columns)
        try:
            reference = load_table(self.reference, "reference")
            current = load_table(self.current, "current")
            found = evaluate(
                names,
                reference,
                current,
                params=params,
                columns=roles,
                execution=_in_task(),
                model=self.model or None,
            )
        except (CheckInputError, SourceError, ValueError) as exc:
            raise AirflowFailException(str(exc)) from None
        results = [r.to_dict() for r in found]
        payload = strict_json(results)
        worst = worst_severity(r["severity"] for r in results if r["status"] == "ok")
        self.log.info("%s: %d result(s), worst severity %s", ", ".join(names), len(results), worst)
        if self.fail_on and severity_at_least(worst, self.fail_on):
            context["ti"].xcom_push(key="return_value", value=payload)
            raise AirflowFailException(
                f"{', '.join(names)}: worst severity {worst} reached fail_on={self.fail_on}"
            )
        return payload
