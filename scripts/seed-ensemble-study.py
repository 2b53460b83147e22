#!/usr/bin/env python3
"""Would averaging the recipe's seeds pay? A study on several runs of the nested protocol that
differ only in the model's seed (`evaluate-recipe.sh --no-refit --set run.seed=S --out DIR`),
no training.

Each target's label probabilities are averaged over the runs with equal weights (nothing is
chosen) and decoded as the model decodes (the best label; WikiTables types, multi-label, every
label above 0.5 and at least the best); a target a run scored without probabilities (a pair whose subject the model did not choose) keeps the first
run's labels. The ensemble's pooled held-out predictions are written beside the first run and
paired (`colswarm compare`) against each run alone, and against a peer when one is named.

Usage: scripts/seed-ensemble-study.py --runs runs/evaluate-s12/t2d runs/evaluate-s13/t2d ...
       [--task cpa] [--kind model-reader] [--peer runs/evaluate-s12/t2d/cpa-char-ngram-prior.jsonl]
"""

import argparse
import json
import subprocess
from pathlib import Path

from recipe_reader import decode, read


MULTI_LABEL = {"wikitables"}


def averaged(runs, multi_label):
    """The first run's targets with every run's probabilities averaged into their labels."""
    out = []
    for key, target in runs[0].items():
        kept = [run.get(key, {}).get("probabilities") for run in runs]
        row = {k: target[k] for k in ("table", "subject", "column", "gold") if k in target}
        if all(kept):
            labels = set().union(*kept)
            mean = {label: sum(p.get(label, 0.0) for p in kept) / len(kept) for label in labels}
            row["predicted"] = decode(mean, multi_label)
        else:
            row["predicted"] = target["predicted"]
        out.append(row)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", required=True,
                        help="the runs' benchmark directories (pooled predictions TASK-KIND.jsonl)")
    parser.add_argument("--task", default="cpa", choices=["cta", "cpa"])
    parser.add_argument("--kind", default="model-reader", choices=["model", "model-reader"])
    parser.add_argument("--peer", help="a peer's pooled predictions on the same targets")
    parser.add_argument("--bin", default="target/release/colswarm", help="the colswarm command")
    args = parser.parse_args()
    files = [Path(d) / f"{args.task}-{args.kind}.jsonl" for d in args.runs]
    # A run's benchmark directory is named after its benchmark (`OUT/wikitables`).
    multi_label = args.task == "cta" and Path(args.runs[0]).name in MULTI_LABEL
    ensemble = averaged([read(f) for f in files], multi_label)
    out = Path(args.runs[0]) / f"{args.task}-{args.kind}-seed-ensemble.jsonl"
    out.write_text("".join(json.dumps(row) + "\n" for row in ensemble))
    print(f"{args.task} {args.kind}: {len(files)} runs, {len(ensemble)} targets -> {out}")
    for other in files + ([Path(args.peer)] if args.peer else []):
        line = subprocess.run([args.bin, "--threads", "1", "compare", str(out), str(other)],
                              capture_output=True, text=True, check=True).stdout.splitlines()[0]
        print(f"  the ensemble against {other}: {line}")


if __name__ == "__main__":
    main()
