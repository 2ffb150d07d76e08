"""A channel is one module plus its registration: a toy channel defined here, and the worked example of
docs/alerts.md published by an installed package, are configured by `kind` and receive the alerts;
entries of `alerts.channels` are validated by their kind's model, with clear errors and masked secrets."""

from __future__ import annotations

import hashlib
import hmac
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine

from driftline.tasks.alerts import AlertConfig, process_alerts
from driftline.tasks.alerts.alert import Alert
from driftline.tasks.alerts.channels import (
    Channel,
    ChannelConfig,
    Credentials,
    Posted,
    channel_kinds,
    register_channel,
    registry,
    unregister_channel,
)
from driftline.tasks.alerts.channels.webhook import signature, verify_signature
from tests.alerts.builders import result
from tests.alerts.http_recorder import HttpRecorder

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "chat_channel.py"
DOC = ROOT / "docs" / "alerts.md"


class NotebookConfig(ChannelConfig):
    """A toy channel's entry: which notebook page the alerts are written on."""

    kind: Literal["notebook"] = "notebook"
    page: str


class NotebookChannel(Channel):
    """A toy channel: keeps every message on a page of a class-level notebook."""

    kind = "notebook"
    config_model = NotebookConfig
    pages: ClassVar[dict[str, list[dict[str, Any]]]] = {}

    def __init__(self, config: NotebookConfig) -> None:
        self.config = config
        self.destination = config.destination

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        assert isinstance(config, NotebookConfig)
        return cls(config)

    @classmethod
    def render(cls, config: ChannelConfig | None, alert: Alert) -> dict[str, Any]:
        return {"title": alert.title, "headlines": [alert.headline(c) for c in alert.ordered]}

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        assert isinstance(self.config, NotebookConfig)
        self.pages.setdefault(self.config.page, []).append(dict(message))
        return None


@pytest.fixture
def notebook() -> Iterator[type[NotebookChannel]]:
    register_channel(NotebookChannel)
    NotebookChannel.pages.clear()
    yield NotebookChannel
    unregister_channel("notebook")


def test_a_channel_defined_in_a_test_module_and_registered_receives_the_alerts(
    engine: Engine, notebook: type[NotebookChannel]
) -> None:
    channels = [{"kind": "notebook", "page": "ops"}, {"kind": "notebook", "name": "ml", "page": "ml"}]
    config = AlertConfig.model_validate({"console": False, "resolve_after": 1, "channels": channels})
    assert "notebook" in channel_kinds()
    for batch, severity in (("b1", "high"), ("b2", "none")):
        report = process_alerts(
            engine,
            monitor="acs",
            batch_id=batch,
            results=[result("drift.numeric", "age", severity)],
            config=config,
        )
        assert report.destinations == ["notebook", "notebook:ml"] and report.pending == 0
    expected = [
        {"title": "acs: worst severity high", "headlines": ["[HIGH] drift.numeric · age: opened"]},
        {
            "title": "acs: worst severity none",
            "headlines": ["drift.numeric · age: resolved (now none, was high)"],
        },
    ]
    assert notebook.pages == {"ops": expected, "ml": expected}


def test_a_kind_taken_by_another_class_is_refused(notebook: type[NotebookChannel]) -> None:
    other = type("OtherNotebook", (NotebookChannel,), {})
    with pytest.raises(ValueError, match="already registered by NotebookChannel"):
        register_channel(other)
    with pytest.raises(ValueError, match="is not a Channel subclass"):
        register_channel(dict)  # type: ignore[arg-type]


def install(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worked example of docs/alerts.md as a distribution on the path, publishing its channel under
    the `driftline.channels` entry point group (what pip leaves in site-packages)."""
    shutil.copy(EXAMPLE, folder / "chat_channel.py")
    info = folder / "acme_chat-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-chat\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[driftline.channels]\nchat = chat_channel:ChatChannel\n")
    monkeypatch.syspath_prepend(str(folder))
    registry.published.cache_clear()


@pytest.fixture
def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    install(tmp_path, monkeypatch)
    yield
    unregister_channel("chat")
    sys.modules.pop("chat_channel", None)
    registry.published.cache_clear()


@pytest.mark.usefixtures("published")
def test_the_documented_channel_published_by_a_package_is_found_by_kind_and_posts(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "chat" in channel_kinds()
    config = AlertConfig.model_validate(
        {"console": False, "channels": [{"kind": "chat", "username": "monitor-bot"}]}
    )
    with HttpRecorder(default=200, answer="ok") as chat:
        monkeypatch.setenv("CHAT_WEBHOOK_URL", f"{chat.url}/hooks/stand-in-chat-secret")
        report = process_alerts(
            engine,
            monitor="acs",
            batch_id="b1",
            results=[result("drift.numeric", "age", "high")],
            config=config,
        )
    assert report.delivered == 1
    (posted,) = chat.requests
    assert posted.json["username"] == "monitor-bot"
    assert posted.json["text"].startswith("driftline: acs, batch b1: worst severity high (1 opened)")


@pytest.mark.usefixtures("published")
def test_the_documented_specs_and_verification_snippet_work_as_written() -> None:
    blocks = re.findall(r"```(yaml|python)\n(.*?)```", DOC.read_text(), re.S)
    import yaml

    for language, text in blocks:
        if language == "yaml" and "alerts:" in text:
            AlertConfig.model_validate(yaml.safe_load(text)["alerts"])
    (snippet,) = [text for language, text in blocks if language == "python" and "def verify(" in text]
    namespace: dict[str, Any] = {}
    exec(compile(snippet, str(DOC), "exec"), namespace)
    body, secret = b'{"monitor":"acs"}', "whsec-0123456789abcdef"
    header = signature(secret, body, 1_700_000_000)
    assert namespace["verify"](body, header, secret, now=1_700_000_100)
    assert not namespace["verify"](body + b" ", header, secret, now=1_700_000_100)
    assert not namespace["verify"](body, header, secret, now=1_700_000_000 + 301)


def test_the_signature_is_hmac_sha256_of_the_timestamp_and_body() -> None:
    body, secret = b'{"a":1}', "whsec-0123456789abcdef"
    digest = hmac.new(secret.encode(), b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signature(secret, body, 1_700_000_000) == f"t=1700000000,v1={digest}"
    assert verify_signature(secret, body, f"t=1700000000,v1={digest}", now=1_700_000_000)
    assert not verify_signature(secret, body, f"t=1700000000,v1={digest}", now=1_700_000_400)
    assert not verify_signature("another-secret-0000", body, f"t=1700000000,v1={digest}", now=1_700_000_000)
    assert not verify_signature(secret, body, "v1=nothing", now=1_700_000_000)


def _error(alerts: dict[str, Any]) -> str:
    from driftline.tasks.config.spec import SpecError, parse_spec

    spec = {
        "name": "acs",
        "reference": {"path": "ref.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric"],
        "alerts": alerts,
    }
    with pytest.raises(SpecError) as caught:
        parse_spec(spec, "monitor.yaml")
    return str(caught.value)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"kind": "pagerdooty"},
            "alerts.channels.0: Value error, unknown channel kind 'pagerdooty'; known: ",
        ),
        ({"routing_key_env": "PD"}, "alerts.channels.0: Value error, each channel needs a `kind`"),
        ({"kind": "pagerduty", "routing_key": "R0"}, "alerts.channels.0.routing_key: Extra inputs"),
        ({"kind": "pagerduty", "base_url": "http://events.example"}, "must use https://"),
        ({"kind": "teams", "min_severity": "critical"}, "alerts.channels.0.min_severity"),
        ({"kind": "webhook"}, "give exactly one of `url`, `url_env` and `url_block`"),
        ({"kind": "email", "smtp_host": "mail", "from": "a@b.c"}, "alerts.channels.0.to: Field required"),
        (
            {"kind": "email", "smtp_host": "mail", "from": "a@b.c\nBcc: x@y.z", "to": "a@b.c"},
            "one email address",
        ),
        (
            {"kind": "email", "smtp_host": "mail.example", "from": "a@b.c", "to": "a@b.c", "starttls": False}
            | {"password_env": "SMTP_PASSWORD"},
            "a login needs `starttls: true`",
        ),
    ],
)
def test_a_wrong_channel_entry_names_the_key(entry: dict[str, Any], message: str) -> None:
    assert message in _error({"channels": [entry]})


def test_two_channels_with_one_destination_are_refused() -> None:
    message = _error({"channels": [{"kind": "teams"}, {"kind": "teams", "webhook_url_env": "OTHER"}]})
    assert "destination 'teams' is configured twice; give one of them another `name`" in message
    twice = _error({"slack": {"channel": "#a"}, "channels": [{"kind": "slack", "channel": "#a"}]})
    assert "destination 'slack:#a' is configured twice" in twice


def test_http_is_allowed_to_this_machine_only_and_secrets_stay_out_of_dumps() -> None:
    config = AlertConfig.model_validate(
        {
            "channels": [
                {"kind": "webhook", "url": "http://127.0.0.1:9/in"},
                {"kind": "slack", "channel": "#b"},
            ]
        }
    )
    dumped = config.model_dump()
    assert (
        dumped["channels"][0]["url"] == "http://127.0.0.1:9/in" and dumped["channels"][0]["kind"] == "webhook"
    )
    assert config.destinations_for("drift.numeric", "high") == ["console", "webhook", "slack:#b"]
    with pytest.raises(ValidationError) as refused:
        AlertConfig.model_validate(
            {"channels": [{"kind": "webhook", "url": "http://hooks.example/very-secret"}]}
        )
    assert "must use https://" in str(refused.value) and "very-secret" not in str(refused.value)
