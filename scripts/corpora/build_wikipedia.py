"""Silver WikiTables labels for the Wikipedia tables of EDAO-Project/SemanticTableSearchDataset.

    python3 scripts/corpora/build_wikipedia.py CLONE [--out .corpora/wikipedia]
        [--manifest datasets/silver/wikipedia.manifest.json.xz]

CLONE is a clone (or bare mirror) of the repository; its HEAD commit is read through git and
recorded. Every archive under table_corpus/ that the copy holds is read:
  tables_<year>/tables_part_<n>.tar.gz      JSON tables with page id, page title, links
  csv_tables_<year>/tables_part_<n>.tar.gz  CSV tables named <page id>-<table>; no title
An archive whose blob is absent from the copy is listed as missing.

Labels: the header -> Freebase type-set map (matcher.HeaderTypeMap) learned on the labelled
WikiTables train split (datasets/wikitables-turl-subset), with the threshold and hierarchy
option in datasets/silver/thresholds.json. Entity links are kept in the JSON tables but not
used for labels: the DBpedia type files are external downloads, not in the repository.

Outputs in --out: tables/<archive>/<table>.csv (header + at most 64 stride-sampled rows,
cells capped at 64 bytes), labels.jsonl (one line per column and type) and manifest.json.xz
(every table's id, page id, title where the source has one, rows, columns). A corrupt
archive or table stops the build with its name, unless --skip-unreadable. Stdlib only."""
from __future__ import annotations

import io
import json
import lzma
import re
import tarfile
from pathlib import Path

from common import (GitSource, Progress, ROOT, SourceError, builder_arguments, decode, json_line,
                    parse_csv, parse_json, print_summary, run, stride, table_csv)
from evaluate import wikitables, wikitables_meta
from matcher import HeaderTypeMap, Vectors

REPO = "EDAO-Project/SemanticTableSearchDataset"
LICENSE = "code: MIT (LICENSE); table text from Wikipedia: CC BY-SA"
_ARCHIVE = re.compile(r"^table_corpus/(csv_)?tables_(\d{4})/tables_part_(\d+)\.tar\.gz$")
_WIKILINK = re.compile(r"\[([^\[\]|]*)\|([^\[\]]*)\]")
_TARGET = re.compile(r"^[^\s_]+(_[^\s_]+)+$")
MIN_LINKED = 0.5  # the gold (TURL) columns are entity columns: label only mostly-linked ones


def clean_header(text: str) -> str:
    """'[ISO_4217|ISO 4217]' -> 'ISO 4217' (the 2013 JSON keeps link markup in headers)."""
    return " ".join(_WIKILINK.sub(r"\2", text).split())


def archives(src: GitSource):
    out = []
    for path, oid in src.list("table_corpus"):
        m = _ARCHIVE.match(path)
        if m:
            out.append((int(m.group(2)), m.group(1) is None, int(m.group(3)), path, oid))
    out.sort(key=lambda a: (a[0], not a[1], a[2]))  # year, JSON first, part
    return out


def members(data: bytes, archive: str):
    """(name, bytes) of each file in a .tar.gz, sorted by name."""
    try:
        out = []
        # read in stream order (a gzip stream cannot seek back cheaply), then sort
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|gz") as tf:
            for m in tf:
                if m.isfile():
                    out.append((m.name, tf.extractfile(m).read()))
        return sorted(out)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SourceError(f"{archive}: not a readable .tar.gz ({e})") from None


def json_table(data: bytes, name: str):
    d = parse_json(data, name)
    try:
        header = [clean_header(h["text"]) for h in d["headers"]]
        rows = [[c["text"] for c in r] for r in d["rows"]]
        links = sum(1 for r in d["rows"] for c in r if c.get("links"))
        linked = [[bool(c.get("links")) for c in r] for r in d["rows"]]
        page = d["pgId"]
        return header, rows, {"page_id": int(page) if str(page).isdigit() else page,
                              "title": d.get("pgTitle"), "linked_cells": links,
                              "linked": linked_share(header, rows, linked)}
    except (KeyError, TypeError, AttributeError) as e:
        raise SourceError(f"{name}: not a table JSON object (missing {e})") from None


def csv_table(data: bytes, name: str):
    rows = parse_csv(decode(data, name), name)
    if not rows:
        raise SourceError(f"{name}: empty CSV")
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    page = stem.split("-")[0]
    # these CSV files write a linked cell as its link target ("Jean_Seitlinger"); a target
    # of one word has no underscore and is not recognised
    linked = [[bool(_TARGET.match(c)) for c in r] for r in rows[1:]]
    return rows[0], rows[1:], {"page_id": int(page) if page.isdigit() else page, "title": None,
                               "linked": linked_share(rows[0], rows[1:], linked)}


def linked_share(header, rows, linked) -> list[float]:
    """Per column: the share of its non-empty cells that link to a Wikipedia page."""
    out = []
    for col in range(len(header)):
        cells = [lk[col] for r, lk in zip(rows, linked) if col < len(r) and r[col].strip()]
        out.append(sum(cells) / len(cells) if cells else 0.0)
    return out


def build(clone: Path, out: Path, threshold: float, close: bool, vectors_path: Path | None,
          skip_unreadable: bool = False, gold: Path = ROOT / "datasets",
          manifest_copy: Path | None = None) -> dict:
    src = GitSource(clone)
    arcs = archives(src)
    hierarchy, to_text = wikitables_meta(gold)
    train = wikitables("train", gold)
    vectors = None
    if vectors_path is not None and threshold < 1.0:
        vectors = Vectors.load(vectors_path, None)  # all words: corpus headers are not known yet
    tmap = HeaderTypeMap([(r[2], r[3]) for r in train], hierarchy, to_text, vectors, threshold,
                         close=close)
    groups, missing, unreadable = [], [], []
    labels = []
    per_type: dict[str, int] = {}
    n_tables = n_cols = n_labelled = n_gated = 0
    prog = Progress(len(arcs), "wikipedia", every=20.0)
    for i, (year, is_json, part, path, oid) in enumerate(arcs, 1):
        data = src.read(oid)
        if data is None:
            missing.append(path)
            prog.tick(i)
            continue
        kind = "json" if is_json else "csv"
        folder = f"{year}-{kind}-{part:03d}"
        rows_out = []
        try:
            files = members(data, path)
        except SourceError as e:
            if not skip_unreadable:
                raise
            unreadable.append({"id": path, "error": str(e)})
            continue
        for j, (name, blob) in enumerate(files):
            prog.tick(i - 1 + j / len(files))
            full = f"{path}:{name}"
            stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            try:
                header, rows, meta = (json_table if is_json else csv_table)(blob, full)
            except SourceError as e:
                if not skip_unreadable:
                    raise
                unreadable.append({"id": full, "error": str(e)})
                continue
            tid = f"{year}/{stem}"
            dest = out / "tables" / folder / f"{stem}.csv"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(table_csv(header, stride(rows)))
            entry = [stem, meta["page_id"], len(rows), len(header)]
            if is_json:
                entry += [meta["title"], meta["linked_cells"]]
            rows_out.append(entry)
            n_tables += 1
            n_cols += len(header)
            for col, h in enumerate(header):
                hit = tmap.match(h)
                if not hit:
                    continue
                if meta["linked"][col] < MIN_LINKED:
                    n_gated += 1
                    continue
                n_labelled += 1
                for t in hit[0]:
                    per_type[t] = per_type.get(t, 0) + 1
                    labels.append(json_line({"table": tid, "column": col, "header": h,
                                             "label": t, "rule": hit[1], "score": hit[2]}))
        groups.append({"archive": path, "blob": oid, "year": year, "format": kind,
                       "folder": "tables/" + folder,
                       "fields": ["table", "page_id", "rows", "columns"]
                       + (["title", "linked_cells"] if is_json else []),
                       "tables": rows_out})
        prog.tick(i)
    src.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / "labels.jsonl").write_text("".join(labels), encoding="utf-8")
    manifest = {
        "corpus": "wikipedia", "source": REPO, "repository": f"https://github.com/{REPO}",
        "commit": src.commit, "license": LICENSE,
        "rule": {"map": "normalised header -> the types on >= 50% of that header's columns in "
                        "datasets/wikitables-turl-subset/train_wikitables_subset_20.csv",
                 "threshold": threshold, "closed_under_hierarchy": close,
                 "map_size": len(tmap.map),
                 "entity_columns": f">= {MIN_LINKED} of a column's non-empty cells link to a "
                 "page (JSON: the links field; CSV: the cell is a link target, words joined "
                 "by '_'); other columns get no label",
                 "entity_types": "not used: the DBpedia type "
                 "files are external downloads (dbpedia_files.txt), not in the repository"},
        "titles": "JSON archives carry pgTitle; CSV archives carry only the page id in the "
                  "file name (the page id -> title pickles are not in this copy)",
        "page_ids": "as given by the source: the file name / pgId field",
        "sampling": {"max_rows": 64, "max_cell_bytes": 64, "rows": "rows[i*n//64]"},
        "counts": {"archives": len(arcs), "archives_missing": len(missing),
                   "tables": n_tables, "tables_with_title": sum(
                       len(g["tables"]) for g in groups if g["format"] == "json"),
                   "columns": n_cols, "labelled_columns": n_labelled,
                   "matched_but_not_entity_columns": n_gated,
                   "column_type_labels": len(labels), "unreadable": len(unreadable),
                   "per_type": dict(sorted(per_type.items()))},
        "archives_missing": missing, "unreadable": unreadable, "groups": groups,
    }
    data = json.dumps(manifest, ensure_ascii=False, separators=(",", ":"),
                      sort_keys=True).encode("utf-8")
    for p in [out / "manifest.json.xz"] + ([manifest_copy] if manifest_copy else []):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    return manifest


def main():
    ap = builder_arguments(__doc__, "wikipedia")
    ap.add_argument("clone", type=Path)
    ap.add_argument("--skip-unreadable", action="store_true")
    args = ap.parse_args()
    th = json.loads((ROOT / "datasets/silver/thresholds.json").read_text())["thresholds"]
    threshold = th["wikitables"] if args.threshold is None else args.threshold
    prog = Progress(1, "wikipedia")
    m = build(args.clone, args.out, threshold, th["wikitables_closed_under_hierarchy"],
              args.vectors if args.vectors.exists() else None, args.skip_unreadable,
              manifest_copy=args.manifest)
    print_summary(m, args.out, prog)


if __name__ == "__main__":
    run(main)
