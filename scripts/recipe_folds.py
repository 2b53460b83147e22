"""The nested protocol's data: where each benchmark's files are, and each outer fold's parts
(what its model and expert train on, the selection half, the held-out fold), as
`scripts/evaluate_recipe.py` and the studies on its work directory build them; the peers it
trains beside the recipe, and how it runs `colswarm`."""

import csv
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = "datasets"
W = f"{DATA}/wikitables-turl-subset"
G = f"{DATA}/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_"
# GitTables' schema.org annotations, in four files whose folds are not the DBpedia folds: some
# columns are DBpedia targets too, others are columns of tables the DBpedia folds do not have.
SCHEMA = f"{DATA}/gittables-semtab22/gt-semtab22-schema-property-all/sp_semi1_cv_"
T = f"{DATA}/t2d-webtables/t2d.tar.gz"
SHIPPED = "models/colswarm-small"
WIKI_ALL = f"wikitables=turl-csv:{W}/train_wikitables_subset_20.csv.gz,{W}/dev_wikitables_subset_2.csv.gz"
GIT_ALL = "gittables=sato-cv:" + ",".join(f"{G}{i}.csv.gz" for i in range(4))
T2D_ALL = f"t2d=t2d:{T}"
# How many outer folds each benchmark has.
FOLDS = {"t2d": 5, "gittables": 4, "wikitables": 5}


class Fold:
    """One outer fold of a benchmark: what trains, what selects, what scores."""

    def __init__(self, bench, k, n, settings):
        self.bench, self.k, self.j = bench, k, (k + 1) % n
        self.dir = settings.out / bench / f"fold{k}"
        self.dir.mkdir(parents=True, exist_ok=True)
        others = [i for i in range(n) if i not in (k, self.j)]
        # What the expert trains on beside `own` (and beside `own_all` in the refit).
        self.expert_more = {"": [], "-all": []}
        if bench == "t2d":
            rest = ",".join(map(str, others))
            self.own = [f"t2d=t2d:{T}#folds={rest}+folds={self.j}/half=1"]
            self.own_all = [f"t2d=t2d:{T}#folds=" + ",".join(str(i) for i in range(n) if i != k)]
            self.context = [WIKI_ALL, GIT_ALL]
            self.peer_train = f"t2d=t2d:{T}#folds=" + ",".join(str(i) for i in range(n) if i != k)
            self.select = ("t2d", T, f"folds={self.j}/half=0")
            self.test = ("t2d", T, f"folds={k}")
            self.tasks = ["cta", "cpa"]
            self.expert_shape = ["--set", "model.d_model=32"]
            self.extra_experts = [f"t2d-silver={SHIPPED}/experts/t2d-silver"]
        elif bench == "gittables":
            # The files are the folds; the selection half is half of hash fold 0 of the other
            # three files (one spec with a union split).
            files = ",".join(f"{G}{i}.csv.gz" for i in range(n) if i != k)
            self.own = [f"gittables=sato-cv:{files}#folds=1,2,3,4+folds=0/half=1"]
            self.own_all = [f"gittables=sato-cv:{files}"]
            self.context = [WIKI_ALL, T2D_ALL]
            self.peer_train = f"gittables=sato-cv:{files}"
            self.select = ("sato-cv", files, "folds=0/half=0")
            self.test = ("sato-cv", f"{G}{k}.csv.gz", "all")
            self.tasks = ["cta"]
            self.expert_shape = ["--set", "model.n_layers=1", "--set", "model.neighbour_ngrams=true",
                                 "--set", "model.ngram_cells=100", "--set", "model.value_stats=true"]
            # The schema.org annotations of every table outside fold k, split as `own` is (the
            # split hashes table ids, so the selection half's tables stay out).
            schema = gittables_schema_file(settings.out / bench / "data", k)
            self.expert_more = {"": [f"gittables-schema=sato-cv:{schema}#folds=1,2,3,4+folds=0/half=1"],
                                "-all": [f"gittables-schema=sato-cv:{schema}"]}
            self.extra_experts = []
        else:
            data = wikitables_fold_files(settings.out / bench / "data", k, self.j)
            self.own = [f"wikitables=turl-csv:{data}/train.csv"]
            self.own_all = [f"wikitables=turl-csv:{data}/peer-train.csv"]
            self.context = [GIT_ALL, T2D_ALL]
            self.peer_train = f"wikitables=turl-csv:{data}/peer-train.csv"
            self.select = ("turl-csv", f"{data}/select.csv", "all")
            self.test = ("turl-csv", f"{data}/test.csv", "all")
            self.tasks = ["cta"]
            self.expert_shape = ["--set", "model.d_model=32", "--set", "model.neighbour_ngrams=true",
                                 "--set", "model.hierarchy_closure=false"]
            self.extra_experts = []
        # The label-name prior is chosen where the shipped model's namespace uses one and
        # headers exist (GitTables' columns come without headers).
        self.prior = bench == "t2d"

    def spec(self, part):
        """A data spec (NAME=FORMAT:PATH#SPLIT) of the selection half or the held-out fold."""
        fmt, path, split = self.select if part == "select" else self.test
        return f"{self.bench}={fmt}:{path}" + ("" if split == "all" else f"#{split}")


def read_gzip_csv(path):
    csv.field_size_limit(1 << 30)
    with gzip.open(path, "rt", newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def gittables_schema_file(out, k):
    """GitTables' schema.org-annotated columns (all four of their files) of every table that is
    not in the DBpedia fold k, in one file."""
    path = out / f"schema-without-cv{k}.csv.gz"
    if path.exists():
        return path
    out.mkdir(parents=True, exist_ok=True)
    held_out = {row[0] for row in read_gzip_csv(ROOT / f"{G}{k}.csv.gz")[1:]}
    header, rows = None, []
    for i in range(4):
        part = read_gzip_csv(ROOT / f"{SCHEMA}{i}.csv.gz")
        header = part[0]
        rows += [row for row in part[1:] if row[0] not in held_out]
    partial = path.with_name(path.name + ".partial")
    with gzip.open(partial, "wt", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header] + rows)
    partial.rename(path)
    return path


def wikitables_fold_files(out, k, j):
    """WikiTables' fold files: train (the train file, dev's folds but k and j, half 1 of dev's
    fold j), select (half 0 of fold j), test (fold k) and peer-train (everything but fold k)."""
    d = out / f"fold{k}"
    if (d / "test.csv").exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "scripts/knowledge"))
    from common import fnv1a64  # the hash of the Rust `#folds=` specs

    src = ROOT / W
    train = read_gzip_csv(src / "train_wikitables_subset_20.csv.gz")
    dev = read_gzip_csv(src / "dev_wikitables_subset_2.csv.gz")
    fold = lambda r: fnv1a64(r[0]) % 5
    half = lambda r: (fnv1a64(r[0]) // 5) % 2
    parts = {
        "train.csv": train[1:] + [r for r in dev[1:] if fold(r) not in (k, j) or (fold(r) == j and half(r) == 1)],
        "select.csv": [r for r in dev[1:] if fold(r) == j and half(r) == 0],
        "peer-train.csv": train[1:] + [r for r in dev[1:] if fold(r) != k],
        "test.csv": [r for r in dev[1:] if fold(r) == k],
    }
    for name in ("wikitables-2_all_labels.txt", "labels_to_text_wikitables-2-cta.json",
                 "wikitables-hierarchy-v2.json"):
        shutil.copy(src / name, d / name)
    for name, rows in parts.items():
        partial = d / (name + ".partial")
        with open(partial, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([train[0]] + rows)
        partial.rename(d / name)
    return d


# Each peer's `colswarm baseline` flags. `char-ngram-stats` is the n-gram peer with each
# column's value statistics in its features (`--value-stats`), as the GitTables expert reads
# them; `char-ngram-stats-position` also knows each column's place in its table
# (`--position`), as the model does from each column's query.
PEERS = {
    "majority": ["--kind", "majority"],
    "header-rule": ["--kind", "header-rule"],
    "header-memory": ["--kind", "header-memory"],
    "char-ngram": ["--kind", "char-ngram"],
    "char-ngram-stats": ["--kind", "char-ngram", "--value-stats"],
    "char-ngram-stats-position": ["--kind", "char-ngram", "--value-stats", "--position"],
}
# Where the benchmark chooses a label-name prior (T2D), the n-gram peers with it.
PRIOR_PEERS = {
    "char-ngram-prior": ["--kind", "char-ngram"],
    "char-ngram-prior-stats": ["--kind", "char-ngram", "--value-stats"],
}
# The experts read every table (`add-specialist` without `--open-below`).
ALWAYS = "always"


# What a record or work directory made before recipe changes were recorded was made with.
NO_CHANGES = {"model": [], "expert": []}


def change_flags(changes):
    """The protocol's flags that give CHANGES, as the results and messages show them."""
    return ([f"--set {c}" for c in changes["model"]] + [f"--expert-set {c}" for c in changes["expert"]]
            + [f"--specialist {c}" for c in changes.get("specialists", [])])


def run(settings, *args, out=None):
    """Runs colswarm with ARGS from the repository's root; its stdout to OUT or returned."""
    command = settings.bin + [str(a) for a in args]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr.strip()}")
    if out is not None:
        Path(out).write_text(result.stdout)
    return result.stdout
