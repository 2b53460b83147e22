"""Shared fixtures: the repository's shipped model, T2D tables and the `colswarm` CLI binary."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "colswarm-small"
# The whole of T2D, one archive (`colswarm eval --format t2d` reads it as it is), and plain
# copies of ten of its tables for the tests that annotate files.
T2D = ROOT / "datasets" / "t2d-webtables" / "t2d.tar.gz"
T2D_TABLES = ROOT / "datasets" / "t2d-webtables" / "samples"


def fnv1a(data: bytes) -> int:
    """FNV-1a 64, the hash of colswarm's train/dev split."""
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def is_dev(table_id: str) -> bool:
    """Whether a T2D table is in `--split dev`: its id's FNV-1a hash is 0 mod 5."""
    return fnv1a(table_id.encode()) % 5 == 0


def sample_tables() -> List[Path]:
    """The plain T2D tables of datasets/t2d-webtables/samples, sorted."""
    return sorted(T2D_TABLES.glob("*.csv"))


def cli_binary() -> Path:
    """The `colswarm` binary: $COLSWARM_CLI, else the dev build in $CARGO_TARGET_DIR (or
    target/). Never built here: scripts/python-test.sh builds it (`cargo build -p colswarm-cli`)."""
    if os.environ.get("COLSWARM_CLI"):
        binary = Path(os.environ["COLSWARM_CLI"])
    else:
        binary = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug" / "colswarm"
    if not binary.exists():
        pytest.skip(f"no colswarm CLI at {binary}: build it with `cargo build -p colswarm-cli`")
    return binary


def cli_annotate(files: List[Path], *args: str) -> List[dict]:
    out = subprocess.run(
        [str(cli_binary()), "annotate", "--model", str(MODEL), *args, *map(str, files)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def assert_same_annotations(got: List[dict], expected: List[dict], tol: float = 1e-4) -> None:
    """Equal labels, namespaces, headers and gates' decisions; confidences within `tol` (batches
    of another size change the padding, which moves probabilities by float rounding only)."""
    assert [a["table"] for a in got] == [a["table"] for a in expected]

    def close(x: float, y: float) -> None:
        assert abs(x - y) <= tol, (x, y)

    for a, b in zip(got, expected):
        assert a["subject_column"] == b["subject_column"], a["table"]
        assert [(g["specialist"], g["active"]) for g in a["router"]] == [
            (g["specialist"], g["active"]) for g in b["router"]
        ]
        for g, h in zip(a["router"], b["router"]):
            close(g["gate"], h["gate"])
        assert len(a["columns"]) == len(b["columns"])
        for c, d in zip(a["columns"], b["columns"]):
            assert (c["index"], c["header"]) == (d["index"], d["header"])
            for s, t in zip(c["types"], d["types"]):
                assert s["namespace"] == t["namespace"]
                assert [l["label"] for l in s["labels"]] == [l["label"] for l in t["labels"]]
                assert [l["label"] for l in s["top_k"]] == [l["label"] for l in t["top_k"]]
                for x, y in zip(s["labels"] + s["top_k"], t["labels"] + t["top_k"]):
                    close(x["confidence"], y["confidence"])
            assert len(c["relations"]) == len(d["relations"])
            for r, q in zip(c["relations"], d["relations"]):
                # An abstaining namespace names no relation, in both or in neither.
                assert (r["relation"] is None) == (q["relation"] is None)
                if r["relation"] is not None:
                    assert r["relation"]["label"] == q["relation"]["label"]
                    close(r["relation"]["confidence"], q["relation"]["confidence"])
                assert [l["label"] for l in r["top_k"]] == [l["label"] for l in q["top_k"]]


@pytest.fixture(scope="session")
def annotator():
    import colswarm

    return colswarm.Annotator(MODEL)


@pytest.fixture(scope="session")
def some_t2d_tables() -> List[Path]:
    return sample_tables()[:6]
