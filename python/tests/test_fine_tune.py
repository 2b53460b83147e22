"""`colswarm.fine_tune`: your own types from Python, from a labels file or a DataFrame."""

from __future__ import annotations

import pandas as pd
import pytest

import colswarm
from conftest import MODEL, ROOT

SAMPLES = ROOT / "datasets/t2d-webtables/samples"
LABELS = ROOT / "datasets/own-types/labels.csv"
CITIES = SAMPLES / "77632062_0_2292892375652659825.csv"


def test_a_labels_file_or_a_dataframe_give_the_same_namespace(tmp_path):
    report = colswarm.fine_tune(MODEL, SAMPLES, LABELS, tmp_path / "file", "mine")
    assert report["namespace"] == "mine" and len(report["labels"]) == 12
    assert report["columns"] == 32
    frame = pd.read_csv(LABELS)
    again = colswarm.fine_tune(MODEL, SAMPLES, frame, tmp_path / "frame", "mine")
    assert again["labels"] == report["labels"] and again["l2"] == report["l2"]
    assert (tmp_path / "file/namespaces/mine.safetensors").read_bytes() == (
        tmp_path / "frame/namespaces/mine.safetensors"
    ).read_bytes()

    mine = colswarm.Annotator(tmp_path / "file", namespace="mine", abstain=False).annotate(CITIES)
    assert set(mine["namespace"]) == {"mine"}
    by_header = dict(zip(mine["header"], mine["label"]))
    assert by_header["city"] == "place" and by_header["mayor"] == "person"
    # The shipped namespaces answer as the shipped model does.
    shipped = colswarm.Annotator(MODEL).annotate(CITIES)
    extended = colswarm.Annotator(tmp_path / "file").annotate(CITIES)
    assert extended[extended["namespace"] != "mine"].reset_index(drop=True).equals(shipped)


def test_bad_labels_raise_colswarm_errors_naming_the_file_and_line(tmp_path):
    bad = tmp_path / "labels.csv"
    bad.write_text("table,column,label\n77632062_0_2292892375652659825.csv,town,place\n")
    with pytest.raises(colswarm.ColswarmError) as error:
        colswarm.fine_tune(MODEL, SAMPLES, bad, tmp_path / "out", "mine")
    assert error.value.line == 2 and "no column `town`" in str(error.value)
    assert str(error.value.path).endswith("labels.csv")
    with pytest.raises(colswarm.ColswarmError, match="lacks the column"):
        colswarm.fine_tune(MODEL, SAMPLES, pd.DataFrame({"table": ["x"]}), tmp_path / "o", "m")
    assert not (tmp_path / "out").exists()
