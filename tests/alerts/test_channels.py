"""Alert channels end to end, against local stand-ins: PagerDuty, Teams and a webhook receiver (HTTP
recorders on 127.0.0.1) and a real SMTP server (aiosmtpd), beside the Slack stand-in. A failing batch
pages once per incident and resolves when the incident closes; every channel receives the same alert;
one failing channel keeps its message queued without holding the others back; secrets never leak."""

from __future__ import annotations

import email
import hashlib
import hmac
import io
import logging
import re
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from pydantic import ValidationError
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from driftline.tasks.alerts import AlertConfig, AlertReport, process_alerts
from driftline.tasks.history.models import AlertOutbox
from tests.alerts.builders import TOKEN, result
from tests.alerts.certificates import self_signed
from tests.alerts.http_recorder import HttpRecorder
from tests.alerts.slack_server import SlackStandIn

ROUTING_KEY = "R0UT1NGKEY0000000000000000000042"
TEAMS_SECRET = "sig=teams-stand-in-signature-secret"
HOOK_SECRET = "whsec-stand-in-signing-secret-0123"
SMTP_PASSWORD = "smtp-stand-in-password-9876"


class Inbox:
    """An aiosmtpd handler keeping every message it accepts."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"

    def messages(self) -> list[Message]:
        """The accepted messages, parsed."""
        return [email.message_from_bytes(e.content, policy=default_policy) for e in self.envelopes]


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1: its inbox and port."""
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


@pytest.fixture
def pager() -> Iterator[HttpRecorder]:
    with HttpRecorder(default=202, answer='{"status":"success"}', echo_failures=True) as server:
        yield server


@pytest.fixture
def teams() -> Iterator[HttpRecorder]:
    with HttpRecorder(default=200, answer="1") as server:
        yield server


@pytest.fixture
def hook() -> Iterator[HttpRecorder]:
    with HttpRecorder(default=204) as server:
        yield server


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch, teams: HttpRecorder) -> None:
    """The channels' credentials in their default environment variables."""
    monkeypatch.setenv("PAGERDUTY_ROUTING_KEY", ROUTING_KEY)
    monkeypatch.setenv("TEAMS_WEBHOOK_URL", f"{teams.url}/workflows/invoke?{TEAMS_SECRET}")
    monkeypatch.setenv("DRIFTLINE_WEBHOOK_SECRET", HOOK_SECRET)


@dataclass(frozen=True)
class StandIns:
    """Every stand-in at once: Slack, PagerDuty, Teams, the webhook receiver and the SMTP server."""

    slack: SlackStandIn
    pager: HttpRecorder
    teams: HttpRecorder
    hook: HttpRecorder
    inbox: Inbox
    smtp_port: int

    def config(self, slack_keys: dict[str, Any] | None = None, **alerts: Any) -> AlertConfig:
        """Slack as today (with `slack_keys` added) beside PagerDuty, Teams, email and a signed webhook
        (resolve after 3 quiet runs)."""
        mail = {"smtp_host": "127.0.0.1", "smtp_port": self.smtp_port, "starttls": False}
        mail |= {"from": "driftline@example.com", "to": ["ml-team@example.com", "oncall@example.com"]}
        channels = [
            {"kind": "pagerduty", "base_url": self.pager.url},
            {"kind": "teams"},
            {"kind": "email", **mail},
            {"kind": "webhook", "url": f"{self.hook.url}/driftline"},
        ]
        slack = {"channel": "#ml-alerts", "base_url": self.slack.api_url, **(slack_keys or {})}
        return AlertConfig.model_validate({"slack": slack, "channels": channels, **alerts})


@pytest.fixture
def every(
    slack: SlackStandIn,
    pager: HttpRecorder,
    teams: HttpRecorder,
    hook: HttpRecorder,
    smtp: tuple[Inbox, int],
    secrets: None,
) -> StandIns:
    """Every stand-in running, and the channels' credentials set."""
    return StandIns(slack, pager, teams, hook, *smtp)


def run(engine: Engine, config: AlertConfig, batch_id: str, *results: dict[str, Any]) -> AlertReport:
    return process_alerts(
        engine, monitor="acs", batch_id=batch_id, results=list(results), config=config, token=TOKEN
    )


FAILING = (result("drift.numeric", "age", "high"), result("drift.numeric", "income", "medium"))
QUIET = (result("drift.numeric", "age", "none"), result("drift.numeric", "income", "none"))
HEADLINES = ("[HIGH] drift.numeric · age: opened", "[MEDIUM] drift.numeric · income: opened")


def test_a_failing_batch_pages_once_per_incident_and_resolves_when_the_incident_closes(
    engine: Engine, every: StandIns
) -> None:
    slack, pager, teams, hook = every.slack, every.pager, every.teams, every.hook
    config = every.config()
    opened = run(engine, config, "b1", *FAILING)
    assert (opened.queued, opened.delivered, opened.failed, opened.pending) == (6, 6, 0, 0)
    keys = {c.target: f"driftline/acs/incident/{c.incident_id}" for c in opened.changes}
    triggers = [r.json for r in pager.requests]
    assert [(t["event_action"], t["dedup_key"], t["payload"]["severity"]) for t in triggers] == [
        ("trigger", keys["age"], "critical"),
        ("trigger", keys["income"], "error"),
    ]
    assert all(r.path == "/v2/enqueue" and r.json["routing_key"] == ROUTING_KEY for r in pager.requests)
    assert triggers[0]["payload"]["summary"] == f"acs: {HEADLINES[0]}"

    rerun = run(engine, config, "b1", *FAILING)
    assert (rerun.changes, rerun.queued, len(pager.requests)) == ([], 0, 2)
    for batch in ("b2", "b3"):
        assert run(engine, config, batch, *QUIET).queued == 0
    resolved = run(engine, config, "b4", *QUIET)
    assert [c.kind for c in resolved.changes] == ["resolved", "resolved"] and resolved.pending == 0
    assert [(r.json["event_action"], r.json["dedup_key"]) for r in pager.requests[2:]] == [
        ("resolve", keys["age"]),
        ("resolve", keys["income"]),
    ]
    assert len(pager.requests) == 4 and len(teams.requests) == len(hook.requests) == 2
    assert (
        len(every.inbox.envelopes) == 2 and len(slack.accepted()) == 2
    )  # Slack: the thread's parent, a reply


def test_teams_email_and_the_webhook_receive_the_same_alert_as_slack(engine: Engine, every: StandIns) -> None:
    slack, teams, hook = every.slack, every.teams, every.hook
    config = every.config()
    run(engine, config, "b1", *FAILING)
    (posted,) = slack.top_level()
    assert all(h in posted["text"] for h in HEADLINES)

    (card_request,) = teams.requests
    assert card_request.path == f"/workflows/invoke?{TEAMS_SECRET}"
    (attachment,) = card_request.json["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.4")
    texts = [re.sub(r"\\(.)", r"\1", block["text"]) for block in card["body"]]  # CommonMark escapes read
    assert texts[0] == "acs: worst severity high" and all(h in texts for h in HEADLINES)

    (mail,) = every.inbox.messages()
    (envelope,) = every.inbox.envelopes
    assert envelope.mail_from == "driftline@example.com"
    assert envelope.rcpt_tos == ["ml-team@example.com", "oncall@example.com"]
    assert mail["Subject"] == "[driftline] acs: worst severity high"
    assert all(h in mail.get_content() for h in HEADLINES)
    assert mail["Message-ID"].endswith("@driftline>")

    (delivery,) = hook.requests
    body = delivery.json
    assert (body["version"], body["monitor"], body["batch_id"], body["worst_severity"]) == (
        1,
        "acs",
        "b1",
        "high",
    )
    assert [c["headline"] for c in body["changes"]] == list(HEADLINES)
    stamp, signed = dict(
        p.split("=", 1) for p in delivery.headers["x-driftline-signature"].split(",")
    ).values()
    expected = hmac.new(HOOK_SECRET.encode(), f"{stamp}.".encode() + delivery.raw, hashlib.sha256).hexdigest()
    assert signed == expected
    with Session(engine) as session:
        keys = set(
            session.scalars(select(AlertOutbox.dedupe_key).where(AlertOutbox.destination == "webhook"))
        )
    assert keys == {delivery.headers["x-driftline-delivery"]}


LINKS = {
    "run_url": "https://ui.example/{monitor}/runs/{batch_id}",
    "report_url": "https://r.example/{batch_id}.html",
}
RUN, REPORT = "https://ui.example/acs/runs/b%201", "https://r.example/b%201.html"


@pytest.mark.parametrize("spelling", ["alerts", "alerts.slack (deprecated)"])
def test_every_channel_shows_the_run_and_report_links(engine: Engine, every: StandIns, spelling: str) -> None:
    if spelling == "alerts":
        config = every.config(**LINKS)
    else:
        with pytest.warns(
            FutureWarning, match=r"alerts\.slack\.(\w+) is deprecated: write it as alerts\.\1 "
        ):
            config = every.config(slack_keys=LINKS)
    run(engine, config, "b 1", FAILING[0])

    (posted,) = every.slack.top_level()
    assert posted["blocks"][-1]["elements"][0]["text"] == f"<{RUN}|Open the run> · <{REPORT}|Open the report>"
    (trigger,) = every.pager.requests
    assert trigger.json["links"] == [
        {"href": RUN, "text": "Open the run"},
        {"href": REPORT, "text": "Open the report"},
    ]
    (card,) = every.teams.requests
    actions = card.json["attachments"][0]["content"]["actions"]
    assert [(a["type"], a["url"]) for a in actions] == [("Action.OpenUrl", RUN), ("Action.OpenUrl", REPORT)]
    (mail,) = every.inbox.messages()
    assert f"Run: {RUN}\nReport: {REPORT}" in mail.get_content().replace("\r\n", "\n")
    (delivery,) = every.hook.requests
    assert (delivery.json["run_url"], delivery.json["report_url"]) == (RUN, REPORT)


def test_the_console_shows_the_links_without_any_slack(engine: Engine) -> None:
    stream = io.StringIO()
    config = AlertConfig.model_validate(LINKS)
    report = process_alerts(
        engine, monitor="acs", batch_id="b 1", results=[FAILING[0]], config=config, stream=stream
    )
    assert report.destinations == ["console"] and f"Run: {RUN}\nReport: {REPORT}" in stream.getvalue()


def test_a_failing_channel_keeps_its_alert_queued_and_the_others_deliver(
    engine: Engine,
    every: StandIns,
    caplog: pytest.LogCaptureFixture,
) -> None:
    slack, pager, teams, hook = every.slack, every.pager, every.teams, every.hook
    config = every.config(resolve_after=1)
    pager.default = 500  # every attempt fails, and the stand-in quotes the body (with the routing key)
    teams.default = 503
    caplog.set_level(logging.DEBUG)
    first = run(engine, config, "b1", FAILING[0])
    assert (first.delivered, first.failed, first.pending) == (3, 2, 2)
    assert len(every.inbox.envelopes) == len(hook.requests) == len(slack.accepted()) == 1
    assert len(pager.requests) == 3  # three attempts, one event
    leaked = [ROUTING_KEY, TEAMS_SECRET, "teams-stand-in-signature-secret"]
    with Session(engine) as session:
        errors = [e for e in session.scalars(select(AlertOutbox.last_error)) if e]
    shown = "\n".join([*first.reasons, *errors, caplog.text])
    assert "PagerDuty at http://127.0.0.1" in shown and "answered HTTP 500" in shown
    assert "[redacted]" in shown and not any(secret in shown for secret in leaked)

    pager.default, teams.default = 202, 200
    later = run(engine, config, "b2", FAILING[0])  # no incident change: only the queued messages go out
    assert (later.queued, later.delivered, later.pending) == (0, 2, 0)
    assert [r.json["dedup_key"] for r in pager.accepted()] == [pager.requests[0].json["dedup_key"]]


def test_a_missing_credential_queues_the_alert_until_it_is_set(
    engine: Engine, pager: HttpRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = AlertConfig.model_validate(
        {"console": False, "channels": [{"kind": "pagerduty", "base_url": pager.url}]}
    )
    monkeypatch.delenv("PAGERDUTY_ROUTING_KEY", raising=False)
    first = run(engine, config, "b1", *FAILING)
    assert (first.queued, first.pending, pager.requests) == (2, 2, [])
    assert first.reasons[0] == (
        "pagerduty: alert for batch b1 not sent: no PagerDuty routing key "
        "(expected from environment variable PAGERDUTY_ROUTING_KEY)"
    )
    monkeypatch.setenv("PAGERDUTY_ROUTING_KEY", ROUTING_KEY)
    assert run(engine, config, "b2", *FAILING).delivered == 2
    assert [r.json["event_action"] for r in pager.requests] == ["trigger", "trigger"]


def test_secrets_come_from_the_engines_secret_store(engine: Engine, hook: HttpRecorder) -> None:
    config = AlertConfig.model_validate(
        {
            "console": False,
            "channels": [{"kind": "webhook", "url_block": "hook-url", "secret_block": "hook-secret"}],
        }
    )
    store = {"hook-url": f"{hook.url}/in", "hook-secret": HOOK_SECRET}
    report = process_alerts(
        engine, monitor="acs", batch_id="b1", results=[FAILING[0]], config=config, secrets=store.get
    )
    assert report.delivered == 1 and hook.requests[0].path == "/in"


def test_routes_by_severity_send_only_the_incidents_each_channel_asks_for(
    engine: Engine, pager: HttpRecorder, hook: HttpRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAGERDUTY_ROUTING_KEY", ROUTING_KEY)
    monkeypatch.setenv("DRIFTLINE_WEBHOOK_SECRET", HOOK_SECRET)
    channels = [
        {"kind": "pagerduty", "base_url": pager.url, "min_severity": "high"},
        {"kind": "webhook", "url": hook.url, "family": "drift"},
    ]
    config = AlertConfig.model_validate({"console": False, "channels": channels})
    assert config.destinations_for("drift.numeric", "medium") == ["webhook"]
    assert config.destinations_for("performance.overall", "high") == ["pagerduty"]
    run(engine, config, "b1", *FAILING, result("performance.overall", "model", "medium"))
    assert [r.json["payload"]["component"] for r in pager.requests] == ["age"]
    assert [c["target"] for c in hook.requests[0].json["changes"]] == ["age", "income"]


def test_email_logs_in_with_the_password_and_masks_it_when_refused(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aiosmtpd.smtp import AuthResult, LoginPassword

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and data.password.decode() == SMTP_PASSWORD
        return AuthResult(success=ok, handled=False)

    inbox, port = Inbox(), free_port()
    controller = Controller(
        inbox, hostname="127.0.0.1", port=port, authenticator=authenticate, auth_require_tls=False
    )
    controller.start()
    try:
        mail = {"kind": "email", "smtp_host": "127.0.0.1", "smtp_port": port, "starttls": False}
        mail |= {"from": "driftline@example.com", "to": "ml@example.com", "password_env": "SMTP_PASSWORD"}
        mail |= {"username_env": "SMTP_USER"}
        config = AlertConfig.model_validate({"console": False, "channels": [mail]})
        monkeypatch.setenv("SMTP_USER", "driftline")
        monkeypatch.setenv("SMTP_PASSWORD", SMTP_PASSWORD[::-1])
        refused = run(engine, config, "b1", FAILING[0])
        assert refused.pending == 1 and "refused the login (535)" in refused.reasons[0]
        assert SMTP_PASSWORD[::-1] not in refused.reasons[0]
        monkeypatch.setenv("SMTP_PASSWORD", SMTP_PASSWORD)
        assert run(engine, config, "b2", FAILING[0]).delivered == 1
    finally:
        controller.stop()
    assert len(inbox.envelopes) == 1


def test_starttls_to_a_server_without_it_is_a_clear_error(engine: Engine, smtp: tuple[Inbox, int]) -> None:
    mail = {"kind": "email", "smtp_host": "127.0.0.1", "smtp_port": smtp[1]}
    mail |= {"from": "driftline@example.com", "to": "ml@example.com"}
    config = AlertConfig.model_validate({"console": False, "channels": [mail]})
    report = run(engine, config, "b1", FAILING[0])
    assert report.pending == 1 and report.reasons == [
        f"email: alert for batch b1 not sent: the SMTP server 127.0.0.1:{smtp[1]} does not offer STARTTLS "
        "(`starttls: true`): nothing was sent"
    ]
    assert smtp[0].envelopes == []


class TlsInbox(Inbox):
    """An inbox that also records whether each message came over TLS."""

    def __init__(self) -> None:
        super().__init__()
        self.over_tls: list[bool] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.over_tls.append(session.ssl is not None)
        return await super().handle_DATA(server, session, envelope)


@pytest.fixture
def tls_smtp(tmp_path: Path) -> Iterator[tuple[TlsInbox, int, Path]]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1 that offers STARTTLS with a self-signed certificate
    made for this test and refuses mail before it: its inbox, port and the certificate (the CA file)."""
    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    inbox, port = TlsInbox(), free_port()
    controller = Controller(
        inbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True
    )
    controller.start()
    try:
        yield inbox, port, cert
    finally:
        controller.stop()


def _tls_mail(port: int, **keys: Any) -> AlertConfig:
    mail = {"kind": "email", "smtp_host": "127.0.0.1", "smtp_port": port, "starttls": True, **keys}
    mail |= {"from": "driftline@example.com", "to": "ml@example.com"}
    return AlertConfig.model_validate({"console": False, "channels": [mail]})


def test_email_is_delivered_over_starttls_to_a_server_whose_ca_is_given(
    engine: Engine, tls_smtp: tuple[TlsInbox, int, Path]
) -> None:
    inbox, port, cert = tls_smtp
    report = run(engine, _tls_mail(port, ssl_ca_file=str(cert)), "b1", FAILING[0])
    assert (report.delivered, report.pending, inbox.over_tls) == (1, 0, [True])
    (mail,) = inbox.messages()
    assert mail["Subject"] == "[driftline] acs: worst severity high"


def test_an_untrusted_certificate_is_refused_unless_verification_is_turned_off(
    engine: Engine, tls_smtp: tuple[TlsInbox, int, Path]
) -> None:
    inbox, port, _ = tls_smtp
    refused = run(engine, _tls_mail(port), "b1", FAILING[0])  # the system's CAs do not know it
    assert refused.pending == 1 and inbox.envelopes == []
    (reason,) = refused.reasons
    assert f"the SMTP server 127.0.0.1:{port} presented a certificate that is not trusted" in reason
    assert "self-signed certificate" in reason and "`ssl_ca_file`" in reason
    report = run(engine, _tls_mail(port, tls_verify=False), "b2", FAILING[0])
    assert (report.delivered, inbox.over_tls) == (1, [True])  # the queued message, over TLS, unverified


def test_an_unreadable_ca_file_queues_the_alert_naming_the_file(
    engine: Engine, tls_smtp: tuple[TlsInbox, int, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-ca.pem"
    report = run(engine, _tls_mail(tls_smtp[1], ssl_ca_file=str(missing)), "b1", FAILING[0])
    assert report.pending == 1 and tls_smtp[0].envelopes == []
    assert f"cannot load ssl_ca_file '{missing}' of the SMTP server 127.0.0.1" in report.reasons[0]


def test_tls_settings_without_starttls_are_a_spec_error() -> None:
    mail = {"kind": "email", "smtp_host": "127.0.0.1", "from": "d@example.com", "to": "m@example.com"}
    for extra in ({"tls_verify": False}, {"ssl_ca_file": "ca.pem"}):
        with pytest.raises(ValidationError, match="apply to STARTTLS"):
            AlertConfig.model_validate({"channels": [{**mail, "starttls": False, **extra}]})


def test_an_escalation_triggers_again_under_the_same_dedup_key(
    engine: Engine, pager: HttpRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAGERDUTY_ROUTING_KEY", ROUTING_KEY)
    config = AlertConfig.model_validate(
        {"console": False, "channels": [{"kind": "pagerduty", "base_url": pager.url}]}
    )
    run(engine, config, "b1", result("drift.numeric", "age", "medium"))
    run(engine, config, "b2", result("drift.numeric", "age", "high"))
    events = [
        (r.json["event_action"], r.json["dedup_key"], r.json["payload"]["severity"]) for r in pager.requests
    ]
    assert events == [("trigger", events[0][1], "error"), ("trigger", events[0][1], "critical")]
    assert (
        pager.requests[1].json["payload"]["summary"]
        == "acs: [HIGH] drift.numeric · age: escalated from medium"
    )


def test_a_teams_card_shows_data_as_written_never_as_a_link() -> None:
    from driftline.tasks.alerts.channels.teams import plain

    assert plain("[x](https://e.vil) *b* a_b `c`") == r"\[x\](https://e.vil) \*b\* a\_b \`c\`"
