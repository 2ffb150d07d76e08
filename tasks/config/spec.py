"""The monitor spec: one YAML file describing data, checks, alerts, retraining and schedule."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any, Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from driftline.checks.result import severity_rank
from driftline.checks.roles import RETRAIN_ROLES
from driftline.tasks.alerts.config import AlertConfig, CallableUrl
from driftline.tasks.sources.read_limits import MAX_COLUMNS, READ_MEMORY_MB, ReadLimits

Severity = Literal["none", "low", "medium", "high"]
# Rows in one page of a SQL batch read in pages (`sql.page_by`) when `sql.page_rows` is not given.
PAGE_ROWS = 500_000


class SpecError(ValueError):
    """A monitor spec that cannot be read or validated; the message names the file and the key."""


class Strict(BaseModel):
    """Base of every spec section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class SqlSource(Strict):
    """Rows from a SQL query through SQLAlchemy; `:start` and `:end` bind the batch window."""

    url: str | None = Field(None, description="SQLAlchemy URL; defaults to env `url_env`")
    url_env: str | None = Field(None, description="environment variable holding the SQLAlchemy URL")
    query: str = Field(
        description="the query; a batch's binds `:start` and `:end` (the reference's runs unbound)"
    )
    window_days: float = Field(1.0, description="days a batch covers: its id is the window's first day")
    page_by: str | None = Field(
        None, description="orderable key column: a partitioned run reads the batch in pages of its ranges"
    )
    page_rows: int | None = Field(None, gt=0, description=f"rows a page (default {PAGE_ROWS:,})")

    @model_validator(mode="after")
    def _pages_need_a_key(self) -> SqlSource:
        if self.page_rows is not None and self.page_by is None:
            raise ValueError("page_rows needs page_by (the key column that pages the batch)")
        return self

    @property
    def rows_a_page(self) -> int:
        """Rows in one page of a paged batch."""
        return self.page_rows or PAGE_ROWS


class Source(Strict):
    """A file (CSV or Parquet), a glob with a `{batch}` placeholder, or Parquet partitions, as a local
    path or an object-storage URL; a SQL query; or a source of another `kind` (docs/sources.md)."""

    path: str | None = Field(
        None,
        description="local path or URL (s3://, gs://, az://, memory://); credentials from the environment",
    )
    sql: SqlSource | None = Field(None, description="rows from a SQL query through SQLAlchemy")
    kind: str | None = Field(
        None,
        description="a registered source, one a package publishes under `driftline.sources`, or module:Class",
    )
    options: dict[str, Any] = Field(default_factory=dict, description="the `kind` source's own settings")

    @model_validator(mode="after")
    def _one_kind(self) -> Source:
        if sum(given is not None for given in (self.path, self.sql, self.kind)) != 1:
            raise ValueError("give exactly one of `path`, `sql` or `kind`")
        if self.options and self.kind is None:
            raise ValueError("`options` go with `kind`")
        return self

    @field_validator("path")
    @classmethod
    def _readable_url(cls, value: str | None) -> str | None:
        """A URL of a scheme driftline does not read, or with credentials in it, is refused at load."""
        from driftline.tasks.sources.storage import url_problem

        problem = url_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value


class CheckSpec(Strict):
    """One catalog check with its parameters and threshold overrides."""

    check: str = Field(
        description="a catalog name (`drift.numeric`), `module:Class`, or a published check's name"
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="the check's parameters (`driftline checks`)"
    )
    thresholds: dict[str, list[float] | float] = Field(
        default_factory=dict,
        description="metric: low/medium/high thresholds (three, two or one) replacing the defaults",
    )
    features: list[str] | None = Field(
        None, description="only these features; default: every feature of its kind"
    )
    timeout_s: float | None = Field(None, gt=0, description="overrides `execution.timeout_s` for this check")

    def check_params(self) -> dict[str, Any]:
        """Parameters for `driftline.checks.registry.create`, thresholds and feature list included."""
        params = dict(self.params)
        if self.thresholds:
            params["thresholds"] = {k: v if isinstance(v, list) else [v] for k, v in self.thresholds.items()}
        if self.features is not None:
            params["features"] = self.features
        return params


RetrainWhen = Literal["incident", "every_run"]


class RetrainSpec(Strict):
    """What to start when a model-level failure reaches `min_severity`, and how often (`when`): a command
    or webhook (any engine), or, under Prefect, a deployment run or the `driftline.monitor.failed`
    event for an automation."""

    min_severity: Severity = Field("high", description="the severity a result must reach to start retraining")
    on: list[str] | None = Field(
        None,
        description=(
            "check families or names whose results may start retraining; default: checks declaring the "
            "role performance or estimate (the catalog's performance family: performance.overall, "
            ".estimated, .estimated_regression, .calibration)"
        ),
    )
    when: RetrainWhen = Field(
        "incident",
        description=(
            "incident: once per open incident of a failing result (the run that opens or escalates it); "
            "every_run: on every failing run"
        ),
    )
    command: list[str] | None = Field(
        None, description="argv run with the failure as JSON on stdin and DRIFTLINE_* variables"
    )
    webhook_url: CallableUrl | None = Field(
        None, description="POST the failure as JSON here (with an `Idempotency-Key` header)"
    )
    webhook_url_env: str | None = Field(None, description="environment variable holding `webhook_url`")
    deployment: str | None = Field(None, description="Prefect engine: `flow-name/deployment-name`")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Prefect engine: the deployment's parameters"
    )
    emit_event: bool | None = Field(
        None, description="Prefect engine: emit `driftline.monitor.failed`; default: when nothing else is set"
    )

    @field_validator("command", mode="before")
    @classmethod
    def _split_command(cls, value: Any) -> Any:
        """A command given as one string is split the way a shell would."""
        return shlex.split(value) if isinstance(value, str) else value

    def triggered_by(self, check: str, family: str, role: str) -> bool:
        """Whether a result of `check` (of `family`, declaring `role`) reaching `min_severity` may start
        retraining: by default a failure of the model itself (`RETRAIN_ROLES`: realised or estimated
        performance). Broken data calls for its owners, drifted inputs or predictions with intact
        performance for a look, and a gap in one subset or group for a fix that retraining on the same
        data rarely brings."""
        if self.on is None:
            return role in RETRAIN_ROLES
        return check in self.on or family in self.on

    @property
    def emits(self) -> bool:
        """Whether to emit the event (by default only when no other action is named, so one failure
        retrains once)."""
        if self.emit_event is not None:
            return self.emit_event
        return not (self.deployment or self.command or self.webhook_url or self.webhook_url_env)


class ScheduleSpec(Strict):
    """When `driftline serve` (or a deployment) runs the monitor."""

    cron: str = Field("0 6 * * *", description="five-field cron expression")
    timezone: str = Field("UTC", description="IANA time zone the cron is read in")

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        from croniter import croniter

        if not croniter.is_valid(value):
            raise ValueError(f"Invalid cron string: {value!r}")
        return value

    @field_validator("timezone")
    @classmethod
    def _valid_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"Invalid timezone: {value!r} is not an IANA time zone") from None
        return value


class ExecutionSpec(Strict):
    """How the checks of a run are executed: isolation, parallelism and per-check limits."""

    isolation: Literal["process", "thread"] = Field(
        "process", description="`process`: each check in its own worker process, stopped at its timeout"
    )
    workers: int = Field(4, ge=1, description="checks evaluated at the same time")
    timeout_s: float = Field(600.0, gt=0, description="default per-check time limit (process isolation)")
    memory_mb: int | None = Field(None, gt=0, description="per-check address-space limit (process isolation)")
    read_memory_mb: int | None = Field(
        None,
        gt=0,
        description=(
            "megabytes a data file may decode to in the run's own process (the reference, a batch); "
            f"default: the larger of {READ_MEMORY_MB} and memory_mb"
        ),
    )
    max_columns: int = Field(
        MAX_COLUMNS,
        gt=0,
        description="columns a batch or reference may have (each costs every run its results)",
    )

    @property
    def read_limits(self) -> ReadLimits:
        """What one data file may take in the run's own process: decoded megabytes (by default the
        larger of `READ_MEMORY_MB` and the workers' `memory_mb`) and columns."""
        return ReadLimits(self.read_memory_mb or max(READ_MEMORY_MB, self.memory_mb or 0), self.max_columns)


class MonitorSpec(Strict):
    """A monitor: where the data is, which checks to run, who to alert, when to retrain."""

    # The name keys folders (`.driftline/reports/<name>/`): it needs a character other than a dot, so
    # "." and ".." cannot leave them.
    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$",
        description="the monitor's name: keys its history, incidents and report folders",
    )
    description: str = Field("", description="free text shown with the monitor")
    reference: Source = Field(description="the snapshot every batch is compared with")
    batches: Source = Field(
        description="the production batches: a `{batch}` template, a glob, SQL or a `kind`"
    )
    labels: Source | None = Field(
        None, description="labels that land after their batch: a `{batch}` file template or SQL, keyed by id"
    )
    columns: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "column roles (id, label, prediction, score, time, numeric, categorical, text, protected, "
            "ignore); roles not given are inferred"
        ),
    )
    model: str | None = Field(None, description="`package.module:callable` returning a fitted estimator")
    checks: list[CheckSpec] = Field(description="the checks to run: a name, or a mapping with `check:`")
    summary: bool = Field(
        True, description="a data summary of every column (data.summary) with each run; false leaves it out"
    )
    fail_on: Severity = Field("high", description="`driftline run` exits 1 (a failed run) at this severity")
    alerts: AlertConfig = Field(default_factory=AlertConfig, description="incidents and where alerts go")
    retrain: RetrainSpec | None = Field(
        None, description="what to start when the model fails; default: nothing"
    )
    schedule: ScheduleSpec = Field(
        default_factory=ScheduleSpec, description="when a deployment runs the monitor"
    )
    execution: ExecutionSpec = Field(
        default_factory=ExecutionSpec, description="isolation, workers and limits"
    )
    store_url: str | None = Field(
        None,
        description=(
            "history database (SQLAlchemy URL); default: $DRIFTLINE_DATABASE_URL, "
            "else driftline.db beside the spec"
        ),
    )
    store_block: str | None = Field(
        None,
        description=(
            "Prefect Secret block holding the history database URL (with its password), in place of "
            "store_url; read wherever the spec is used, so Prefect must be installed"
        ),
    )
    base_dir: Path = Field(Path("."), exclude=True)
    path: Path | None = Field(None, exclude=True, description="the spec file, when loaded from one")

    @field_validator("retrain")
    @classmethod
    def _retrain_through_incidents(
        cls, value: RetrainSpec | None, info: ValidationInfo
    ) -> RetrainSpec | None:
        """Once per incident needs an incident: a failure below `alerts.min_severity` never opens one."""
        alerts = info.data.get("alerts")
        if value is None or value.when != "incident" or alerts is None:
            return value
        if severity_rank(value.min_severity) < severity_rank(alerts.min_severity):
            raise ValueError(
                f"min_severity {value.min_severity} is below alerts.min_severity {alerts.min_severity}: "
                "with when: incident a failure retrains through its incident, which opens at "
                "alerts.min_severity; raise retrain.min_severity or set when: every_run"
            )
        return value

    @field_validator("labels")
    @classmethod
    def _labels_per_batch(cls, value: Source | None) -> Source | None:
        """A labels file must name its batch, or every batch would get the same labels."""
        if value is not None and value.path is not None and "{batch}" not in value.path:
            raise ValueError(f"labels.path {value.path!r} must contain {{batch}}")
        return value

    @field_validator("columns")
    @classmethod
    def _known_roles(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Column roles are checked when the spec loads, before any data is read or run recorded."""
        from driftline.checks.columns import ROLE_KEYS

        unknown = sorted(set(value) - set(ROLE_KEYS))
        if unknown:
            import difflib

            close = [m for key in unknown for m in difflib.get_close_matches(key, ROLE_KEYS, n=1)]
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ValueError(f"unknown column role(s) {unknown}{hint}; known roles: {sorted(ROLE_KEYS)}")
        return value

    @field_validator("model")
    @classmethod
    def _predictions_have_a_column(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Every model predicts: the column its predictions are written to must be no other role's."""
        from driftline.tasks.references.model import output_column_taken, output_conflict

        other = output_column_taken(info.data.get("columns") or {}, "prediction") if value else None
        if other:
            raise ValueError(output_conflict("prediction", other))
        return value

    @field_validator("store_url")
    @classmethod
    def _usable_store_url(cls, value: str | None) -> str | None:
        """A URL that cannot work is named when the spec loads, not taken for a database outage."""
        from driftline.tasks.history.db import StoreConfigError, validate_database_url

        if value is not None:
            try:
                validate_database_url(value)
            except StoreConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _one_store(self) -> MonitorSpec:
        if self.store_url and self.store_block:
            raise ValueError("give store_url or store_block, not both")
        return self

    @field_validator("checks", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """Allow `- drift.numeric` as shorthand for `- check: drift.numeric`."""
        if isinstance(value, list):
            return [{"check": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("checks")
    @classmethod
    def _not_empty(cls, value: list[CheckSpec]) -> list[CheckSpec]:
        if not value:
            raise ValueError("list at least one check")
        return value

    @property
    def state_dir(self) -> Path:
        """The monitor's working folder beside its spec: cached profiles, reports, the spool, locks."""
        return self.base_dir / ".driftline"

    def database_url(self) -> str:
        """The history database: `store_url` (a relative SQLite path is beside the spec), else
        $DRIFTLINE_DATABASE_URL, else driftline.db beside the spec, never in the working directory; a
        URL that cannot work is a SpecError naming where it came from."""
        from driftline.tasks.history.db import (
            DEFAULT_DATABASE_URL,
            ENV_VAR,
            StoreConfigError,
            validate_database_url,
        )

        url = (
            (self.store_url and self._beside_spec(self.store_url))
            or (self.store_block and self._block_url(self.store_block))
            or os.environ.get(ENV_VAR)
            or self._beside_spec(DEFAULT_DATABASE_URL)
        )
        try:
            validate_database_url(url)
        except StoreConfigError as exc:
            raise SpecError(f"{self.path or self.name}: ${ENV_VAR}: {exc}") from None
        return url

    def _block_url(self, block: str) -> str:
        """The database URL a Prefect Secret block holds; a block that cannot be read is a SpecError
        naming the block, never its value."""
        from driftline.tasks.history.db import StoreConfigError, validate_database_url

        where = f"{self.path or self.name}: store_block {block!r}"
        try:
            from prefect.blocks.system import Secret
        except ImportError:
            raise SpecError(f"{where} needs Prefect: pip install 'driftline[prefect]'") from None
        try:
            url = cast(Secret, Secret.load(block)).get()  # sync code: `load` returns the block
        except Exception as exc:
            raise SpecError(f"{where}: cannot load the Prefect Secret block ({type(exc).__name__})") from None
        if not isinstance(url, str) or not url:
            raise SpecError(f"{where} holds no database URL")
        try:
            validate_database_url(url)
        except StoreConfigError as exc:
            raise SpecError(f"{where}: {exc}") from None
        return self._beside_spec(url)

    def _beside_spec(self, url: str) -> str:
        """`url` with a relative SQLite file path resolved against the spec's folder."""
        prefix, sep, file = url.partition(":///")
        if not sep or prefix.split("+")[0] != "sqlite" or not file or file.startswith(("/", ":memory:")):
            return url
        return f"{prefix}:///{self.base_dir.resolve() / file}"

    def resolve(self, path: str) -> Path:
        """A path from the spec, relative to the spec file's folder."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.base_dir / candidate

    def locate(self, path: str) -> str:
        """A data location from the spec: a URL as it is, a local path resolved against the spec's folder."""
        from driftline.tasks.sources.storage import is_remote, local_path

        return path if is_remote(path) else str(self.resolve(str(local_path(path))))


def _format_errors(source: str, exc: ValidationError) -> str:
    lines = [f"{source}: invalid monitor spec"]
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  {key}: {err['msg']}")
    return "\n".join(lines)


# Fields the loader sets, not the YAML.
INTERNAL_FIELDS = frozenset({"base_dir", "path"})
# Values (keys, items and scalars, an alias counted at each use) a spec may expand to: a monitor has a
# few hundred, while aliases of aliases (a "billion laughs" document) expand to billions.
MAX_SPEC_VALUES = 100_000


def _refuse_expansion(data: Any, source: str) -> None:
    """A document that expands past `MAX_SPEC_VALUES` values is a `SpecError`, found after counting at
    most that many (so it is refused at once, before validation walks or copies it)."""
    pending, counted = [data], 0
    while pending:
        value = pending.pop()
        counted += 1
        if counted > MAX_SPEC_VALUES:
            raise SpecError(
                f"{source}: the spec expands to more than {MAX_SPEC_VALUES:,} values (aliases of aliases?)"
            )
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def parse_spec(data: Any, source: str = "<spec>", base_dir: Path | None = None) -> MonitorSpec:
    """Validate an already-parsed YAML document; errors name `source` and each offending key."""
    if not isinstance(data, dict):
        raise SpecError(f"{source}: a monitor spec is a YAML mapping, got {type(data).__name__}")
    _refuse_expansion(data, source)
    internal = sorted(INTERNAL_FIELDS & set(data))
    if internal:
        raise SpecError(f"{source}: {internal[0]}: Extra inputs are not permitted")
    try:
        spec = MonitorSpec.model_validate({**data, "base_dir": base_dir or Path(".")})
    except ValidationError as exc:
        raise SpecError(_format_errors(source, exc)) from None
    _validate_checks(spec, source)
    _validate_sources(spec, source)
    return spec


def _validate_sources(spec: MonitorSpec, source: str) -> None:
    """Find every `kind:` source and match its options once, so an unknown kind or option fails at
    load time (the source itself is built when the run reads it)."""
    from driftline.tasks.sources import SourceError
    from driftline.tasks.sources.registry import checked_factory

    for role in ("reference", "batches", "labels"):
        section = getattr(spec, role)
        if section is not None and section.kind is not None:
            try:
                checked_factory(section.kind, section.options, spec)
            except SourceError as exc:
                raise SpecError(f"{source}: {role}.kind: {exc}") from None


def _validate_checks(spec: MonitorSpec, source: str) -> None:
    """Instantiate every check once so an unknown name or parameter fails at load time."""
    from driftline.checks import registry
    from driftline.checks.errors import CheckInputError

    for i, entry in enumerate(spec.checks):
        try:
            registry.create(entry.check, entry.check_params(), spec.base_dir)
        except CheckInputError as exc:
            raise SpecError(f"{source}: checks.{i}: {exc}") from None


class SpecLoader(yaml.SafeLoader):
    """YAML as a spec is read: booleans are `true` and `false` only (YAML 1.2), so a key such as
    `retrain.on` stays the word "on" instead of becoming True as YAML 1.1's yes/no/on/off would."""


SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_spec(path: str | Path) -> MonitorSpec:
    """Read and validate a monitor spec file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the monitor spec ({exc.strerror})") from None
    try:
        data = yaml.load(text, Loader=SpecLoader)
        spec = parse_spec(data, str(path), path.resolve().parent)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SpecError(f"{path}: malformed YAML{where}: {getattr(exc, 'problem', exc)}") from None
    except RecursionError:
        raise SpecError(f"{path}: the spec nests lists or mappings too deeply to read") from None
    spec.path = path.resolve()
    return spec


def severity_at_least(severity: str, minimum: str) -> bool:
    """True when `severity` is at or above `minimum` (and `minimum` is not "none")."""
    return minimum != "none" and severity_rank(severity) >= severity_rank(minimum)


def past_batch_ids(spec: MonitorSpec, given: list[str] | None) -> list[str]:
    """The batches a backfill covers: `given` (validated), or every file the batch template matches
    (oldest first); a bad batch id is a `BatchIdError`."""
    from driftline.tasks.sources import open_source, valid_batch_id
    from driftline.tasks.sources.storage import masked

    if given:
        return [valid_batch_id(batch_id) for batch_id in given]
    if spec.batches.sql is not None:
        raise SpecError(
            f"{spec.path or spec.name}: a SQL batch source needs explicit batch ids (--batch 2024-05-01)"
        )
    ids = open_source(spec, spec.batches, "batches").list_batches()
    if not ids:
        where = masked(spec.batches.path) if spec.batches.path else spec.batches.kind
        raise SpecError(f"{spec.path or spec.name}: no batch file matches {where!r}")
    return ids
