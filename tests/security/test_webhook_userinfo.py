"""A webhook URL with `user:password@` before its host had the credential sent to DNS as part of the
host name. Such a URL is refused, never echoed: in the spec when it loads (exit 2), and from an
environment variable when the call would be made (the failure is reported, nothing is sent)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.alerts.config import AlertConfig
from driftline.tasks.alerts.delivery import UnavailableSender, build_sender
from driftline.tasks.config.spec import RetrainSpec
from driftline.tasks.retraining import actions as retrain
from driftline.tasks.retraining.actions import RetrainRequest, trigger_plain
from tests.faults.small_monitor import write_monitor

runner = CliRunner()
SECRET = "s3cret-pw"
URL = f"https://bob:{SECRET}@hooks.example.com/retrain"


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"retrain": {"webhook_url": URL}}, "retrain.webhook_url"),
        ({"alerts": {"slack": {"webhook_url": URL}}}, "alerts.slack.webhook_url"),
        ({"alerts": {"slack": {"channel": "#a", "base_url": URL}}}, "alerts.slack.base_url"),
    ],
)
def test_a_spec_with_userinfo_in_a_url_is_refused_masked(tmp_path: Path, section: dict, key: str) -> None:
    spec = write_monitor(tmp_path, **section)
    result = runner.invoke(app, ["run", str(spec), "--engine", "local"])
    assert result.exit_code == EXIT_USAGE, result.output
    assert key in result.stderr and "must not hold a user name or password" in result.stderr
    assert SECRET not in result.output and SECRET not in result.stderr


def test_a_retraining_url_from_the_environment_is_not_called(monkeypatch, tmp_path: Path) -> None:
    called: list[str] = []
    monkeypatch.setattr(retrain, "post_webhook", lambda url, request: called.append(url) or {"status": 200})
    monkeypatch.setenv("RETRAIN_HOOK", URL)
    request = RetrainRequest("m", "2024-05-01", "abcd", "high", [], None)
    outcome = trigger_plain(RetrainSpec(webhook_url_env="RETRAIN_HOOK"), request, tmp_path)
    assert called == []
    assert "$RETRAIN_HOOK must not hold a user name or password" in outcome["webhook"]["error"]
    assert SECRET not in str(outcome)


def test_a_slack_webhook_from_the_environment_is_not_used(monkeypatch) -> None:
    monkeypatch.setenv("SLACK_HOOK", URL)
    sender = build_sender(AlertConfig.model_validate({"slack": {"webhook_url_env": "SLACK_HOOK"}}))
    assert isinstance(sender, UnavailableSender)
    assert "SLACK_HOOK must not hold a user name or password" in sender.problem
    assert SECRET not in sender.problem


def test_an_at_sign_in_the_path_is_fine() -> None:
    assert RetrainSpec(webhook_url="https://hooks.example.com/a@b?x=1").webhook_url
