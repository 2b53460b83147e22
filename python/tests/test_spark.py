"""Spark local mode: `colswarm.spark.annotate_paths` equals `colswarm annotate` on T2D tables."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from conftest import MODEL, assert_same_annotations, cli_annotate, sample_tables

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip(
        "Spark test skipped: no Java (install a JDK 17+, or set JAVA_HOME)",
        allow_module_level=True,
    )
pyspark = pytest.importorskip("pyspark", reason="Spark test skipped: pyspark is not installed")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # The workers run this interpreter (the virtual environment holding colswarm).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("colswarm-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def tables():
    return sample_tables()


def paths_frame(spark, tables):
    return spark.createDataFrame([(str(p),) for p in tables], "path string").repartition(3)


def test_json_output_equals_the_cli(spark, tables):
    from colswarm.spark import annotate_paths

    got = annotate_paths(paths_frame(spark, tables), str(MODEL), output="json").toPandas()
    by_path = {row.path: json.loads(row.annotation) for row in got.itertuples()}
    assert sorted(by_path) == sorted(str(p) for p in tables)
    expected = cli_annotate(tables)
    # Spark's partitions make other forward batches than the CLI: equal up to float rounding.
    assert_same_annotations([by_path[str(p)] for p in tables], expected)


def test_rows_equal_the_python_annotator(spark, tables):
    import colswarm
    from colswarm.spark import annotate_paths

    rows = annotate_paths(paths_frame(spark, tables), str(MODEL), top_k=2).toPandas()
    expected = colswarm.Annotator(MODEL, top_k=2).annotate_many(tables)
    key = ["table", "column", "namespace"]
    rows = rows.sort_values(key).reset_index(drop=True)
    expected = expected.sort_values(key).reset_index(drop=True)
    assert len(rows) == len(expected)
    for name in ("table", "column", "header", "namespace", "label", "relation", "subject_column"):
        assert rows[name].fillna("").tolist() == expected[name].fillna("").tolist(), name
    assert rows["labels"].map(list).tolist() == expected["labels"].tolist()
    assert rows["active_specialists"].map(list).tolist() == expected["active_specialists"].tolist()
    assert (rows["confidence"] - expected["confidence"]).abs().max() < 1e-4
    assert [[d["label"] for d in t] for t in rows["top_k"]] == [
        [label for label, _ in t] for t in expected["top_k"]
    ]
    assert set(rows["path"]) == {str(p) for p in tables}


def test_an_unreadable_file_is_recorded_or_fails_the_job(spark, tables, tmp_path):
    from colswarm.spark import annotate_paths

    bad = tmp_path / "broken.csv"
    bad.write_bytes(b"name,size\n\xff\xfe,1\n")
    listed = [str(tables[0]), str(bad)]
    frame = spark.createDataFrame([(p,) for p in listed], "path string")
    rows = annotate_paths(frame, str(MODEL), on_error="record").toPandas()
    broken = rows[rows["path"] == str(bad)]
    assert len(broken) == 1 and "UTF-8" in broken["error"].iloc[0]
    assert broken["column"].isna().all() and broken["table"].isna().all()
    assert rows[rows["path"] != str(bad)]["error"].isna().all()
    assert (rows["path"] == str(tables[0])).sum() > 0
    lines = annotate_paths(frame, str(MODEL), output="json", on_error="record").toPandas()
    by_path = {row.path: row for row in lines.itertuples()}
    assert by_path[str(bad)].annotation is None and "broken.csv" in by_path[str(bad)].error
    assert json.loads(by_path[str(tables[0])].annotation)["table"]
    with pytest.raises(Exception, match="broken.csv"):
        annotate_paths(frame, str(MODEL)).collect()
