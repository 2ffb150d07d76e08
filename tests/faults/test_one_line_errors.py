"""Item 12: a file or database that cannot be read is one line naming it. A Parquet file with repeated
column names names them (not Arrow's whole schema), a database outage keeps the driver's first line, and
a CSV separated by `;`, tab or `|`, or starting with a byte-order mark, is read into its columns."""

from __future__ import annotations

import codecs
import gzip
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.sources import SourceError, read_sql, read_table

runner = CliRunner()
EXPECTED = pd.DataFrame({"age": [31, 45], "city": ["Lyon", "Köln"], "score": [0.25, 0.75]})


def _repeated(tmp_path: Path) -> Path:
    path = tmp_path / "repeated.parquet"
    pq.write_table(
        pa.table([pa.array([1, 2]), pa.array([3, 4]), pa.array([5, 6])], names=["a", "b", "a"]), path
    )
    return path


def test_repeated_parquet_columns_are_named_on_one_line(tmp_path: Path) -> None:
    path = _repeated(tmp_path)
    with pytest.raises(SourceError) as caught:
        read_table(path)
    assert (
        str(caught.value)
        == f"{path}: column name(s) ['a'] appear more than once (each column needs its own name)"
    )


def test_the_command_line_shows_it_as_one_error_line(tmp_path: Path) -> None:
    path = _repeated(tmp_path)
    out = runner.invoke(app, ["evaluate", "-c", "drift.numeric", "-r", str(path), "--current", str(path)])
    assert out.exit_code == EXIT_USAGE
    assert out.stderr.count("\n") == 1 and "['a'] appear more than once" in out.stderr


def test_an_unreachable_database_is_one_line_naming_it() -> None:
    """psycopg's text has a second, indented hint line; the error keeps the first."""
    with pytest.raises(SourceError) as caught:
        read_sql("postgresql+psycopg://driftline@127.0.0.1:1/nowhere", "select 1")
    message = str(caught.value)
    assert "\n" not in message and message.startswith(
        "query on postgresql+psycopg://driftline@127.0.0.1:1/nowhere"
    )
    assert "Connection refused" in message


CSV_TEXT = "age{sep}city{sep}score\n31{sep}Lyon{sep}0.25\n45{sep}Köln{sep}0.75\n"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("semicolon.csv", CSV_TEXT.format(sep=";").encode()),
        ("bom_semicolon.csv", codecs.BOM_UTF8 + CSV_TEXT.format(sep=";").encode()),
        ("bom_comma.csv", codecs.BOM_UTF8 + CSV_TEXT.format(sep=",").encode()),
        ("excel_unicode.txt", CSV_TEXT.format(sep="\t").encode("utf-16")),
        ("pipe.csv", CSV_TEXT.format(sep="|").encode()),
        ("semicolon.csv.gz", gzip.compress(CSV_TEXT.format(sep=";").encode(), mtime=0)),
    ],
)
def test_a_csv_is_read_with_its_own_separator_and_encoding(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    pd.testing.assert_frame_equal(read_table(path), EXPECTED)


def test_a_comma_csv_with_separators_inside_quotes_stays_comma(tmp_path: Path) -> None:
    path = tmp_path / "quoted.csv"
    path.write_text('note,n\n"a; b; c",1\n"d|e; f",2\n')
    assert read_table(path).to_dict("list") == {"note": ["a; b; c", "d|e; f"], "n": [1, 2]}


def test_a_one_column_csv_stays_one_column(tmp_path: Path) -> None:
    path = tmp_path / "reviews.csv"
    path.write_text("review\ngreat; loved it\nno\n")
    assert read_table(path).columns.tolist() == ["review"]
