"""`scripts/cross-benchmark.py`: predictions in one benchmark's labels, scored by shared name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cross-benchmark.py"


def run(tmp_path: Path, targets: list[dict]) -> tuple[dict, list[dict]]:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in targets))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(source), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout), [json.loads(line) for line in out.read_text().splitlines()]


def target(column: int, gold: str, probabilities: dict[str, float]) -> dict:
    return {"table": "t", "column": column, "gold": [gold], "predicted": [], "probabilities": probabilities}


def test_the_most_probable_namesake_is_the_prediction_renamed_into_the_gold_labels(tmp_path):
    probabilities = {
        "http://dbpedia.org/ontology/City": 0.2,
        "http://dbpedia.org/ontology/Person/height": 0.5,
        "http://dbpedia.org/ontology/country": 0.3,
        "http://dbpedia.org/ontology/runtime": 0.9,
    }
    summary, kept = run(
        tmp_path,
        [
            target(0, "country", probabilities),
            target(1, "height", probabilities),
            target(2, "isbn", probabilities),
            target(3, "city", probabilities),
        ],
    )
    # `runtime` is no gold label seen: it cannot be predicted. `isbn` has no namesake: left out.
    assert summary["scored"] == 3 and summary["left_out"] == 1
    assert summary["shared_label_names"] == 3
    assert [t["predicted"] for t in kept] == [["height"], ["height"], ["height"]]
    assert abs(summary["accuracy"] - 1 / 3) < 1e-9


def test_predictions_without_probabilities_are_an_error_naming_the_target(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"table": "t7", "column": 2, "gold": ["a"], "predicted": ["a"]}) + "\n")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(source), str(tmp_path / "out.jsonl")],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "'t7'" in done.stderr and "column 2" in done.stderr


def test_namesakes_in_the_gold_labels_give_the_same_output_under_any_string_hashing(tmp_path):
    # Two gold labels named `weight`: a predicted `weight` is the target's own, whatever the order
    # Python's string hashing gives the gold set.
    targets = [
        target(0, "http://dbpedia.org/ontology/Person/weight", {"weight": 0.9, "height": 0.1}),
        target(1, "http://dbpedia.org/ontology/AutomobileEngine/weight", {"weight": 0.8}),
        target(2, "http://dbpedia.org/ontology/height", {"weight": 0.7, "height": 0.2}),
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in targets))
    outputs = set()
    for seed in ("0", "1", "2", "3"):
        out = tmp_path / f"out-{seed}.jsonl"
        done = subprocess.run(
            [sys.executable, str(SCRIPT), str(source), str(out)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        outputs.add(done.stdout + out.read_text())
    assert len(outputs) == 1
    summary = json.loads(outputs.pop().split("\n", 1)[0])
    assert summary["scored"] == 3 and abs(summary["accuracy"] - 2 / 3) < 1e-9
    kept = [json.loads(line) for line in (tmp_path / "out-0.jsonl").read_text().splitlines()]
    # The third target's `weight` has two gold namesakes, neither its own: the first in order.
    assert kept[2]["predicted"] == ["http://dbpedia.org/ontology/AutomobileEngine/weight"]
