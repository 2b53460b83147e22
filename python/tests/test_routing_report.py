"""`scripts/routing-report.py`: how the domain experts' cascade routes, summed over folds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "routing-report.py"
SETS = ("wikitables", "gittables", "t2d-cpa", "t2d-cta")

# Stands in for `colswarm compare --json`: the difference of the two files' accuracies, so that
# the report's numbers follow from the predictions written below.
COMPARE = """
import json, sys
def accuracy(path):
    rows = [json.loads(line) for line in open(path)]
    return sum(r["predicted"] == r["gold"] for r in rows) / len(rows)
a, b = sys.argv[2], sys.argv[3]
d = accuracy(a) - accuracy(b)
print(json.dumps({"difference": d, "ci_low": d - 0.01, "ci_high": d + 0.01}))
"""


def routing(opened: dict[str, int], tables: dict[str, int]) -> dict:
    """An `eval --json` report's routing: a state specialist open everywhere, one expert."""

    def entry(name, opened_by_kind):
        by_kind = {
            kind: {"opened": opened_by_kind[kind], "tables": n, "rate": opened_by_kind[kind] / n}
            for kind, n in tables.items()
        }
        total = sum(opened_by_kind[k] for k in ("entity", "numeric"))
        return {
            "name": name,
            "by_kind": by_kind,
            "overall": {"opened": total, "tables": 10, "rate": total / 10},
        }

    return {
        "routing": {
            "specialists": [entry("gittables", {k: n for k, n in tables.items()}), entry("x-expert", opened)],
        }
    }


def write_run(run: Path, right_below: int) -> None:
    predictions = run / "predictions"
    predictions.mkdir(parents=True)
    tables = {"entity": 6, "numeric": 4, "wide": 3}
    for name in SETS:
        for k in range(5):
            (run / f"{name}-fold{k}-below-0.95.json").write_text(
                json.dumps(routing({"entity": 3, "numeric": 1, "wide": 2}, tables))
            )
            for variant, right in (("below-0.95", right_below), ("all", 2)):
                rows = [{"gold": ["a"], "predicted": ["a" if i < right else "b"]} for i in range(4)]
                (predictions / f"{name}-fold{k}-{variant}.jsonl").write_text(
                    "".join(json.dumps(r) + "\n" for r in rows)
                )


def report(run: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    compare = tmp_path / "compare.py"
    compare.write_text(COMPARE)
    binary = tmp_path / "colswarm"
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} {compare} \"$@\"\n")
    binary.chmod(0o755)
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(run), "--bin", str(binary)], capture_output=True, text=True
    )


def test_open_rates_are_summed_over_folds_by_kind_and_state_specialists_left_out(tmp_path):
    run = tmp_path / "run"
    write_run(run, right_below=3)
    done = report(run, tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(SETS), done.stdout
    assert all("`x-expert`" in row for row in rows)
    assert "`gittables`" not in done.stdout
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    # 4 of 10 tables per fold, five folds: 20 of 50; by kind 15 of 30, 5 of 20, 10 of 15.
    assert cells[2:6] == ["40% of 50", "50% of 30", "—", "25% of 20"]
    assert cells[6] == "67% of 15"
    assert cells[7] == "60%"
    # Pooled sets compare the concatenated folds: 3 of 4 right against 2 of 4.
    assert cells[8].startswith("+0.250")
    # GitTables compares fold by fold, every fold the same here.
    gittables = [c.strip() for c in rows[1].strip("|").split("|")]
    assert gittables[8].startswith("mean +0.250 (+0.250 to +0.250 per model; 0 interval(s) below zero, 5 above)")


def test_a_missing_fold_is_named(tmp_path):
    run = tmp_path / "run"
    write_run(run, right_below=2)
    (run / "t2d-cpa-fold3-below-0.95.json").unlink()
    done = report(run, tmp_path)
    assert done.returncode == 1
    assert "t2d-cpa-fold3-below-0.95.json: missing" in done.stderr
