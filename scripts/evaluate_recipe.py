#!/usr/bin/env python3
"""The shipped recipe's whole evaluation, nested, in one command (`scripts/evaluate-recipe.sh`).

For each benchmark and each outer fold k:

- the held-out fold k scores everything, and nothing is chosen on it;
- half of the next fold, j = k + 1 (`folds=j/half=0` of the hash split; for GitTables, whose
  folds are files, half of hash fold 0 of the other three files), is the *selection* half:
  the fold's models never train on it, and every setting the recipe chooses is chosen there:
  the label-name prior's weight per task (T2D), which domain experts open (`open_below`, on
  every table, or none), the experts' logit-mix weights (learned from the identity, θ = 0, by `train-router
  --experts --mix-only`, the gates kept at the chosen rule), whether the types' label for
  subject columns finds each table's subject column and at which margin (T2D: scored by types
  and by relations read from the column it finds), CPA's type view and header-memory weight
  (T2D; the memory counts the tables the model trained on), and the abstention thresholds;
- the model (`recipes/colswarm-small.toml`: the other benchmarks' data whole, this one's other
  folds but the selection half) and the benchmark's domain expert (`recipes/expert.toml`, the
  shipped expert's shape) train on the rest, with the recipe's own seeds; no seed is chosen;
  the GitTables expert also learns GitTables' schema.org annotations as a second namespace,
  every table of the held-out fold and of the selection half left out;
- the peers (majority, header rule, header memory, char n-grams, char n-grams with each
  column's value statistics, and those with the column's place in its table as well) train on
  every table outside fold k; the n-gram peers with the label-name prior choose its weight on
  the selection half as the model does.

The subject column is always the model's own choice (CTA); CPA's pairs are the set's, and
relations read from the model's own subject column are scored beside them. The folds'
predictions are pooled per benchmark and task and compared with `colswarm compare` (paired
bootstrap over tables, 95% interval). The tables go into docs/RESULTS.md between its
`evaluate-recipe` markers (`recipe_results.py`), with the command and, per benchmark, the
commits its folds and its reader step ran at and their run times; the recipe's pooled
held-out predictions go into docs/results/ (gzipped, labels only), so that a peer added later
is paired against them without training the folds again.

`--set KEY=VALUE` (repeatable) changes the model's recipe in every fold, as `colswarm train
--set` does, and `--expert-set KEY=VALUE` the benchmark's expert's (on top of its shape): a
variant of the recipe measured by the same protocol, e.g. `--set model.value_stats=true --out
runs/evaluate-value-stats --results runs/value-stats.md`. The results say which changes made
them.

Resumable: every trained model, prediction file and fold summary is kept under --out and
reused; a rerun redoes only what is missing. A work directory remembers the recipe changes it
was made with and refuses others. It also refuses a kept model that lacks a training set the protocol now
gives it (a GitTables expert from before the schema.org namespace). Progress goes to stderr.
"""

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from types import SimpleNamespace

from mix_weights import routing_mix
from recipe_folds import (ALWAYS, FOLDS, NO_CHANGES, PEERS, PRIOR_PEERS, ROOT, SHIPPED, Fold,
                          change_flags, run)
from recipe_reader import reader_stage
from recipe_results import write_results

class Settings:
    """What a run of the protocol uses: full, or tiny (the tests)."""

    def __init__(self, args):
        self.bin = args.bin
        self.out = Path(args.out)
        self.tiny = args.tiny
        # Changes to the model's and to the expert's recipes (`train --set`), in every fold.
        self.recipe_sets = {"model": list(args.set), "expert": list(args.expert_set)}
        # More specialists beside each fold's experts (`--specialist`), recorded with the
        # changes only when there are some, so that older work directories still match.
        if args.specialist:
            self.recipe_sets["specialists"] = list(args.specialist)
        self.folds = args.folds
        self.prior_grid = [0, 12] if args.tiny else [0, 4, 8, 12, 16, 24]
        # (Tiny runs always open the experts, so that every step of the recipe runs.)
        self.open_grid = [0.95] if args.tiny else [None, 0.8, 0.9, 0.95, 0.99, ALWAYS]
        # CPA's own priors (T2D): the CTA head's weight in the relation (`--type-view`) and the
        # header memory's weight, simpler settings first.
        type_views, memories = ([0, 0.5], [0, 4]) if args.tiny else ([0, 0.25, 0.5, 0.75], [0, 2, 4, 8])
        self.cpa_grid = [(m, w) for m in type_views for w in memories]
        # The subject label's margin (T2D), none first: the larger the margin, the fewer tables
        # whose subject column it moves.
        self.subject_grid = [None, 0.7] if args.tiny else [None, 0.9, 0.7, 0.5, 0.3]
        # The experts' logit mix, learned from the identity on the selection half.
        self.mix_steps = 5 if args.tiny else 300
        # A tiny run trains on a few tables for one epoch (the recipes average six).
        self.train_args = (
            ["--max-tables", "6", "--epochs", "1", "--set", "averaging.last_epochs=1"]
            if args.tiny
            else []
        )
        # Retrain each fold's model and expert on its whole training part, selection half
        # included, once the settings are chosen, as the shipped model is trained on all the data.
        self.refit = not args.no_refit
        self.jobs = max(args.jobs, 1)
        # Where the recipe's held-out predictions are kept: `results/` beside the results file.
        self.kept = (ROOT / args.results).parent / "results"
        self.started = time.time()
        self.lock = threading.Lock()
        # The commit each fold's and each reader stage's work is recorded with.
        self.commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                     capture_output=True, text=True).stdout.strip() or "unknown"

    def say(self, text):
        minutes, seconds = divmod(int(time.time() - self.started), 60)
        with self.lock:
            print(f"[{minutes} min {seconds:02d} s] {text}", file=sys.stderr, flush=True)


def train(settings, out, recipe, specs, extra=(), message=None):
    """Trains OUT with RECIPE on SPECS unless OUT-avg exists (the recipe's average), saying
    MESSAGE first."""
    done = Path(f"{out}-avg")
    if done.exists():
        check_kept(done, specs)
        return done
    if message:
        settings.say(message)
    args = ["--threads", "1", "train", "--recipe", recipe, "--quiet", "--out", out, *extra]
    for spec in specs:
        args += ["--train", spec]
    started = time.time()
    run(settings, *args, *settings.train_args, out=f"{out}.json")
    # The training's own wall time, kept with its record: a fold that reuses the model still
    # counts it in the benchmark's run time.
    record = json.loads(Path(f"{out}.json").read_text())
    record["seconds"] = round(time.time() - started, 1)
    record["commit"] = settings.commit
    Path(f"{out}.json").write_text(json.dumps(record, indent=2))
    Path(out, "averaged").rename(done)
    # The run's checkpoints were only for resuming it.
    shutil.rmtree(out)
    return done


def check_kept(done, specs):
    """Refuses a model kept from an older run of the protocol that lacks a training set the
    protocol now gives it (the GitTables expert's schema.org namespace): scoring it would
    misstate the recipe."""
    learned = {n["name"] for n in json.loads((done / "labels.json").read_text())["cta"]}
    missing = sorted({spec.split("=", 1)[0] for spec in specs} - learned)
    if missing:
        raise RuntimeError(f"{done} was trained without {', '.join(missing)}, which the protocol "
                           "now trains it on: move it away (and the fold's summary.json) to retrain it")


def training_sets(fold):
    """{model directory: the specs it trains on} of a fold's four trained models."""
    return {fold.dir / f"{kind}{suffix}-avg": specs
            for suffix, own in (("", fold.own), ("-all", fold.own_all))
            for kind, specs in (("model", fold.context + own), ("expert", own + fold.expert_more[suffix]))}


def training_record(done, key):
    """KEY of the record of the training that made DONE (a model's `-avg` directory), or None
    where there is no record or it predates the protocol's keeping KEY."""
    record = done.parent / (done.name.removesuffix("-avg") + ".json")
    return json.loads(record.read_text()).get(key) if record.exists() else None


def training_seconds(done):
    """The wall time of the training that made DONE, or None where it was not recorded."""
    return training_record(done, "seconds")


def training_commits(fold):
    """The commits the fold's four models were trained at (None where not recorded)."""
    return {training_record(done, "commit") for done in training_sets(fold)}


def fold_work(fold, other_seconds):
    """A fold's whole run time on one thread: its four models' training, wherever it was done,
    and OTHER_SECONDS of choosing, scoring and peers; None when a training time is unknown."""
    trained = [training_seconds(done) for done in training_sets(fold)]
    return None if None in trained else round(sum(trained) + other_seconds, 1)


def counts(report):
    """True positives, predictions and gold labels of an eval or baseline JSON report."""
    rows = report["per_label"]
    return (sum(r["true_positives"] for r in rows), sum(r["predicted"] for r in rows),
            sum(r["support"] for r in rows))


def f1(total):
    tp, predicted, gold = total
    return 2 * tp / (predicted + gold) if predicted + gold else 0.0


def evaluate(settings, fold, model, task, part, predictions=None, own_subject=False):
    fmt, paths, split = fold.select if part == "select" else fold.test
    inputs = [a for path in paths.split(",") for a in ("--input", path)]
    # The benchmark's own namespace, named: a model that also learned another set of the
    # same format (GitTables' schema.org annotations) would otherwise be refused as ambiguous.
    args = ["--threads", "1", "eval", "--model", model, "--format", fmt, *inputs,
            "--split", split, "--task", task, "--namespace", fold.bench, "--json"]
    if predictions:
        args += ["--predictions", predictions]
    if own_subject:
        args += ["--own-subject"]
    return json.loads(run(settings, *args))


def rebuild(settings, source, out, make):
    """OUT made from SOURCE by MAKE(partial) into a fresh directory."""
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    make(out)
    return out


def with_experts(settings, model, out, experts, open_below):
    """MODEL with EXPERTS added, opening below OPEN_BELOW (None: MODEL alone)."""
    if open_below is None:
        return model
    current = Path(model)
    for i, expert in enumerate(experts):
        step = Path(f"{out}-{i}") if i + 1 < len(experts) else Path(out)
        shutil.rmtree(step, ignore_errors=True)
        name, options, path = specialist_options(expert)
        expert = f"{name}={path}"
        rule = [] if open_below == ALWAYS or "always" in options else ["--open-below", open_below]
        run(settings, "add-specialist", "--model", current, "--specialist", expert, *rule,
            "--out", step)
        if current != Path(model):
            shutil.rmtree(current)
        current = step
    return current


def specialist_options(expert):
    """(name, options, dir) of an expert NAME[:OPTION...]=DIR: `always` opens it on every table
    where the experts open, `average` sets its mix weight to the plain average (θ = 1) once the
    mix is learned (the other experts' weights are learned beside its learned weight: the mix
    cannot hold one weight fixed while it learns)."""
    name, sep, path = expert.partition("=")
    name, *options = name.split(":")
    if not sep or not name or not path:
        raise RuntimeError(f"{expert}: expected NAME=DIR")
    unknown = set(options) - {"always", "average"}
    if unknown:
        raise RuntimeError(f"{expert}: unknown option(s) {', '.join(sorted(unknown))} "
                           "(expected always, average)")
    return name, set(options), path


def prior_args(weights):
    """`calibrate`'s flags for the T2D prior: one weight for both tasks, or a weight per task."""
    if not isinstance(weights, dict):
        weights = {"cta": weights, "cpa": weights}
    return ["--label-names", f"cpa:t2d={weights.get('cpa', 0)}", "--label-names",
            f"cta:t2d={weights['cta']}", "--label-names-skip-subject", "t2d=yes"]


def cpa_prior_args(fold, choice, tables):
    """`calibrate`'s flags for CPA's type view and header memory (counted on TABLES)."""
    m, w = choice
    memory = (["--header-memory-from", tables, "--header-memory", f"{fold.bench}={w}"] if w
              else ["--header-memory", f"{fold.bench}=none"])
    return ["--task", "cpa", "--type-view", f"{fold.bench}={m if m else 'none'}", *memory]


def learn_mix(settings, fold, model):
    """The experts' logit-mix weights learned from the identity on the selection half (the
    gates kept at their rule), set in MODEL (in place); returns {"EXPERT@NAMESPACE": θ}."""
    settings.say(f"{fold.bench} fold {fold.k}: learning the experts' mix on the selection half")
    work = fold.dir / "mix-run"
    shutil.rmtree(work, ignore_errors=True)
    run(settings, "--threads", "1", "train-router", "--experts", "--mix-only", "--mix-start", "0",
        "--quiet", "--model", model, "--train", fold.spec("select"), "--steps", settings.mix_steps,
        "--eval-every", "0", "--seed", "1", "--out", work)
    mix = routing_mix(work / "model")
    shutil.rmtree(work)
    set_mix(settings, model, mix)
    return mix


def set_mix(settings, model, mix):
    """Stores MIX ({"EXPERT@NAMESPACE": θ}) in MODEL's routing (in place)."""
    flags = [a for pair, theta in sorted(mix.items()) for a in ("--mix-weight", f"{pair}={theta!r}")]
    if flags:
        run(settings, "calibrate", "--model", model, *flags)


def choose_cpa_priors(settings, fold, model):
    """The type view and header memory chosen for CPA on the selection half, set in MODEL
    (in place); the memory counts the tables the model trained on."""
    settings.say(f"{fold.bench} fold {fold.k}: choosing CPA's type view and header memory on the selection half")
    scores = []
    for choice in settings.cpa_grid:
        run(settings, "calibrate", "--model", model, *cpa_prior_args(fold, choice, fold.own[0]))
        scores.append((choice, counts(evaluate(settings, fold, model, "cpa", "select"))))
    choice = choose(scores)
    run(settings, "calibrate", "--model", model, *cpa_prior_args(fold, choice, fold.own[0]))
    return list(choice), [(list(c), f1(t)) for c, t in scores]


# The label T2D gives a table's subject column (its entity's name).
SUBJECT_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def subject_label_args(bench, margin):
    """`calibrate`'s flags for the subject label at MARGIN (None: no subject label)."""
    if margin is None:
        return ["--subject-label", f"{bench}=none"]
    return ["--subject-label", f"{bench}={SUBJECT_LABEL}", "--subject-margin", str(margin)]


def knows_label(model, bench, label):
    """Whether MODEL's CTA namespace BENCH has LABEL."""
    labels = json.loads((Path(model) / "labels.json").read_text())
    return any(n["name"] == bench and label in n["labels"] for n in labels["cta"])


def choose_subject_label(settings, fold, model):
    """The subject label's margin (None: no subject label) chosen on the selection half by
    types and relations, both read from the subject column the model finds
    (`eval --own-subject`), set in MODEL (in place); None where the namespace lacks the label."""
    if not knows_label(model, fold.bench, SUBJECT_LABEL):
        return None, []
    settings.say(f"{fold.bench} fold {fold.k}: choosing the subject label on the selection half")
    scores = []
    for margin in settings.subject_grid:
        run(settings, "calibrate", "--model", model, *subject_label_args(fold.bench, margin))
        total = [0, 0, 0]
        for task in fold.tasks:
            report = evaluate(settings, fold, model, task, "select", own_subject=True)
            total = [a + b for a, b in zip(total, counts(report))]
        scores.append((margin, tuple(total)))
    margin = choose(scores)
    run(settings, "calibrate", "--model", model, *subject_label_args(fold.bench, margin))
    return margin, [(m, f1(c)) for m, c in scores]


def choose(scores):
    """The best setting of (setting, counts) pairs, ties to the earlier (the simpler) one."""
    best = max(range(len(scores)), key=lambda i: (round(f1(scores[i][1]), 12), -i))
    return scores[best][0]


def train_pair(settings, fold, suffix, own, what):
    """The fold's model (the recipe, beside the other benchmarks' data) and its expert, trained
    on OWN into model{SUFFIX} and expert{SUFFIX}; returns the model and the experts to add."""
    name = f"{fold.bench} fold {fold.k}"
    model = train(settings, fold.dir / f"model{suffix}", "recipes/colswarm-small.toml", fold.context + own,
                  set_flags(settings.recipe_sets["model"]), f"{name}: training the model{what}")
    expert = train(settings, fold.dir / f"expert{suffix}", "recipes/expert.toml",
                   own + fold.expert_more[suffix], fold.expert_shape + set_flags(settings.recipe_sets["expert"]),
                   f"{name}: training its {fold.bench} expert{what}")
    more = [fold_specialist(template, fold, suffix)
            for template in settings.recipe_sets.get("specialists", [])]
    return model, [f"{fold.bench}-expert={expert}"] + fold.extra_experts + more


def fold_specialist(template, fold, suffix):
    """A `--specialist NAME[:always][:average]=DIR` of one fold: DIR with `{bench}`, `{k}` and
    `{all}` (`-all` in the refit, else empty) filled in. It must exist and have been trained
    without the fold's held-out tables (and, outside the refit, without its selection half):
    the protocol cannot check that."""
    name, _, path = template.partition("=")
    path = Path(path.format(bench=fold.bench, k=fold.k, all=suffix))
    if not path.is_dir():
        raise RuntimeError(f"--specialist {template}: {path} is not a model directory")
    return f"{name}={path}"


def set_flags(changes):
    """`colswarm train`'s flags for CHANGES (KEY=VALUE each)."""
    return [a for change in changes for a in ("--set", change)]


def model_fold(settings, fold):
    """Trains, selects and scores the recipe on one fold; returns its summary."""
    name = f"{fold.bench} fold {fold.k}"
    model, experts = train_pair(settings, fold, "", fold.own, "")
    selection = {}
    # The label-name prior, with the experts as the recipe opens them: one weight per task.
    weights = {task: 0 for task in fold.tasks}
    if fold.prior:
        settings.say(f"{name}: choosing the label-name prior on the selection half")
        scores = {task: [] for task in fold.tasks}
        for w in settings.prior_grid:
            base = rebuild(settings, model, fold.dir / "prior", lambda out: run(
                settings, "calibrate", "--model", model, *prior_args(w), "--out", out))
            swarm = with_experts(settings, base, fold.dir / "prior-swarm", experts, 0.95)
            for task in fold.tasks:
                scores[task].append((w, counts(evaluate(settings, fold, swarm, task, "select"))))
        weights = {task: choose(scores[task]) for task in fold.tasks}
        selection["prior"] = {task: [(w, f1(c)) for w, c in scores[task]] for task in fold.tasks}
    base = fold.dir / "prior"
    if fold.prior:
        rebuild(settings, model, base, lambda out: run(
            settings, "calibrate", "--model", model, *prior_args(weights), "--out", out))
    else:
        base = model
    # Which experts open: below which confidence, or none.
    settings.say(f"{name}: choosing where the experts open on the selection half")
    scores = []
    for open_below in settings.open_grid:
        swarm = with_experts(settings, base, fold.dir / "open-swarm", experts, open_below)
        total = [0, 0, 0]
        for task in fold.tasks:
            total = [a + b for a, b in zip(total, counts(evaluate(settings, fold, swarm, task, "select")))]
        scores.append((open_below, tuple(total)))
    open_below = choose(scores)
    selection["open_below"] = [(o, f1(c)) for o, c in scores]
    final = fold.dir / "final"
    shutil.rmtree(final, ignore_errors=True)
    chosen = with_experts(settings, base, fold.dir / "final-swarm", experts, open_below)
    shutil.copytree(chosen, final, symlinks=True)
    mix = learn_mix(settings, fold, final) if open_below is not None else {}
    averaged = {name for name, options, _ in map(specialist_options, experts) if "average" in options}
    if averaged and mix:
        mix = {pair: 1.0 if pair.split("@")[0] in averaged else theta for pair, theta in mix.items()}
        set_mix(settings, final, mix)
    subject_margin = None
    if "cpa" in fold.tasks:
        subject_margin, selection["subject_margin"] = choose_subject_label(settings, fold, final)
    cpa_priors = None
    if "cpa" in fold.tasks:
        cpa_priors, selection["cpa_priors"] = choose_cpa_priors(settings, fold, final)
    # Abstention thresholds on the selection half.
    thresholds = {}
    for task in fold.tasks:
        found = json.loads(run(settings, "--threads", "1", "calibrate", "--model", final, "--task",
                               task, "--dev", fold.spec("select"), "--json"))
        thresholds[task] = found[0]["chosen"]["threshold"]
    scored, results, without_half = final, {}, {}
    if settings.refit:
        scored = refit(settings, fold, weights if fold.prior else None, open_below, mix,
                       subject_margin, cpa_priors, thresholds)
        for task in fold.tasks:
            # What the model without its selection half scores, for the record.
            without_half[task] = evaluate(settings, fold, final, task, "test")["micro_f1"]
    for task in fold.tasks:
        report = evaluate(settings, fold, scored, task, "test", fold.dir / f"model-{task}.jsonl")
        abstention = report.get("abstention") or {}
        results[task] = {"micro_f1": report["micro_f1"], "counts": counts(report),
                         "answered": abstention.get("answered"), "targets": report["n_targets"],
                         "precision": abstention.get("precision"),
                         "threshold": abstention.get("threshold")}
    for leftover in ("prior-swarm", "open-swarm", "final-swarm", "refit-prior", "refit-swarm"):
        shutil.rmtree(fold.dir / leftover, ignore_errors=True)
    return {"weights": weights, "open_below": open_below, "mix": mix, "cpa_priors": cpa_priors,
            "subject_margin": subject_margin,
            "selection": selection,
            "results": results, "refit": settings.refit, "without_selection_half": without_half}


def refit(settings, fold, weights, open_below, mix, subject_margin, cpa_priors, thresholds):
    """The fold's model and expert trained on its whole training part, with the settings chosen
    on the selection half: the prior weights, where the experts open, their mix weights, the
    subject label, CPA's type view and header memory (counting the whole training part), the
    thresholds."""
    model, experts = train_pair(settings, fold, "-all", fold.own_all, " on the whole training part")
    base = model
    if weights is not None:
        base = rebuild(settings, model, fold.dir / "refit-prior", lambda out: run(
            settings, "calibrate", "--model", model, *prior_args(weights), "--out", out))
    final = fold.dir / "final-all"
    shutil.rmtree(final, ignore_errors=True)
    shutil.copytree(with_experts(settings, base, fold.dir / "refit-swarm", experts, open_below), final,
                    symlinks=True)
    set_mix(settings, final, mix)
    if "cpa" in fold.tasks and knows_label(final, fold.bench, SUBJECT_LABEL):
        run(settings, "calibrate", "--model", final, *subject_label_args(fold.bench, subject_margin))
    if cpa_priors is not None:
        run(settings, "calibrate", "--model", final, *cpa_prior_args(fold, cpa_priors, fold.own_all[0]))
    for task, threshold in thresholds.items():
        if threshold is not None:
            run(settings, "calibrate", "--model", final, "--task", task,
                "--set", f"{fold.bench}={threshold}")
    return final


def helpers(settings, bench):
    """What the reader's stage (`recipe_reader.py`) runs the protocol's steps with."""
    return SimpleNamespace(
        run=lambda *args: run(settings, *args),
        evaluate=lambda fold, model, task, part, predictions, own_subject=False: evaluate(
            settings, fold, model, task, part, predictions, own_subject),
        counts=counts, say=settings.say, write_summary=write_summary, commit=settings.commit,
        refit=settings.refit,
        fold=lambda k: Fold(bench, k, FOLDS[bench], settings),
        closure=lambda task: [] if closes(bench, task) else ["--no-hierarchy-closure"])


def tasks_of(bench):
    return ["cta", "cpa"] if bench == "t2d" else ["cta"]


def multi_label(namespace, task):
    """Whether the shipped model's namespace takes several labels a target."""
    labels = json.loads((ROOT / SHIPPED / "labels.json").read_text())
    return any(n["kind"] == "MultiLabel" for n in labels[task] if n["name"] == namespace)


def closes(namespace, task):
    """Whether the shipped model closes a namespace's predictions under a label hierarchy."""
    labels = json.loads((ROOT / SHIPPED / "labels.json").read_text())
    return any(any(n.get("ancestors") or []) for n in labels[task] if n["name"] == namespace)


def peer_names(fold):
    return list(PEERS) + (list(PRIOR_PEERS) if fold.prior else [])


def peer_fold(settings, fold, task, done=None):
    """Every peer on one fold and task but those in DONE (a fold summary's {peer: counts});
    returns DONE with them added and writes their predictions."""
    closure = [] if closes(fold.bench, task) else ["--no-hierarchy-closure"]
    base = ["--threads", "1", "baseline", "--task", task, *closure, "--json"]
    out = dict(done or {})
    for peer, flags in PEERS.items():
        if peer in out:
            continue
        file = fold.dir / f"peer-{task}-{peer}.jsonl"
        report = json.loads(run(settings, *base, *flags, "--train", fold.peer_train,
                                "--eval", fold.spec("test"), "--predictions", file))
        out[peer] = counts(report)
    for peer, flags in PRIOR_PEERS.items() if fold.prior else ():
        if peer in out:
            continue
        # The n-gram peer with the label-name prior chooses its weight on the selection half.
        own = fold.own[0]
        scores = []
        for w in settings.prior_grid:
            report = json.loads(run(settings, *base, *flags, "--label-name-prior", w,
                                    "--train", own, "--eval", fold.spec("select")))
            scores.append((w, counts(report)))
        w = choose(scores)
        file = fold.dir / f"peer-{task}-{peer}.jsonl"
        report = json.loads(run(settings, *base, *flags, "--label-name-prior", w,
                                "--train", own, "--eval", fold.spec("test"), "--predictions", file))
        out[peer] = counts(report)
        out[f"{peer}-weight"] = w
    return out


def do_fold(settings, bench, k, n):
    fold = Fold(bench, k, n, settings)
    summary_file = fold.dir / "summary.json"
    if summary_file.exists():
        for done, specs in training_sets(fold).items():
            if done.exists():
                check_kept(done, specs)
        summary = json.loads(summary_file.read_text())
        # A fold scored without the refit is redone (its trained models are kept) when one is
        # asked for, as is one scored before the protocol learned the experts' mix or with
        # another grid of where the experts open.
        grid = [o for o, _ in summary["selection"]["open_below"]]
        if (summary.get("refit", False) == settings.refit and "mix" in summary
                and grid == settings.open_grid):
            # A peer added to the protocol since is run alone.
            missing = {task: [p for p in peer_names(fold) if p not in summary["peers"][task]]
                       for task in fold.tasks}
            if any(missing.values()):
                settings.say(f"{bench} fold {k}: the peers added since it ran")
                started = time.time()
                summary["peers"] = {task: peer_fold(settings, fold, task, summary["peers"][task])
                                    for task in fold.tasks}
                if summary.get("work_seconds") is not None:
                    summary["work_seconds"] += round(time.time() - started, 1)
                summary["peers_commit"] = settings.commit
                write_summary(summary_file, summary)
            return summary
    kept = {done for done in training_sets(fold) if done.exists()}
    started = time.time()
    summary = model_fold(settings, fold)
    settings.say(f"{bench} fold {k}: the peers")
    summary["peers"] = {task: peer_fold(settings, fold, task) for task in fold.tasks}
    summary["seconds"] = time.time() - started
    trained_now = sum(training_seconds(done) or 0 for done in training_sets(fold) if done not in kept)
    summary["work_seconds"] = fold_work(fold, summary["seconds"] - trained_now)
    summary["commit"], summary["jobs"] = settings.commit, settings.jobs
    # Models kept from a run at another commit: the results say which trained them.
    models = training_commits(fold)
    if models != {settings.commit}:
        summary["models_commit"] = " and ".join(sorted(c or "an unrecorded commit" for c in models))
    write_summary(summary_file, summary)
    r = summary["results"]
    settings.say(f"{bench} fold {k} done: " + ", ".join(f"{t} {r[t]['micro_f1']:.3f}" for t in r))
    return summary


def write_summary(path, summary):
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(summary, indent=1))
    partial.rename(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default="target/release/colswarm", help="the colswarm command")
    parser.add_argument("--out", default="runs/evaluate-recipe", help="work directory (resumed)")
    parser.add_argument("--benchmarks", default="t2d,gittables,wikitables")
    parser.add_argument("--jobs", type=int, default=2, help="folds at a time, one thread each")
    parser.add_argument("--results", default="docs/RESULTS.md", help="the file the tables go into")
    parser.add_argument("--tiny", action="store_true", help="a few tables, one epoch: tests the protocol")
    parser.add_argument("--folds", type=int, default=0, help="only the first N outer folds (tests)")
    parser.add_argument("--no-refit", action="store_true",
                        help="score the models trained without their selection half (half the training)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change the model's recipe in every fold, as `colswarm train --set` (repeatable)")
    parser.add_argument("--expert-set", action="append", default=[], metavar="KEY=VALUE",
                        help="change the benchmark expert's recipe in every fold (repeatable)")
    parser.add_argument("--specialist", action="append", default=[], metavar="NAME=DIR",
                        help="one more specialist beside each fold's experts, opening by the same rule "
                             "(NAME:always=DIR: on every table where they open; NAME:average=DIR: "
                             "its mix weight kept at the plain average); "
                             "DIR may hold {bench}, {k} and {all} (`-all` in the refit), e.g. a twin "
                             "trained on the same folds with another seed (repeatable)")
    args = parser.parse_args()
    args.bin = args.bin.split()
    for template in args.specialist:
        try:
            specialist_options(template)
        except RuntimeError as e:
            sys.exit(f"--specialist {e}")
    settings = Settings(args)
    settings.out.mkdir(parents=True, exist_ok=True)
    # The recipe changes a work directory's models were trained with: reusing them under other
    # changes would score the wrong models. A directory made before they were recorded had none.
    changes = settings.out / "recipe-sets.json"
    if changes.exists():
        made_with = json.loads(changes.read_text())
    else:
        made_with = NO_CHANGES if any(settings.out.iterdir()) else settings.recipe_sets
        changes.write_text(json.dumps(made_with))
    if made_with != settings.recipe_sets:
        shown = " ".join(change_flags(made_with)) or "no --set"
        sys.exit(f"{settings.out} was made with {shown}; rerun with the same or choose another --out")
    timing = settings.out / "timing.json"
    before = json.loads(timing.read_text())["seconds"] if timing.exists() else 0.0
    benches = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    for bench in benches:
        if bench not in FOLDS:
            sys.exit(f"unknown benchmark {bench!r} (expected {', '.join(FOLDS)})")
    jobs = [(b, k) for b in benches for k in range(args.folds or FOLDS[b])]
    done = {b: {} for b in benches}
    try:
        with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
            futures = {pool.submit(do_fold, settings, b, k, FOLDS[b]): (b, k) for b, k in jobs}
            for future, (b, k) in futures.items():
                done[b][k] = future.result()
        for bench in benches:
            done[bench] = reader_stage(helpers(settings, bench), bench, tasks_of(bench), done[bench],
                                       lambda task, b=bench: multi_label(b, task))
    finally:
        timing.write_text(json.dumps({"seconds": before + time.time() - settings.started}))
    seconds = before + time.time() - settings.started
    summaries = write_results(settings, done, ROOT / args.results, seconds)
    for s in summaries:
        settings.say(f"{s['bench']} {s['task']}: the recipe {s['model']:.3f}, best peer {s['best_peer']} "
                     f"{s['best_peer_f1']:.3f}, {s['difference']:+.3f} ({s['ci'][0]:+.3f} to {s['ci'][1]:+.3f})")


if __name__ == "__main__":
    main()
