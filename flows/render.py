"""Readable terminal tables of check results and metric history (rich)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from driftline.checks.catalog_index import DATA_SUMMARY
from driftline.checks.result import format_number
from driftline.tasks.tools.safe_text import printable
from driftline.tasks.views.comparison import comparison_line
from driftline.tasks.views.ranking import importance_text, ranked
from driftline.tasks.views.result_rows import format_metrics

SEVERITY_STYLE = {"none": "green", "low": "yellow", "medium": "dark_orange", "high": "bold red"}
STATUS_STYLE = {"ok": "", "skipped": "dim", "error": "bold magenta"}


class SafeConsole(Console):
    """A console that prints control characters as escapes: a column name, batch id or error text from
    the data cannot clear the screen, move the cursor or plant a terminal hyperlink."""

    def render_str(self, text: str, **options: Any) -> Text:
        """Every printed string, table cell and title passes here before its markup is read."""
        return super().render_str(printable(text), **options)


def make_console(stderr: bool = False) -> Console:
    """A console that stays wide enough for result tables when output goes to a file or a pipe."""
    console = SafeConsole(stderr=stderr)
    if not console.is_terminal:
        console = SafeConsole(stderr=stderr, width=160)
    return console


def plain(value: object) -> str:
    """A value from the data as table text: brackets in it are shown, never read as markup."""
    return escape(str(value))


def results_table(
    results: Iterable[Mapping[str, Any]], title: str | None = None, show_ok: bool = True
) -> Table:
    """One row per result, in rank order (`tasks.views.ranking`): check, target (with its importance to the
    model), status, severity, the comparison with the reference (or key metrics), failing rows, reason."""
    table = Table(title=title, title_justify="left", expand=False)
    for name in (
        "check",
        "target",
        "status",
        "severity",
        "metrics [thresholds]",
        "failing",
        "impact",
        "reason",
    ):
        table.add_column(name, overflow="fold")
    for r in ranked(results):
        if not show_ok and r["status"] == "ok" and r["severity"] == "none":
            continue
        table.add_row(
            plain(r["check"]),
            plain(r["target"]) + (f"\n{importance}" if (importance := importance_text(r)) else ""),
            f"[{STATUS_STYLE[r['status']]}]{r['status']}" if STATUS_STYLE[r["status"]] else r["status"],
            f"[{SEVERITY_STYLE[r['severity']]}]{r['severity']}",
            plain(comparison_line(r) or format_metrics(r.get("metrics") or {}, r.get("thresholds"))),
            format_number(r.get("failing_rows")),
            format_number(r.get("model_impact")),
            plain(reason_cell(r)),
        )
    return table


def reason_cell(result: Mapping[str, Any], width: int = 120) -> str:
    """A result's reason cut to `width`, with a sustained claim's sentence (`details.sustained`) kept
    whole on a line of its own."""
    reason = result.get("reason") or ""
    sentence = ((result.get("details") or {}).get("sustained") or {}).get("sentence")
    if not sentence or not reason.endswith(sentence):
        return reason[:width]
    return f"{reason.removesuffix(sentence).removesuffix('; ')[:width]}\n{sentence}"


def history_table(rows: Iterable[Mapping[str, Any]], title: str | None = None) -> Table:
    """Metric history: one row per (batch, check, target, metric)."""
    table = Table(title=title, title_justify="left")
    for name in ("batch_time", "batch_id", "check", "target", "metric", "value", "severity", "status"):
        table.add_column(name, overflow="fold")
    for r in rows:
        table.add_row(
            str(r["batch_time"])[:19],
            plain(r["batch_id"]),
            plain(r["check"]),
            plain(r["target"]) + (f"\n{importance}" if (importance := importance_text(r)) else ""),
            plain(r["metric"]),
            format_number(r["value"]),
            f"[{SEVERITY_STYLE.get(r['severity'], '')}]{r['severity']}",
            r["status"],
        )
    return table


def print_diagnoses(console: Console, results: Iterable[Mapping[str, Any]]) -> None:
    """The likely cause of each target with a fault signature (`tasks.views.diagnosis`), one line each."""
    from driftline.tasks.views.diagnosis import diagnose

    for found in diagnose(results):
        console.print(f"likely cause: {plain(found.line)}", highlight=False)


def print_warnings(console: Console, results: Iterable[Mapping[str, Any]]) -> None:
    """What labels said about the run's premises (`tasks.hindsight.premises`), one line each."""
    from driftline.tasks.hindsight.premises import warning_lines

    for line in warning_lines(results):
        console.print(f"warning: {plain(line)}", highlight=False)


def print_summary(console: Console, summary: Mapping[str, Any], show_ok: bool = True) -> None:
    """A monitor run: its results table, where the history went, what retraining did."""
    title = (
        f"{plain(summary['monitor'])} · batch {plain(summary['batch_id'])} · {summary['rows']} rows · "
        f"{summary['status'].upper()} (worst severity {summary['worst_severity']})"
    )
    described = [r for r in summary["results"] if r["check"] == DATA_SUMMARY]
    verdicts = [r for r in summary["results"] if r["check"] != DATA_SUMMARY]
    if show_ok or any(r["status"] != "ok" or r["severity"] != "none" for r in verdicts):
        console.print(results_table(verdicts, title=title, show_ok=show_ok))
    else:
        console.print(title, highlight=False)
    console.print(result_counts(verdicts, shown_all=show_ok), highlight=False)
    print_diagnoses(console, verdicts)
    print_warnings(console, verdicts)
    if described:
        console.print(f"data summary: {len(described)} column(s) described (in the report)", highlight=False)
    console.print(f"history: {plain(summary['stored'])}")
    alerts = summary.get("alerts") or {}
    if alerts:
        console.print(f"alerts: {plain(format_alerts(alerts))}", highlight=False)
    if summary.get("retraining"):
        console.print(f"retraining: {plain(format_retraining(summary['retraining']))}", highlight=False)
    if summary.get("report"):
        console.print(f"report: {plain(summary['report'])}", highlight=False)
    for path in summary.get("figures") or ():
        console.print(f"figure: {plain(path)}", highlight=False)


def result_counts(results: list[Mapping[str, Any]], shown_all: bool) -> str:
    """One line counting a run's results by severity (ok ones) and by status (the others)."""
    graded = Counter(r["severity"] for r in results if r["status"] == "ok")
    parts = [f"{graded[s]} {s}" for s in ("high", "medium", "low", "none") if graded[s]]
    parts += [
        f"{n} {status}"
        for status, n in sorted(Counter(r["status"] for r in results).items())
        if status != "ok"
    ]
    line = f"{len(results)} result(s): {', '.join(parts) or 'none'}"
    if shown_all or not graded["none"]:
        return line
    return f"{line}; those at none not listed (--verbose lists them)"


def format_alerts(report: Mapping[str, Any]) -> str:
    """One line on what alerting did: changes, destination, delivered/queued counts, reasons."""
    if "error" in report or "skipped" in report:
        return str(report.get("error") or report.get("skipped"))
    changes = report.get("changes") or []
    parts = [f"{len(changes)} incident change(s)"]
    if report.get("destination"):
        parts.append(f"to {report['destination']}")
    parts.append(f"delivered {report.get('delivered', 0)}, pending {report.get('pending', 0)}")
    reasons = report.get("reasons") or []
    return ", ".join(parts) + (f" ({'; '.join(map(str, reasons))})" if reasons else "")


def plain_outcome(action: Mapping[str, Any]) -> str:
    """What one retraining action did, in words."""
    if "error" in action:
        return f"failed ({action['error']})"
    if "skipped" in action:
        return f"not run again ({action['skipped']})"
    if "returncode" in action:
        return f"ran, exit {action['returncode']}"
    return f"called, HTTP {action.get('status')}"


def format_retraining(outcome: Mapping[str, Any]) -> str:
    """One line on the retraining trigger."""
    if outcome.get("error"):
        return str(outcome["error"])
    if outcome.get("skipped"):
        return f"not started: {outcome['skipped']}"
    done = [f"{name}: {plain_outcome(outcome[name])}" for name in ("command", "webhook") if name in outcome]
    if outcome.get("flow_run_id"):
        done.append(f"started flow run {outcome['flow_run_id']}")
    if outcome.get("event"):
        done.append(f"emitted driftline.monitor.failed ({outcome['event']})")
    incidents = outcome.get("incidents")
    named = f"incident{'s' if len(incidents or ()) > 1 else ''} {', '.join(map(str, incidents or ()))}"
    reason = f" (for {named})" if incidents else ""
    return (", ".join(done) or "nothing to do") + reason
