"""`colswarm.spark`'s ``on_error``: an unreadable table file fails the batch or is recorded.

The ``mapInPandas`` function itself, without Spark (the Spark job is in test_spark.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import MODEL, assert_same_annotations, sample_tables


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """Two good tables with an unreadable one (not UTF-8) between them."""
    bad = tmp_path_factory.mktemp("tables") / "broken.csv"
    bad.write_bytes(b"name,size\n\xff\xfe,1\n")
    good = [str(p) for p in sample_tables()[:2]]
    return [good[0], str(bad), good[1]]


def run(paths, **kwargs):
    from colswarm.spark import annotate_batches

    frames = annotate_batches(iter([pd.DataFrame({"path": paths})]), str(MODEL), **kwargs)
    return pd.concat(list(frames), ignore_index=True)


def test_raise_fails_with_the_files_error(paths):
    import colswarm

    with pytest.raises(colswarm.ColswarmError, match="broken.csv"):
        run(paths, output="json")


def test_record_gives_json_the_error_and_the_others_their_annotations(paths):
    import colswarm

    frame = run(paths, output="json", on_error="record")
    assert frame["path"].tolist() == paths
    assert frame["annotation"][1] is None
    assert "broken.csv" in frame["error"][1] and "UTF-8" in frame["error"][1]
    assert frame["error"][0] is None and frame["error"][2] is None
    got = [json.loads(frame["annotation"][i]) for i in (0, 2)]
    expected = colswarm.Annotator(MODEL).annotate_json([paths[0], paths[2]], parse=True)
    assert_same_annotations(got, expected)


def test_record_gives_rows_one_error_row_per_unreadable_file(paths):
    frame = run(paths, output="rows", on_error="record")
    broken = frame[frame["path"] == paths[1]]
    assert len(broken) == 1
    row = broken.iloc[0]
    assert "broken.csv" in row["error"]
    assert row["table"] is None and row["column"] is None and row["label"] is None
    rest = frame[frame["path"] != paths[1]]
    assert rest["error"].isna().all()
    assert set(rest["path"]) == {paths[0], paths[2]}
    assert rest["column"].map(lambda c: isinstance(c, int)).all()


def test_a_batch_of_readable_files_keeps_its_schema(paths):
    frame = run([paths[0], paths[2]], output="rows", on_error="record")
    assert str(frame["column"].dtype) == "int32"
    assert frame["error"].isna().all()
    assert list(frame.columns)[-2:] == ["path", "error"]


def test_an_unknown_on_error_is_refused():
    from colswarm.spark import annotate_paths

    with pytest.raises(ValueError, match="on_error"):
        annotate_paths(None, str(MODEL), on_error="skip")
