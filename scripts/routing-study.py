#!/usr/bin/env python3
"""Who should read a table, and how much should its answer count? A study of routing a domain
expert beside the primary, on held-out folds, from the predictions the two models write alone.

For GitTables CTA (four folds: fold K scored by the primary and the GitTables expert trained on
the other three, `scripts/gittables-cross-validation.sh`), every table gets the primary's
probabilities and the expert's. The swarm averages their logits where the expert reads, so any
routing rule and any mixing weight can be replayed exactly from the two files (checked: the
replayed confidence rule gives the library's own predictions). Compared, pooled over the folds:

  alone      the primary alone (no expert reads)
  all        the expert reads every table, logits averaged (weight 1/2)
  rule       the shipped cascade: the expert reads where the primary's least confident column is
             below 0.95
  rule-nested  the same rule with its threshold chosen on the other folds
  mix        every table, the expert's weight w chosen on the other folds (0 to 1)
  gate       a logistic gate from the primary's own signals (its least, mean and median
             confidence, the share of columns below 0.5 and 0.95, the number of columns),
             fitted on the other folds' tables where reading changed an answer (each counted by
             how many) to predict whether it turned more right than wrong; reads where it says
             more likely than not, with the weight of `mix`
  oracle     per table, the better of alone and all (the ceiling of any table-level router)

Each policy's predictions are written as `colswarm compare` reads them, and compared with the
rule's (paired bootstrap over tables, 95%). Usage:
  BIN=target/release/colswarm scripts/routing-study.py [OUT]   (OUT default runs/routing-study)
The expert-alone predictions are made by `colswarm eval` if missing (seconds per fold).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/routing-study")
CV = Path(os.environ.get("GCV", "runs/gittables-cv"))
BIN = os.environ.get("BIN", "target/release/colswarm").split()
G = "datasets/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_"
FOLDS = range(4)


def predictions(path):
    rows = [json.loads(line) for line in open(path)]
    return {(r["table"], r["column"]): r for r in rows}


def expert_alone(k):
    path = OUT / f"gittables-expert-fold{k}.jsonl"
    if not path.exists():
        subprocess.run(
            BIN + ["--threads", "1", "eval", "--model", str(CV / f"expert{k}-avg"),
                   "--format", "sato-cv", "--input", f"{G}{k}.csv.gz", "--no-specialists",
                   "--json", "--predictions", str(path)],
            check=True, stdout=subprocess.DEVNULL)
    return predictions(path)


class Fold:
    """One fold's targets, grouped by table: log-probabilities of both models, gold labels."""

    def __init__(self, k):
        primary = predictions(CV / f"predictions-alone-fold{k}.jsonl")
        expert = expert_alone(k)
        self.rule_library = predictions(CV / f"predictions-expert-fold{k}.jsonl")
        assert primary.keys() == expert.keys(), f"fold {k}: the two files score other targets"
        first = next(iter(primary.values()))
        self.labels = sorted(first["probabilities"])
        keys = sorted(primary)
        self.keys = keys
        vector = lambda r: np.log(np.maximum([r["probabilities"][l] for l in self.labels], 1e-30))
        self.lp = np.array([vector(primary[key]) for key in keys])
        self.le = np.array([vector(expert[key]) for key in keys])
        self.gold = [primary[key]["gold"] for key in keys]
        self.tables = sorted({t for t, _ in keys})
        index = {t: i for i, t in enumerate(self.tables)}
        self.table_of = np.array([index[t] for t, _ in keys])

    def answers(self, weights):
        """Each target's label when the expert's logits have weight `weights[table]`."""
        w = weights[self.table_of][:, None]
        mixed = (1 - w) * self.lp + w * self.le
        return [self.labels[i] for i in mixed.argmax(1)]

    def correct(self, weights):
        return np.array([[a] == g for a, g in zip(self.answers(weights), self.gold)])

    def table_gain(self, weight):
        """Per table: correct answers with the expert at `weight`, minus without."""
        gain = self.correct(np.full(len(self.tables), weight)).astype(int)
        gain -= self.correct(np.zeros(len(self.tables))).astype(int)
        return np.bincount(self.table_of, gain, minlength=len(self.tables))

    def signals(self):
        """The primary's own signals per table (known before any expert reads)."""
        top = np.exp(self.lp.max(1))
        rows = []
        for t in range(len(self.tables)):
            c = top[self.table_of == t]
            rows.append([c.min(), c.mean(), np.median(c), (c < 0.5).mean(), (c < 0.95).mean(),
                         np.log(len(c))])
        return np.array(rows)

    def least_confident(self):
        top = np.exp(self.lp.max(1))
        return np.array([top[self.table_of == t].min() for t in range(len(self.tables))])


def fit_logistic(x, y, weight, l2=1.0, steps=2000, lr=0.1):
    """A logistic regression of `y` on `x`, each row counted `weight` times (full-batch
    gradient descent on standardised features)."""
    mean, std = x.mean(0), x.std(0) + 1e-9
    z = (x - mean) / std
    w, b = np.zeros(z.shape[1]), 0.0
    total = weight.sum()
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        residual = weight * (p - y)
        w -= lr * (z.T @ residual / total + l2 * w / total)
        b -= lr * residual.sum() / total
    return lambda x2: 1 / (1 + np.exp(-(((x2 - mean) / std) @ w + b)))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    folds = [Fold(k) for k in FOLDS]
    # The replayed rule must be the library's.
    for k, f in enumerate(folds):
        weights = np.where(f.least_confident() < 0.95, 0.5, 0.0)
        replayed = f.answers(weights)
        library = [f.rule_library[key]["predicted"] for key in f.keys]
        differ = sum([a] != b for a, b in zip(replayed, library))
        assert differ <= 2, f"fold {k}: the replayed rule differs from the library's on {differ}"
    thresholds = [0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999]
    mixes = [0.25, 0.5, 0.75, 1.0]
    policies = {p: [] for p in ["alone", "all", "rule", "rule-nested", "mix", "gate", "oracle"]}
    chosen = {"rule-nested": [], "mix": [], "gate-share": []}
    for k, f in enumerate(folds):
        others = [g for j, g in enumerate(folds) if j != k]
        n = len(f.tables)
        def correct_sum(g, weights):
            return g.correct(weights).sum()
        best_t = max(thresholds, key=lambda t: sum(
            correct_sum(g, np.where(g.least_confident() < t, 0.5, 0.0)) for g in others))
        best_w = max(mixes, key=lambda w: sum(correct_sum(g, np.full(len(g.tables), w))
                                              for g in others))
        # Reading pays on a table where it turns more answers right than wrong: the gate learns
        # which side a table is on from the tables where reading changed something, each
        # counted by how many answers it changed.
        gain = np.concatenate([g.table_gain(best_w) for g in others])
        gate = fit_logistic(np.vstack([g.signals() for g in others]),
                            (gain > 0).astype(float), np.abs(gain).astype(float))
        opens = gate(f.signals()) > 0.5
        chosen["rule-nested"].append(best_t)
        chosen["mix"].append(best_w)
        chosen["gate-share"].append(round(float(opens.mean()), 3))
        alone = np.zeros(n)
        all_open = np.full(n, 0.5)
        per_policy = {
            "alone": alone,
            "all": all_open,
            "rule": np.where(f.least_confident() < 0.95, 0.5, 0.0),
            "rule-nested": np.where(f.least_confident() < best_t, 0.5, 0.0),
            "mix": np.full(n, best_w),
            "gate": np.where(opens, best_w, 0.0),
            "oracle": np.where(f.table_gain(0.5) > 0, 0.5, 0.0),
        }
        for name, weights in per_policy.items():
            answers = f.answers(weights)
            policies[name].extend(
                {"table": t, "column": c, "gold": g, "predicted": [a]}
                for (t, c), g, a in zip(f.keys, f.gold, answers))
    report = {"choices": chosen, "micro_f1": {}, "against_rule": {}}
    for name, rows in policies.items():
        path = OUT / f"policy-{name}.jsonl"
        with open(path, "w") as out:
            out.writelines(json.dumps(r) + "\n" for r in rows)
        report["micro_f1"][name] = round(
            sum(r["predicted"] == r["gold"] for r in rows) / len(rows), 4)
    for name in policies:
        if name == "rule":
            continue
        compared = subprocess.run(
            BIN + ["compare", str(OUT / f"policy-{name}.jsonl"), str(OUT / "policy-rule.jsonl"),
                   "--json"], check=True, capture_output=True, text=True)
        report["against_rule"][name] = json.loads(compared.stdout)
    (OUT / "report.json").write_text(json.dumps(report, indent=1))
    print(f"{'policy':12} micro-F1  minus the rule (95%)")
    for name, f1 in report["micro_f1"].items():
        c = report["against_rule"].get(name)
        interval = "" if c is None else (
            f"{c['difference']:+.3f} ({c['ci_low']:+.3f} to {c['ci_high']:+.3f})")
        print(f"{name:12} {f1:.3f}    {interval}")
    print("choices on the other folds:", json.dumps(chosen))


if __name__ == "__main__":
    main()
