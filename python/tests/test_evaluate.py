"""`colswarm.evaluate` equals `colswarm eval --json`."""

from __future__ import annotations

import json
import subprocess

import colswarm
from conftest import MODEL, T2D, cli_binary


def test_t2d_dev_split_scores_as_the_cli():
    got = colswarm.evaluate(MODEL, "t2d", T2D, split="dev")
    out = subprocess.run(
        [
            str(cli_binary()),
            *"eval --format t2d --split dev --json --model".split(),
            str(MODEL),
            "--input",
            str(T2D),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    expected = json.loads(out)
    assert got["micro_f1"] == expected["micro_f1"]
    for key in ("macro_f1", "weighted_f1", "n_columns", "n_tables", "task", "namespace",
                "labels_unknown", "per_label", "format", "split", "activation_rate"):
        assert got[key] == expected[key], key
    # Timing-dependent fields aside, the very same object.
    assert set(got) == set(expected)
    assert got["task"] == "cpa" and got["split"] == "dev"
    assert 0 < got["micro_f1"] <= 1


def test_the_primary_alone_scores_otherwise():
    alone = colswarm.evaluate(MODEL, "t2d", [T2D], split="dev", no_specialists=True)
    assert alone["use_specialists"] is False
    assert alone["activation_rate"] == 0
