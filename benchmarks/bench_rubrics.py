"""Span matching at scale: TextSpanMatches over Parquet record batches vs nervaluate.

1,000,000 documents with 10 predicted and 10 true spans each (default) are written to two Parquet
files, then matched batch by batch (reading and writing Arrow record batches), with resident memory
sampled as the documents stream through (`--matching`: overlap, the default, or one_to_one). nervaluate
1.2.1 runs on a subset of the same documents, compared with one-to-one matching (its counting).

python -m benchmarks.bench_rubrics [--rows 1000000] [--peer-rows 20000] [--matching overlap]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.measure import peak_rss_mb, table
from driftline.checks.rubrics import ExtendedPrecisionRecall, MatchingMode, TextSpanMatches

SPANS = 10
CHUNK = 50_000
SPAN_TYPE = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("tag", pa.string())]))


def current_rss_mb() -> float:
    """Resident memory now (MB), from /proc."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def spans(n: int, rng: np.random.Generator) -> pa.ListArray:
    """n documents of SPANS non-overlapping spans with random gaps, lengths and tags."""
    gaps, lengths = rng.integers(1, 20, size=(n, SPANS)), rng.integers(1, 12, size=(n, SPANS))
    start = np.cumsum(gaps + np.roll(lengths, 1, axis=1) * (np.arange(SPANS) > 0), axis=1)
    tags = pa.array(rng.choice(["PER", "LOC", "ORG", "MISC"], size=n * SPANS))
    fields = [pa.array(start.ravel()), pa.array((start + lengths).ravel()), tags]
    items = pa.StructArray.from_arrays(fields, names=["start", "end", "tag"])
    return pa.ListArray.from_arrays(pa.array(np.arange(0, n * SPANS + 1, SPANS, dtype=np.int32)), items)


def write_inputs(folder: Path, rows: int) -> tuple[Path, Path]:
    """Task data (true spans) and predictions, written chunk by chunk."""
    rng = np.random.default_rng(0)
    task_path, pred_path = folder / "task.parquet", folder / "pred.parquet"
    schema = pa.schema([("_index_", pa.int64()), ("spans", SPAN_TYPE)])
    with pq.ParquetWriter(task_path, schema) as tw, pq.ParquetWriter(pred_path, schema) as pw:
        for lo in range(0, rows, CHUNK):
            n = min(CHUNK, rows - lo)
            index = pa.array(np.arange(lo, lo + n), pa.int64())
            tw.write_table(pa.table({"_index_": index, "spans": spans(n, rng)}))
            pw.write_table(pa.table({"_index_": index, "spans": spans(n, rng)}))
    return task_path, pred_path


def run_ours(
    task: Path, pred: Path, out: Path, batch_rows: int, matching: str
) -> tuple[float, list[float], int]:
    """Seconds, resident memory at each quarter of the documents, and result rows written."""
    rubric = TextSpanMatches(matching=matching)
    total = pq.ParquetFile(pred).metadata.num_rows
    marks, samples, done, written = [total // 4, total // 2, 3 * total // 4, total], [], 0, 0
    start = time.perf_counter()
    task_batches = pq.ParquetFile(task).iter_batches(batch_size=batch_rows)
    pred_file = pq.ParquetFile(pred)

    def counted():
        nonlocal done
        for batch in pred_file.iter_batches(batch_size=batch_rows):
            yield batch
            done += batch.num_rows

    with pq.ParquetWriter(out, rubric.schema) as writer:
        for batch in rubric.apply(task_batches, counted()):
            writer.write_batch(batch)
            written += batch.num_rows
            while marks and done >= marks[0]:
                samples.append(current_rss_mb())
                marks.pop(0)
    samples += [current_rss_mb()] * len(marks)
    return time.perf_counter() - start, samples, written


def docs_of(path: Path, rows: int) -> list[list[dict]]:
    return pq.ParquetFile(path).read_row_group(0).slice(0, rows).column("spans").to_pylist()


def run_peer(task: Path, pred: Path, rows: int) -> tuple[float, float, dict]:
    """nervaluate and ours (one to one) on the first `rows` documents: seconds each, and agreement."""
    from nervaluate import Evaluator

    truth, predicted = docs_of(task, rows), docs_of(pred, rows)

    def convert(docs: list[list[dict]]) -> list[list[dict]]:
        return [[{"label": s["tag"], "start": s["start"], "end": s["end"] - 1} for s in d] for d in docs]

    start = time.perf_counter()
    result = Evaluator(convert(truth), convert(predicted), tags=["PER", "LOC", "ORG", "MISC"], loader="dict")
    overall = result.evaluate()["overall"]
    peer_seconds = time.perf_counter() - start
    task_t = pq.ParquetFile(task).read_row_group(0).slice(0, rows)
    pred_t = pq.ParquetFile(pred).read_row_group(0).slice(0, rows)
    start = time.perf_counter()
    rubric = TextSpanMatches(matching=MatchingMode.one_to_one)
    matches = pa.Table.from_batches(list(rubric.apply(task_t, pred_t)))
    ours = ExtendedPrecisionRecall()(matches.to_pandas()).set_index("MatchCriterion")
    our_seconds = time.perf_counter() - start
    strict = overall["strict"]
    agree = ours.loc["strict", "MatchResult.correct"] == strict.correct and (
        ours.loc["strict", "MatchResult.spurious"] == strict.spurious
    )
    return peer_seconds, our_seconds, {"agree": bool(agree)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="documents")
    parser.add_argument(
        "--peer-rows", type=int, default=20_000, help="documents for the nervaluate comparison"
    )
    parser.add_argument("--batch-rows", type=int, default=50_000, help="documents per record batch")
    parser.add_argument(
        "--matching", choices=[m.value for m in MatchingMode], default="overlap", help="span matching mode"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        task, pred = write_inputs(folder, args.rows)
        seconds, rss, written = run_ours(
            task, pred, folder / "matches.parquet", args.batch_rows, args.matching
        )
        peer_rows = min(args.peer_rows, args.rows, CHUNK)
        peer_s, ours_s, facts = run_peer(task, pred, peer_rows)
    print(
        table(
            [
                (
                    f"TextSpanMatches ({args.matching}), {args.rows:,} docs x {SPANS} spans, Parquet in/out",
                    seconds,
                    written,
                ),
                *[(f"  resident MB after {q}/4 of the documents", mb, "") for q, mb in enumerate(rss, 1)],
                (f"nervaluate 1.2.1, {peer_rows:,} docs", peer_s, ""),
                (f"TextSpanMatches (one_to_one), same {peer_rows:,} docs (tables in memory)", ours_s, ""),
                ("ratio nervaluate / ours", peer_s / ours_s, ""),
                ("strict counts agree with nervaluate", str(facts["agree"]), ""),
                ("peak resident MB", peak_rss_mb(), ""),
            ],
            ("measure", "seconds / value", "result rows"),
        )
    )


if __name__ == "__main__":
    main()
