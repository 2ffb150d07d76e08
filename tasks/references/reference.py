"""The reference snapshot of a run, read only when a check's profile has to be fitted.

Every profile is cached under the reference's content hash, so once they are all cached a run needs
no reference rows at all: only that hash, the column roles inferred on the reference, its column names
and its row count. Those facts are kept beside the profiles, keyed by the reference file's identity
as its source gives it (`DataSource.identity`: a local file's path, size, modification time and
content signature, an object's URL, size, ETag or version and time; `tasks.sources.identity`), the
spec's column roles and, with `model:`, a fingerprint of the fitted model (the reference is scored by
it). A file that is replaced, touched or resized, another model or other roles give another key, so
the file is read and hashed again. An edit of a large local file that keeps its size, its modification
time and its Parquet footer, and touches no sampled block, goes unnoticed. A source with no identity
(SQL) is always read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks.columns import Columns, infer_columns
from driftline.checks.errors import CheckInputError
from driftline.checks.fingerprint import code_fingerprint, config_fingerprint, frame_fingerprint
from driftline.tasks.config.spec import MonitorSpec, SpecError
from driftline.tasks.references.model import load_model, roles_for_model, score_frame
from driftline.tasks.sources import open_source
from driftline.tasks.tools.files import write_cache_file

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReferenceFacts:
    """What a run needs of its reference when every profile is cached."""

    content_hash: str
    roles: dict[str, Any]
    names: list[str]
    rows: int


class LazyReference:
    """Stands for the reference frame: its column names and length are known, its rows are read (and
    scored) on first use of `frame`, once per process."""

    def __init__(self, facts: ReferenceFacts, load: Callable[[], pd.DataFrame]) -> None:
        self.facts = facts
        self._load = load
        self._frame: pd.DataFrame | None = None

    @property
    def columns(self) -> pd.Index:
        return pd.Index(self.facts.names)

    def __len__(self) -> int:
        return self.facts.rows

    def read(self) -> pd.DataFrame:
        """Read the reference rows unless already read; returns them."""
        if self._frame is None:
            self._frame = self._load()
        return self._frame


def materialised(reference: pd.DataFrame | LazyReference) -> pd.DataFrame:
    """The reference rows, whichever form the reference is in."""
    return reference.read() if isinstance(reference, LazyReference) else reference


def model_fingerprint(model: Any) -> str | None:
    """SHA-256 of the pickled fitted model; None for a model that cannot be pickled."""
    if model is None:
        return ""
    try:
        return hashlib.sha256(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    except Exception:
        return None


class FactsCache:
    """Reference facts as small JSON files in the profile cache folder, keyed by identity."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def key(self, identity: str, roles: dict[str, Any], model: str) -> str:
        """The facts' key: the reference's identity, the declared roles, the model, and the catalog's
        code (role inference lives there: other code infers the roles again)."""
        return config_fingerprint("reference-facts", identity, roles, model, code_fingerprint(Columns))

    def read(self, key: str) -> ReferenceFacts | None:
        path = self._path(key)
        if path is None or not path.exists():
            return None
        try:
            return ReferenceFacts(**json.loads(path.read_text()))
        except Exception as exc:  # a corrupt entry means reading the reference again, never a failure
            log.warning("ignoring unreadable reference facts %s: %s", path, exc)
            return None

    def write(self, key: str, facts: ReferenceFacts) -> None:
        path = self._path(key)
        if path is not None:
            write_cache_file(path, json.dumps(asdict(facts), default=str).encode())

    def _path(self, key: str) -> Path | None:
        return self.directory / f"reference-{key}.json" if self.directory else None


@dataclass
class PreparedReference:
    """The run's reference (scored by the model when there is one, maybe not read yet), the column
    roles inferred on it, its content hash and the loaded model (None without `model:`)."""

    frame: pd.DataFrame | LazyReference
    roles: Columns
    content_hash: str
    model: Any


def inferred_roles(spec: MonitorSpec, reference: pd.DataFrame) -> Columns:
    """The spec's column roles completed by inference on the reference (with a model, the roles its
    outputs fill are kept even where the reference lacks those columns); a bad role is a spec error."""
    infer = roles_for_model if spec.model else infer_columns
    try:
        return infer(reference, spec.columns)
    except CheckInputError as exc:
        raise SpecError(f"{spec.name}: columns: {exc}") from None


def scored(model: Any, frame: pd.DataFrame, roles: Columns) -> tuple[pd.DataFrame, Columns]:
    """`frame` with the model's predictions added where the data carry none (unchanged without one)."""
    return (frame, roles) if model is None else score_frame(model, frame, roles)


def read_reference(
    spec: MonitorSpec, load: Callable[[], pd.DataFrame], model: Any
) -> tuple[pd.DataFrame, Columns, Columns]:
    """The reference read now and scored by `model`: (scored frame, roles inferred on the reference,
    roles with the model's outputs added)."""
    frame = load()
    roles = inferred_roles(spec, frame)
    scored_frame, scored_roles = scored(model, frame, roles)
    return scored_frame, roles, scored_roles


def prepare_reference(
    spec: MonitorSpec, load: Callable[[], pd.DataFrame], directory: Path | None
) -> PreparedReference:
    """The reference of a run: from its cached facts, without reading it, when its file, the roles
    and the model are unchanged since they were cached; else read, scored and hashed now."""
    model = load_model(spec.model, spec.base_dir) if spec.model else None
    cache = FactsCache(directory)
    identity = open_source(spec, spec.reference, "reference").identity()
    model_id = model_fingerprint(model)
    key = cache.key(identity, spec.columns, model_id) if identity and model_id is not None else None
    facts = cache.read(key) if key else None
    if facts is not None:
        roles = Columns.from_dict(facts.roles)
        return PreparedReference(
            LazyReference(facts, lambda: scored(model, load(), roles)[0]), roles, facts.content_hash, model
        )
    frame, roles, _ = read_reference(spec, load, model)
    content_hash = frame_fingerprint(frame)
    if key:
        cache.write(
            key, ReferenceFacts(content_hash, roles.to_dict(), [str(c) for c in frame.columns], len(frame))
        )
    return PreparedReference(frame, roles, content_hash, model)
