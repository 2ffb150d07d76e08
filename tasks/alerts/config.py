"""The `alerts:` section of a monitor spec: when to alert, on what (thresholds and baseline rules), and
where to deliver (a default Slack channel or webhook, extra Slack channels and other channels, each
routed by severity or family), with the links every channel shows (`run_url`, `report_url`).

Secrets never live in this model's output: the bot token is resolved by the flow (environment variable
or Prefect Secret block) and passed in, a channel's credentials are named by environment variable or
secret, a literal webhook URL is a `SecretStr` (masked in `repr` and JSON dumps), and validation errors
do not echo the input.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from functools import partial
from string import Formatter
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    SerializeAsAny,
    field_validator,
    model_validator,
)

from driftline.checks.result import SEVERITIES, severity_rank

AlertSeverity = Literal["low", "medium", "high"]

# Placeholders a `run_url` or `report_url` template may use.
RUN_URL_FIELDS = frozenset({"monitor", "batch_id"})
# The links an alert carries, templates under `alerts:`.
LINK_KEYS = ("run_url", "report_url")
# Incidents opened by a baseline rule are keyed by check `rule:<name>` and the series' target.
RULE_PREFIX = "rule:"

WEBHOOK_DESTINATION = "slack-webhook"
CONSOLE_DESTINATION = "console"


def http_url_problem(url: str) -> str | None:
    """Why `url` cannot be called (it is not http(s), or it holds a user name or password, which the
    HTTP client would send to DNS as part of the host name), without echoing it; None when usable."""
    if not url.startswith(("http://", "https://")):
        return "must start with http:// or https://"
    if "@" in urlsplit(url).netloc:
        return (
            "must not hold a user name or password (`user:***@host`): it would be sent to DNS as part "
            "of the host name; put the credential where the service documents it (path or query)"
        )
    return None


def callable_url(url: str, problem_of: Callable[[str], str | None] = http_url_problem) -> str:
    """`url`, or a `ValueError` saying why it cannot be called (`problem_of`), never echoing it."""
    problem = problem_of(url)
    if problem:
        raise ValueError(problem)
    return url


# A URL driftline calls (an API base or a webhook), validated as `callable_url` when the spec loads.
CallableUrl = Annotated[str, AfterValidator(callable_url)]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def channel_url_problem(url: str) -> str | None:
    """Why an alert channel may not call `url`, without echoing it: as `http_url_problem`, and plain
    http only to this machine (a credential or an alert must not cross a network in clear text)."""
    problem = http_url_problem(url)
    if problem is None and url.startswith("http://") and urlsplit(url).hostname not in LOOPBACK_HOSTS:
        return "must use https:// (http:// only to 127.0.0.1 or localhost)"
    return problem


# A URL an alert channel calls: https, or http to this machine only.
ChannelUrl = Annotated[str, AfterValidator(partial(callable_url, problem_of=channel_url_problem))]


class Routing(BaseModel):
    """Which incidents a destination receives: those matching every condition given."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    min_severity: AlertSeverity | None = Field(None, description="only incidents at least this severe")
    family: list[str] | None = Field(None, description="only these check families (`drift`, ...)")

    @field_validator("family", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    def matches(self, check: str, severity: str) -> bool:
        """True when an incident of `check` at (worst) `severity` goes to this destination."""
        if self.min_severity is not None and (
            severity not in SEVERITIES or severity_rank(severity) < severity_rank(self.min_severity)
        ):
            return False
        from driftline.checks.registry import family_of  # the registry reads specs: imported on use

        return self.family is None or family_of(check) in self.family


class ChannelConfig(Routing):
    """One entry of `alerts.channels`: the channel's `kind` (a registered channel, `driftline.tasks.
    alerts.channels`), an optional `name` telling two channels of one kind apart, its routing, and the
    fields its kind declares in a subclass."""

    kind: str = Field(min_length=1, description="registered channel kind: pagerduty, teams, email, ...")
    name: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.#-]+$", max_length=80, description="tells two channels of a kind apart"
    )

    @property
    def destination(self) -> str:
        """Outbox destination label: `kind`, or `kind:name`; never contains a secret."""
        return f"{self.kind}:{self.name}" if self.name else self.kind


def typed_channel(value: Any) -> Any:
    """An `alerts.channels` entry validated by the config model its `kind` registers."""
    if not isinstance(value, dict):
        return value
    kind = value.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ValueError("each channel needs a `kind`")
    from driftline.tasks.alerts.channels.registry import channel_class

    return channel_class(kind).config_model.model_validate(value)


class SlackConfig(ChannelConfig):
    """Slack delivery: a bot token posting to `channel`, or an incoming webhook."""

    kind: Literal["slack"] = Field("slack", description="`slack`")
    channel: str | None = Field(None, description="channel name (`#ml-alerts`) or id for the bot")
    token_env: str | None = Field("SLACK_BOT_TOKEN", description="environment variable with the bot token")
    token_block: str | None = Field(None, description="Prefect Secret block holding the bot token")
    webhook_url_env: str | None = Field(None, description="environment variable with the webhook URL")
    webhook_url: SecretStr | None = Field(None, description="incoming webhook URL (prefer webhook_url_env)")
    base_url: CallableUrl | None = Field(
        None, description="Slack Web API base URL; default https://slack.com/api/"
    )

    @field_validator("webhook_url")
    @classmethod
    def _http_webhook(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            callable_url(value.get_secret_value())
        return value

    @model_validator(mode="after")
    def _one_destination(self) -> SlackConfig:
        webhook = self.webhook_url is not None or self.webhook_url_env is not None
        if webhook == (self.channel is not None):
            raise ValueError(
                "give either `channel` (posted with the bot token) or `webhook_url`/`webhook_url_env`"
            )
        if self.webhook_url is not None and self.webhook_url_env is not None:
            raise ValueError("give only one of `webhook_url` and `webhook_url_env`")
        return self

    @property
    def uses_webhook(self) -> bool:
        """True when messages go to an incoming webhook rather than through the bot."""
        return self.channel is None

    @property
    def destination(self) -> str:
        """Outbox destination label; never contains a secret."""
        return WEBHOOK_DESTINATION if self.uses_webhook else f"slack:{self.channel}"

    @property
    def token_source(self) -> str:
        """Where the bot token comes from, for error messages."""
        if self.token_block:
            return f"Prefect Secret block {self.token_block!r}"
        if self.token_env:
            return f"environment variable {self.token_env}"
        return "the `token` argument"


def url_fields(monitor: str, batch_id: str) -> dict[str, str]:
    """The values of a link template, percent-encoded so that each stays one URL component."""
    return {"monitor": quote(monitor, safe=""), "batch_id": quote(batch_id, safe="")}


def link_template(value: str) -> str:
    """`value` when it is a link template using `{monitor}` and `{batch_id}` only, else a `ValueError`."""
    try:
        names = {name for _, name, _, _ in Formatter().parse(value) if name is not None}
    except ValueError as exc:
        raise ValueError(f"malformed template: {exc}") from None
    unknown = names - RUN_URL_FIELDS
    if unknown:
        raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; use {{monitor}} and {{batch_id}} only")
    return value


# A link template an alert carries, checked when the spec loads.
LinkTemplate = Annotated[str, AfterValidator(link_template)]


class SpecDeprecationWarning(FutureWarning):
    """A spec key that still works but has moved; the message names the key to use instead."""


def moved_slack_links(data: Any) -> Any:
    """`alerts:` input with `alerts.slack.run_url`/`report_url` (their place before every channel
    rendered links) moved to `alerts.run_url`/`report_url`, warning once for each, naming the new key."""
    if not isinstance(data, dict) or not isinstance(data.get("slack"), dict):
        return data
    slack = dict(data["slack"])
    data = {**data, "slack": slack}
    for key in LINK_KEYS:
        if key not in slack:
            continue
        value = slack.pop(key)
        if data.get(key) is not None and data[key] != value:
            raise ValueError(f"slack.{key}: moved to alerts.{key}, which gives another link; keep only that")
        warnings.warn(
            f"alerts.slack.{key} is deprecated: write it as alerts.{key} (every channel shows the link)",
            SpecDeprecationWarning,
            stacklevel=2,
        )
        data[key] = value
    return data


class AlertRule(BaseModel):
    """A baseline rule: alert when a metric leaves the band its own recent history draws.

    Each series (check, target, metric) matching `check`, `metric` and (when given) `target` is
    compared with the previous `window` runs of itself: centre ± k·scale with the median and MAD
    (`method: mad`) or the mean and standard deviation (`std`). The rule fires for a series when its
    last `for_runs` values are all above `above_baseline` (or below `below_baseline`) scales from
    their bands, or, with `change_point`, when the best level shift of the last `window` runs starts
    within the last `max(for_runs, 2)` runs and is stronger than `penalty`.
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    check: str = Field(min_length=1, description="dotted check name, e.g. drift.numeric")
    metric: str = Field(min_length=1, description="metric of that check, e.g. psi")
    target: str | None = Field(None, description="only this target (column, subset, ...); default all")
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_.:/-]+$", description="incident key suffix")
    above_baseline: float | None = Field(None, gt=0, description="k: fire above centre + k·scale")
    below_baseline: float | None = Field(None, gt=0, description="k: fire below centre − k·scale")
    method: Literal["mad", "std"] = Field(
        "mad", description="band centre and scale: median and MAD (`mad`), or mean and standard deviation"
    )
    window: int = Field(30, ge=3, le=5000, description="earlier runs the band is learned from")
    min_runs: int = Field(5, ge=2, description="earlier values needed before the rule can fire")
    for_runs: int = Field(1, ge=1, le=1000, description="consecutive runs outside the band to fire")
    change_point: bool = Field(False, description="also fire on a recent level shift")
    penalty: float = Field(15.0, gt=0, description="change-point strength (in noise variances) to fire")
    severity: AlertSeverity = Field("medium", description="severity of the incident a firing rule opens")

    @model_validator(mode="after")
    def _something_to_test(self) -> AlertRule:
        if self.above_baseline is None and self.below_baseline is None and not self.change_point:
            raise ValueError("give above_baseline, below_baseline or change_point: true")
        if self.min_runs > self.window:
            raise ValueError(f"min_runs ({self.min_runs}) must not exceed window ({self.window})")
        if self.change_point and self.window < 4:
            raise ValueError("change_point needs a window of at least 4 runs")
        return self

    @property
    def key(self) -> str:
        """The incident check name of this rule: `rule:<name>`, by default `rule:<check>/<metric>`."""
        return RULE_PREFIX + (self.name or f"{self.check}/{self.metric}")

    @property
    def runs_needed(self) -> int:
        """How many of the newest runs the rule reads: a full window before each of its last runs."""
        return self.window + max(self.for_runs, 1)


class Route(Routing):
    """Another Slack channel that receives the incidents matching every condition given."""

    channel: str = Field(min_length=1, description="channel name (`#ml-oncall`) or id")

    @property
    def destination(self) -> str:
        """Outbox destination label of this channel."""
        return f"slack:{self.channel}"


class SustainedConfig(BaseModel):
    """Evidence over time: a graded metric whose recent batches, graded against the same reference,
    together prove a change that no single one of them proves, is raised to `severity`."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    enabled: bool = Field(True, description="accumulate each graded metric's evidence over recent batches")
    severity: AlertSeverity = Field("medium", description="severity a sustained change raises a result to")
    expected_run_length: float = Field(
        1000, ge=2, description="clean runs per false sustained claim, over every metric of the monitor"
    )
    min_effect: float = Field(
        0.2, ge=0, description="mean excess effect needed, as a share of the metric's lowest threshold"
    )


class AlertConfig(BaseModel):
    """When an incident opens (`min_severity`) and resolves (`resolve_after`), and where the alert goes
    (Slack, else the console)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    min_severity: AlertSeverity = Field("medium", description="the severity at which an incident opens")
    resolve_after: int = Field(
        3,
        ge=1,
        le=1000,
        description="consecutive graded runs below min_severity that resolve an open incident (1: the first)",
    )
    confidence: float = Field(
        0.99,
        gt=0.5,
        lt=1.0,
        description="chance that a batch with no change raises no severity at all, over every graded metric",
    )
    slack: SlackConfig | None = Field(None, description="the default destination: a Slack channel or webhook")
    run_url: LinkTemplate | None = Field(
        None,
        description="link to a run shown by every channel, with `{monitor}` and `{batch_id}` fields "
        "(default: the run in the orchestrator)",
    )
    report_url: LinkTemplate | None = Field(
        None,
        description="link to a run's HTML report shown by every channel, with `{monitor}` and `{batch_id}`",
    )
    console: bool = Field(True, description="print alerts when no Slack destination is configured")
    rules: list[AlertRule] = Field(default_factory=list, description="baseline rules over the history")
    routes: list[Route] = Field(default_factory=list, description="more Slack channels, by severity/family")
    channels: list[SerializeAsAny[Annotated[ChannelConfig, BeforeValidator(typed_channel)]]] = Field(
        default_factory=list,
        description="more channels (pagerduty, teams, email, webhook, slack, ...), each with its routing",
    )
    sustained: SustainedConfig = Field(
        default_factory=SustainedConfig, description="evidence accumulated over recent batches"
    )

    @model_validator(mode="before")
    @classmethod
    def _links_moved(cls, data: Any) -> Any:
        return moved_slack_links(data)

    @model_validator(mode="after")
    def _consistent(self) -> AlertConfig:
        keys = Counter(rule.key for rule in self.rules)
        twice = sorted(k for k, n in keys.items() if n > 1)
        if twice:
            raise ValueError(f"rules: two rules share the key {twice[0]!r}; give one of them a `name`")
        floor = severity_rank(self.min_severity)
        for i, rule in enumerate(self.rules):
            if severity_rank(rule.severity) < floor:
                raise ValueError(
                    f"rules.{i}.severity: {rule.severity} is below min_severity {self.min_severity}, "
                    "so the rule could never alert"
                )
        if self.routes:
            if self.slack is None or self.slack.uses_webhook:
                raise ValueError(
                    "routes: need alerts.slack.channel (the bot token posts to each channel); "
                    "a webhook posts to its one channel only"
                )
            channels = Counter(route.channel for route in self.routes)
            channels[self.slack.channel or ""] += 1
            again = sorted(c for c, n in channels.items() if n > 1)
            if again:
                raise ValueError(f"routes: channel {again[0]!r} is listed twice (or is alerts.slack.channel)")
        taken = Counter(d.destination for d in self.routed)
        twice = sorted(d for d, n in taken.items() if n > 1)
        if twice:
            raise ValueError(
                f"channels: destination {twice[0]!r} is configured twice; give one of them another `name`"
            )
        return self

    @property
    def routed(self) -> list[Route | ChannelConfig]:
        """Every destination with its routing: alerts.slack, its routes, then alerts.channels."""
        return [*([self.slack] if self.slack is not None else []), *self.routes, *self.channels]

    @property
    def destination(self) -> str | None:
        """Where this monitor's alerts go: a Slack label, "console", or None for nowhere."""
        if self.slack is not None:
            return self.slack.destination
        return CONSOLE_DESTINATION if self.console else None

    def destinations_for(self, check: str, severity: str) -> list[str]:
        """Every destination an incident of `check` at (worst) `severity` goes to: the console (all
        incidents) when it is the default, else each matching destination in `routed` order."""
        console = [CONSOLE_DESTINATION] if self.destination == CONSOLE_DESTINATION else []
        return console + [d.destination for d in self.routed if d.matches(check, severity)]

    def format_run_url(self, monitor: str, batch_id: str) -> str | None:
        """The configured run link for one batch, or None without a template."""
        return self.run_url.format(**url_fields(monitor, batch_id)) if self.run_url else None

    def format_report_url(self, monitor: str, batch_id: str) -> str | None:
        """The configured report link for one batch, or None without a template."""
        return self.report_url.format(**url_fields(monitor, batch_id)) if self.report_url else None
