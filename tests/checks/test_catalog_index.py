"""The registry's static name→module table matches the real registrations, and lookups are lazy."""

from __future__ import annotations

import subprocess
import sys

from driftline.checks import registry
from driftline.checks.catalog_index import CATALOG


def test_the_table_names_every_registered_check_and_its_module() -> None:
    """Importing every module registers exactly the checks the table lists, each from its module."""
    registry.load_catalog()
    real = {
        name: cls.__module__ for name, cls in registry._REGISTRY.items() if not name.startswith("testing.")
    }
    assert real == CATALOG


def test_looking_up_one_check_imports_only_its_module() -> None:
    """`create("drift.numeric")` leaves the attribution, segmentation and tree modules unimported."""
    code = (
        "import sys\n"
        "from driftline.checks import registry\n"
        "registry.create('drift.numeric')\n"
        "assert len(registry.names()) >= 58\n"
        "heavy = ['driftline.checks.attribution', 'driftline.checks.segmentation', 'sklearn.tree']\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_every_summary_is_a_whole_sentence_on_one_line() -> None:
    """The listing's summaries are whole first paragraphs: they end a sentence and close every bracket."""
    entries = [registry.describe(name) for name in registry.names() if not name.startswith("testing.")]
    broken = [
        (entry["name"], entry["summary"])
        for entry in entries
        if not entry["summary"].endswith((".", ")"))
        or entry["summary"].count("(") != entry["summary"].count(")")
        or "\n" in entry["summary"]
    ]
    assert broken == []
