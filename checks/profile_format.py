"""The data-only format of a reference profile: what the profile cache writes to disk, never code.

A profile is stored as a NumPy `.npz` archive (read without pickle) holding its structure as JSON plus
its numeric and string arrays. Dataclasses, dicts, lists, tuples, sets, scalars, NumPy arrays and
pandas Series, Index and DataFrame objects are stored; dataclasses only when driftline or a trusted
module (the check's own) defines them, rebuilt field by field without running their code. It lives
beside the checks so that their contract (`checks.testing`) can round-trip a profile as a run does.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import sys
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

PROFILE_FORMAT = "driftline-profile"
FORMAT_VERSION = 1
TREE = "tree"  # the archive member holding the JSON structure; arrays are named a0, a1, ...
ARRAY_KINDS = frozenset("biufcmMSU")  # dtypes stored as arrays: numbers, booleans, times, bytes, str
CATALOG = "driftline.checks."  # modules a stored class may name that are imported when needed
PLAIN = (type(None), bool, int, float, str)  # stored as JSON as they are (exact types, no subclasses)
# Bytes a stored profile may hold (bin edges, counts, vocabularies: far less in practice). Profiles are
# written uncompressed, so a file larger than this, or with a compressed member (a few kilobytes
# that would inflate to gigabytes), is no profile driftline wrote.
MAX_PROFILE_BYTES = 256 * 1024 * 1024


class ProfileFormatError(ValueError):
    """A profile holds a value the data-only format cannot store, or a file is not a stored profile."""


def _trusted(module: str, trusted: tuple[str, ...]) -> bool:
    return module == "driftline" or module.startswith("driftline.") or module in trusted


def class_version(cls: type) -> int:
    """The stored-format version of a profile class (or of a check's profile): its
    `__profile_version__`, 1 by default; a class bumps it when a field keeps its name but changes
    meaning, so older files are refitted."""
    return int(getattr(cls, "__profile_version__", 1))


def _module(name: str) -> Any:
    """A module already imported, or one of the check catalog (importing it has no side effects)."""
    if name in sys.modules:
        return sys.modules[name]
    if name.startswith(CATALOG):
        return importlib.import_module(name)
    raise ProfileFormatError(f"module {name} is not loaded")


def resolve_class(name: str, trusted: tuple[str, ...]) -> type:
    """The dataclass `module:qualname` names, when a trusted module defines it (never other code)."""
    module_name, _, qualname = name.partition(":")
    if not _trusted(module_name, trusted):
        raise ProfileFormatError(f"class {name} is not a driftline profile class")
    target: Any = _module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if not (isinstance(target, type) and dataclasses.is_dataclass(target)):
        raise ProfileFormatError(f"{name} is not a dataclass")
    return target


class Encoder:
    """Turns a profile into a JSON-able tree plus named arrays (`arrays`)."""

    def __init__(self, trusted: tuple[str, ...]) -> None:
        self.trusted = trusted
        self.arrays: dict[str, np.ndarray] = {}

    def encode(self, value: Any) -> Any:
        """The stored form of `value`; raises ProfileFormatError for a value it cannot store."""
        kind = type(value)
        if kind in PLAIN:
            return value
        if kind is list:
            return [self.encode(v) for v in value]
        if kind in (tuple, set, frozenset):
            return {"$": kind.__name__, "items": [self.encode(v) for v in value]}
        if kind is dict:
            return self._dict(value)
        if value is pd.NA:
            return {"$": "NA"}
        if isinstance(value, np.generic):
            return {"$": "scalar", "array": self._array(np.asarray(value))}
        if isinstance(value, np.ndarray):
            return self._ndarray(value)
        if isinstance(value, pd.Index):
            return self._index(value)
        if isinstance(value, pd.Series):
            return self._series(value)
        if isinstance(value, pd.DataFrame):
            return self._frame(value)
        if isinstance(value, pd.api.extensions.ExtensionArray):
            return self._extension_array(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._dataclass(value)
        raise ProfileFormatError(f"cannot store a value of type {kind.__module__}.{kind.__qualname__}")

    def _dict(self, value: dict[Any, Any]) -> dict[str, Any]:
        if all(type(k) is str for k in value):
            return {"$": "dict", "str": {k: self.encode(v) for k, v in value.items()}}
        return {"$": "dict", "items": [[self.encode(k), self.encode(v)] for k, v in value.items()]}

    def _array(self, array: np.ndarray) -> str:
        name = f"a{len(self.arrays)}"
        self.arrays[name] = array
        return name

    def _ndarray(self, value: np.ndarray) -> dict[str, Any]:
        if value.dtype.kind in ARRAY_KINDS:
            return {"$": "array", "array": self._array(value)}
        if value.dtype.kind == "O":
            return {"$": "objects", "shape": list(value.shape), "items": [self.encode(v) for v in value.flat]}
        raise ProfileFormatError(f"cannot store an array of dtype {value.dtype}")

    def _values(self, values: pd.Series | pd.Index) -> dict[str, Any]:
        """The values of a Series or Index, keeping their dtype (numpy, categorical or extension)."""
        if isinstance(values.dtype, np.dtype):
            return self._ndarray(values.to_numpy())
        return self._extension_array(values.array)

    def _extension_array(self, array: Any) -> dict[str, Any]:
        if isinstance(array, pd.Categorical):
            return {
                "$": "categorical",
                "codes": self._ndarray(array.codes),
                "categories": self.encode(array.categories),
                "ordered": bool(array.ordered),
            }
        return {"$": "extension", "dtype": str(array.dtype), "items": [self.encode(v) for v in array]}

    def _index(self, value: pd.Index) -> dict[str, Any]:
        if isinstance(value, pd.RangeIndex):
            return {
                "$": "range",
                "range": [value.start, value.stop, value.step],
                "name": self.encode(value.name),
            }
        if isinstance(value, pd.MultiIndex):
            raise ProfileFormatError("cannot store a MultiIndex")
        return {"$": "index", "values": self._values(value), "name": self.encode(value.name)}

    def _series(self, value: pd.Series) -> dict[str, Any]:
        return {
            "$": "series",
            "values": self._values(value),
            "index": self._index(value.index),
            "name": self.encode(value.name),
        }

    def _frame(self, value: pd.DataFrame) -> dict[str, Any]:
        return {
            "$": "frame",
            "columns": self._index(value.columns),
            "data": [self._values(value.iloc[:, i]) for i in range(value.shape[1])],
            "index": self._index(value.index),
        }

    def _dataclass(self, value: Any) -> dict[str, Any]:
        cls = type(value)
        name = f"{cls.__module__}:{cls.__qualname__}"
        try:
            stored_as = resolve_class(name, self.trusted)
        except (ImportError, ProfileFormatError):  # a class it could not find again when reading
            stored_as = None
        if stored_as is not cls:
            raise ProfileFormatError(f"cannot store {name}: not a profile class of driftline or of the check")
        return {
            "$": "dataclass",
            "class": name,
            "version": class_version(cls),
            "fields": {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }


class Decoder:
    """Rebuilds a profile from its stored tree and arrays; builds data only, never calls stored code."""

    def __init__(self, arrays: Mapping[str, np.ndarray], trusted: tuple[str, ...]) -> None:
        self.arrays = arrays
        self.trusted = trusted

    def decode(self, node: Any) -> Any:
        """The value `node` stores; raises (ProfileFormatError, KeyError, ...) on anything malformed."""
        if type(node) in PLAIN:
            return node
        if type(node) is list:
            return [self.decode(v) for v in node]
        tag = node["$"]
        if tag not in self._tags:
            raise ProfileFormatError(f"unknown stored type {tag!r}")
        return self._tags[tag](self, node)

    def _items(self, node: dict[str, Any]) -> list[Any]:
        return [self.decode(v) for v in node["items"]]

    def _dict(self, node: dict[str, Any]) -> dict[Any, Any]:
        if "str" in node:
            return {k: self.decode(v) for k, v in node["str"].items()}
        return {self.decode(k): self.decode(v) for k, v in node["items"]}

    def _array(self, node: dict[str, Any]) -> np.ndarray:
        array = self.arrays[node["array"]]
        if array.dtype.kind not in ARRAY_KINDS:
            raise ProfileFormatError(f"unexpected array dtype {array.dtype}")
        return array

    def _objects(self, node: dict[str, Any]) -> np.ndarray:
        items = self._items(node)
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(node["shape"])

    def _categorical(self, node: dict[str, Any]) -> pd.Categorical:
        categories = self.decode(node["categories"])
        return pd.Categorical.from_codes(
            self._array(node["codes"]), categories, ordered=bool(node["ordered"])
        )

    def _extension(self, node: dict[str, Any]) -> Any:
        return pd.array(self._items(node), dtype=pd.api.types.pandas_dtype(node["dtype"]))

    def _index(self, node: dict[str, Any]) -> pd.Index:
        if node["$"] == "range":
            start, stop, step = (int(v) for v in node["range"])
            return pd.RangeIndex(start, stop, step, name=self.decode(node["name"]))
        values = self.decode(node["values"])
        dtype = values.dtype if isinstance(values, np.ndarray) else None
        return pd.Index(values, dtype=dtype, name=self.decode(node["name"]), tupleize_cols=False)

    def _column(self, node: dict[str, Any], index: pd.Index, name: Any = None) -> pd.Series:
        """A Series of stored values, keeping a numpy dtype as stored (pandas would infer another)."""
        values = self.decode(node)
        dtype = values.dtype if isinstance(values, np.ndarray) else None
        return pd.Series(values, index=index, dtype=dtype, name=name)

    def _series(self, node: dict[str, Any]) -> pd.Series:
        return self._column(node["values"], self._index(node["index"]), self.decode(node["name"]))

    def _frame(self, node: dict[str, Any]) -> pd.DataFrame:
        index = self._index(node["index"])
        frame = pd.DataFrame({i: self._column(v, index) for i, v in enumerate(node["data"])}, index=index)
        frame.columns = self._index(node["columns"])
        return frame

    def _dataclass(self, node: dict[str, Any]) -> Any:
        cls = resolve_class(node["class"], self.trusted)
        names = {f.name for f in dataclasses.fields(cls)}
        if node["version"] != class_version(cls) or set(node["fields"]) != names:
            raise ProfileFormatError(f"{node['class']} was stored in another format")
        value: Any = object.__new__(cls)
        for name, field in node["fields"].items():
            object.__setattr__(value, name, self.decode(field))
        return value

    _tags: ClassVar[dict[str, Callable[[Decoder, dict[str, Any]], Any]]] = {
        "tuple": lambda self, node: tuple(self._items(node)),
        "set": lambda self, node: set(self._items(node)),
        "frozenset": lambda self, node: frozenset(self._items(node)),
        "dict": _dict,
        "NA": lambda self, node: pd.NA,
        "scalar": lambda self, node: self._array(node)[()],
        "array": _array,
        "objects": _objects,
        "categorical": _categorical,
        "extension": _extension,
        "range": _index,
        "index": _index,
        "series": _series,
        "frame": _frame,
        "dataclass": _dataclass,
    }


def dump_profile(profile: Any, key: str, trusted: tuple[str, ...] = ()) -> bytes:
    """`profile` as the bytes of a data-only archive, stamped with its cache `key`; raises
    ProfileFormatError for a value it cannot store."""
    encoder = Encoder(trusted)
    root = encoder.encode(profile)
    tree = {"format": PROFILE_FORMAT, "version": FORMAT_VERSION, "key": key, "profile": root}
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {TREE: np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8)}
    arrays.update(encoder.arrays)
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def load_profile(source: Path | io.BytesIO, key: str, trusted: tuple[str, ...] = ()) -> Any:
    """The profile stored in `source` under `key` (arrays read without pickle); raises on a file that
    is corrupt, of another format or version, or stored under another key, or larger than
    `MAX_PROFILE_BYTES` once read."""
    _bounded(source)
    with np.load(source, allow_pickle=False) as archive:
        tree = json.loads(archive[TREE].tobytes())
        if (tree.get("format"), tree.get("version")) != (PROFILE_FORMAT, FORMAT_VERSION):
            raise ProfileFormatError("not a profile of this driftline version")
        if tree.get("key") != key:
            raise ProfileFormatError("stored under another key")
        return Decoder(archive, trusted).decode(tree["profile"])


def _bounded(source: Path | io.BytesIO) -> None:
    """A `ProfileFormatError` unless every member of the archive is stored uncompressed, as
    `dump_profile` writes them, and together they hold at most `MAX_PROFILE_BYTES` (the sizes the
    archive declares bound what reading it can give)."""
    with zipfile.ZipFile(source) as archive:
        members = archive.infolist()
    if any(member.compress_type != zipfile.ZIP_STORED for member in members):
        raise ProfileFormatError("a compressed archive member (profiles are stored uncompressed)")
    size = sum(member.file_size for member in members)
    if size > MAX_PROFILE_BYTES:
        raise ProfileFormatError(f"holds {size:,} bytes, more than a profile's {MAX_PROFILE_BYTES:,}")
    if isinstance(source, io.BytesIO):
        source.seek(0)
