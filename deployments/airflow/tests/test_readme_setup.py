"""The deployment the README shows is the one the scheduler test runs: the same executor limits (sized
for a small machine, not Airflow's default of 32 worker processes) and every secret and auth setting
the test gives its servers."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import make_url
from test_scheduler_backfill import airflow_env

README = Path(__file__).parents[1] / "README.md"
# What only the test's throw-away installation sets: its folders, its log level, no example DAGs.
TEST_ONLY = {"AIRFLOW__CORE__DAGS_FOLDER", "AIRFLOW__CORE__LOAD_EXAMPLES", "AIRFLOW__LOGGING__LOGGING_LEVEL"}
SIZED = ("AIRFLOW__CORE__PARALLELISM", "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG")


def setup_exports() -> dict[str, str]:
    """The variables the README's setup block exports (the block under "Airflow's metadata database")."""
    text = README.read_text()
    section = text[text.index("### Airflow's metadata database") :]
    block = section[section.index("```bash") : section.index("```\n", section.index("```bash") + 7)]
    return dict(re.findall(r"^export (\w+)=(\S+)", block, flags=re.MULTILINE))


def test_the_readme_sets_what_the_scheduler_test_sets(tmp_path: Path) -> None:
    tested = airflow_env(tmp_path, make_url("postgresql+psycopg://postgres@127.0.0.1/airflow"), 8080)
    exported = setup_exports()
    documented = README.read_text()
    for name in sorted(k for k in tested if k.startswith("AIRFLOW__") and k not in TEST_ONLY):
        assert name in documented, f"{name} is set by the scheduler test but not in the README"
    missing = {k for k in tested if k.startswith(("AIRFLOW__API", "AIRFLOW__CORE__EXECUTOR"))} - set(exported)
    assert not missing, f"the setup block does not export {sorted(missing)}"
    for name in SIZED:
        assert exported[name] == tested[name], name
    assert int(exported["AIRFLOW__CORE__PARALLELISM"]) < 32  # Airflow's default: 32 worker processes
