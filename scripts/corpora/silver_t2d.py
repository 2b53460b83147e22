"""A GitTables-layout silver label file renamed into T2D's property URIs.

    python3 scripts/corpora/silver_t2d.py .corpora/opendata/silver-dbpedia.csv \\
        --out .corpora/opendata/silver-t2d.csv

GitTables' DBpedia labels are property names (`city`, `zipCode`); T2D's are the same
properties' URIs (`http://dbpedia.org/ontology/city`). A label whose normalised name
(`matcher.normalise`) is the normalised local name of exactly one property T2D uses (or of
exactly one without a class prefix: `weight`, not `Person/weight`) becomes that URI; the other
labelled columns become unlabelled (`NaN`, `-1`). Class ids are renumbered from 0 in order of first use,
as the reader expects. The output keeps the gold folds' layout
(`table_id,col_idx,class,class_id,data`), so that `colswarm train --recipe recipes/expert.toml
--set model.d_model=32 --train t2d=sato-cv:.corpora/opendata/silver-t2d.csv` trains a model (a
domain expert) in the `t2d` namespace on the silver columns. Stdlib only."""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from common import ROOT, SourceError, run
from evaluate import local_name, t2d_attributes
from matcher import normalise

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
UNLABELLED = ("", "NaN")


def t2d_properties(gold: Path) -> dict[str, str]:
    """Normalised local name -> the property URI T2D uses, for the names only one property has
    (or only one without a class prefix: `weight` over `Person/weight`)."""
    by_name: dict[str, set[str]] = {}
    for _table, _column, _header, uri in t2d_attributes(gold):
        if uri != RDFS_LABEL:
            by_name.setdefault(normalise(local_name(uri)), set()).add(uri)
    out = {}
    for name, uris in sorted(by_name.items()):
        plain = [u for u in sorted(uris) if u.count("/") == 4]  # http://dbpedia.org/ontology/x
        if name and (len(uris) == 1 or len(plain) == 1):
            out[name] = next(iter(uris)) if len(uris) == 1 else plain[0]
    return out


def rename(src: Path, out: Path, properties: dict[str, str]) -> dict:
    """Writes `out`; returns the counts (columns, labelled, URIs used, labels left unmatched)."""
    csv.field_size_limit(1 << 30)
    ids: dict[str, int] = {}
    columns = labelled = 0
    unmatched: set[str] = set()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(src, newline="", encoding="utf-8") as f, \
                open(out, "w", newline="", encoding="utf-8") as g:
            reader, writer = csv.reader(f), csv.writer(g, lineterminator="\n")
            header = next(reader, None)
            if header != ["table_id", "col_idx", "class", "class_id", "data"]:
                raise SourceError(f"{src}: not a GitTables-layout label file (header {header})")
            writer.writerow(header)
            for line, row in enumerate(reader, 2):
                if len(row) != 5:
                    raise SourceError(f"{src}, line {line}: {len(row)} fields, expected 5")
                table, column, label, _, data = row
                uri = None if label in UNLABELLED else properties.get(normalise(label))
                if label not in UNLABELLED and uri is None:
                    unmatched.add(label)
                if uri is None:
                    writer.writerow([table, column, "NaN", "-1", data])
                else:
                    ids.setdefault(uri, len(ids))
                    writer.writerow([table, column, uri, str(ids[uri]), data])
                    labelled += 1
                columns += 1
    except UnicodeDecodeError as e:
        raise SourceError(f"{src}: not UTF-8 ({e})") from None
    return {"columns": columns, "labelled_columns": labelled, "properties": len(ids),
            "labels_without_a_t2d_property": sorted(unmatched)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("labels", type=Path, help="a GitTables-layout silver label file")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gold", type=Path, default=ROOT / "datasets")
    args = ap.parse_args()
    if not args.labels.is_file():
        raise SourceError(f"{args.labels}: no such file")
    print(json.dumps(rename(args.labels, args.out, t2d_properties(args.gold))))


if __name__ == "__main__":
    run(main)
