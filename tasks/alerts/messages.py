"""The alert of one run as a Slack Block Kit message, with a plain-text fallback; and the current state
of an incident thread, which replaces the thread's parent message as its incidents change.

The message lists the incidents the run opened or escalated (in rank order, `tasks.views.ranking`, at most
`MAX_LISTED`, each with its comparison against the reference, `tasks.views.comparison`, and the importance
of its feature), the incidents it resolved, the checks that could not run, and links to
the run and its report. It stays within Slack's limits: at most 17 blocks (Slack allows 50), 3000
characters a section, 150 a header.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from driftline.checks.registry import declaration
from driftline.checks.result import SEVERITIES, format_number, severity_rank, worst_severity
from driftline.tasks.alerts.incidents import IncidentChange
from driftline.tasks.hindsight.premises import warning_lines
from driftline.tasks.tools.safe_text import printable
from driftline.tasks.views.comparison import comparison_line
from driftline.tasks.views.diagnosis import diagnose
from driftline.tasks.views.ranking import importance_text, ranked

MAX_LISTED = 10
COUNTS = (("rows", "rows"), ("failing_rows", "failing rows"), ("model_impact", "model impact"))
# Roles whose failing rows are the members of groups compared, not rows at fault: not counted.
NO_FAILING_ROWS = frozenset({"fairness"})
MAX_METRICS = 4
SECTION_LIMIT = 3000
HEADER_LIMIT = 150
# A listed line's length: ten of them and their heading fit in one section.
LINE_LIMIT = 280
TEXT_LIMIT = 3000
# What a link's URL keeps as written (RFC 3986 delimiters and `%` of existing escapes); every other
# character is percent-encoded.
URL_KEEPS = ":/?#[]@!$&'()*+,;=%~"

SEVERITY_EMOJI = {
    "high": ":red_circle:",
    "medium": ":large_orange_circle:",
    "low": ":large_yellow_circle:",
    "none": ":white_circle:",
}


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn treats as control characters, and show terminal
    control characters as escapes (console alerts print this text)."""
    return printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """Inverse of `escape`, for printing a message outside Slack."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _thresholds(values: Sequence[float]) -> str:
    """Thresholds with the grade each one marks (they are aligned with the top: low, medium, high)."""
    names = SEVERITIES[len(SEVERITIES) - len(values) :]
    return ", ".join(f"{name} {format_number(v, 'n/a')}" for name, v in zip(names, values, strict=True))


def _values(result: Mapping[str, Any]) -> list[str]:
    """Graded metrics first (with their thresholds), then others, at most `MAX_METRICS`: the lines of a
    result that carries no comparison against the reference."""
    metrics: Mapping[str, Any] = result.get("metrics") or {}
    thresholds: Mapping[str, Sequence[float]] = result.get("thresholds") or {}
    names = sorted(metrics, key=lambda name: name not in thresholds)[:MAX_METRICS]
    lines = []
    for name in names:
        line = f"{name} = {format_number(metrics[name], 'n/a')}"
        if thresholds.get(name):
            line += f" (thresholds: {_thresholds(thresholds[name])})"
        lines.append(line)
    return lines


def _counts_line(result: Mapping[str, Any]) -> str:
    """Rows, failing rows (not for group comparisons) and model impact, those the result has."""
    role = declaration(str(result.get("check", ""))).role
    skipped = {"failing_rows"} if role in NO_FAILING_ROWS else set()
    return ", ".join(
        f"{label} {format_number(result.get(key), 'n/a')}"
        for key, label in COUNTS
        if result.get(key) is not None and key not in skipped
    )


def metric_lines(result: Mapping[str, Any]) -> list[str]:
    """The result's comparison against the reference (reference and batch values, the change, its
    bound and the threshold it crossed), else its metric values; then its counts."""
    compared = comparison_line(result)
    lines = [compared] if compared is not None else _values(result)
    counts = _counts_line(result)
    return [clip(line, LINE_LIMIT) for line in (*lines, counts) if line]


def _subject(change: IncidentChange) -> str:
    return f"{change.check} · {change.target}"


def _headline(change: IncidentChange) -> str:
    importance = importance_text(change.result)
    weight = f" · {importance}" if importance else ""
    if change.kind == "opened":
        return f"[{change.severity.upper()}] {_subject(change)}: opened{weight}"
    if change.kind == "escalated":
        return (
            f"[{change.severity.upper()}] {_subject(change)}: escalated from "
            f"{change.previous_severity}{weight}"
        )
    return f"{_subject(change)}: resolved (now {change.severity}, was {change.previous_severity})"


def _alerting(changes: Iterable[IncidentChange]) -> list[IncidentChange]:
    """Opened and escalated changes in rank order (`tasks.views.ranking`)."""
    hits = [c for c in changes if c.kind != "resolved"]
    return ranked(hits, lambda c: {**c.result, "severity": c.severity})


def _counts(changes: Sequence[IncidentChange]) -> str:
    parts = [
        f"{n} {kind}"
        for kind in ("opened", "escalated", "resolved")
        if (n := sum(c.kind == kind for c in changes))
    ]
    return ", ".join(parts) or "no incident changes"


def _errors(results: Iterable[Mapping[str, Any]]) -> list[str]:
    return [
        f"{r['check']} · {r['target']}: {r.get('reason') or 'no reason given'}"
        for r in results
        if r["status"] == "error"
    ]


def _limited(lines: Sequence[str], what: str) -> list[str]:
    """At most `MAX_LISTED` lines of at most `LINE_LIMIT` characters, then a count of the rest."""
    shown = [clip(line, LINE_LIMIT) for line in lines[:MAX_LISTED]]
    if len(lines) > MAX_LISTED:
        shown.append(f"…and {len(lines) - MAX_LISTED} more {what}")
    return shown


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, SECTION_LIMIT)}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(text, SECTION_LIMIT)}]}


def _change_block(change: IncidentChange) -> dict[str, Any]:
    title = f"{SEVERITY_EMOJI[change.severity]} *{escape(_headline(change))}*"
    details = "\n".join(escape(line) for line in metric_lines(change.result))
    return _mrkdwn(f"{title}\n{details}" if details else title)


def _blocks(
    monitor: str,
    batch_id: str,
    worst: str,
    changes: Sequence[IncidentChange],
    errors: Sequence[str],
    run_url: str | None,
    report_url: str | None = None,
    causes: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> list[dict[str, Any]]:
    header = f"{SEVERITY_EMOJI[worst]} {monitor}: worst severity {worst}"
    batch = f"*Batch* `{escape(batch_id)}` · {_counts(changes)}"
    if causes:
        batch += "\n:mag: *Likely cause*\n" + "\n".join(f"• {escape(c)}" for c in _limited(causes, "causes"))
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(header, HEADER_LIMIT), "emoji": True}},
        _mrkdwn(batch),
        {"type": "divider"},
    ]
    alerting = _alerting(changes)
    blocks.extend(_change_block(c) for c in alerting[:MAX_LISTED])
    if len(alerting) > MAX_LISTED:
        blocks.append(_context(f"…and {len(alerting) - MAX_LISTED} more opened or escalated"))
    resolved = [escape(_headline(c)) for c in changes if c.kind == "resolved"]
    if resolved:
        lines = _limited(resolved, "resolved")
        blocks.append(_mrkdwn(":white_check_mark: *Resolved*\n" + "\n".join(f"• {x}" for x in lines)))
    if errors:
        lines = _limited([escape(e) for e in errors], "errors")
        blocks.append(_mrkdwn(":warning: *Could not run*\n" + "\n".join(f"• {x}" for x in lines)))
    if warnings:
        lines = _limited([escape(w) for w in warnings], "warnings")
        blocks.append(_mrkdwn(":eyes: *Warnings*\n" + "\n".join(f"• {x}" for x in lines)))
    links = _links(run_url, report_url)
    if links:
        blocks.append(_context(links))
    return blocks


def slack_link(url: str, label: str) -> str:
    """A mrkdwn link `<url|label>` that nothing in `url` can end early or relabel: characters a URL
    may not hold (`|`, `<`, `>`, spaces, controls) are percent-encoded, and a `|` in the label is shown
    as `¦`."""
    return f"<{escape(quote(url, safe=URL_KEEPS))}|{escape(label).replace('|', '¦')}>"


def _links(run_url: str | None, report_url: str | None) -> str:
    """mrkdwn links to the run and its report (either may be missing)."""
    named = ((run_url, "Open the run"), (report_url, "Open the report"))
    return " · ".join(slack_link(url, label) for url, label in named if url)


def _text(
    monitor: str,
    batch_id: str,
    worst: str,
    changes: Sequence[IncidentChange],
    errors: Sequence[str],
    run_url: str | None,
    report_url: str | None = None,
    causes: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> str:
    lines = [f"driftline: {monitor}, batch {batch_id}: worst severity {worst} ({_counts(changes)})"]
    lines.extend(f"Likely cause: {c}" for c in _limited(causes, "causes"))
    alerting = _alerting(changes)
    for change in alerting[:MAX_LISTED]:
        lines.append(_headline(change))
        lines.extend(f"    {line}" for line in metric_lines(change.result))
    if len(alerting) > MAX_LISTED:
        lines.append(f"…and {len(alerting) - MAX_LISTED} more opened or escalated")
    lines.extend(_limited([_headline(c) for c in changes if c.kind == "resolved"], "resolved"))
    if errors:
        lines.append("Could not run:")
        lines.extend(f"    {e}" for e in _limited(errors, "errors"))
    lines.extend(f"Warning: {w}" for w in _limited(warnings, "warnings"))
    if run_url:
        lines.append(f"Run: {run_url}")
    if report_url:
        lines.append(f"Report: {report_url}")
    return escape(clip("\n".join(lines), TEXT_LIMIT))


def run_worst(changes: Sequence[IncidentChange], results: Sequence[Mapping[str, Any]]) -> str:
    """The worst severity of a run: of its graded results, else of its incident changes."""
    graded = [r["severity"] for r in results if r["status"] == "ok"]
    return worst_severity(graded or [c.severity for c in changes])


def build_message(
    *,
    monitor: str,
    batch_id: str,
    changes: Sequence[IncidentChange],
    results: Sequence[Mapping[str, Any]] = (),
    run_url: str | None = None,
    report_url: str | None = None,
) -> dict[str, Any]:
    """`{"text": fallback, "blocks": [...]}` for one run; `results` give the worst severity, errors,
    the likely cause of each target with a fault signature (`tasks.views.diagnosis`), shown first, and what
    labels said about the run's premises (`tasks.hindsight.premises`)."""
    worst = run_worst(changes, results)
    errors = _errors(results)
    causes = [d.line for d in diagnose(results)]
    warnings = warning_lines(results)
    return {
        "text": _text(monitor, batch_id, worst, changes, errors, run_url, report_url, causes, warnings),
        "blocks": _blocks(monitor, batch_id, worst, changes, errors, run_url, report_url, causes, warnings),
    }


def _state_line(incident: Mapping[str, Any]) -> str:
    subject = f"{incident['check']} · {incident['target']}"
    if incident["status"] == "resolved":
        return f"{subject}: resolved at batch {incident['last_batch']} (reached {incident['severity']})"
    latest = incident.get("last_severity") or incident["severity"]
    now = f", now {latest}" if latest != incident["severity"] else ""
    return f"[{incident['severity'].upper()}] {subject}: open since batch {incident['opened_batch']}{now}"


def build_thread_state(
    *,
    monitor: str,
    incidents: Sequence[Mapping[str, Any]],
    last_batch: str,
    results: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The parent message of an incident thread, rewritten to the thread's current state.

    `incidents` are the thread's incidents (check, target, status, severity reached, last_severity,
    opened_batch, last_batch); open ones first, worst first, at most `MAX_LISTED` lines of each kind.
    The likely causes that `results` (the latest run's) give for the targets of open incidents lead it.
    """
    still_open = sorted(
        (i for i in incidents if i["status"] != "resolved"), key=lambda i: -severity_rank(i["severity"])
    )
    resolved = [i for i in incidents if i["status"] == "resolved"]
    if still_open:
        worst = worst_severity([i["severity"] for i in still_open])
        headline = f"{monitor}: {len(still_open)} of {len(incidents)} incident(s) open, worst {worst}"
    else:
        worst = "none"
        headline = f"{monitor}: all {len(incidents)} incident(s) resolved"
    lines = [escape(_state_line(i)) for i in still_open]
    done = [escape(_state_line(i)) for i in resolved]
    open_targets = {str(i["target"]) for i in still_open}
    causes = [d.line for d in diagnose(results) if d.target in open_targets]
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": clip(headline, HEADER_LIMIT), "emoji": True},
        },
        _context(f"updated at batch `{escape(last_batch)}` · the thread has every change"),
    ]
    if causes:
        blocks.append(
            _mrkdwn(
                ":mag: *Likely cause*\n" + "\n".join(f"• {escape(c)}" for c in _limited(causes, "causes"))
            )
        )
    if lines:
        blocks.append(
            _mrkdwn(
                f"{SEVERITY_EMOJI[worst]} *Open*\n" + "\n".join(f"• {x}" for x in _limited(lines, "open"))
            )
        )
    if done:
        blocks.append(
            _mrkdwn(
                ":white_check_mark: *Resolved*\n" + "\n".join(f"• {x}" for x in _limited(done, "resolved"))
            )
        )
    listed = _limited([_state_line(i) for i in [*still_open, *resolved]], "incidents")
    head = f"driftline: {headline} (updated at batch {last_batch})"
    text = "\n".join([head, *(f"Likely cause: {c}" for c in _limited(causes, "causes")), *listed])
    return {"text": escape(clip(text, TEXT_LIMIT)), "blocks": blocks}
