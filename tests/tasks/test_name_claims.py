"""Two spec files of one folder cannot run under one monitor name: the name keys the history,
reports and incidents, so the second is refused naming the first, until the first is renamed or gone."""

from __future__ import annotations

import os
import stat

import pytest

from driftline.tasks.config.name_claims import claim_file
from driftline.tasks.config.spec import SpecError, load_spec
from driftline.tasks.run.context import RunContext

SPEC = """\
name: {name}
reference: {{path: ref.parquet}}
batches: {{path: "batches/{{batch}}.parquet"}}
checks: [drift.numeric]
"""


def spec_file(folder, file: str, name: str):
    path = folder / file
    path.write_text(SPEC.format(name=name))
    return load_spec(path)


def test_a_second_spec_file_with_the_same_name_is_refused_naming_the_first(tmp_path) -> None:
    RunContext.open(spec_file(tmp_path, "churn.yaml", "churn"))
    RunContext.open(spec_file(tmp_path, "churn.yaml", "churn"))  # the same file runs again
    with pytest.raises(SpecError, match=r"other\.yaml: name 'churn' is already the monitor of churn\.yaml"):
        RunContext.open(spec_file(tmp_path, "other.yaml", "churn"))
    RunContext.open(spec_file(tmp_path, "other.yaml", "other"))  # its own name is fine


def test_a_renamed_or_removed_spec_frees_its_name(tmp_path) -> None:
    RunContext.open(spec_file(tmp_path, "first.yaml", "churn"))
    spec_file(tmp_path, "first.yaml", "renamed")
    RunContext.open(spec_file(tmp_path, "second.yaml", "churn"))
    (tmp_path / "second.yaml").unlink()
    RunContext.open(spec_file(tmp_path, "third.yaml", "churn"))
    assert claim_file(load_spec(tmp_path / "third.yaml")).read_text() == '{"spec": "third.yaml"}'


def test_the_claim_is_owner_only_and_a_tampered_claim_naming_a_path_is_ignored(tmp_path) -> None:
    spec = spec_file(tmp_path, "churn.yaml", "churn")
    RunContext.open(spec)
    assert stat.S_IMODE(os.stat(claim_file(spec)).st_mode) == 0o600
    claim_file(spec).write_text('{"spec": "../elsewhere/churn.yaml"}')
    RunContext.open(spec)
    assert claim_file(spec).read_text() == '{"spec": "churn.yaml"}'
