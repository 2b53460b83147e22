"""Nested subsets of a silver corpus's GitTables-layout label file, for a learning curve.

Tables are taken in the order of the SHA-256 of their id (fixed, independent of the build) until
the subset holds at least N labelled columns (class other than NaN); each subset of N contains
every smaller one. Writes `<out>/silver-<N>.csv` and `<out>/silver-all.csv` in the layout of the
gold GitTables folds (`table_id,col_idx,class,class_id,data`), so that
`colswarm baseline --train gittables=sato-cv:FOLD0,…,<out>/silver-1000.csv` reads gold and
silver as one set.

    python3 scripts/corpora/silver_subsets.py .corpora/opendata/silver-dbpedia.csv \\
        --out .corpora/curve --sizes 1000 3000 10000
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from common import SourceError, hash_order, run


def subsets(rows: list[list[str]], sizes: list[int]) -> dict[str, list[list[str]]]:
    """{name: rows} for each size and for all tables, tables in SHA-256 order of their ids."""
    by_table: dict[str, list[list[str]]] = {}
    for row in rows:
        by_table.setdefault(row[0], []).append(row)
    order = hash_order(by_table)
    out = {}
    for size in sorted(sizes) + [None]:
        picked, labelled = [], 0
        for table in order:
            if size is not None and labelled >= size:
                break
            picked.extend(by_table[table])
            labelled += sum(1 for r in by_table[table] if r[2] not in ("", "NaN"))
        out["all" if size is None else str(size)] = picked
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("labels", type=Path, help="a silver-*.csv of a corpus")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    args = ap.parse_args()
    csv.field_size_limit(1 << 30)
    try:
        with open(args.labels, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise SourceError(f"{args.labels}: cannot read ({e})") from None
    if not rows or rows[0][:4] != ["table_id", "col_idx", "class", "class_id"]:
        raise SourceError(f"{args.labels}: not a GitTables-layout label file")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, picked in subsets(rows[1:], args.sizes).items():
        with open(args.out / f"silver-{name}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(rows[0])
            writer.writerows(picked)
        labelled = sum(1 for r in picked if r[2] not in ("", "NaN"))
        print(f"silver-{name}.csv: {labelled} labelled columns in {len({r[0] for r in picked})} tables")


if __name__ == "__main__":
    run(main)
