#!/usr/bin/env python3
"""Micro-F1 of prediction files and of the mean of their probabilities (a probability ensemble).

Reads files written by `colswarm eval --predictions` / `colswarm baseline --predictions` on the
same targets, averages every label's probability over the files, and decodes the mean the way
`colswarm` decodes a namespace (written again here, independently, from the rule in
docs/TRAINING.md): single-label = the most probable label; multi-label softmax = every label with
at least half the best probability; multi-label sigmoid = every label above 0.5, at least the
best; multi-label predictions closed under the namespace's `ancestors`. Each file alone is
decoded the same way, so its line reproduces `colswarm eval`'s micro-F1 (a check of this
script).

Usage: scripts/ensemble-predictions.py LABELS_JSON TASK NAMESPACE FILE...
  e.g. scripts/ensemble-predictions.py models/colswarm-small/labels.json cta wikitables a.jsonl b.jsonl
"""
import json
import sys


def load(path):
    with open(path) as f:
        return {(r["table"], r.get("subject"), r["column"]): r for r in map(json.loads, f)}


def closure(ancestors, ids):
    closed, stack = set(ids), list(ids)
    while stack:
        label = stack.pop()
        for a in ancestors[label] if label < len(ancestors) else []:
            if a not in closed:
                closed.add(a)
                stack.append(a)
    return closed


def decode(namespace, probs):
    best = max(range(len(probs)), key=lambda i: probs[i])
    if namespace["kind"] == "SingleLabel":
        return {best}
    if namespace.get("activation") == "sigmoid":
        chosen = {i for i, p in enumerate(probs) if p > 0.5} | {best}
    else:
        chosen = {i for i, p in enumerate(probs) if p >= 0.5 * probs[best]}
    return closure(namespace.get("ancestors") or [], chosen)


def micro_f1(namespace, files):
    labels = namespace["labels"]
    runs = [load(f) for f in files]
    tp = n_predicted = n_gold = 0
    for key, target in runs[0].items():
        gold = set(target["gold"])
        n_gold += len(gold)
        tables = [run[key].get("probabilities") for run in runs]
        if not all(tables):
            continue  # a target some system did not score: a miss
        mean = [sum(t[label] for t in tables) / len(tables) for label in labels]
        predicted = {labels[i] for i in decode(namespace, mean)}
        tp += len(gold & predicted)
        n_predicted += len(predicted)
    return 2 * tp / (n_predicted + n_gold)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    labels_json, task, name, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    with open(labels_json) as f:
        namespace = next(n for n in json.load(f)[task] if n["name"] == name)
    for path in files:
        print(f"{micro_f1(namespace, [path]):.4f}  {path}")
    if len(files) > 1:
        print(f"{micro_f1(namespace, files):.4f}  mean of the {len(files)} files' probabilities")


if __name__ == "__main__":
    main()
