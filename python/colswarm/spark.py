"""Annotating tables on Apache Spark: ``mapInPandas`` over a DataFrame of table paths.

Each Python worker loads the model once (a module-level cache keyed by the model directory and
the options) and annotates every batch of paths Spark hands it with the GIL released, so a
worker costs one model in memory whatever the number of tasks it runs.

>>> from pyspark.sql import SparkSession
>>> from colswarm.spark import annotate_paths
>>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
>>> paths = spark.createDataFrame([(p,) for p in files], "path string")  # doctest: +SKIP
>>> annotate_paths(paths, "/models/colswarm-small").show()  # doctest: +SKIP

Workers need the ``colswarm`` wheel installed (it depends on pandas; Spark's Arrow exchange
needs pyarrow) and the model directory at ``model_dir`` on every worker: a shared file system,
or ``spark-submit --archives colswarm-small.tar.gz#model`` with ``model_dir="model"``. The table
paths must be readable by the workers too.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, Iterator, Tuple

import pandas as pd

from . import COLUMNS, Annotator, ColswarmError, annotation_rows

#: Spark schema of :func:`annotate_paths`'s rows (``output="rows"``): the columns of
#: :data:`colswarm.COLUMNS`, then the ``path`` each row's table was read from.
ROWS_SCHEMA = (
    "table string, column int, header string, namespace string, label string, "
    "confidence double, labels array<string>, "
    "top_k array<struct<label: string, confidence: double>>, "
    "relation string, relation_confidence double, "
    "relation_top_k array<struct<label: string, confidence: double>>, "
    "subject_column int, active_specialists array<string>, gates map<string, double>, "
    "abstained boolean, relation_abstained boolean, path string"
)

#: Spark schema of ``output="json"``: each path with its annotation as ``colswarm annotate``
#: prints it (one JSON object per table).
JSON_SCHEMA = "path string, annotation string"

#: The column ``on_error="record"`` adds to either schema: why the path's table could not be
#: read (null for the tables that were).
ERROR_FIELD = "error string"

#: What :func:`annotate_paths` does with a table file it cannot read.
ON_ERROR = ("raise", "record")

_cache: Dict[Tuple[Any, ...], Annotator] = {}
_lock = threading.Lock()


def cached_annotator(model_dir: str, **options: Any) -> Annotator:
    """The worker's :class:`~colswarm.Annotator` for ``model_dir`` and ``options``, loaded on
    first use and kept for the life of the Python worker process."""
    key = (os.path.abspath(model_dir), tuple(sorted(options.items())))
    with _lock:
        annotator = _cache.get(key)
        if annotator is None:
            annotator = Annotator(model_dir, **options)
            _cache[key] = annotator
        return annotator


def _scored(pairs: Any) -> list:
    return [{"label": label, "confidence": float(c)} for label, c in pairs]


def _annotations(annotator: Annotator, paths: list, on_error: str) -> list:
    """``(path, JSON line, error)`` for each path, in order: the line ``None`` and the error the
    reason where the file could not be read (``on_error="record"``); with ``"raise"`` the
    first such error is raised."""
    try:
        return [(p, line, None) for p, line in zip(paths, annotator.annotate_json(paths))]
    except ColswarmError:
        if on_error == "raise":
            raise
    # One file of the batch could not be read: each is annotated alone, to tell which.
    out = []
    for path in paths:
        try:
            out.append((path, annotator.annotate_json([path])[0], None))
        except ColswarmError as error:
            out.append((path, None, str(error)))
    return out


def annotate_batches(
    batches: Iterator[pd.DataFrame],
    model_dir: str,
    path_column: str = "path",
    output: str = "rows",
    on_error: str = "raise",
    **options: Any,
) -> Iterator[pd.DataFrame]:
    """The ``mapInPandas`` function: each batch of paths in, its annotations out."""
    annotator = cached_annotator(model_dir, **options)
    record = on_error == "record"
    for batch in batches:
        paths = [str(p) for p in batch[path_column].tolist()]
        if not paths:
            continue
        annotated = _annotations(annotator, paths, on_error)
        if output == "json":
            frame = pd.DataFrame(
                {
                    "path": pd.Series(paths, dtype=object),
                    "annotation": pd.Series([line for _, line, _ in annotated], dtype=object),
                }
            )
            if record:
                frame["error"] = pd.Series([e for _, _, e in annotated], dtype=object)
            yield frame
            continue
        names = [*COLUMNS, "path", *(["error"] if record else [])]
        rows = []
        for path, line, error in annotated:
            if line is None:
                # The unreadable file's one row: its path and why, every other field null.
                rows.append({**dict.fromkeys(names), "path": path, "error": error})
                continue
            for row in annotation_rows(json.loads(line)):
                row["top_k"] = _scored(row["top_k"])
                row["relation_top_k"] = _scored(row["relation_top_k"])
                row["path"] = path
                rows.append(row)
        frame = pd.DataFrame(rows, columns=names)
        # Plain object columns: pandas 3's Arrow-backed strings reach Spark's Arrow writer as
        # chunked arrays, which it refuses.
        text = ("table", "header", "namespace", "label", "relation", "path")
        frame = frame.astype({c: object for c in text + (("error",) if record else ())})
        if frame[["column", "subject_column"]].isna().any().any():
            # Python ints and None: Spark's Arrow writer takes them as int with nulls.
            for name in ("column", "subject_column"):
                frame[name] = pd.Series(
                    [None if pd.isna(v) else int(v) for v in frame[name]], dtype=object
                )
            yield frame
        else:
            yield frame.astype({"column": "int32", "subject_column": "int32"})


def annotate_paths(
    paths: Any,
    model_dir: str,
    path_column: str = "path",
    output: str = "rows",
    on_error: str = "raise",
    **options: Any,
) -> Any:
    """Annotates the table files named in ``paths[path_column]`` (a Spark DataFrame) on the
    cluster's workers.

    :param output: ``"rows"``: one row per (column, namespace), :data:`ROWS_SCHEMA`;
        ``"json"``: one row per table, :data:`JSON_SCHEMA`.
    :param on_error: what a table file that cannot be read (malformed, not UTF-8, missing)
        does: ``"raise"`` fails the Spark task with the file's error; ``"record"`` keeps the
        job going and says why in a last column, ``error`` (:data:`ERROR_FIELD`, null for the
        tables read): with ``output="json"`` the file's ``annotation`` is null, with
        ``"rows"`` the file has one row, its ``path`` and ``error``, every other field null.
    :param options: :class:`~colswarm.Annotator`'s (``top_k``, ``threads``, ``namespace``,
        ``specialists``, ``batch_size``, ``lossy``, ``sample_rows``, ``subject_column``,
        ``encoding``).
    """
    if output not in ("rows", "json"):
        raise ValueError(f'output must be "rows" or "json", not {output!r}')
    if on_error not in ON_ERROR:
        raise ValueError(f'on_error must be "raise" or "record", not {on_error!r}')
    if isinstance(options.get("namespace"), list):
        options["namespace"] = tuple(options["namespace"])
    schema = JSON_SCHEMA if output == "json" else ROWS_SCHEMA
    if on_error == "record":
        schema = f"{schema}, {ERROR_FIELD}"

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        return annotate_batches(batches, model_dir, path_column, output, on_error, **options)

    return paths.mapInPandas(run, schema)
