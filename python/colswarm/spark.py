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

import os
import threading
from typing import Any, Dict, Iterator, Tuple

import pandas as pd

from . import COLUMNS, Annotator, annotation_rows

#: Spark schema of :func:`annotate_paths`'s rows (``output="rows"``): the columns of
#: :data:`colswarm.COLUMNS`, then the ``path`` each row's table was read from.
ROWS_SCHEMA = (
    "table string, column int, header string, namespace string, label string, "
    "confidence double, labels array<string>, "
    "top_k array<struct<label: string, confidence: double>>, "
    "relation string, relation_confidence double, "
    "relation_top_k array<struct<label: string, confidence: double>>, "
    "subject_column int, active_specialists array<string>, gates map<string, double>, "
    "path string"
)

#: Spark schema of ``output="json"``: each path with its annotation as ``colswarm annotate``
#: prints it (one JSON object per table).
JSON_SCHEMA = "path string, annotation string"

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


def annotate_batches(
    batches: Iterator[pd.DataFrame],
    model_dir: str,
    path_column: str = "path",
    output: str = "rows",
    **options: Any,
) -> Iterator[pd.DataFrame]:
    """The ``mapInPandas`` function: each batch of paths in, its annotations out."""
    annotator = cached_annotator(model_dir, **options)
    for batch in batches:
        paths = [str(p) for p in batch[path_column].tolist()]
        if not paths:
            continue
        if output == "json":
            lines = annotator.annotate_json(paths)
            yield pd.DataFrame(
                {"path": pd.Series(paths, dtype=object), "annotation": pd.Series(lines, dtype=object)}
            )
            continue
        rows = []
        for path, annotation in zip(paths, annotator.annotate_json(paths, parse=True)):
            for row in annotation_rows(annotation):
                row["top_k"] = _scored(row["top_k"])
                row["relation_top_k"] = _scored(row["relation_top_k"])
                row["path"] = path
                rows.append(row)
        frame = pd.DataFrame(rows, columns=[*COLUMNS, "path"])
        # Plain object columns: pandas 3's Arrow-backed strings reach Spark's Arrow writer as
        # chunked arrays, which it refuses.
        text = ("table", "header", "namespace", "label", "relation", "path")
        frame = frame.astype({c: object for c in text})
        yield frame.astype({"column": "int32", "subject_column": "int32"})


def annotate_paths(
    paths: Any,
    model_dir: str,
    path_column: str = "path",
    output: str = "rows",
    **options: Any,
) -> Any:
    """Annotates the table files named in ``paths[path_column]`` (a Spark DataFrame) on the
    cluster's workers.

    :param output: ``"rows"``: one row per (column, namespace), :data:`ROWS_SCHEMA`;
        ``"json"``: one row per table, :data:`JSON_SCHEMA`.
    :param options: :class:`~colswarm.Annotator`'s (``top_k``, ``threads``, ``namespace``,
        ``specialists``, ``batch_size``, ``lossy``, ``sample_rows``).
    """
    if output not in ("rows", "json"):
        raise ValueError(f'output must be "rows" or "json", not {output!r}')
    if isinstance(options.get("namespace"), list):
        options["namespace"] = tuple(options["namespace"])
    schema = JSON_SCHEMA if output == "json" else ROWS_SCHEMA

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        return annotate_batches(batches, model_dir, path_column, output, **options)

    return paths.mapInPandas(run, schema)
