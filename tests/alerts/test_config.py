"""The `alerts:` spec section: defaults, clear errors for wrong keys, secrets kept out of dumps."""

from __future__ import annotations

import warnings

import pytest
from pydantic import ValidationError

from driftline.tasks.alerts.config import AlertConfig, SpecDeprecationWarning

WEBHOOK = "https://hooks.slack.com/services/T0/B0/very-secret-part"


def _error_text(data: dict) -> str:
    with pytest.raises(ValidationError) as info:
        AlertConfig.model_validate(data)
    return str(info.value)


def test_defaults_alert_at_medium_on_the_console() -> None:
    config = AlertConfig()
    assert (config.min_severity, config.slack, config.console) == ("medium", None, True)
    assert config.destination == "console"
    assert AlertConfig(console=False).destination is None


def test_bot_destination_and_token_defaults() -> None:
    config = AlertConfig.model_validate({"min_severity": "high", "slack": {"channel": "#ml-alerts"}})
    assert config.slack is not None
    assert config.slack.token_env == "SLACK_BOT_TOKEN"
    assert config.destination == "slack:#ml-alerts"
    assert config.slack.token_source == "environment variable SLACK_BOT_TOKEN"
    block = AlertConfig.model_validate({"slack": {"channel": "C1", "token_block": "slack-bot"}})
    assert block.slack is not None and block.slack.token_source == "Prefect Secret block 'slack-bot'"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"min_severty": "high"}, "min_severty"),
        ({"slack": {"chanel": "#a", "channel": "#a"}}, "chanel"),
        ({"slack": {"channel": "#a", "token": "xoxb-inline"}}, "token"),
    ],
)
def test_unknown_keys_are_errors_naming_the_key(data: dict, key: str) -> None:
    text = _error_text(data)
    assert key in text and "Extra inputs are not permitted" in text


def test_invalid_values_are_errors() -> None:
    assert "min_severity" in _error_text({"min_severity": "critical"})
    assert "base_url" in _error_text({"slack": {"channel": "#a", "base_url": "slack.local/api"}})
    assert "webhook_url" in _error_text({"slack": {"webhook_url": "hooks.slack.com/x"}})


def test_slack_needs_exactly_one_destination() -> None:
    assert "give either `channel`" in _error_text({"slack": {}})
    assert "give either `channel`" in _error_text({"slack": {"channel": "#a", "webhook_url_env": "HOOK"}})
    assert "only one of" in _error_text({"slack": {"webhook_url": WEBHOOK, "webhook_url_env": "HOOK"}})


def test_webhook_url_is_masked_in_repr_and_dumps() -> None:
    config = AlertConfig.model_validate({"slack": {"webhook_url": WEBHOOK}})
    assert config.destination == "slack-webhook"
    assert config.slack is not None and config.slack.webhook_url is not None
    assert config.slack.webhook_url.get_secret_value() == WEBHOOK
    for text in (repr(config), str(config), config.model_dump_json(), str(config.model_dump())):
        assert "very-secret-part" not in text


def test_validation_errors_do_not_echo_a_webhook_url() -> None:
    text = _error_text({"slack": {"webhook_url": WEBHOOK, "channel": "#a"}})
    assert "give either" in text and "very-secret-part" not in text
    assert "very-secret-part" not in _error_text({"slack": {"webhook_url": "ftp://very-secret-part"}})


def test_run_url_template() -> None:
    config = AlertConfig.model_validate({"run_url": "https://dash.example/m/{monitor}/b/{batch_id}"})
    assert config.format_run_url("acs", "2018-06") == "https://dash.example/m/acs/b/2018-06"
    assert config.format_run_url("a/b", "2018 06") == "https://dash.example/m/a%2Fb/b/2018%2006"
    assert AlertConfig().format_run_url("acs", "b1") is None
    assert "unknown placeholder(s) ['run']" in _error_text({"run_url": "https://x/{run}"})
    assert "malformed template" in _error_text({"run_url": "https://x/{monitor"})


def test_report_url_template_and_routes() -> None:
    config = AlertConfig.model_validate(
        {
            "slack": {"channel": "#a"},
            "report_url": "https://r/{monitor}/{batch_id}.html",
            "routes": [
                {"channel": "#oncall", "min_severity": "high"},
                {"channel": "#drift", "family": "drift"},
            ],
        }
    )
    assert config.format_report_url("acs", "b1") == "https://r/acs/b1.html"
    assert config.destinations_for("drift.numeric", "high") == ["slack:#a", "slack:#oncall", "slack:#drift"]
    assert config.destinations_for("subset.auc", "medium") == ["slack:#a"]
    assert config.destinations_for("subset.auc", "high") == ["slack:#a", "slack:#oncall"]
    assert "unknown placeholder" in _error_text({"report_url": "https://r/{run}"})


@pytest.mark.parametrize("key", ["run_url", "report_url"])
def test_a_link_under_alerts_slack_still_works_and_warns_with_its_new_key(key: str) -> None:
    with pytest.warns(SpecDeprecationWarning, match=rf"alerts\.slack\.{key} is deprecated.*alerts\.{key}\b"):
        config = AlertConfig.model_validate(
            {"slack": {"channel": "#a", key: "https://x/{monitor}/{batch_id}"}}
        )
    assert getattr(config, key) == "https://x/{monitor}/{batch_id}"
    assert key not in config.model_dump()["slack"]  # moved, so a dump loads again without a warning
    with pytest.warns(SpecDeprecationWarning):
        assert "unknown placeholder" in _error_text({"slack": {"channel": "#a", key: "https://x/{run}"}})
    same = {"slack": {"channel": "#a", key: "https://x/{monitor}"}, key: "https://x/{monitor}"}
    with pytest.warns(SpecDeprecationWarning):
        assert getattr(AlertConfig.model_validate(same), key) == "https://x/{monitor}"
    text = _error_text({"slack": {"channel": "#a", key: "https://x/{monitor}"}, key: "https://y/"})
    assert f"moved to alerts.{key}, which gives another link" in text


def test_the_new_link_keys_load_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = AlertConfig.model_validate({"slack": {"channel": "#a"}, "run_url": "https://x/{batch_id}"})
    assert config.format_run_url("m", "b1") == "https://x/b1"


def test_a_monitor_spec_names_the_rule_key_that_is_wrong() -> None:
    from driftline.tasks.config.spec import SpecError, parse_spec

    spec = {
        "name": "acs",
        "reference": {"path": "ref.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric"],
        "alerts": {
            "rules": [
                {"check": "drift.numeric", "metric": "psi", "above_baseline": 3, "window": 1},
                {"check": "drift.numeric", "metric": "ks", "above_baseline": 3, "for_run": 2},
            ]
        },
    }
    with pytest.raises(SpecError) as caught:
        parse_spec(spec, "monitor.yaml")
    message = str(caught.value)
    assert "alerts.rules.0.window: Input should be greater than or equal to 3" in message
    assert "alerts.rules.1.for_run: Extra inputs are not permitted" in message
    good = parse_spec(
        {**spec, "alerts": {"rules": [{"check": "drift.numeric", "metric": "psi", "above_baseline": 3}]}}
    )
    assert good.alerts.rules[0].key == "rule:drift.numeric/psi"
