#!/usr/bin/env python3
"""T2D CPA micro-F1 when each pair's relation probabilities are mixed with the object column's
CTA probabilities.

On T2D a column's CTA label is the DBpedia property it holds, and every CPA relation is also a
CTA label, so the two heads estimate the same thing from different inputs. For each CPA target
(table, subject, column) this takes the CPA head's probabilities p and the CTA head's
probabilities q of the same column restricted to the CPA relations (renormalised), and decodes
the most probable relation of (1 - w) p + w q, for w = 0 (CPA alone) to 1 (CTA alone).

Inputs: files written by `colswarm eval --predictions` (or `colswarm baseline --predictions`)
on the same tables, once with the default task (cpa) and once with `--task cta`.

Usage: scripts/mix-cta-cpa.py CPA.jsonl CTA.jsonl
"""
import json
import sys

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def micro_f1(cpa, cta_by_column, weight):
    tp = n_predicted = n_gold = 0
    for target in cpa:
        gold = set(target["gold"])
        n_gold += len(gold)
        probs = target.get("probabilities")
        if not probs:
            continue  # an unscored target: a miss
        column = cta_by_column.get((target["table"], target["column"]))
        if column is not None and weight > 0:
            restricted = {label: column["probabilities"].get(label, 0.0) for label in probs}
            total = sum(restricted.values()) or 1.0
            probs = {
                label: (1 - weight) * p + weight * restricted[label] / total
                for label, p in probs.items()
            }
        best = max(probs, key=probs.get)
        tp += best in gold
        n_predicted += 1
    return 2 * tp / (n_predicted + n_gold) if n_predicted + n_gold else 0.0


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cpa = load(sys.argv[1])
    cta_by_column = {(r["table"], r["column"]): r for r in load(sys.argv[2])}
    print("  ".join(f"w={w}: {micro_f1(cpa, cta_by_column, w):.4f}" for w in WEIGHTS))


if __name__ == "__main__":
    main()
