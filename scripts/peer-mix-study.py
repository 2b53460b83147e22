#!/usr/bin/env python3
"""Would the recipe gain from an n-gram peer as one more specialist? A study on the nested
protocol's held-out predictions (`scripts/evaluate-recipe.sh`'s work directory), no training.

For each outer fold k of a benchmark, the recipe's held-out predictions (`model-TASK.jsonl`,
every label's probability kept) and a peer's (`peer-TASK-PEER.jsonl`, trained on every table
outside fold k) are mixed per label, p = (1 − w)·p_recipe + w·p_peer, and decoded as the
model decodes: the best label (single-label namespaces), or every label above 0.5 and at least
the best (multi-label ones). The weight w that scores fold k is chosen on the *other* folds'
held-out predictions (each of them out of sample for its own fold's models), so no fold is
scored by a weight chosen on it. The mixed predictions are pooled and paired against the
recipe and the peer with `colswarm compare`.

A target the recipe scored without probabilities (a pair whose subject it did not choose) keeps
the recipe's prediction. At w = 0 the decoding must give the recipe's own labels; the study
says how many targets it reproduces, and stops if that is not all of them.

Usage: scripts/peer-mix-study.py --work runs/evaluate-recipe --bench wikitables
       [--task cta] [--peer char-ngram-stats-position] [--bin target/release/colswarm]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from recipe_reader import GRID, micro_f1, mixed, read

MULTI_LABEL = {"wikitables"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="runs/evaluate-recipe", help="the protocol's work directory")
    parser.add_argument("--bench", required=True, choices=["wikitables", "gittables", "t2d"])
    parser.add_argument("--task", default="cta", choices=["cta", "cpa"])
    parser.add_argument("--peer", default="char-ngram-stats-position")
    parser.add_argument("--bin", default="target/release/colswarm", help="the colswarm command")
    args = parser.parse_args()
    multi_label = args.bench in MULTI_LABEL and args.task == "cta"
    bench_dir = Path(args.work) / args.bench
    folds = {}
    for fold in sorted(bench_dir.glob("fold*")):
        recipe_file = fold / f"model-{args.task}.jsonl"
        peer_file = fold / f"peer-{args.task}-{args.peer}.jsonl"
        if recipe_file.exists() and peer_file.exists():
            folds[fold.name] = (read(recipe_file), read(peer_file))
    if len(folds) < 2:
        sys.exit(f"{bench_dir}: {len(folds)} fold(s) with the recipe's and {args.peer}'s "
                 "predictions; the nested choice needs two or more")

    reproduced = total = 0
    for recipe, _ in folds.values():
        for target in recipe.values():
            total += 1
            reproduced += sorted(mixed(target, None, 0.0, multi_label)) == sorted(target["predicted"])
    print(f"{args.bench} {args.task}: {len(folds)} folds, {total} targets; at w = 0 the decoding "
          f"gives the recipe's labels on {reproduced} of them")
    if reproduced != total:
        sys.exit("the decoding does not reproduce the recipe's predictions: the study would "
                 "compare something else")

    def scored(names, w):
        return [(t["gold"], mixed(t, peer.get(key), w, multi_label))
                for name in names for recipe, peer in [folds[name]] for key, t in recipe.items()]

    curve = {w: micro_f1(scored(folds, w)) for w in GRID}
    print("every fold at one weight (a curve, not a choice): "
          + ", ".join(f"w {w:.1f} {f1:.3f}" for w, f1 in curve.items()))
    pooled_mix, pooled_recipe, pooled_peer = [], [], []
    for name, (recipe, peer) in folds.items():
        others = [n for n in folds if n != name]
        w = max(GRID, key=lambda w: (micro_f1(scored(others, w)), -w))
        print(f"{name}: w {w:.1f}, chosen on {', '.join(others)}")
        for key, target in recipe.items():
            pooled_recipe.append(target)
            pooled_mix.append({**target, "predicted": mixed(target, peer.get(key), w, multi_label),
                               "probabilities": {}})
            if key in peer:
                pooled_peer.append(peer[key])
    files = {}
    for what, targets in [("recipe", pooled_recipe), ("mix", pooled_mix), ("peer", pooled_peer)]:
        files[what] = bench_dir / f"peer-mix-{args.task}-{args.peer}-{what}.jsonl"
        files[what].write_text("".join(json.dumps(t) + "\n" for t in targets))
    for a, b in [("mix", "recipe"), ("mix", "peer"), ("recipe", "peer")]:
        c = json.loads(subprocess.run([*args.bin.split(), "compare", str(files[a]), str(files[b]),
                                       "--json"], check=True, capture_output=True, text=True).stdout)
        print(f"{a} {c['micro_f1_a']:.3f} − {b} {c['micro_f1_b']:.3f} = {c['difference']:+.3f} "
              f"({c['ci_low']:+.3f} to {c['ci_high']:+.3f})")


if __name__ == "__main__":
    main()
