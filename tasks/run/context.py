"""What one monitor run carries from step to step, passed explicitly: the spec, the engine's driver,
the profile cache, the history database, the run's options and its working folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from driftline.tasks.config.name_claims import claim_name
from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.references.profiles import ProfileCache
from driftline.tasks.retraining.actions import Retraining
from driftline.tasks.run.driver import Driver

# Checks without a mergeable evaluation are run on a gathered partitioned batch up to this many rows.
GATHER_ROWS = 1_000_000


@dataclass(frozen=True)
class RunOptions:
    """Switches of one run: alerting and the retraining trigger (off for a backfill of history, say),
    and the most rows a partitioned batch is gathered into one frame for checks that do not merge."""

    alerts: bool = True
    retrain: Retraining = True
    gather_rows: int = GATHER_ROWS


@dataclass
class RunContext:
    """One run's spec, driver, profile cache, database URL and options."""

    spec: MonitorSpec
    driver: Driver
    cache: ProfileCache
    database_url: str
    options: RunOptions = field(default_factory=RunOptions)

    @classmethod
    def open(
        cls,
        spec: MonitorSpec,
        *,
        driver: Driver | None = None,
        cache: ProfileCache | None = None,
        options: RunOptions | None = None,
    ) -> RunContext:
        """The context of a run of `spec`; a database URL that cannot work, or a monitor name another
        spec file of the folder has, is a `SpecError` now, before any work is done."""
        claim_name(spec)
        return cls(
            spec=spec,
            driver=driver or Driver(),
            cache=cache or ProfileCache(spec.state_dir / "profiles"),
            database_url=spec.database_url(),
            options=options or RunOptions(),
        )

    @property
    def state_dir(self) -> Path:
        """The monitor's working folder (`.driftline` beside the spec)."""
        return self.spec.state_dir
