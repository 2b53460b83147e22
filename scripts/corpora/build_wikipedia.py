"""Silver WikiTables labels for the Wikipedia tables of EDAO-Project/SemanticTableSearchDataset.

    python3 scripts/corpora/build_wikipedia.py CLONE [--out .corpora/wikipedia]
        [--manifest datasets/silver/wikipedia.manifest.json.xz] [--exclude-pages FILE ...]
    python3 scripts/corpora/build_wikipedia.py CLONE \
        --filter-manifest datasets/silver/wikipedia.manifest.json.xz [--exclude-pages FILE ...]

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
archive or table stops the build with its name, unless --skip-unreadable. Stdlib only.

Left out: every table whose page id is listed in an excluded-pages file (--exclude-pages FILE,
repeatable; by default datasets/wikitables-turl-subset/excluded-pages.txt, the pages of the
WikiTables test subset kept for independent evaluation). Such a table is neither written nor
labelled nor counted; the manifest's `left_out` records the files, how many tables and pages
were left out, and how many tables have no Wikipedia page id to compare and are kept: those of
the 2013 archives, whose JSON pgId numbers that corpus's own pages (1632 is "Euro", 1633
"Cichociemni") and whose CSV files are named table-<n>-<m>.

--filter-manifest MANIFEST leaves the listed pages' tables out of a manifest written before
(in place), re-reading only those tables from CLONE (the archive blobs the manifest names) to
take their columns and labels off the counts: the result is the manifest a build with the same
files would write. The corpus folder is not changed (wikipedia_turl.py leaves the same pages
out when it converts it)."""
from __future__ import annotations

import io
import json
import lzma
import re
import tarfile
from pathlib import Path

from common import (EXCLUDED_PAGES, GitSource, Progress, ROOT, SourceError, builder_arguments,
                    decode, json_line, page_key, parse_csv, parse_json, print_summary,
                    read_excluded_pages, run, shown_path, stride, table_csv)
from evaluate import wikitables, wikitables_meta
from matcher import HeaderTypeMap, Vectors

REPO = "EDAO-Project/SemanticTableSearchDataset"
LICENSE = "code: MIT (LICENSE); table text from Wikipedia: CC BY-SA"
_ARCHIVE = re.compile(r"^table_corpus/(csv_)?tables_(\d{4})/tables_part_(\d+)\.tar\.gz$")
_WIKILINK = re.compile(r"\[([^\[\]|]*)\|([^\[\]]*)\]")
_TARGET = re.compile(r"^[^\s_]+(_[^\s_]+)+$")
MIN_LINKED = 0.5  # the gold (TURL) columns are entity columns: label only mostly-linked ones
WIKIPEDIA_IDS_FROM = 2019  # the 2013 archives number their pages themselves


def wikipedia_page(year: int, page_id) -> str | None:
    """A table's Wikipedia page id as excluded-pages files list it, or None where the source
    gives none: the 2013 JSON's pgId numbers that corpus's pages (1632 is "Euro", 1633
    "Cichociemni"), and its CSV files are named table-<n>-<m> (page id "table")."""
    return page_key(page_id) if year >= WIKIPEDIA_IDS_FROM else None


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


def header_map(gold: Path, threshold: float, close: bool,
               vectors_path: Path | None) -> HeaderTypeMap:
    """The header -> type-set map learned on the gold WikiTables train split."""
    hierarchy, to_text = wikitables_meta(gold)
    train = wikitables("train", gold)
    vectors = None
    if vectors_path is not None and threshold < 1.0:
        vectors = Vectors.load(vectors_path, None)  # all words: corpus headers are not known yet
    return HeaderTypeMap([(r[2], r[3]) for r in train], hierarchy, to_text, vectors, threshold,
                         close=close)


def table_labels(tmap: HeaderTypeMap, header: list[str], linked: list[float]):
    """What the rule gives one table: ([(column, header, HeaderTypeMap.match)], the number of
    columns whose header matches but which are not entity columns)."""
    out, gated = [], 0
    for col, h in enumerate(header):
        hit = tmap.match(h)
        if not hit:
            continue
        if linked[col] < MIN_LINKED:
            gated += 1
            continue
        out.append((col, h, hit))
    return out, gated


def excluded_pages(files: list[Path]) -> set[str]:
    pages = set()
    for f in files:
        pages |= read_excluded_pages(f)
    return pages


def write_manifest(manifest: dict, paths: list[Path]) -> None:
    data = json.dumps(manifest, ensure_ascii=False, separators=(",", ":"),
                      sort_keys=True).encode("utf-8")
    packed = lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(packed)


def build(clone: Path, out: Path, threshold: float, close: bool, vectors_path: Path | None,
          skip_unreadable: bool = False, gold: Path = ROOT / "datasets",
          manifest_copy: Path | None = None, exclude_pages: list[Path] | None = None) -> dict:
    """Builds the corpus. `exclude_pages`: excluded-pages files whose pages' tables are left
    out; None means `<gold>/wikitables-turl-subset/excluded-pages.txt`."""
    if exclude_pages is None:
        exclude_pages = [gold / EXCLUDED_PAGES.relative_to(ROOT / "datasets")]
    excluded = excluded_pages(exclude_pages)
    src = GitSource(clone)
    arcs = archives(src)
    tmap = header_map(gold, threshold, close, vectors_path)
    groups, missing, unreadable = [], [], []
    labels = []
    per_type: dict[str, int] = {}
    n_tables = n_cols = n_labelled = n_gated = 0
    n_left, left_pages, n_unchecked = 0, set(), 0
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
            page = wikipedia_page(year, meta["page_id"])
            if page is None:
                n_unchecked += 1
            elif page in excluded:
                n_left += 1
                left_pages.add(page)
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
            hits, gated = table_labels(tmap, header, meta["linked"])
            n_gated += gated
            for col, h, hit in hits:
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
        "left_out": {"pages_files": [shown_path(p) for p in exclude_pages],
                     "tables": n_left, "pages": len(left_pages),
                     "tables_without_wikipedia_page_id": n_unchecked},
    }
    write_manifest(manifest, [out / "manifest.json.xz"] + ([manifest_copy] if manifest_copy
                                                           else []))
    return manifest


def filter_manifest(path: Path, clone: Path, exclude_pages: list[Path],
                    vectors_path: Path | None = None, gold: Path = ROOT / "datasets") -> dict:
    """Leaves the tables of the listed pages out of the manifest at `path` (rewritten in place
    when any is found) and takes their columns and labels off its counts, so that it equals
    the manifest of a build with these files. Only the archives holding such tables are read
    from `clone`, by the blob ids the manifest records. Returns {"tables", "pages"} removed."""
    try:
        manifest = json.loads(lzma.decompress(Path(path).read_bytes()))
        groups, counts = manifest["groups"], manifest["counts"]
    except (OSError, lzma.LZMAError, ValueError, KeyError, TypeError) as e:
        raise SourceError(f"{path}: not a readable wikipedia manifest ({e})") from None
    excluded = excluded_pages(exclude_pages)
    hit_groups = []  # (group, {table name: manifest entry}) with tables to leave out
    pages = set()
    for g in groups:
        at = g["fields"].index("page_id")
        hit = [t for t in g["tables"] if wikipedia_page(g["year"], t[at]) in excluded]
        if hit:
            hit_groups.append((g, {t[0]: t for t in hit}))
            pages |= {wikipedia_page(g["year"], t[at]) for t in hit}
            if len(hit) != len({t[0] for t in hit}):
                raise SourceError(f"{path}: {g['archive']} lists a table name twice")
    removed = sum(len(h) for _, h in hit_groups)
    left = manifest.get("left_out")
    files = [shown_path(p) for p in exclude_pages]
    if left is None:
        left = {"pages_files": [], "tables": 0, "pages": 0,
                "tables_without_wikipedia_page_id": sum(
                    1 for g in groups for t in g["tables"]
                    if wikipedia_page(g["year"], t[g["fields"].index("page_id")]) is None)}
    elif not removed and all(f in left["pages_files"] for f in files):
        return {"tables": 0, "pages": 0}  # already left out: the manifest stays as it is
    if removed:
        rule = manifest["rule"]
        if rule["threshold"] < 1.0 and vectors_path is None:
            raise SourceError(f"{path}: built with the vector fallback (threshold "
                              f"{rule['threshold']}); pass --vectors")
        tmap = header_map(gold, rule["threshold"], rule["closed_under_hierarchy"], vectors_path)
        if len(tmap.map) != rule["map_size"]:
            raise SourceError(f"{path}: built with a header map of {rule['map_size']} headers, "
                              f"but {gold} gives {len(tmap.map)}: not the same train split")
        src = GitSource(clone)
        per_type = counts["per_type"]
        for g, hit in hit_groups:
            data = src.read(g["blob"])
            if data is None:
                raise SourceError(f"{clone}: lacks {g['archive']} (blob {g['blob']}), which "
                                  "holds tables to leave out")
            parse = json_table if g["format"] == "json" else csv_table
            seen = set()
            for name, blob in members(data, g["archive"]):
                stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
                if stem not in hit:
                    continue
                full = f"{g['archive']}:{name}"
                header, rows, meta = parse(blob, full)
                entry = dict(zip(g["fields"], hit[stem]))
                if (stem in seen or meta["page_id"] != entry["page_id"]
                        or (len(rows), len(header)) != (entry["rows"], entry["columns"])):
                    raise SourceError(f"{full}: does not match its entry in {path}")
                seen.add(stem)
                hits, gated = table_labels(tmap, header, meta["linked"])
                counts["tables"] -= 1
                counts["tables_with_title"] -= 1 if g["format"] == "json" else 0
                counts["columns"] -= len(header)
                counts["matched_but_not_entity_columns"] -= gated
                counts["labelled_columns"] -= len(hits)
                for _, _, (types, *_) in hits:
                    counts["column_type_labels"] -= len(types)
                    for t in types:
                        per_type[t] -= 1
                        if not per_type[t]:
                            del per_type[t]
            if seen != set(hit):
                raise SourceError(f"{g['archive']} (blob {g['blob']}) lacks "
                                  f"{', '.join(sorted(set(hit) - seen))}, listed in {path}")
            g["tables"] = [t for t in g["tables"] if t[0] not in hit]
        src.close()
    # a page left out before has no table left, so the pages found now are new ones
    left["pages_files"] += [f for f in files if f not in left["pages_files"]]
    left["tables"] += removed
    left["pages"] += len(pages)
    manifest["left_out"] = left
    write_manifest(manifest, [Path(path)])
    return {"tables": removed, "pages": len(pages)}


def main():
    ap = builder_arguments(__doc__, "wikipedia")
    ap.add_argument("clone", type=Path)
    ap.add_argument("--skip-unreadable", action="store_true")
    ap.add_argument("--exclude-pages", type=Path, action="append", metavar="FILE",
                    help="leave out the tables of the page ids listed in FILE (repeatable; "
                    "default: datasets/wikitables-turl-subset/excluded-pages.txt)")
    ap.add_argument("--filter-manifest", type=Path, metavar="MANIFEST",
                    help="do not build: leave the listed pages' tables out of MANIFEST "
                    "(rewritten in place), reading them from CLONE")
    args = ap.parse_args()
    files = args.exclude_pages or [EXCLUDED_PAGES]
    shown = ", ".join(shown_path(f) for f in files)
    vectors = args.vectors if args.vectors.exists() else None
    if args.filter_manifest is not None:
        done = filter_manifest(args.filter_manifest, args.clone, files, vectors)
        print(f"{args.filter_manifest}: left out {done['tables']} tables of {done['pages']} "
              f"pages listed in {shown}")
        return
    th = json.loads((ROOT / "datasets/silver/thresholds.json").read_text())["thresholds"]
    threshold = th["wikitables"] if args.threshold is None else args.threshold
    prog = Progress(1, "wikipedia")
    m = build(args.clone, args.out, threshold, th["wikitables_closed_under_hierarchy"],
              vectors, args.skip_unreadable, manifest_copy=args.manifest, exclude_pages=files)
    left = m["left_out"]
    print(f"left out {left['tables']} tables of {left['pages']} pages listed in {shown}; "
          f"{left['tables_without_wikipedia_page_id']} tables (of 2013) have no Wikipedia page "
          "id to compare and are kept")
    print_summary(m, args.out, prog)


if __name__ == "__main__":
    run(main)
