#!/usr/bin/env python3
"""Turns Sato/Doduo cv folds (e.g. GitTables' sp_semi1_cv_*.csv.gz) into what a user gives
`colswarm fine-tune`: one CSV file per table and a labels.csv (table,column,label).

    scripts/sato-cv-to-labels.py --tables OUT/tables --labels OUT/labels-k20.csv \
        --per-label 20 --seed 0 sp_semi1_cv_0.csv.gz sp_semi1_cv_1.csv.gz

The folds carry no headers (their labels were derived from them), so each table file gets an
empty header row: the model reads the columns exactly as it reads the cv files. With
--per-label K, at most K labelled columns per label are kept (a seeded sample); table files are
written once and reused.
"""
import argparse
import csv
import gzip
import random
import sys
from collections import defaultdict
from pathlib import Path

csv.field_size_limit(sys.maxsize)


def read_folds(paths):
    tables = {}  # table id -> {col_idx: (label or None, values)}
    for path in paths:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                label = row["class"] if row["class_id"].strip() != "-1" else None
                values = row["data"].split(";") if row["data"] else []
                tables.setdefault(row["table_id"], {})[int(row["col_idx"])] = (label, values)
    return tables


def write_table(path, columns):
    order = sorted(columns)
    height = max((len(columns[c][1]) for c in order), default=0)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([""] * len(order))
        for r in range(height):
            writer.writerow([columns[c][1][r] if r < len(columns[c][1]) else "" for c in order])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folds", nargs="+", type=Path)
    parser.add_argument("--tables", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--per-label", type=int, default=0, help="0 keeps every column")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    tables = read_folds(args.folds)
    by_label = defaultdict(list)
    for table_id in sorted(tables):
        columns = tables[table_id]
        for position, c in enumerate(sorted(columns)):
            label = columns[c][0]
            if label is not None:
                by_label[label].append((table_id, position))
    rng = random.Random(args.seed)
    chosen = []
    for label in sorted(by_label):
        cols = by_label[label]
        if args.per_label and len(cols) > args.per_label:
            cols = rng.sample(cols, args.per_label)
        chosen.extend((t, c, label) for t, c in cols)
    chosen.sort()
    args.tables.mkdir(parents=True, exist_ok=True)
    for table_id in sorted({t for t, _, _ in chosen}):
        path = args.tables / f"{table_id}.csv"
        if not path.exists():
            write_table(path, tables[table_id])
    args.labels.parent.mkdir(parents=True, exist_ok=True)
    with open(args.labels, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["table", "column", "label"])
        for table_id, column, label in chosen:
            writer.writerow([f"{table_id}.csv", column, label])
    print(f"{args.labels}: {len(chosen)} labelled columns, {len(by_label)} labels, "
          f"{len({t for t, _, _ in chosen})} tables", file=sys.stderr)


if __name__ == "__main__":
    main()
