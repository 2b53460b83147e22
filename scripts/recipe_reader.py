"""The recipe's last step, measured by the nested protocol (`scripts/evaluate_recipe.py`): an
n-gram reader beside the benchmark's namespace (`colswarm add-reader`), a linear classifier
over each column's character n-grams, value statistics and place in its table, whose
probabilities are mixed into the model's, p = (1 − w)·p_model + w·p_reader.

The reader's share w is not chosen on the fold's selection half: every other setting was chosen
there, so the model's own probabilities look better on it than on new tables (on T2D the
folds' half models score 0.741 / 0.693 there against 0.697 / 0.663 on their held-out folds),
and a share chosen there comes out near zero. It is chosen instead on the *other* folds'
held-out predictions, each out of sample for its own fold's models: for fold k, the share of
the best pooled micro-F1 over folds j ≠ k of the refit model's predictions mixed with the
reader's (the `char-ngram` peer with the reader's features, trained on fold j's whole training
part), the smaller share on a tie. No fold is scored by a share chosen on it. The fold's refit
model then gets its reader (`add-reader --share w`, trained on the fold's whole training part)
and scores its held-out fold; with `--no-refit`, the model trained without the selection half
gets a reader trained on the same tables.

`scripts/peer-mix-study.py` reads the same mixing functions for its studies.
"""

import json
import shutil
import time
from pathlib import Path

# The reader's features: n-grams of 2-4 bytes of the first 20 cells, value statistics, the
# column's place; 2^10 buckets scored as 2^16 do on T2D and keep each reader under 0.6 MB.
READER_FLAGS = ["--value-stats", "--position", "--buckets", "1024"]
GRID = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def read(path):
    """A predictions file (`eval`/`baseline --predictions`) keyed by (table, subject, column)."""
    with open(path) as lines:
        targets = [json.loads(line) for line in lines if line.strip()]
    return {(t["table"], t.get("subject"), t["column"]): t for t in targets}


def decode(probabilities, multi_label):
    """The model's decoding: the best label, or (multi-label) every label above 0.5 and the best."""
    best = max(probabilities, key=lambda label: (probabilities[label], label))
    if not multi_label:
        return [best]
    return sorted({best} | {label for label, p in probabilities.items() if p > 0.5})


def mixed(target, other, w, multi_label):
    """A target's labels with OTHER's probabilities mixed in at share W; a target the model kept
    no probabilities for (a pair whose subject it did not choose) keeps its labels."""
    if not target.get("probabilities"):
        return target["predicted"]
    own, theirs = target["probabilities"], (other or {}).get("probabilities", {})
    labels = set(own) | set(theirs)
    return decode({label: (1 - w) * own.get(label, 0.0) + w * theirs.get(label, 0.0)
                   for label in labels}, multi_label)


def micro_f1(pairs):
    tp = predicted = gold = 0
    for g, p in pairs:
        tp += len(set(g) & set(p))
        predicted += len(p)
        gold += len(g)
    return 2 * tp / max(predicted + gold, 1)


def choose_share(folds, multi_label):
    """The share of the best pooled micro-F1 over FOLDS ({name: (model, reader) predictions}),
    the smaller on a tie, and the curve it was read from."""
    curve = {}
    for w in GRID:
        curve[w] = micro_f1([(t["gold"], mixed(t, reader.get(key), w, multi_label))
                             for model, reader in folds.values() for key, t in model.items()])
    return max(GRID, key=lambda w: (round(curve[w], 12), -w)), curve


def reproduces(folds, multi_label):
    """Whether decoding the model's own probabilities gives its labels on every target: else
    a mixture would compare something other than the recipe."""
    return all(sorted(mixed(t, None, 0.0, multi_label)) == sorted(t["predicted"])
               for model, _ in folds.values() for t in model.values())


def reader_stage(h, bench, tasks, summaries, multi_label):
    """Adds the reader to every fold of BENCH whose summary lacks it (or chose another share),
    each fold's share chosen on the other folds; H is the protocol's helpers (run, evaluate,
    counts, fold, closure flags, say, write_summary, the commit, whether the folds were refit).
    Returns the summaries."""
    for task in tasks:
        multi = multi_label(task)
        folds, trained = {}, {}
        for k in sorted(summaries):
            fold = h.fold(k)
            file = fold.dir / f"reader-{task}.jsonl"
            if not file.exists():
                started = time.time()
                h.say(f"{bench} fold {k}: the reader's predictions ({task})")
                partial = file.with_suffix(".partial")
                h.run("--threads", "1", "baseline", "--task", task, *h.closure(task), "--json",
                      "--kind", "char-ngram", *READER_FLAGS, "--train", fold.peer_train,
                      "--eval", fold.spec("test"), "--predictions", partial)
                partial.rename(file)
                trained[k] = time.time() - started
            folds[k] = (read(fold.dir / f"model-{task}.jsonl"), read(file))
        if not reproduces(folds, multi):
            raise RuntimeError(f"{bench} {task}: decoding the recipe's probabilities does not give "
                               "its labels; the reader's mixture would compare something else")
        for k in sorted(summaries):
            others = {j: f for j, f in folds.items() if j != k}
            w, curve = choose_share(others, multi)
            fold = h.fold(k)
            done = (summaries[k].get("reader") or {}).get(task)
            scored = fold.dir / f"model-reader-{task}.jsonl"
            own = own_subject_file(fold.dir, task)
            if (done and done["share"] == w and "threshold" in done and scored.exists()
                    and (own is None or own.exists())):
                continue
            h.say(f"{bench} fold {k}: the reader at share {w} ({task}), chosen on folds "
                  + ", ".join(map(str, others)))
            started = time.time()
            # The mixture moves the probabilities, so the abstention threshold is chosen again,
            # as the protocol chooses it: the fold's half model with a reader trained beside it
            # (on its training part) on the selection half.
            half = fold.dir / "final-half-reader"
            shutil.rmtree(half, ignore_errors=True)
            h.run("--threads", "1", "add-reader", "--model", fold.dir / "final", "--out", half,
                  "--task", task, "--namespace", bench, "--train", fold.own[0], "--share", w,
                  *READER_FLAGS)
            found = json.loads(h.run("--threads", "1", "calibrate", "--model", half, "--task", task,
                                     "--dev", fold.spec("select"), "--json"))
            threshold = found[0]["chosen"]["threshold"]
            shutil.rmtree(half, ignore_errors=True)
            # The scored model: the refit (trained on the whole training part, its reader too),
            # or with `--no-refit` the model trained without the selection half, its reader
            # trained on the same tables.
            scored_model, reader_train = ((fold.dir / "final-all", fold.peer_train) if h.refit
                                          else (fold.dir / "final", fold.own[0]))
            with_reader = fold.dir / "final-reader"
            shutil.rmtree(with_reader, ignore_errors=True)
            h.run("--threads", "1", "add-reader", "--model", scored_model, "--out",
                  with_reader, "--task", task, "--namespace", bench, "--train", reader_train,
                  "--share", w, *READER_FLAGS)
            h.run("calibrate", "--model", with_reader, "--task", task, "--set",
                  f"{bench}={'none' if threshold is None else threshold}")
            report = h.evaluate(fold, with_reader, task, "test", scored)
            if own is not None:
                # Relations as `annotate` gives them: from the subject column the model finds.
                h.evaluate(fold, with_reader, task, "test", own, own_subject=True)
            shutil.rmtree(with_reader, ignore_errors=True)
            abstention = report.get("abstention") or {}
            summaries[k].setdefault("reader", {})[task] = {
                "share": w, "chosen_on": sorted(others), "curve": [[s, f] for s, f in curve.items()],
                "micro_f1": report["micro_f1"], "counts": h.counts(report),
                "answered": abstention.get("answered"), "precision": abstention.get("precision"),
                "threshold": threshold, "commit": h.commit,
                # Its own run time; the reader's held-out predictions count where they were
                # made in this run (else the entry's time is unknown).
                "seconds": (round(time.time() - started + trained[k], 1) if k in trained else None)}
            h.write_summary(fold.dir / "summary.json", summaries[k])
    return summaries


def has_reader(summaries, task):
    return all((s.get("reader") or {}).get(task) for s in summaries.values())


def own_subject_file(fold_dir, task):
    """Where a fold's relations read from the model's own subject column go (CPA only)."""
    return Path(fold_dir) / f"model-reader-{task}-own-subject.jsonl" if task == "cpa" else None


def pooled_reader(out, bench, task, folds, own_subject=False):
    """The folds' predictions of the recipe with its reader (with `own_subject`, its relations
    read from the subject column it finds), pooled into one file."""
    suffix = "-own-subject" if own_subject else ""
    pool = Path(out) / bench / f"{task}-model-reader{suffix}.jsonl"
    pool.write_text("".join(
        (Path(out) / bench / f"fold{k}" / f"model-reader-{task}{suffix}.jsonl").read_text()
        for k in folds))
    return pool
