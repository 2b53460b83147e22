#!/usr/bin/env python3
"""Can a learned fusion of a domain expert beat averaging its logits? A study on GitTables'
four folds, from what the primary and the GitTables expert of each fold write about the fold
they never trained on (`scripts/gittables-cross-validation.sh`): their probabilities
(`colswarm eval --predictions`) and their column embeddings (`colswarm embed`, the vectors the
heads read).

Fold K's columns are scored by a fusion fitted on the other three folds' columns, each read by
its own fold's models (so every feature a fusion learns from comes from models that never saw
the column, as the fusion would meet them at run time). The fusions are softmax regressions
over GitTables' 101 labels around the averaged logits (a correction starting at zero, so each
fusion starts as averaging, as a gated fusion layer would), fitted with Adam and an L2 penalty
chosen on the other folds by leaving one of them out:

  average    the swarm's rule: the two models' logits averaged (every table read)
  logits     both models' log-probabilities, one weight per label and model (a learned mix)
  vectors    both models' column embeddings
  all        both, embeddings and log-probabilities
  primary    the primary's embedding and log-probabilities alone (what refitting its head on
             held-out columns gives, without the expert)

Usage (after scripts/routing-study.py, whose expert predictions it reads):
  BIN=target/release/colswarm scripts/fusion-study.py [OUT]   (OUT default runs/routing-study)
The fold tables and embeddings are made if missing (about a minute).
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
L2 = [1e-2, 1e-1, 1.0, 10.0]


def embeddings(k, which):
    """Fold k's column embeddings by its fold model (`model`) or expert (`expert`)."""
    tables, path = OUT / f"tables{k}", OUT / f"embed-{which}-fold{k}.jsonl"
    if not tables.exists():
        subprocess.run(["scripts/sato-cv-to-labels.py", "--tables", str(tables), "--labels",
                        str(OUT / f"labels{k}.csv"), f"{G}{k}.csv.gz"], check=True,
                       stdout=subprocess.DEVNULL)
    if not path.exists():
        with open(path, "w") as out:
            subprocess.run(BIN + ["embed", "--model", str(CV / f"{which}{k}-avg"), str(tables)],
                           check=True, stdout=out)
    vectors = {}
    for line in open(path):
        table = json.loads(line)
        for column in table["columns"]:
            vectors[(table["table"], column["index"])] = np.array(column["vector"], np.float32)
    return vectors


def log_probs(path, labels):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        p = np.array([r["probabilities"][l] for l in labels], np.float64)
        rows[(r["table"], r["column"])] = (np.log(np.maximum(p, 1e-30)), r["gold"])
    return rows


class Fold:
    def __init__(self, k, labels):
        primary = log_probs(CV / f"predictions-alone-fold{k}.jsonl", labels)
        expert = log_probs(OUT / f"gittables-expert-fold{k}.jsonl", labels)
        vp, ve = embeddings(k, "model"), embeddings(k, "expert")
        self.keys = sorted(primary)
        index = {l: i for i, l in enumerate(labels)}
        self.y = np.array([index[primary[key][1][0]] for key in self.keys])
        self.gold = [primary[key][1] for key in self.keys]
        self.lp = np.array([primary[key][0] for key in self.keys])
        self.le = np.array([expert[key][0] for key in self.keys])
        self.vp = np.array([vp[key] for key in self.keys])
        self.ve = np.array([ve[key] for key in self.keys])

    def features(self, kind):
        return {
            "logits": [self.lp, self.le],
            "vectors": [self.vp, self.ve],
            "all": [self.vp, self.ve, self.lp, self.le],
            "primary": [self.vp, self.lp],
        }[kind]


def fit_softmax(x, base, y, classes, l2, steps=300, lr=0.01):
    """Softmax regression on `x` around the logits `base`: `base + x·W + b`, W and b starting
    at zero (so the fusion starts as averaging and the penalty pulls it back there), Adam."""
    mean, std = x.mean(0), x.std(0) + 1e-6
    z = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    w = np.zeros((z.shape[1], classes))
    m, v = np.zeros_like(w), np.zeros_like(w)
    onehot = np.eye(classes)[y]
    penalty = np.ones_like(w)
    penalty[-1] = 0.0
    for t in range(1, steps + 1):
        logits = base + z @ w
        logits -= logits.max(1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(1, keepdims=True)
        grad = z.T @ (p - onehot) / len(y) + l2 * penalty * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return lambda x2, base2: base2 + np.hstack([(x2 - mean) / std, np.ones((len(x2), 1))]) @ w


def stack(folds, kind):
    return [np.hstack(f.features(kind)) for f in folds]


def base(fold):
    """The swarm's own answer: the two models' logits averaged."""
    return (fold.lp + fold.le) / 2


def choose_l2(train_folds, kind, classes):
    """The L2 weight that scores best leaving each training fold out in turn; with none better
    than averaging, the largest (closest to averaging)."""
    xs = stack(train_folds, kind)
    def score(l2):
        right = 0
        for i in range(len(train_folds)):
            rest = [j for j in range(len(xs)) if j != i]
            fit = fit_softmax(np.vstack([xs[j] for j in rest]),
                              np.vstack([base(train_folds[j]) for j in rest]),
                              np.concatenate([train_folds[j].y for j in rest]), classes, l2)
            right += (fit(xs[i], base(train_folds[i])).argmax(1) == train_folds[i].y).sum()
        return right
    return max(reversed(L2), key=score)


def main():
    first = json.loads(open(CV / "predictions-alone-fold0.jsonl").readline())
    labels = sorted(first["probabilities"])
    folds = [Fold(k, labels) for k in FOLDS]
    answers = {p: [] for p in ["average", "logits", "vectors", "all", "primary"]}
    chosen = {p: [] for p in answers if p != "average"}
    for k, fold in enumerate(folds):
        others = [f for j, f in enumerate(folds) if j != k]
        answers["average"].append((fold.lp + fold.le).argmax(1))
        for kind in chosen:
            l2 = choose_l2(others, kind, len(labels))
            chosen[kind].append(l2)
            fit = fit_softmax(np.vstack(stack(others, kind)), np.vstack([base(f) for f in others]),
                              np.concatenate([f.y for f in others]), len(labels), l2)
            answers[kind].append(fit(np.hstack(fold.features(kind)), base(fold)).argmax(1))
    report = {"l2": chosen, "micro_f1": {}, "against_average": {}}
    for name, per_fold in answers.items():
        rows = []
        for fold, predicted in zip(folds, per_fold):
            rows.extend({"table": t, "column": c, "gold": g, "predicted": [labels[i]]}
                        for (t, c), g, i in zip(fold.keys, fold.gold, predicted))
        with open(OUT / f"fusion-{name}.jsonl", "w") as out:
            out.writelines(json.dumps(r) + "\n" for r in rows)
        report["micro_f1"][name] = round(
            sum(r["predicted"] == r["gold"] for r in rows) / len(rows), 4)
    for name in answers:
        if name != "average":
            compared = subprocess.run(
                BIN + ["compare", str(OUT / f"fusion-{name}.jsonl"),
                       str(OUT / "fusion-average.jsonl"), "--json"],
                check=True, capture_output=True, text=True)
            report["against_average"][name] = json.loads(compared.stdout)
    (OUT / "fusion-report.json").write_text(json.dumps(report, indent=1))
    print(f"{'fusion':10} micro-F1  minus averaging (95%)")
    for name, f1 in report["micro_f1"].items():
        c = report["against_average"].get(name)
        interval = "" if c is None else (
            f"{c['difference']:+.3f} ({c['ci_low']:+.3f} to {c['ci_high']:+.3f})")
        print(f"{name:10} {f1:.3f}    {interval}")
    print("L2 chosen on the other folds:", json.dumps(chosen))


if __name__ == "__main__":
    main()
