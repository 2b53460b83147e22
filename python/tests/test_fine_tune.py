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


def test_a_labels_dataframe_meets_windows_1252_tables_in_their_encoding(tmp_path):
    tables = {"utf-8": tmp_path / "utf8", "windows-1252": tmp_path / "cp1252"}
    for encoding, folder in tables.items():
        folder.mkdir()
        for path in SAMPLES.glob("*.csv"):
            (folder / path.name).write_bytes(path.read_text(encoding="utf-8").encode(encoding))
    frame = pd.read_csv(LABELS)
    frame["label"] = frame["label"].replace({"place": "lieu géographique"})
    reports = {
        encoding: colswarm.fine_tune(
            MODEL, folder, frame, tmp_path / f"out-{encoding}", "mine", encoding=encoding
        )
        for encoding, folder in tables.items()
    }
    assert "lieu géographique" in reports["windows-1252"]["labels"]
    assert reports["windows-1252"]["labels"] == reports["utf-8"]["labels"]
    weights = [tmp_path / f"out-{e}/namespaces/mine.safetensors" for e in tables]
    assert weights[0].read_bytes() == weights[1].read_bytes()
    # Scored on its labels as `format="labels"` data, each twin read in its own encoding.
    scores = {}
    for encoding, folder in tables.items():
        frame.to_csv(folder / "labels.csv", index=False, encoding=encoding)
        report = colswarm.evaluate(
            tmp_path / "out-utf-8",
            "labels",
            [folder, folder / "labels.csv"],
            namespace="mine",
            encoding=encoding,
        )
        scores[encoding] = (report["n_columns"], report["micro_f1"], report["per_label"])
    assert scores["windows-1252"] == scores["utf-8"]
    assert scores["utf-8"][0] == 32 and "lieu géographique" in str(scores["utf-8"][2])
    # A label windows-1252 cannot write is named by its row's index, before any training.
    frame.index = [f"r{i}" for i in range(len(frame))]
    frame.loc["r3", "label"] = "Łódź"
    with pytest.raises(colswarm.ColswarmError, match=r"row 'r3': its label 'Łódź'"):
        colswarm.fine_tune(
            MODEL, tables["windows-1252"], frame, tmp_path / "bad", "mine", encoding="latin-1"
        )
    assert not (tmp_path / "bad").exists()
