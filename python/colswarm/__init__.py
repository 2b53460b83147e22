"""Annotate table columns with semantic types (CTA) and relations (CPA) with a colswarm model.

The model runs in Rust (the ``colswarm._colswarm`` extension); this layer turns pandas
DataFrames into tables and annotations into DataFrames.

>>> import colswarm
>>> annotator = colswarm.Annotator("models/colswarm-small", top_k=3)
>>> frame = annotator.annotate("datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv")
>>> frame[["column", "header", "namespace", "label", "confidence"]]  # doctest: +SKIP

Tables are given as file paths (CSV/TSV with the delimiter detected, SOTAB ``.json.gz``,
GitTables ``.parquet``: read exactly as ``colswarm annotate`` reads them) or as pandas
DataFrames (any dtype: numbers, booleans and dates become their text, None/NaN/NaT an empty
cell). A DataFrame with no columns raises :class:`ColswarmError`; one with columns but no rows is
annotated from its headers alone.
"""

from __future__ import annotations

import datetime as _dt
import json as _json
import math as _math
import os as _os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as _np
import pandas as _pd

from . import _colswarm
from ._errors import ColswarmError, ColswarmFileNotFoundError, ColswarmIOError

# The names `encoding=` accepts for Windows-1252, as the library spells them.
_WINDOWS_1252 = ("windows-1252", "cp1252", "latin-1", "latin1", "iso-8859-1")

__all__ = [
    "Annotator",
    "ColswarmError",
    "ColswarmFileNotFoundError",
    "ColswarmIOError",
    "COLUMNS",
    "annotation_rows",
    "evaluate",
    "fine_tune",
    "read_table",
]

__version__: str = _colswarm.__version__

#: The columns of the DataFrames :meth:`Annotator.annotate` returns, in order.
COLUMNS: Tuple[str, ...] = (
    "table",
    "column",
    "header",
    "namespace",
    "label",
    "confidence",
    "labels",
    "top_k",
    "relation",
    "relation_confidence",
    "relation_top_k",
    "subject_column",
    "active_specialists",
    "gates",
    "abstained",
    "relation_abstained",
)

#: ``DataFrame.attrs`` key holding a table's id (set by :func:`read_table`, read by
#: :meth:`Annotator.annotate`).
TABLE_ID_ATTR = "colswarm_table"

PathLike = Union[str, "_os.PathLike[str]"]
TableInput = Union[PathLike, _pd.DataFrame]


def _is_missing(value: Any) -> bool:
    if value is None or value is _pd.NA or value is _pd.NaT:
        return True
    if isinstance(value, float):
        return _math.isnan(value)
    try:
        return bool(_pd.isna(value))
    except (TypeError, ValueError):
        return False


def _cell_text(value: Any) -> str:
    """One cell as the text a CSV file of it would hold."""
    if isinstance(value, str):
        return value
    if _is_missing(value):
        return ""
    if isinstance(value, _pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None and value.time() == _dt.time(0):
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _column_texts(series: _pd.Series) -> List[str]:
    """A DataFrame column as strings: None/NaN/NaT empty, numbers and dates as text."""
    kind = series.dtype.kind
    if kind in "iub" and not series.hasnans:
        # Plain numpy ints and bools: no missing value, str() of each is its CSV text.
        return [str(v) for v in series.tolist()]
    if kind == "f" and _whole_numbers(series):
        # A column of integers with a gap is float to pandas (2100000.0); its file held 2100000.
        return ["" if _math.isnan(v) else str(int(v)) for v in series.tolist()]
    return [_cell_text(v) for v in series.tolist()]


def _whole_numbers(series: _pd.Series) -> bool:
    """Whether a float column's values are all whole numbers that a float holds exactly (and
    at least one is present)."""
    values = series.dropna()
    if values.empty:
        return False
    exact = values.abs() <= 2.0**53
    return bool(exact.all() and (values == values.round()).all())


def _header(name: Any) -> Optional[str]:
    """A column name as a header: a MultiIndex tuple (``pandas.read_html``'s headers of two
    rows) joins its levels with a space, leaving out the ``Unnamed: …`` fillers pandas makes
    and a level that repeats the one above it (a cell spanning two header rows)."""
    if isinstance(name, tuple):
        parts: List[str] = []
        for level in name:
            if _is_missing(level):
                continue
            text = str(level).strip()
            if not text or text.startswith("Unnamed: ") or (parts and parts[-1] == text):
                continue
            parts.append(text)
        return " ".join(parts) if parts else None
    return None if _is_missing(name) else str(name)


def _frame_input(frame: _pd.DataFrame, name: Optional[str], index: int) -> Tuple[Any, ...]:
    """A DataFrame as the ``(id, headers, columns)`` tuple the extension reads."""
    table_id = name or frame.attrs.get(TABLE_ID_ATTR) or f"dataframe{index}"
    if frame.shape[1] == 0:
        raise ColswarmError(f"{table_id}: empty table (no columns)")
    names = frame.columns
    default = isinstance(names, _pd.RangeIndex) and names.start == 0 and names.step == 1
    headers = None if default else [_header(h) for h in names]
    columns = [_column_texts(frame.iloc[:, i]) for i in range(frame.shape[1])]
    return (str(table_id), headers, columns)


def _inputs(tables: Iterable[TableInput], names: Optional[Sequence[Optional[str]]]) -> List[Any]:
    items: List[Any] = []
    for i, table in enumerate(tables):
        name = names[i] if names is not None else None
        if isinstance(table, _pd.DataFrame):
            items.append(_frame_input(table, name, i))
        elif isinstance(table, (str, _os.PathLike)):
            items.append(_os.fspath(table))
        else:
            raise TypeError(
                f"a table is a file path or a pandas DataFrame, not {type(table).__name__}"
            )
    return items


def _scored(pairs: List[Dict[str, Any]]) -> List[Tuple[str, float]]:
    return [(p["label"], p["confidence"]) for p in pairs]


def annotation_rows(annotation: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The DataFrame rows (dicts keyed by :data:`COLUMNS`) of one table's annotation, given as
    the JSON object ``colswarm annotate`` prints (parsed)."""
    router = annotation["router"]
    active = [g["specialist"] for g in router if g["active"]]
    gates = {g["specialist"]: g["gate"] for g in router}
    rows = []
    for column in annotation["columns"]:
        relation = column["relations"][0] if column["relations"] else None
        # An abstaining relation namespace names no relation (its top_k still lists them).
        best_relation = relation.get("relation") if relation else None
        for types in column["types"]:
            best = types["labels"][0] if types["labels"] else None
            rows.append(
                {
                    "table": annotation["table"],
                    "column": column["index"],
                    "header": column["header"],
                    "namespace": types["namespace"],
                    "label": best["label"] if best else None,
                    "confidence": best["confidence"] if best else float("nan"),
                    "labels": [l["label"] for l in types["labels"]],
                    "top_k": _scored(types["top_k"]),
                    "relation": best_relation["label"] if best_relation else None,
                    "relation_confidence": (
                        best_relation["confidence"] if best_relation else float("nan")
                    ),
                    "relation_top_k": _scored(relation["top_k"]) if relation else [],
                    "subject_column": annotation["subject_column"],
                    "active_specialists": list(active),
                    "gates": dict(gates),
                    "abstained": bool(types.get("abstained", False)),
                    # False where no relation was asked (the subject column itself).
                    "relation_abstained": bool(relation.get("abstained", False))
                    if relation
                    else False,
                }
            )
    return rows


def _frame(annotations: Iterable[Dict[str, Any]]) -> _pd.DataFrame:
    rows: List[Dict[str, Any]] = []
    for annotation in annotations:
        rows.extend(annotation_rows(annotation))
    frame = _pd.DataFrame(rows, columns=list(COLUMNS))
    return frame.astype(
        {"column": "int64", "subject_column": "int64", "abstained": bool, "relation_abstained": bool}
    )


class Annotator:
    """A colswarm model directory loaded once, ready to annotate any number of tables.

    :param model_dir: a model directory (``models/colswarm-small``, or ``colswarm train``'s
        output); every file's checksum is verified on loading.
    :param top_k: how many labels (with their confidences) each row's ``top_k`` lists.
    :param threads: threads annotating a batch of tables at once in :meth:`annotate_many`
        (results equal the single-threaded ones, up to float rounding of the batch padding).
    :param namespace: one CTA namespace (a string) or several (a list) to report; ``None``: all
        the model has.
    :param specialists: ``"router"`` (the router's choice, the default), ``"off"`` (the
        primary alone) or ``"all"`` (every specialist on every table).
    :param batch_size: tables per forward pass.
    :param lossy: repair instead of refusing files: invalid UTF-8 becomes U+FFFD, cells over
        1 MiB are cut (``colswarm annotate --lossy``).
    :param sample_rows: rows kept from a delimited, SOTAB JSON or parquet file (a uniform,
        deterministic sample).
    :param device: ``"cpu"`` (the default), ``"wgpu"``, ``"cuda"`` or ``"auto"``. GPU devices
        need a package built with that backend (``maturin build --features wgpu``); asking for
        one the build or machine lacks raises ``ValueError`` or ``ColswarmError`` saying how to
        get it.
    :param abstain: honour the model's abstention thresholds (``colswarm calibrate``): a
        namespace whose best label is below its threshold gives no label (``label`` is
        ``None``). ``False`` gives every column its best label.
    :param subject_column: the column relations start from in every table, by header (case
        ignored) or 0-based index (``colswarm annotate --subject-column``); a table without it
        gets the column the model finds. ``subject_column`` in the output says which it was.
    :param encoding: the text encoding of CSV and TSV files: ``"utf-8"`` (the default),
        ``"windows-1252"`` (also spelled ``"latin-1"``, ``"iso-8859-1"``, ``"cp1252"``), what
        spreadsheet programs on Windows save as "CSV", or ``"auto"``, each cell as UTF-8 where
        it is valid UTF-8, else as Windows-1252 (``colswarm annotate --encoding``).

    Instances are thread-safe; every call releases the GIL while Rust reads and annotates.
    """

    def __init__(
        self,
        model_dir: PathLike,
        top_k: int = 3,
        threads: int = 1,
        namespace: Union[None, str, Sequence[str]] = None,
        specialists: str = "router",
        batch_size: int = 16,
        lossy: bool = False,
        sample_rows: int = 1000,
        device: str = "cpu",
        abstain: bool = True,
        subject_column: Union[None, str, int] = None,
        encoding: str = "utf-8",
    ) -> None:
        namespaces = [namespace] if isinstance(namespace, str) else namespace
        self._inner = _colswarm.Annotator(
            _os.fspath(model_dir),
            top_k=top_k,
            threads=threads,
            namespaces=list(namespaces) if namespaces is not None else None,
            specialists=specialists,
            batch_size=batch_size,
            lossy=lossy,
            sample_rows=sample_rows,
            device=device,
            abstain=abstain,
            subject_column=None if subject_column is None else str(subject_column),
            encoding=encoding,
        )
        self._info: Dict[str, Any] = dict(self._inner.describe())

    @property
    def info(self) -> Dict[str, Any]:
        """The model directory, its namespaces, specialists and domain experts, and the options."""
        return dict(self._info)

    def annotate(self, table: TableInput, name: Optional[str] = None) -> _pd.DataFrame:
        """Annotates one table (a file path or a DataFrame): one row per (column, namespace).

        :param name: the table id of a DataFrame (default: its ``attrs["colswarm_table"]``, as
            :func:`read_table` sets it, else ``"dataframe0"``); a file's id is its name without
            extension.
        """
        return self.annotate_many([table], names=[name])

    def annotate_many(
        self,
        tables: Iterable[TableInput],
        names: Optional[Sequence[Optional[str]]] = None,
    ) -> _pd.DataFrame:
        """Annotates many tables (paths and/or DataFrames) into one DataFrame, in input order.

        Files are read and tables annotated in Rust with the GIL released, ``batch_size ×
        threads`` tables at a time, on the annotator's ``threads``.
        """
        return _frame(self.annotate_json(tables, names=names, parse=True))

    def annotate_json(
        self,
        tables: Iterable[TableInput],
        names: Optional[Sequence[Optional[str]]] = None,
        parse: bool = False,
    ) -> List[Any]:
        """The annotations as ``colswarm annotate`` prints them: one JSON string per table
        (or, with ``parse=True``, the parsed objects)."""
        lines = self._inner.annotate_json(_inputs(tables, names))
        return [_json.loads(line) for line in lines] if parse else lines

    def embed(
        self,
        tables: Iterable[TableInput],
        names: Optional[Sequence[Optional[str]]] = None,
    ) -> _pd.DataFrame:
        """Every column's embedding, the vector the model's heads read (``colswarm embed``):
        one row per column, with ``table``, ``column``, ``header`` and ``embedding`` (a float32
        NumPy array). The primary reads alone; a column's vector does not depend on the tables
        beside it beyond float rounding. ``numpy.stack(frame["embedding"])`` gives one matrix,
        for similarity search, clustering or a model of your own.
        """
        rows = [
            {
                "table": table,
                "column": index,
                "header": header,
                "embedding": _np.asarray(vector, dtype=_np.float32),
            }
            for table, columns in self._inner.embed(_inputs(tables, names))
            for index, header, vector in columns
        ]
        return _pd.DataFrame(rows, columns=["table", "column", "header", "embedding"])

    def __repr__(self) -> str:
        i = self._info
        return (
            f"colswarm.Annotator({i['model_dir']!r}, top_k={i['top_k']}, threads={i['threads']}, "
            f"namespace={i['namespaces'] or None!r}, specialists={i['specialists']!r}; "
            f"CTA namespaces {i['cta_namespaces']}, CPA namespaces {i['cpa_namespaces']}, "
            f"specialists {i['specialist_names']}, experts {i['expert_names']})"
        )


def read_table(
    path: PathLike, lossy: bool = False, sample_rows: int = 1000, encoding: str = "utf-8"
) -> _pd.DataFrame:
    """Reads a table file as colswarm reads it, as a DataFrame of strings (``encoding`` as
    :class:`Annotator`'s).

    Columns are named by the file's header row (a default ``RangeIndex`` when it has none);
    ``attrs["colswarm_table"]`` holds the table id, so that ``annotator.annotate(read_table(p))``
    equals ``annotator.annotate(p)``. Empty cells are empty strings.
    """
    table_id, headers, columns = _colswarm.read_table(
        _os.fspath(path), lossy=lossy, sample_rows=sample_rows, encoding=encoding
    )
    frame = _pd.DataFrame({i: _pd.Series(c, dtype=object) for i, c in enumerate(columns)})
    if headers is not None:
        frame.columns = _pd.Index(headers, dtype=object)
    frame.attrs[TABLE_ID_ATTR] = table_id
    return frame


def evaluate(
    model_dir: PathLike,
    format: str,
    input: Union[PathLike, Sequence[PathLike]],
    split: str = "all",
    no_specialists: bool = False,
    task: Optional[str] = None,
    namespace: Optional[str] = None,
    all_specialists: bool = False,
    batch_size: int = 16,
    device: str = "cpu",
    encoding: str = "utf-8",
) -> Dict[str, Any]:
    """Scores a model on a benchmark: the dict ``colswarm eval --json`` prints.

    :param format: ``t2d``, ``turl-csv``, ``sato-cv``, ``sotab``, ``semtab``, or ``labels``
        for your own labelled columns (``input``: the tables' folder, then the labels file).
    :param input: the data's file or directory (or several).
    :param split: ``all``, ``train``, ``dev`` or ``folds=I,J``.
    :param task: ``cta`` or ``cpa`` (default: what the format annotates).
    :param device: ``"cpu"`` (the default), ``"wgpu"``, ``"cuda"`` or ``"auto"``, as for
        :class:`Annotator`.
    :param encoding: with ``format="labels"``, the text encoding of the labels file and the
        CSV and TSV tables, ``"utf-8"``, ``"windows-1252"`` or ``"auto"`` (as
        :func:`fine_tune`'s).

    Keys include ``micro_f1``, ``macro_f1``, ``weighted_f1``, ``micro_precision``,
    ``micro_recall``, ``n_columns``, ``n_tables``, ``task``, ``namespace``,
    ``labels_unknown``, ``per_label`` and ``activation_rate``.
    """
    inputs = [input] if isinstance(input, (str, _os.PathLike)) else list(input)
    text = _colswarm.evaluate_json(
        _os.fspath(model_dir),
        format,
        [_os.fspath(p) for p in inputs],
        split=split,
        task=task,
        namespace=namespace,
        no_specialists=no_specialists,
        all_specialists=all_specialists,
        batch_size=batch_size,
        device=device,
        encoding=encoding,
    )
    return _json.loads(text)


def fine_tune(
    model_dir: PathLike,
    tables: PathLike,
    labels: Union[PathLike, _pd.DataFrame],
    out_dir: PathLike,
    namespace: str,
    seed: int = 0,
    max_steps: int = 300,
    abstain: bool = True,
    progress: bool = False,
    encoding: str = "utf-8",
) -> Dict[str, Any]:
    """Adds your own column types to a model, as ``colswarm fine-tune`` does: a new namespace
    fitted on a few labelled columns, the model's own namespaces answering exactly as before.

    :param tables: the folder the labels' table paths are relative to.
    :param labels: a ``labels.csv`` path, or a DataFrame with columns ``table`` (a file path
        relative to ``tables``), ``column`` (an index from 0 or a header) and ``label``; several
        rows for a column give it several labels.
    :param out_dir: the new model directory (must not exist, or be empty).
    :param namespace: the new namespace's name; annotate with it through
        ``Annotator(out_dir, namespace=namespace)``.
    :param encoding: the text encoding of the labels file and the CSV and TSV tables, as
        :class:`Annotator`'s (a labels DataFrame is written in it; with ``"auto"``, in UTF-8).

    Returns the report ``OUT/namespaces/NAME.json`` holds: labels, columns, the settings the
    held-out slice chose, its micro-F1, the abstention threshold and labels with too few columns.

    >>> report = colswarm.fine_tune("models/colswarm-small", "datasets/t2d-webtables/samples",
    ...     "datasets/own-types/labels.csv", "runs/mine", "mine")  # doctest: +SKIP
    >>> colswarm.Annotator("runs/mine", namespace="mine").annotate(table)  # doctest: +SKIP
    """
    import tempfile

    def run(path: str) -> Dict[str, Any]:
        text = _colswarm.fine_tune_json(
            _os.fspath(model_dir),
            _os.fspath(tables),
            path,
            _os.fspath(out_dir),
            namespace,
            seed=seed,
            max_steps=max_steps,
            abstain=abstain,
            progress=progress,
            encoding=encoding,
        )
        return _json.loads(text)

    if not isinstance(labels, _pd.DataFrame):
        return run(_os.fspath(labels))
    missing = [c for c in ("table", "column", "label") if c not in labels.columns]
    if missing:
        raise ColswarmError(f"the labels DataFrame lacks the column(s) {', '.join(missing)}")
    frame = labels[["table", "column", "label"]].astype(str)
    # Written in the tables' encoding, which is how the labels file is read. Another name than
    # these is refused by the library, with the names it knows.
    name = encoding.strip().lower().replace("_", "-")
    codec = "cp1252" if name in _WINDOWS_1252 else "utf-8"
    if codec == "cp1252":
        for index, *values in frame.itertuples():
            for field, value in zip(frame.columns, values):
                try:
                    value.encode(codec)
                except UnicodeEncodeError:
                    raise ColswarmError(
                        f"the labels DataFrame's row {index!r}: its {field} {value!r} holds a "
                        f"character windows-1252 (encoding={encoding!r}) cannot write; the labels "
                        "are read in the tables' encoding, so name them in that code page or "
                        "save the tables as UTF-8"
                    ) from None
    with tempfile.TemporaryDirectory() as folder:
        path = _os.path.join(folder, "labels.csv")
        frame.to_csv(path, index=False, encoding=codec)
        return run(path)
