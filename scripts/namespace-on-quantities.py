#!/usr/bin/env python3
"""How an entity-type namespace treats columns of numbers.

Reads a `colswarm eval --namespace NS --predictions FILE` file written on a GitTables cv file
(`--format sato-cv`) and that cv file, classifies each scored column as a quantity (more than
half of its non-missing cells numbers, at most half of them years, as
`colswarm_tables::Column::is_quantity` does) or not, and prints, for both groups, how many
labels the namespace gives and how often its best probability clears a threshold.

    colswarm eval --model M --format sato-cv --input cv_3.csv --namespace wikitables \
        --no-specialists --predictions p.jsonl
    scripts/namespace-on-quantities.py p.jsonl cv_3.csv --threshold 0.06
"""
import argparse
import csv
import json
import re
import sys

NULLS = {"null", "none", "nan", "n/a", "na", "nil", "-", "--", "\u2014", "?"}
INTEGER = re.compile(r"^[+-]?\d[\d,_]*$")
DECIMAL = re.compile(r"^[+-]?(\d[\d,_]*)?(\.\d*)?([eE][+-]?\d+)?$")


def kind(text):
    t = text.strip()
    if not t or (len(t) <= 4 and t.lower() in NULLS):
        return "null"
    if INTEGER.match(t):
        return "year" if t.isdigit() and 1000 <= int(t) <= 2100 else "number"
    if DECIMAL.match(t) and any(c.isdigit() for c in t):
        return "number"
    return "other"


def is_quantity(cells):
    kinds = [kind(c) for c in cells]
    filled = [k for k in kinds if k != "null"]
    numbers = sum(k in ("number", "year") for k in filled)
    years = sum(k == "year" for k in filled)
    return 2 * numbers > len(filled) and 2 * years <= len(filled)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("predictions")
    parser.add_argument("cv_file")
    parser.add_argument("--threshold", type=float, default=0.5)
    args = parser.parse_args()
    csv.field_size_limit(sys.maxsize)
    # colswarm keeps a cv table's columns compact: a prediction's column is its position
    # among the table's rows of the file, in column-index order.
    tables = {}
    with open(args.cv_file, newline="") as f:
        for row in csv.DictReader(f):
            tables.setdefault(row["table_id"], []).append((int(row["col_idx"]), row["data"].split(";")))
    cells = {}
    for table, columns in tables.items():
        for position, (_, data) in enumerate(sorted(columns, key=lambda c: c[0])):
            cells[(table, position)] = data
    groups = {True: [], False: []}
    with open(args.predictions) as f:
        for line in f:
            p = json.loads(line)
            column = cells.get((p["table"], p["column"]))
            if column is None:
                sys.exit(f"{args.predictions}: column {p['column']} of {p['table']} is not in {args.cv_file}")
            best = max(p["probabilities"].values())
            groups[is_quantity(column)].append((len(p["predicted"]), best))
    for quantity, rows in groups.items():
        if not rows:
            continue
        n = len(rows)
        print(
            f"{'quantities' if quantity else 'other columns'}: {n} columns, "
            f"{sum(r[0] for r in rows) / n:.2f} labels per column, "
            f"best probability ≥ 0.5 on {sum(r[1] >= 0.5 for r in rows) / n:.1%}, "
            f"≥ {args.threshold} on {sum(r[1] >= args.threshold for r in rows) / n:.1%}, "
            f"mean best {sum(r[1] for r in rows) / n:.3f}"
        )


if __name__ == "__main__":
    main()
