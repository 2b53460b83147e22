"""The `wikipedia` silver corpus in the layout of the gold WikiTables files (TURL CSV).

    python3 scripts/corpora/wikipedia_turl.py .corpora/wikipedia --out .corpora/wikipedia-turl \\
        --exclude-pages-of datasets/wikitables-turl-subset/dev_wikitables_subset_2.csv.gz \\
        --sizes 1000 10000 100000

Writes `<out>/silver-<N>.csv` (nested subsets: tables in the order of the SHA-256 of their id,
taken until the subset holds at least N labelled columns) and `<out>/silver-all.csv`, each in
the layout `colswarm` reads as `turl-csv` (`table_name,table,labels,domain,domains,page_title,
section_title,headers`), so that

    colswarm baseline --train wikitables=turl-csv:TRAIN.csv,<out>/silver-1000.csv ...

reads gold and silver as one set. Every column of a labelled table is written (unlabelled ones
with no types), so a model sees the table around a labelled column.

- **Headers are left out** (written empty) unless --keep-headers: the silver types are a function
  of the header, and a model that sees it learns the rule back instead of the cells.
- **Link targets become text**: the CSV archives write a linked cell as its page name with `_`
  between words (`Nduka_Awazie`); the gold files write the text (`Nduka Awazie`).
- **--exclude-pages-of FILE** leaves out every table whose Wikipedia page id is the page of a
  table in FILE (the TURL `table_name` is `<page id>-<table>`): the dev set a curve is scored on
  must not reach training through another table of the same page. The count is printed.
- **--exclude-pages FILE** (repeatable; by default `datasets/wikitables-turl-subset/excluded-pages.txt`,
  the pages of the WikiTables test subset kept for independent evaluation) leaves out every
  table whose page id the file lists, so a corpus built before its builder left these pages out
  is cleaned here too (the tables of the 2019 archives: those of 2013 carry no Wikipedia page
  id). The count is printed.

Stdlib only; deterministic.
"""

from __future__ import annotations

import argparse
import csv
import json
import lzma
from pathlib import Path

from build_wikipedia import wikipedia_page
from common import (EXCLUDED_PAGES, SourceError, hash_order, open_text, read_excluded_pages,
                    run, shown_path)


def load_labels(path: Path) -> dict[str, dict[int, list[str]]]:
    """{table id: {column: [types]}} from a corpus's labels.jsonl (types in file order)."""
    out: dict[str, dict[int, list[str]]] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    row = json.loads(line)
                    types = out.setdefault(row["table"], {}).setdefault(int(row["column"]), [])
                    types.append(row["label"])
                except (ValueError, KeyError, TypeError) as e:
                    raise SourceError(f"{path}:{n}: not a label line ({e})") from None
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({e})") from None
    return out


def table_index(manifest: dict) -> dict[str, tuple[str, str, str, str | None]]:
    """{table id: (csv path relative to the corpus, page id, title, Wikipedia page id or None)}
    from the manifest (the 2013 archives give no Wikipedia page id)."""
    index = {}
    for group in manifest["groups"]:
        fields = group["fields"]
        for entry in group["tables"]:
            meta = dict(zip(fields, entry))
            tid = f"{group['year']}/{meta['table']}"
            index[tid] = (f"{group['folder']}/{meta['table']}.csv", str(meta["page_id"]),
                          meta.get("title") or "", wikipedia_page(group["year"], meta["page_id"]))
    return index


def gold_pages(path: Path) -> set[str]:
    """Page ids of the tables of a gold TURL CSV file, plain or `.gz` (`table_name` =
    `<page id>-<table>`)."""
    csv.field_size_limit(1 << 30)
    try:
        with open_text(path) as f:
            reader = csv.reader(f)
            next(reader, None)
            return {row[0].split("-", 1)[0] for row in reader if row}
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:  # EOFError: a cut .gz
        raise SourceError(f"{path}: cannot read ({e})") from None


def as_text(cell: str) -> str:
    return cell.replace("_", " ").strip()


def turl_row(tid: str, title: str, header: list[str], rows: list[list[str]],
             labels: dict[int, list[str]], keep_headers: bool) -> list[str]:
    columns = []
    for c in range(len(header)):
        cells = [[[r, c], [0, as_text(row[c])]] for r, row in enumerate(rows)
                 if c < len(row) and row[c].strip()]
        columns.append(cells)
    types = [sorted(set(labels.get(c, []))) for c in range(len(header))]
    headers = [as_text(h) if keep_headers else "" for h in header]
    return [tid.replace("/", "-"), repr(columns), repr(types), "", "[]", title, "", repr(headers)]


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise SourceError(f"{path}: cannot read ({e})") from None
    if not rows:
        raise SourceError(f"{path}: empty table (no header row)")
    return rows[0], rows[1:]


def convert(corpus: Path, out: Path, sizes: list[int], exclude_pages_of: list[Path],
            keep_headers: bool = False, exclude_pages: list[Path] | None = None) -> dict:
    """Writes the subsets; returns {"kept": tables, "left_out": tables, "left_out_listed": those
    of them whose page an `exclude_pages` file lists, "files": {name: [tables, labelled
    columns]}}. `exclude_pages` None means datasets/wikitables-turl-subset/excluded-pages.txt."""
    listed = set()
    for path in [EXCLUDED_PAGES] if exclude_pages is None else exclude_pages:
        listed |= read_excluded_pages(path)
    try:
        with lzma.open(corpus / "manifest.json.xz", "rt", encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, lzma.LZMAError, ValueError) as e:
        raise SourceError(f"{corpus / 'manifest.json.xz'}: cannot read ({e})") from None
    index = table_index(manifest)
    labels = load_labels(corpus / "labels.jsonl")
    excluded_pages = set()
    for path in exclude_pages_of:
        excluded_pages |= gold_pages(path)

    order, left_out, left_out_listed = [], 0, 0
    for tid in hash_order(labels):
        if tid not in index:
            raise SourceError(f"{corpus}: labels name table {tid}, which the manifest lacks")
        if index[tid][3] in listed:
            left_out += 1
            left_out_listed += 1
            continue
        if index[tid][1] in excluded_pages:
            left_out += 1
            continue
        order.append(tid)

    out.mkdir(parents=True, exist_ok=True)
    names = [str(n) for n in sorted(sizes)] + ["all"]
    outputs = {n: open(out / f"silver-{n}.csv", "w", newline="", encoding="utf-8") for n in names}
    writers = {n: csv.writer(f, lineterminator="\n") for n, f in outputs.items()}
    for w in writers.values():
        w.writerow(["table_name", "table", "labels", "domain", "domains", "page_title",
                    "section_title", "headers"])
    labelled = 0
    counts = {n: [0, 0] for n in names}  # tables, labelled columns
    try:
        for tid in order:
            rel, _, title, _ = index[tid]
            header, rows = read_table(corpus / rel)
            row = turl_row(tid, title, header, rows, labels[tid], keep_headers)
            for n, w in writers.items():
                if n == "all" or labelled < int(n):
                    w.writerow(row)
                    counts[n][0] += 1
                    counts[n][1] += len(labels[tid])
            labelled += len(labels[tid])
    finally:
        for f in outputs.values():
            f.close()
    return {"kept": len(order), "left_out": left_out, "left_out_listed": left_out_listed,
            "files": counts}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("corpus", type=Path, help="the wikipedia corpus folder (.corpora/wikipedia)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    ap.add_argument("--exclude-pages-of", type=Path, action="append", default=[])
    ap.add_argument("--exclude-pages", type=Path, action="append", metavar="FILE",
                    help="leave out the tables of the page ids listed in FILE (repeatable; "
                    "default: datasets/wikitables-turl-subset/excluded-pages.txt)")
    ap.add_argument("--keep-headers", action="store_true")
    args = ap.parse_args()
    files = args.exclude_pages or [EXCLUDED_PAGES]
    done = convert(args.corpus, args.out, args.sizes, args.exclude_pages_of, args.keep_headers,
                   files)
    print(f"{done['kept']} labelled tables kept, {done['left_out']} left out: "
          f"{done['left_out_listed']} on a page listed in "
          f"{', '.join(shown_path(f) for f in files)}, "
          f"{done['left_out'] - done['left_out_listed']} on a page of "
          f"{', '.join(map(str, args.exclude_pages_of)) or 'no file'}")
    for n, (tables, cols) in done["files"].items():
        print(f"silver-{n}.csv: {tables} tables, {cols} labelled columns")


if __name__ == "__main__":
    run(main)
