"""File names made from monitor names and batch ids: plain names kept, others sanitised and hashed,
reports found only inside their folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from driftline.tasks.site.names import href, page_stems, stored_report


def digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]


def test_plain_names_are_kept_and_others_hashed() -> None:
    names = ["acs-employment", "v1.2_model", "../etc/passwd", ".hidden", "a b/c", "Fraud", "fraud", ""]
    stems = page_stems(names)
    assert stems["acs-employment"] == "acs-employment"
    assert stems["v1.2_model"] == "v1.2_model"
    assert stems["../etc/passwd"] == f"_etc_passwd-{digest('../etc/passwd')}"
    assert stems[".hidden"] == f"hidden-{digest('.hidden')}"
    assert stems["a b/c"] == f"a_b_c-{digest('a b/c')}"
    # Names that differ only by case would share a file on a case-insensitive disk.
    assert stems["Fraud"] == f"Fraud-{digest('Fraud')}"
    assert stems["fraud"] == f"fraud-{digest('fraud')}"
    assert stems[""] == f"monitor-{digest('')}"
    assert len(set(stems.values())) == len(names)
    assert all("/" not in stem and not stem.startswith(".") for stem in stems.values())


def test_href_percent_encodes_each_component() -> None:
    assert href("reports", "m", "2024-05-01 10:00.html") == "reports/m/2024-05-01%2010%3A00.html"
    assert href("a/b", "?#") == "a%2Fb/%3F%23"


def test_reports_are_found_only_inside_their_root(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    report = root / "m" / "2024-05" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html></html>")
    assert stored_report([tmp_path / "elsewhere", root], "m", "2024-05") == report
    assert stored_report([root], "m", "2024-06") is None
    assert stored_report([root], "..", "2024-05") is None
    assert stored_report([root], "m", "../m/2024-05") is None
    secret = tmp_path / "secret.html"
    secret.write_text("secret")
    link = root / "m" / "2024-07" / "report.html"
    link.parent.mkdir()
    os.symlink(secret, link)
    assert stored_report([root], "m", "2024-07") is None
