"""A source of another kind is one class and its registration: registered in the process, published
under the `driftline.sources` entry point group, or named `module:Class`; a monitor run reads it like a
file. Unknown kinds and options fail when the spec loads; URLs are validated and masked."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from driftline.tasks.config.spec import SpecError, load_spec
from driftline.tasks.run.pipeline import run_monitor
from driftline.tasks.sources import Batch, DataSource, SourceError, register_source, registry
from driftline.tasks.sources.read_limits import DEFAULT_LIMITS, ReadLimits
from driftline.tasks.sources.storage import masked, url_problem
from tests.scale.helpers import stored
from tests.sources.specs import write_monitor

READS: list[str] = []


@dataclass(frozen=True)
class ToySource:
    """Normal draws generated from a seed: the reference at mean 0, batch `day-N` at mean `shift * N`."""

    rows: int = 2000
    shift: float = 0.0

    def describe(self) -> str:
        return f"toy({self.rows} rows)"

    def require(self) -> None:
        """Always there."""

    def identity(self) -> str | None:
        return f"toy:{self.rows}"

    def list_batches(self) -> list[str]:
        return ["day-1", "day-2"]

    def frame(self, seed: int, mean: float) -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        return pd.DataFrame({"v": rng.normal(mean, 1.0, self.rows), "g": rng.choice(["a", "b"], self.rows)})

    def read(self, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
        READS.append("reference")
        return self.frame(0, 0.0)

    def read_batch(self, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
        batch_id = batch_id or self.list_batches()[-1]
        READS.append(batch_id)
        day = int(batch_id.split("-")[1])
        return Batch(batch_id, self.frame(day, self.shift * day), datetime(2024, 5, day, tzinfo=UTC))

    def read_labels(self, batch_id: str, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame | None:
        return None


register_source("toy", ToySource)


def write_spec(folder: Path, reference: dict[str, Any], batches: dict[str, Any]) -> Path:
    """A monitor of drift in `v` over the given sources."""
    roles = {"numeric": ["v"], "categorical": ["g"]}
    return write_monitor(
        folder,
        "toy",
        {"reference": reference, "batches": batches, "summary": False},
        roles,
        ["drift.numeric"],
    )


def test_a_registered_source_feeds_a_monitor_run(tmp_path: Path) -> None:
    """PSI of the shifted batch against the reference, pinned to a hand computation on the same draws:
    the reference's deciles (inverted CDF), right-closed bins, one count added to every bin."""
    READS.clear()
    path = write_spec(tmp_path, {"kind": "toy"}, {"kind": "toy", "options": {"shift": 0.5}})
    spec = load_spec(path)
    assert isinstance(registry.open_source(spec, spec.batches, "batches"), DataSource)
    summary = run_monitor(spec, alerts=False, retrain=False)
    assert READS == ["day-2", "reference"]
    assert summary.batch_id == "day-2"
    psi = {r["target"]: r["metrics"]["psi"] for r in stored(path, "day-2") if r["check"] == "drift.numeric"}
    toy = ToySource(shift=0.5)
    reference, batch = toy.frame(0, 0.0)["v"].to_numpy(), toy.frame(2, 1.0)["v"].to_numpy()
    edges = np.quantile(reference, np.arange(1, 10) / 10, method="inverted_cdf")
    expected = (np.bincount(np.searchsorted(edges, reference), minlength=10) + 1) / (len(reference) + 10)
    actual = (np.bincount(np.searchsorted(edges, batch), minlength=10) + 1) / (len(batch) + 10)
    assert psi["v"] == pytest.approx(float(np.sum((actual - expected) * np.log(actual / expected))), rel=1e-6)


def test_a_source_named_module_class_or_published_as_an_entry_point_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_path = load_spec(write_spec(tmp_path, {"kind": f"{__name__}:ToySource"}, {"kind": "toy"}))
    assert isinstance(registry.open_source(by_path, by_path.reference, "reference"), ToySource)
    entry = EntryPoint(name="published_toy", value=f"{__name__}:ToySource", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "published", lambda: {"published_toy": entry})
    published = load_spec(
        write_spec(tmp_path, {"kind": "published_toy", "options": {"rows": 10}}, {"kind": "toy"})
    )
    source = registry.open_source(published, published.reference, "reference")
    assert isinstance(source, ToySource) and len(source.read()) == 10


def test_unknown_kinds_and_options_fail_when_the_spec_loads(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"reference\.kind: unknown source kind 'nosuch' \(known: .*toy"):
        load_spec(write_spec(tmp_path, {"kind": "nosuch"}, {"kind": "toy"}))
    with pytest.raises(SpecError, match=r"batches\.kind: source kind 'toy': options \['colour'\]"):
        load_spec(write_spec(tmp_path, {"kind": "toy"}, {"kind": "toy", "options": {"colour": 1}}))
    with pytest.raises(SpecError, match="give exactly one of `path`, `sql` or `kind`"):
        load_spec(write_spec(tmp_path, {"kind": "toy", "path": "x.csv"}, {"kind": "toy"}))


def test_a_factory_that_builds_no_source_is_named(tmp_path: Path) -> None:
    register_source("not_a_source", lambda: object())
    spec = load_spec(write_spec(tmp_path, {"kind": "not_a_source"}, {"kind": "toy"}))
    with pytest.raises(SourceError, match="'not_a_source': object is not a source; a source has describe"):
        registry.open_source(spec, spec.reference, "reference")


def test_spec_urls_are_validated_and_never_shown_with_credentials(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"URL scheme http:// is not read \(use a local path or abfs://"):
        load_spec(write_spec(tmp_path, {"path": "http://example.com/r.csv"}, {"kind": "toy"}))
    with pytest.raises(SpecError) as caught:
        load_spec(write_spec(tmp_path, {"path": "s3://AKIAKEY:s3cr3t@bucket/r.parquet"}, {"kind": "toy"}))
    assert "credentials do not belong in the spec" in str(caught.value)
    assert "s3cr3t" not in str(caught.value) and "AKIAKEY" not in str(caught.value)
    assert url_problem("s3://bucket/{batch}/*.parquet") is None and url_problem("data/x.csv") is None
    assert masked("s3://key:secret@bucket/a.csv?X-Amz-Signature=abc&versionId=7") == (
        "s3://***@bucket/a.csv?X-Amz-Signature=***&versionId=***"
    )


def test_a_missing_filesystem_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    from driftline.tasks.sources import read_table

    def not_installed(url: str) -> Any:
        raise ImportError("Install s3fs to access S3")

    monkeypatch.setattr(fsspec.core, "url_to_fs", not_installed)
    with pytest.raises(
        SourceError,
        match=r'^s3://b/r\.parquet: reading s3:// needs its filesystem \(pip install "driftline\[s3\]"\)$',
    ):
        read_table("s3://b/r.parquet")
