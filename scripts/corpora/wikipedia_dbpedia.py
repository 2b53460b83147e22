"""The `wikipedia` corpus's tables with silver GitTables (DBpedia) labels, in the fold layout.

    python3 scripts/corpora/wikipedia_dbpedia.py .corpora/wikipedia \\
        --out .corpora/wikipedia-dbpedia/silver-dbpedia.csv --tables 5000

The `wikipedia` corpus is labelled in WikiTables' Freebase types; this labels the same tables'
headers with GitTables' DBpedia properties, by the rule `build_opendata.py` uses (normalised
header equal to a label's normalised name; `datasets/silver/thresholds.json` keeps the vector
rule off for this label set). Web tables like these are what T2D holds, so a model trained
without T2D can learn DBpedia properties from tables of its kind.

Tables are taken in the order of the SHA-256 of their file path until --tables of them have at
least one labelled column. Every column of a kept table is written (unlabelled ones as `NaN`,
class id -1), in the layout of the gold GitTables folds (`table_id,col_idx,class,class_id,
data`), which `colswarm` reads as `sato-cv`; the layout has no header, so a model reads the
cells alone. Stdlib only; deterministic.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

from common import ROOT, SourceError, hash_order, run
from evaluate import gittables_labels
from matcher import HeaderMatcher

OFF = 1.01  # a threshold above any cosine: the exact rule alone


def label_tables(corpus: Path, class_ids: dict[str, int], tables: int) -> tuple[str, int, int]:
    """The fold-layout CSV of the first `tables` labelled tables of `corpus` (in hash order),
    with how many tables and labelled columns it holds."""
    matcher = HeaderMatcher(class_ids, None, OFF)
    files = {p.relative_to(corpus).as_posix(): p
             for p in (corpus / "tables").glob("*/*.csv")}
    if not files:
        raise SourceError(f"{corpus / 'tables'}: no tables; build the corpus first")
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["table_id", "col_idx", "class", "class_id", "data"])
    kept = labelled = 0
    for rel in hash_order(files):
        if kept == tables:
            break
        with open(files[rel], encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        hits = [matcher.match(h) for h in rows[0]] if rows else []
        if not any(hits):
            continue
        for col, hit in enumerate(hits):
            cells = [r[col] for r in rows[1:] if col < len(r) and r[col] != ""]
            writer.writerow([rel, col, hit[0] if hit else "NaN",
                             class_ids[hit[0]] if hit else -1, ";".join(cells)])
        kept += 1
        labelled += sum(1 for h in hits if h)
    return buf.getvalue(), kept, labelled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path, help="the built `wikipedia` corpus folder")
    parser.add_argument("--out", type=Path, required=True, help="the fold-layout CSV to write")
    parser.add_argument("--tables", type=int, default=5000, help="labelled tables to keep")
    args = parser.parse_args()

    thresholds = json.loads((ROOT / "datasets/silver/thresholds.json").read_text())["thresholds"]
    if thresholds["gittables-dbpedia"] <= 1.0:
        raise SystemExit("the DBpedia vector rule is on; this script implements the exact rule only")
    text, kept, labelled = label_tables(args.corpus, gittables_labels("dbpedia"), args.tables)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {kept} tables, {labelled} labelled columns")


if __name__ == "__main__":
    run(main)
