"""Bad input raises colswarm's exceptions, naming the file, line and column."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import colswarm
from conftest import MODEL


def test_a_missing_file_is_named(annotator, tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(colswarm.ColswarmFileNotFoundError) as err:
        annotator.annotate(missing)
    assert "nope.csv" in str(err.value)
    assert err.value.path == str(missing)
    # Also the standard exceptions, for callers that know nothing of colswarm.
    assert isinstance(err.value, FileNotFoundError)
    assert isinstance(err.value, OSError)
    assert isinstance(err.value, ValueError)
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        colswarm.read_table(missing)


def test_a_missing_model_directory_is_named():
    with pytest.raises(colswarm.ColswarmError, match="no/such/model"):
        colswarm.Annotator("no/such/model")


def test_invalid_utf8_names_file_line_and_column_unless_lossy(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("city,country\nParis,France\nK\xf6ln,Germany\n".encode("latin-1"))
    with pytest.raises(colswarm.ColswarmError) as err:
        colswarm.read_table(path)
    message = str(err.value)
    assert "latin1.csv" in message and "line 3" in message and "column index 0" in message
    assert (err.value.path, err.value.line, err.value.column) == (str(path), 3, 0)
    assert not isinstance(err.value, OSError)
    with pytest.raises(colswarm.ColswarmError, match="latin1.csv"):
        colswarm.Annotator(MODEL).annotate(path)
    # lossy: U+FFFD instead of the bad byte, said as a warning.
    with pytest.warns(UserWarning, match="1 invalid UTF-8 byte replaced with U"):
        frame = colswarm.read_table(path, lossy=True)
    assert frame.iloc[1, 0] == "K\ufffdln"
    with pytest.warns(UserWarning) as warned:
        annotated = colswarm.Annotator(MODEL, lossy=True).annotate(path)
    assert sorted(set(annotated["column"])) == [0, 1]
    # What lossy reading repaired is said, naming the file, as `colswarm annotate` does.
    assert [str(w.message) for w in warned] == [
        f"{path}: 1 invalid UTF-8 byte replaced with U+FFFD"
    ]


def test_a_windows_1252_file_reads_in_its_encoding_as_its_utf8_twin(tmp_path):
    text = "Stadt;Größe\nMünchen;310\nKöln;405\n"
    (tmp_path / "cp1252").mkdir()
    (tmp_path / "utf8").mkdir()
    cp1252, utf8 = tmp_path / "cp1252" / "t.csv", tmp_path / "utf8" / "t.csv"
    cp1252.write_bytes(text.encode("cp1252"))
    utf8.write_bytes(text.encode("utf-8"))
    with pytest.raises(colswarm.ColswarmError, match="windows-1252"):
        colswarm.read_table(cp1252)
    frame = colswarm.read_table(cp1252, encoding="latin-1")
    assert list(frame.columns) == ["Stadt", "Größe"]
    assert frame.iloc[:, 0].tolist() == ["München", "Köln"]
    annotator = colswarm.Annotator(MODEL, encoding="windows-1252")
    assert annotator.info["encoding"] == "windows-1252"
    expected = colswarm.Annotator(MODEL).annotate(utf8)
    pd.testing.assert_frame_equal(annotator.annotate(cp1252), expected)
    # "auto" reads each file as it was written.
    auto = colswarm.Annotator(MODEL, encoding="auto")
    assert auto.info["encoding"] == "auto"
    # The header and two cells.
    with pytest.warns(UserWarning, match=r"t\.csv: 3 cells read as Windows-1252"):
        pd.testing.assert_frame_equal(auto.annotate(cp1252), expected)
    with warnings.catch_warnings():
        # A file read as it is says nothing.
        warnings.simplefilter("error")
        pd.testing.assert_frame_equal(auto.annotate(utf8), expected)
    with pytest.raises(ValueError, match="unknown text encoding `utf-16`"):
        colswarm.Annotator(MODEL, encoding="utf-16")
    # UTF-16 ("Unicode text" in spreadsheet programs) is named as such, in any encoding.
    utf16 = tmp_path / "u16.csv"
    utf16.write_bytes(text.encode("utf-16"))
    for encoding in ("utf-8", "windows-1252", "auto"):
        with pytest.raises(colswarm.ColswarmError, match="u16.csv: the file is UTF-16") as err:
            colswarm.read_table(utf16, encoding=encoding)
        assert err.value.path == str(utf16)


def test_an_empty_file_and_an_empty_dataframe(annotator, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(colswarm.ColswarmError, match="empty.csv: empty table"):
        annotator.annotate(empty)
    with pytest.raises(colswarm.ColswarmError, match="empty table"):
        annotator.annotate(pd.DataFrame())
    with pytest.raises(colswarm.ColswarmError, match="mine: empty table"):
        annotator.annotate(pd.DataFrame(), name="mine")


def test_bad_arguments(annotator):
    with pytest.raises(colswarm.ColswarmError, match="specialists"):
        colswarm.Annotator(MODEL, specialists="some")
    with pytest.raises(colswarm.ColswarmError, match="namespace `nope`"):
        colswarm.Annotator(MODEL, namespace="nope")
    with pytest.raises(TypeError, match="file path or a pandas DataFrame"):
        annotator.annotate(42)
    with pytest.raises(colswarm.ColswarmError, match="unknown format"):
        colswarm.evaluate(MODEL, "nope", "datasets")


def test_devices_the_build_lacks_say_how_to_get_them():
    with pytest.raises(colswarm.ColswarmError, match="cpu, wgpu, cuda or auto"):
        colswarm.Annotator(MODEL, device="tpu")
    # The test build has no CUDA backend (it cannot be built offline).
    with pytest.raises(colswarm.ColswarmError, match="--features cuda"):
        colswarm.Annotator(MODEL, device="cuda")
    with pytest.raises(colswarm.ColswarmError, match="--features cuda"):
        colswarm.evaluate(MODEL, "t2d", "no/such/dir", device="cuda")


def test_cpu_and_auto_annotate_alike(annotator, tmp_path):
    path = tmp_path / "cities.csv"
    path.write_text("city,country\nParis,France\nBerlin,Germany\nMadrid,Spain\n")
    cpu = colswarm.Annotator(MODEL, device="cpu").annotate(path)
    # `auto` is the CPU in a package built without GPU backends.
    auto = colswarm.Annotator(MODEL, device="auto").annotate(path)
    assert list(cpu["label"]) == list(auto["label"])
