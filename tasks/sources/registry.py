"""What a data source is (`DataSource`), and how a spec's `reference:`, `batches:` or `labels:` becomes
one: `path:` a file source (local or object storage), `sql:` a query source, `kind:` a source found by
name (registered in this process, published by a package under the `driftline.sources` entry point
group, or `module:Class` beside the spec, as custom checks are found) and built from its `options:`."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pandas as pd

from driftline.checks.custom import entry_points_in, load_entry
from driftline.tasks.sources.base import Batch, SourceError
from driftline.tasks.sources.files import FileSource
from driftline.tasks.sources.read_limits import DEFAULT_LIMITS, ReadLimits
from driftline.tasks.sources.sql import QuerySource

if TYPE_CHECKING:
    from driftline.tasks.config.spec import MonitorSpec, Source

ENTRY_POINT_GROUP = "driftline.sources"
CONTRACT = (
    "a source has describe, require, identity, list_batches, read, read_batch and read_labels "
    "(docs/sources.md)"
)


@runtime_checkable
class DataSource(Protocol):
    """Where a monitor's reference, batches or labels come from."""

    def describe(self) -> str:
        """The source as errors and logs name it, credentials masked."""
        ...

    def require(self) -> None:
        """A `SourceError` when the reference is not there, before a run is recorded."""
        ...

    def identity(self) -> str | None:
        """What changes whenever the reference's rows may have changed (the reference cache's key);
        None: no such identity, the reference is read on every run."""
        ...

    def list_batches(self) -> list[str]:
        """The batch ids available, oldest first (a `SourceError` when they cannot be listed)."""
        ...

    def read(self, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
        """The whole table (the reference), within `limits`."""
        ...

    def read_batch(self, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
        """One batch (the newest when `batch_id` is None), within `limits`."""
        ...

    def read_labels(self, batch_id: str, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame | None:
        """The labels of one batch; None when they have not landed yet."""
        ...


SourceFactory = Callable[..., DataSource]
_registered: dict[str, SourceFactory] = {}


def register_source(kind: str, factory: SourceFactory) -> SourceFactory:
    """Make `kind` name `factory` (a class, or a callable taking the spec's `options` as keywords) in
    this process; returns the factory, so it can decorate a class."""
    _registered[kind] = factory
    return factory


@functools.cache
def published() -> dict[str, EntryPoint]:
    """The sources installed packages publish under the `driftline.sources` entry point group, by kind."""
    return entry_points_in(ENTRY_POINT_GROUP)


def source_factory(kind: str, spec: MonitorSpec) -> SourceFactory:
    """The factory `kind` names: registered in this process, published by a package, or `module:Class`
    (looked up beside the spec first); anything else is a `SourceError` naming the kinds known."""
    if kind in _registered:
        return _registered[kind]
    if kind in published():
        return load_entry(published()[kind], "source kind", SourceError)
    if ":" in kind:
        from driftline.checks.custom import ImportPathError, imported

        try:
            return imported(kind, spec.base_dir, "package.module:Class")
        except ImportPathError as exc:
            raise SourceError(f"source kind {kind!r}: {exc}") from None
    known = sorted({*_registered, *published()})
    raise SourceError(
        f"unknown source kind {kind!r} (known: {', '.join(known) or 'none installed'}; or give module:Class)"
    )


def checked_factory(kind: str, options: dict[str, Any], spec: MonitorSpec) -> SourceFactory:
    """The factory `kind` names, once `options` are known to match its parameters (a `SourceError`
    naming them when they do not)."""
    factory = source_factory(kind, spec)
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise SourceError(f"source kind {kind!r}: options {sorted(options)}: {exc}") from None
    except ValueError:
        pass  # a callable without an inspectable signature is given its options as they are
    return factory


def built_source(kind: str, options: dict[str, Any], spec: MonitorSpec) -> DataSource:
    """The source `kind` builds from `options`; options it does not take, or an object that is not a
    source, are a `SourceError` saying so."""
    source = checked_factory(kind, options, spec)(**options)
    if not isinstance(source, DataSource):
        raise SourceError(f"source kind {kind!r}: {type(source).__name__} is not a source; {CONTRACT}")
    return source


def open_source(spec: MonitorSpec, source: Source, role: str) -> DataSource:
    """The data source a spec section describes: paths resolved against the spec's folder, a SQL URL
    from the spec or its environment variable; a URL that cannot be found is a `SpecError`."""
    from driftline.tasks.config.spec import SpecError

    if source.path is not None:
        return FileSource(spec.locate(source.path))
    if source.kind is not None:
        return built_source(source.kind, source.options, spec)
    sql = source.sql
    assert sql is not None
    url = sql.url or (os.environ.get(sql.url_env) if sql.url_env else None)
    if not url:
        missing = f"environment variable {sql.url_env} is not set" if sql.url_env else "no url or url_env"
        raise SpecError(f"{spec.name}: {role}.sql: {missing}")
    return QuerySource(url, sql.query, sql.window_days, sql.page_by, sql.page_rows)
