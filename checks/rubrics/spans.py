"""Text spans as flat arrays: parsing list-of-struct Arrow columns, JSON text and Python lists.

A span is `{start, end, tag}` with half-open, 0-based character offsets (`start < end`); the tag is
optional (a missing tag is the empty string). Spans of many documents are kept flat: one array per
field plus the document each span belongs to, sorted by (document, start, end) with ties kept in input
order, which is the order the span indices in match records refer to.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from driftline.checks.errors import CheckInputError


class NotSpans(CheckInputError):
    """A column whose type cannot hold spans at all (numbers, booleans): the checks skip it."""


@dataclass(frozen=True)
class FlatSpans:
    """Spans of `n_docs` documents: `doc`, `start`, `end` (int64) and `tag` (int32 codes into the
    string array `vocabulary`), sorted by (doc, start, end); `present[d]` is False for a document
    whose span list is missing (null)."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tag: np.ndarray
    present: np.ndarray
    vocabulary: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.present)

    def __len__(self) -> int:
        return len(self.doc)

    def counts(self) -> np.ndarray:
        """Number of spans of every document."""
        return np.bincount(self.doc, minlength=self.n_docs)

    def local_index(self) -> np.ndarray:
        """Position of each span inside its document (0-based, in sorted order)."""
        first = np.concatenate(([0], np.cumsum(self.counts())[:-1]))
        return np.arange(len(self.doc)) - first[self.doc]

    def select(self, docs: np.ndarray) -> FlatSpans:
        """The spans of the documents `docs` (positions), renumbered 0..len(docs)-1 in that order."""
        counts = self.counts()
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))
        take_counts = counts[docs]
        total = int(take_counts.sum())
        new_doc = np.repeat(np.arange(len(docs)), take_counts)
        start_of = np.concatenate(([0], np.cumsum(take_counts)[:-1]))
        rows = first[docs][new_doc] + (np.arange(total) - start_of[new_doc])
        return FlatSpans(
            new_doc, self.start[rows], self.end[rows], self.tag[rows], self.present[docs], self.vocabulary
        )

    def tags(self) -> np.ndarray:
        """The tag of every span as a string."""
        return self.vocabulary[self.tag] if len(self.tag) else np.zeros(0, dtype=object)


def _sorted(
    doc: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    tag: np.ndarray,
    present: np.ndarray,
    vocab: np.ndarray,
) -> FlatSpans:
    """Spans in (doc, start, end) order, input order kept on ties (no sort when already in order)."""
    in_order = len(doc) < 2 or bool(
        np.all(
            (doc[1:] > doc[:-1])
            | (
                (doc[1:] == doc[:-1])
                & ((start[1:] > start[:-1]) | ((start[1:] == start[:-1]) & (end[1:] >= end[:-1])))
            )
        )
    )
    if in_order:
        return FlatSpans(doc, start, end, tag, present, vocab)
    order = np.lexsort((end, start, doc))
    return FlatSpans(doc[order], start[order], end[order], tag[order], present, vocab)


def _tag_codes(tags: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and vocabulary of a tag array (null tags are the empty string)."""
    if not (pa.types.is_string(tags.type) or pa.types.is_large_string(tags.type)):
        tags = pc.cast(tags, pa.string())
    encoded = pc.dictionary_encode(pc.fill_null(tags, ""))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, np.asarray(encoded.dictionary.to_pylist(), dtype=object)


def _fail(what: str, message: str, docs: np.ndarray) -> CheckInputError:
    shown = ", ".join(str(int(d)) for d in docs[:5])
    return CheckInputError(f"{what}: {message} (row position(s) {shown})")


def _ints(values: pa.Array, field: str, docs: np.ndarray, what: str) -> np.ndarray:
    """A span field as int64; nulls, fractions and non-numbers are errors naming the rows."""
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        raise CheckInputError(f"{what}: span field {field!r} holds {values.type}, not integer offsets")
    nulls = np.asarray(values.is_null())
    if nulls.any():
        raise _fail(what, f"a span has no {field!r}", docs[nulls])
    out = values.to_numpy(zero_copy_only=False)
    if out.dtype.kind == "f":
        bad = ~np.isfinite(out) | (np.mod(out, 1) != 0)
        if bad.any():
            raise _fail(what, f"span field {field!r} is not a whole number", docs[bad])
    return out.astype(np.int64)


def from_arrow(array: pa.Array | pa.ChunkedArray, what: str = "spans") -> FlatSpans:
    """Spans from a list<struct<start, end[, tag]>> or list<list<int>> ([start, end]) Arrow array."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    if not (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)):
        if pa.types.is_null(array.type):
            array = pa.array(
                [None] * len(array), pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64())]))
            )
        else:
            raise NotSpans(f"{what}: holds {array.type}, not a list of spans")
    present = ~np.asarray(array.is_null(), dtype=bool)
    docs = pc.list_parent_indices(array).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(array)
    item = flat.type
    if pa.types.is_struct(item):
        names = {item.field(i).name for i in range(item.num_fields)}
        if not {"start", "end"} <= names:
            raise CheckInputError(
                f"{what}: span structs need fields 'start' and 'end', found {sorted(names)}"
            )
        if flat.null_count:
            raise _fail(what, "a span is null", docs[np.asarray(flat.is_null())])
        start = _ints(flat.field("start"), "start", docs, what)
        end = _ints(flat.field("end"), "end", docs, what)
        if "tag" in names:
            tag, vocab = _tag_codes(flat.field("tag"))
        else:
            tag, vocab = np.zeros(len(flat), dtype=np.int32), np.array([""], dtype=object)
    elif pa.types.is_list(item) or pa.types.is_large_list(item) or pa.types.is_fixed_size_list(item):
        sizes = pc.list_value_length(flat).to_numpy(zero_copy_only=False)
        bad = (sizes != 2) | np.asarray(flat.is_null())
        if bad.any():
            raise _fail(what, "a span given as a list must be [start, end]", docs[bad])
        values = pc.list_flatten(flat)
        both = _ints(values, "start/end", np.repeat(docs, 2), what)
        start, end = both[0::2], both[1::2]
        tag, vocab = np.zeros(len(flat), dtype=np.int32), np.array([""], dtype=object)
    elif pa.types.is_null(item):
        start = end = np.zeros(0, dtype=np.int64)
        tag, vocab = np.zeros(0, dtype=np.int32), np.array([""], dtype=object)
    else:
        raise NotSpans(f"{what}: holds lists of {item}, not spans")
    bad = (start < 0) | (end <= start)
    if bad.any():
        raise _fail(what, "a span needs 0 <= start < end (half-open offsets)", docs[bad])
    return _sorted(docs, start, end, tag, present, vocab)


def _as_record(span: Any) -> Any:
    """One span as a dict, a pair or a triple: dicts and sequences pass, objects give their fields."""
    if isinstance(span, Mapping):
        return dict(span)
    if isinstance(span, (list, tuple)):
        if len(span) == 3:
            return {"start": span[0], "end": span[1], "tag": span[2]}
        return list(span)
    if hasattr(span, "start") and hasattr(span, "end"):
        return {"start": span.start, "end": span.end, "tag": getattr(span, "tag", None)}
    return span


def from_python(docs: Iterable[Sequence[Any] | None], what: str = "spans") -> FlatSpans:
    """Spans from one list per document (dicts, (start, end[, tag]) tuples or objects); None = missing."""
    rows: list[list[Any] | None] = []
    for d in docs:
        if d is None or (isinstance(d, float) and np.isnan(d)):
            rows.append(None)
        elif isinstance(d, (str, bytes, Mapping)) or not isinstance(d, Iterable):
            raise NotSpans(f"{what}: a row holds {type(d).__name__}, not a list of spans")
        else:
            rows.append([_as_record(s) for s in d])
    try:
        array = pa.array(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CheckInputError(f"{what}: spans of mixed or invalid form ({exc})") from exc
    return from_arrow(array, what)


def _parse_json(text: Any, what: str, row: int) -> Any:
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return None
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise CheckInputError(f"{what}: row position {row} is not JSON ({exc})") from None
    if value is not None and not isinstance(value, list):
        raise CheckInputError(f"{what}: row position {row} is JSON {type(value).__name__}, not a list")
    return value


def from_series(values: pd.Series, what: str = "spans") -> FlatSpans:
    """Spans of a DataFrame column: an Arrow list column, Python lists (object dtype) or JSON text.

    Numbers, booleans and dates raise `NotSpans`; malformed spans raise `CheckInputError` naming the row.
    """
    dtype = values.dtype
    if isinstance(dtype, pd.ArrowDtype):
        return from_arrow(pa.chunked_array(values.array._pa_array), what)
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        return from_python([_parse_json(t, what, i) for i, t in enumerate(values.tolist())], what)
    if not pd.api.types.is_object_dtype(dtype):
        raise NotSpans(f"{what}: dtype {dtype} cannot hold spans (lists of {{start, end, tag}} or JSON text)")
    items = values.tolist()
    if any(isinstance(v, str) for v in items):
        return from_python([_parse_json(t, what, i) for i, t in enumerate(items)], what)
    return from_python([list(v) if isinstance(v, np.ndarray) else v for v in items], what)


def joint_tag_codes(left: FlatSpans, right: FlatSpans) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the tags of two span sets over one shared vocabulary."""
    codes, _ = pd.factorize(np.concatenate([left.vocabulary, right.vocabulary]))
    n = len(left.vocabulary)
    return codes[:n][left.tag], codes[n:][right.tag]
