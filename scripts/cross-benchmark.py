#!/usr/bin/env python3
"""Scores predictions made in one benchmark's label set against another benchmark's gold labels.

A model (or baseline) trained without a benchmark can still be scored on it through a label set
it was trained on, where the two share label *names*: GitTables' DBpedia properties (`city`,
`birthDate`) and T2D's (`http://dbpedia.org/ontology/city`), for instance. For each target whose
gold label has a namesake among the predicted label set, the prediction is the most probable of
the namesakes (the labels with no namesake are ignored: they cannot be right), renamed to the
gold set's name. Where several gold labels share that name (`Person/weight` and
`AutomobileEngine/weight`), the name is all the prediction says: it becomes the target's own gold
label of that name if it has one, else the first of them in sorted order, so the output does not
depend on Python's string hashing. Targets whose gold label has no namesake are left out and
counted.

The output is a predictions file that `colswarm compare` reads, so two systems mapped alike get
the paired bootstrap interval:

    colswarm eval --model M --format sato-cv --input GT_DEV --namespace t2d --task cta \
        --predictions model.jsonl --json > /dev/null
    scripts/cross-benchmark.py model.jsonl model-mapped.jsonl
    colswarm compare model-mapped.jsonl baseline-mapped.jsonl

Names are compared after taking a URI's last path segment and lower-casing. Standard library
only.
"""

import argparse
import json
import sys


def name(label: str) -> str:
    """The comparable name of a label: a URI's last path segment, lower-cased."""
    return label.rstrip("/").rsplit("/", 1)[-1].lower()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("predictions", help="predictions JSONL in the source label set")
    parser.add_argument("out", help="mapped predictions JSONL, for `colswarm compare`")
    parser.add_argument(
        "--gold-labels",
        help="JSON list of the gold benchmark's labels (default: the gold labels seen)",
    )
    args = parser.parse_args()

    targets = []
    with open(args.predictions, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                targets.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{args.predictions}, line {number}: not JSON ({e})")
    if args.gold_labels:
        with open(args.gold_labels, encoding="utf-8") as f:
            gold_set = set(json.load(f))
    else:
        gold_set = {g for t in targets for g in t["gold"]}
    # Each name's first gold label in sorted order, for a prediction of a name the target's own
    # gold labels lack.
    gold_by_name: dict[str, str] = {}
    for g in sorted(gold_set):
        gold_by_name.setdefault(name(g), g)

    kept, left_out, right = [], 0, 0
    shared: set[str] = set()
    for t in targets:
        probabilities = t.get("probabilities") or {}
        if not probabilities:
            sys.exit(
                f"{args.predictions}: table {t.get('table')!r} column {t.get('column')} has no "
                "probabilities; write them with `eval --predictions` or `baseline --predictions`"
            )
        candidates = {
            label: p for label, p in probabilities.items() if name(label) in gold_by_name
        }
        names = {name(label) for label in candidates}
        shared |= names
        if not any(name(g) in names for g in t["gold"]):
            left_out += 1
            continue
        best = max(sorted(candidates), key=lambda label: candidates[label])
        predicted = next(
            (g for g in sorted(t["gold"]) if name(g) == name(best)), gold_by_name[name(best)]
        )
        right += predicted in t["gold"]
        kept.append(
            {
                "table": t["table"],
                "column": t["column"],
                **({"subject": t["subject"]} if "subject" in t else {}),
                "gold": t["gold"],
                "predicted": [predicted],
            }
        )
    with open(args.out, "w", encoding="utf-8") as f:
        for t in kept:
            f.write(json.dumps(t) + "\n")
    print(
        json.dumps(
            {
                "targets": len(targets),
                "scored": len(kept),
                "left_out": left_out,
                "shared_label_names": len(shared),
                "accuracy": right / len(kept) if kept else None,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
