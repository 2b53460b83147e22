"""Annotating DataFrames and files with the shipped model, against the `colswarm` CLI."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import colswarm
from conftest import MODEL, T2D_TABLES, assert_same_annotations, cli_annotate, sample_tables

CITIES = pd.DataFrame(
    {
        "city": ["Paris", "Lyon", "Marseille", "Toulouse"],
        "country": ["France", "France", "France", "France"],
        "population": [2_100_000, 516_000, 870_000, 493_000],
    }
)


def test_a_dataframe_gets_one_row_per_column_and_namespace(annotator):
    frame = annotator.annotate(CITIES, name="cities")
    assert list(frame.columns) == list(colswarm.COLUMNS)
    namespaces = annotator.info["cta_namespaces"]
    assert len(frame) == 3 * len(namespaces)
    assert set(frame["namespace"]) == set(namespaces)
    assert sorted(set(frame["column"])) == [0, 1, 2]
    assert list(frame["header"].drop_duplicates()) == ["city", "country", "population"]
    assert (frame["table"] == "cities").all()
    # A namespace that abstains (no label above its threshold) leaves label and confidence empty.
    answered = frame[frame["label"].notna()]
    assert answered["confidence"].between(0, 1).all()
    assert frame[frame["label"].isna()]["confidence"].isna().all()
    # `abstained` says which empty labels are abstentions: here, every one.
    assert (frame["abstained"] == frame["label"].isna()).all()
    assert frame["abstained"].dtype == bool and frame["relation_abstained"].dtype == bool
    for top in frame["top_k"]:
        assert len(top) == 3
        assert all(0 <= c <= 1 for _, c in top)
        assert [c for _, c in top] == sorted((c for _, c in top), reverse=True)
    for label, labels in zip(frame["label"], frame["labels"]):
        assert (labels[0] if labels else None) == label
    # Relations go from the subject column to every other one; one below its namespace's
    # threshold is "none fits" (no relation, no confidence), with its top_k still listed.
    subject = frame["subject_column"].iloc[0]
    related = frame[frame["column"] != subject]
    assert (related["relation_top_k"].map(len) > 0).all()
    named = related[related["relation"].notna()]
    assert named["relation_confidence"].between(0, 1).all()
    assert related[related["relation"].isna()]["relation_confidence"].isna().all()
    assert (related["relation_abstained"] == related["relation"].isna()).all()
    # The subject column is asked for no relation: empty, and not an abstention.
    assert frame[frame["column"] == subject]["relation"].isna().all()
    assert not frame[frame["column"] == subject]["relation_abstained"].any()
    gates = frame["gates"].iloc[0]
    routed = annotator.info["specialist_names"] + annotator.info["expert_names"]
    assert set(gates) == set(routed)
    assert set(frame["active_specialists"].iloc[0]) <= set(gates)


def test_a_path_equals_the_same_table_read_by_read_table(annotator):
    path = T2D_TABLES / "77632062_0_2292892375652659825.csv"
    table = colswarm.read_table(path)
    assert table.attrs["colswarm_table"] == path.stem
    assert list(table.columns)[:2] == ["world rank", "city"]
    assert all(isinstance(v, str) for v in table.iloc[:, 0])
    from_path = annotator.annotate(path)
    from_frame = annotator.annotate(table)
    pd.testing.assert_frame_equal(from_path, from_frame)
    # A str path and a pathlib.Path are the same input.
    pd.testing.assert_frame_equal(from_path, annotator.annotate(str(path)))


def test_annotate_many_keeps_input_order_and_mixes_paths_and_frames(annotator, some_t2d_tables):
    tables = list(some_t2d_tables[:3]) + [CITIES]
    frame = annotator.annotate_many(tables, names=[None, None, None, "cities"])
    ids = list(frame["table"].drop_duplicates())
    assert ids == [p.stem for p in some_t2d_tables[:3]] + ["cities"]
    one_by_one = pd.concat(
        [annotator.annotate(t, name=n) for t, n in zip(tables, [None, None, None, "cities"])],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(frame, one_by_one, atol=1e-4)


def test_annotations_equal_the_cli_on_t2d_tables(annotator):
    tables = sample_tables() * 2  # 20 paths: more than one of the CLI's batches of 16
    expected = cli_annotate(tables)
    # One thread, batches of 16 as the CLI's: the very same numbers.
    assert annotator.annotate_json(tables, parse=True) == expected
    # Two threads make other batches: the same labels, confidences within float rounding.
    two = colswarm.Annotator(MODEL, threads=2)
    assert_same_annotations(two.annotate_json(tables, parse=True), expected)


def test_options_reach_the_model(some_t2d_tables):
    path = some_t2d_tables[0]
    only_t2d = colswarm.Annotator(MODEL, top_k=5, namespace="t2d")
    frame = only_t2d.annotate(path)
    assert set(frame["namespace"]) == {"t2d"}
    assert all(len(t) == 5 for t in frame["top_k"])
    assert cli_annotate([path], "--top-k", "5", "--namespace", "t2d") == only_t2d.annotate_json(
        [path], parse=True
    )
    off = colswarm.Annotator(MODEL, specialists="off").annotate(path)
    assert all(a == [] for a in off["active_specialists"])
    everyone = colswarm.Annotator(MODEL, specialists="all").annotate(path)
    # The four specialists.
    assert all(len(a) == 4 for a in everyone["active_specialists"])
    # abstain=False: every column gets its best label, as `annotate --no-abstain`.
    every = colswarm.Annotator(MODEL, abstain=False)
    assert every.info["abstain"] is False
    assert every.annotate(CITIES)["label"].notna().all()
    assert cli_annotate([path], "--no-abstain") == every.annotate_json([path], parse=True)


def test_repr_names_the_model_and_options(annotator):
    text = repr(annotator)
    assert "colswarm-small" in text and "top_k=3" in text and "specialists='router'" in text


def test_any_dtype_is_accepted():
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "score": [1.5, float("nan"), 3.25],
            "when": pd.to_datetime(["2020-01-02", None, "2021-06-30 12:30"], format="ISO8601"),
            "flag": [True, False, True],
            "name": ["a", None, "c"],
            "nullable": pd.array([1, None, 3], dtype="Int64"),
        }
    )
    annotator = colswarm.Annotator(MODEL)
    result = annotator.annotate(frame)
    assert sorted(set(result["column"])) == list(range(6))
    # Cells become the text a CSV file would hold, missing values empty.
    texts = [colswarm._column_texts(frame[c]) for c in frame.columns]
    assert texts[0] == ["1", "2", "3"]
    assert texts[1] == ["1.5", "", "3.25"]
    assert texts[2] == ["2020-01-02", "", "2021-06-30T12:30:00"]
    assert texts[3] == ["True", "False", "True"]
    assert texts[4] == ["a", "", "c"]
    assert texts[5] == ["1", "", "3"]
    # Integers with a gap are floats to pandas; their cells are the integers a file held.
    gappy = pd.Series([2_100_000, None, 516_000], dtype="float64")
    assert colswarm._column_texts(gappy) == ["2100000", "", "516000"]
    assert colswarm._column_texts(pd.Series([1.0, 2.5])) == ["1.0", "2.5"]
    assert colswarm._column_texts(pd.Series([float("nan")] * 2)) == ["", ""]


def test_two_header_rows_join_into_one_header(annotator):
    # What `pandas.read_html` gives a table whose headers span two rows.
    columns = pd.MultiIndex.from_tuples(
        [("City", "City"), ("Population", "2020"), ("Unnamed: 2_level_0", "Mayor")]
    )
    frame = pd.DataFrame([["Paris", 2_100_000, "Hidalgo"], ["Lyon", 516_000, "Doucet"]],
                         columns=columns)
    result = annotator.annotate(frame)
    headers = list(result["header"].drop_duplicates())
    assert headers == ["City", "Population 2020", "Mayor"]


def test_headerless_frames_and_rows_of_no_cells():
    annotator = colswarm.Annotator(MODEL)
    bare = pd.DataFrame([["Paris", "France"], ["Rome", "Italy"]])
    frame = annotator.annotate(bare)
    assert frame["header"].isna().all()
    # Columns without rows: annotated from the headers alone.
    empty_rows = pd.DataFrame({"city": pd.Series([], dtype=object), "country": []})
    frame = annotator.annotate(empty_rows)
    assert sorted(set(frame["column"])) == [0, 1]
    # A namespace that abstains (no label above its threshold) leaves label and confidence empty.
    answered = frame[frame["label"].notna()]
    assert answered["confidence"].between(0, 1).all()
    assert frame[frame["label"].isna()]["confidence"].isna().all()


def test_no_table_gives_an_empty_frame(annotator):
    frame = annotator.annotate_many([])
    assert frame.empty and list(frame.columns) == list(colswarm.COLUMNS)


def test_read_table_takes_the_first_row_as_headers_as_the_cli_does(tmp_path):
    path = tmp_path / "bare.csv"
    path.write_text("Paris,France\nRome,Italy\n")
    frame = colswarm.read_table(path)
    assert list(frame.columns) == ["Paris", "France"]
    assert frame.values.tolist() == [["Rome", "Italy"]]
    assert frame.attrs["colswarm_table"] == "bare"


def test_embed_gives_the_cli_s_vectors_one_row_per_column(annotator):
    import json
    import subprocess

    import numpy as np
    from conftest import cli_binary

    paths = sample_tables()[:3]
    frame = annotator.embed(paths + [CITIES], names=[None, None, None, "cities"])
    assert list(frame.columns) == ["table", "column", "header", "embedding"]
    cities = frame[frame["table"] == "cities"]
    assert list(cities["header"]) == ["city", "country", "population"]
    assert list(cities["column"]) == [0, 1, 2]
    matrix = np.stack(frame["embedding"])
    assert matrix.dtype == np.float32 and matrix.shape == (len(frame), 64)
    assert not np.allclose(matrix[0], matrix[1])
    lines = subprocess.run(
        [str(cli_binary()), "embed", "--model", str(MODEL)] + [str(p) for p in paths],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    for line in lines:
        table = json.loads(line)
        rows = frame[frame["table"] == table["table"]]
        for column, row in zip(table["columns"], rows.itertuples()):
            assert column["index"] == row.column
            np.testing.assert_allclose(row.embedding, column["vector"], atol=1e-5)


def test_a_named_subject_column_is_where_relations_start():
    table = T2D_TABLES / "77632062_0_2292892375652659825.csv"
    found = colswarm.Annotator(MODEL).annotate(table)
    assert set(found["subject_column"]) == {1}
    for named in ("Country", 2):
        rows = colswarm.Annotator(MODEL, subject_column=named).annotate(table)
        assert set(rows["subject_column"]) == {2}, named
        # The subject column itself has no relation; the city column now has one.
        assert rows[rows["column"] == 2]["relation"].isna().all()
        assert rows[rows["column"] == 1]["relation"].notna().any()
    missing = colswarm.Annotator(MODEL, subject_column="airport").annotate(table)
    assert missing["subject_column"].tolist() == found["subject_column"].tolist()
    assert missing["relation"].fillna("").tolist() == found["relation"].fillna("").tolist()
