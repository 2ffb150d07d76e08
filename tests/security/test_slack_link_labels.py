"""Item 4: a batch id cannot relabel a Slack link. Template values are percent-encoded into `run_url` and
`report_url`, a URL cannot end a `<url|label>` link early, and a `|` in a label is shown, not parsed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine

from driftline.tasks.alerts import AlertConfig, process_alerts
from driftline.tasks.alerts.messages import slack_link
from driftline.tasks.history.models import Base
from tests.alerts.builders import TOKEN, result
from tests.alerts.slack_server import SlackStandIn

SPOOF = "2024-04-01|Your SSO session expired - click to re-login"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_engine(f"sqlite:///{tmp_path / 'history.db'}")
    Base.metadata.create_all(engine)
    try:
        yield engine
    finally:
        engine.dispose()


def _links(blocks: list[dict]) -> str:
    """The text of the message's last context block: its links."""
    return blocks[-1]["elements"][0]["text"]


def test_a_batch_id_cannot_relabel_the_posted_links(engine: Engine) -> None:
    with SlackStandIn() as slack:
        config = AlertConfig.model_validate(
            {
                "slack": {"channel": "#ml-alerts", "base_url": slack.api_url},
                "run_url": "https://ui.example/runs?batch={batch_id}",
                "report_url": "https://ui.example/{monitor}/{batch_id}/report.html",
            }
        )
        results = [result("drift.numeric", "age", "high", metrics={"psi": 0.5})]
        process_alerts(engine, monitor="acs", batch_id=SPOOF, results=results, config=config, token=TOKEN)
        (post,) = slack.accepted()
    links = _links(post.body["blocks"])
    assert links == (
        "<https://ui.example/runs?batch=2024-04-01%7CYour%20SSO%20session%20expired%20-%20click%20to%20re-login"
        "|Open the run> · "
        "<https://ui.example/acs/2024-04-01%7CYour%20SSO%20session%20expired%20-%20click%20to%20re-login"
        "/report.html|Open the report>"
    )


def test_a_url_given_whole_cannot_end_its_link_early() -> None:
    """A run URL from an orchestrator is not a template: its `|`, `<`, `>` and spaces are encoded,
    `&` is escaped for mrkdwn, and existing percent escapes are kept."""
    link = slack_link("https://ui/r?a=1&b=<2>|Click here%20now x", "Open the run")
    assert link == "<https://ui/r?a=1&amp;b=%3C2%3E%7CClick%20here%20now%20x|Open the run>"
    assert link.count("|") == 1


def test_a_label_keeps_its_bar_as_text() -> None:
    assert slack_link("https://ui/r", "a|b <c> & d") == "<https://ui/r|a¦b &lt;c&gt; &amp; d>"
