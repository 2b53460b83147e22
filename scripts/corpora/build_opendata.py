"""Silver GitTables labels for the open-data CSV files of tsegall/semantic-types.

    python3 scripts/corpora/build_opendata.py CLONE [--vectors .corpora/glove/glove.6B.50d.txt]
        [--out .corpora/opendata] [--manifest datasets/silver/opendata.manifest.json.gz]

CLONE is a clone (or bare mirror) of the repository; its HEAD commit is read through git and
recorded. Files are read from `data/opendata_socrata_com` (the README's CC0 statement covers
socrata.com files). A CSV that the repository marks with `<file>.csv.ignore` is left out and
counted by its reason; a blob absent from the copy is listed as missing.
Each header is matched to both GitTables label sets (matcher.HeaderMatcher) with the
thresholds in datasets/silver/thresholds.json unless --threshold is given.

Outputs in --out: tables/<portal>/<id>.csv (header + at most 64 stride-sampled rows, cells
capped at 64 bytes), labels-{dbpedia,schema}.jsonl, silver-{dbpedia,schema}.csv (the
GitTables fold layout: table_id,col_idx,class,class_id,data; tables with a label only) and
manifest.json.gz. A file that cannot be read stops the build with its name, unless
--skip-unreadable, which lists it in the manifest instead. Stdlib only; deterministic."""
from __future__ import annotations

import json
import re
from pathlib import Path

from common import (GitSource, Progress, ROOT, SourceError, builder_arguments, decode, json_line,
                    parse_csv, print_summary, run, stride, table_csv, write_gzip)
from evaluate import GT_FILES, gittables_labels
from matcher import HeaderMatcher, Vectors

REPO = "tsegall/semantic-types"
FOLDERS = ["data/opendata_socrata_com"]
LICENSE = ("data: CC0-1.0 as stated in the repository README for the socrata.com files; "
           "code: Apache-2.0 (License.md)")


def parse_options(text: str) -> dict:
    """`--locale en-US --charset ISO-8859-1 --delimiter ; --skip 2` -> dict."""
    words, out = text.split(), {}
    for i, w in enumerate(words):
        if w.startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[w[2:]] = words[i + 1]
    return out


def read_table(src: GitSource, path: str, oid: str, options: dict):
    """(header, rows) of one source CSV, or raises SourceError naming the file."""
    data = src.read(oid)
    if data is None:
        return None
    text = decode(data, path, options.get("charset", "utf-8"))
    rows = parse_csv(text, path, delimiter=options.get("delimiter", ","),
                     quotechar=options.get("quoteChar", '"'))
    rows = rows[int(options.get("skip", 0)):]
    if int(options.get("trailer", 0)):
        rows = rows[:-int(options["trailer"])]
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise SourceError(f"{path}: no header row")
    return rows[0], rows[1:]


def build(clone: Path, out: Path, vectors_path: Path | None, thresholds: dict,
          skip_unreadable: bool = False, folders=FOLDERS, gold: Path = ROOT / "datasets",
          manifest_copy: Path | None = None) -> dict:
    src = GitSource(clone)
    files = [(p, o) for f in folders for p, o in src.list(f)]
    by_path = dict(files)
    csvs = [(p, o) for p, o in files if p.endswith(".csv")]
    ignored, missing, unreadable, tables = {}, [], [], []
    headers: dict[str, list[str]] = {}
    prog = Progress(len(csvs), "opendata")
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for i, (path, oid) in enumerate(csvs, 1):
        prog.tick(i)
        if path + ".ignore" in by_path:
            reason = (src.read(by_path[path + ".ignore"]) or b"").decode("utf-8", "replace")
            reason = " ".join(reason.split(":")[0].split()) or "(no reason given)"
            key = re.sub(r"\d+", "N", reason)  # 'Too few (3) lines' and '(12)' group together
            ignored.setdefault(key, []).append(path)
            continue
        opts = {}
        if path + ".options" in by_path:
            opts = parse_options((src.read(by_path[path + ".options"]) or b"").decode("utf-8", "replace"))
        try:
            got = read_table(src, path, oid, opts)
        except SourceError as e:
            if not skip_unreadable:
                raise
            unreadable.append({"id": path, "error": str(e)})
            continue
        if got is None:
            missing.append(path)
            continue
        header, rows = got
        rel = path.split("/", 2)[2]  # <portal>/<id>.csv
        dest = out / "tables" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        sample = stride(rows)
        dest.write_bytes(table_csv(header, sample))
        headers[path] = header
        tables.append({"id": path, "file": "tables/" + rel, "rows": len(rows),
                       "columns": len(header)})
    src.close()

    vectors = Vectors.for_headers(vectors_path, headers.values(), thresholds)
    counts = {}
    for ls in sorted(GT_FILES):
        class_ids = gittables_labels(ls, gold)
        th = thresholds["gittables-" + ls]
        m = HeaderMatcher(class_ids, vectors, th)
        labels, fold_rows, per_label = [], [], {}
        for t in tables:
            header = headers[t["id"]]
            hits = [m.match(h) for h in header]
            for col, (h, hit) in enumerate(zip(header, hits)):
                if hit:
                    labels.append(json_line({"table": t["id"], "column": col, "header": h,
                                             "label": hit[0], "rule": hit[1], "score": hit[2]}))
                    per_label[hit[0]] = per_label.get(hit[0], 0) + 1
            if any(hits):
                fold_rows.append((t, hits))
        (out / f"labels-{ls}.jsonl").write_text("".join(labels), encoding="utf-8")
        write_fold_csv(out / f"silver-{ls}.csv", out, fold_rows, class_ids)
        counts[ls] = {"threshold": th, "labelled_columns": len(labels),
                      "labelled_tables": len(fold_rows),
                      "by_rule": {r: sum(1 for x in labels if f'"rule":"{r}"' in x)
                                  for r in ("exact", "vector")},
                      "per_label": dict(sorted(per_label.items()))}

    manifest = {
        "corpus": "opendata", "source": REPO, "repository": f"https://github.com/{REPO}",
        "commit": src.commit, "license": LICENSE, "folders": folders,
        "label_sets": {ls: GT_FILES[ls].format("0..3") for ls in sorted(GT_FILES)},
        "rule": {"normalise": "camelCase/digit split, punctuation and _ to spaces, lower-case",
                 "exact": "normalised header == normalised label name (schema: prefix dropped)",
                 "vector": "cosine of mean GloVe vectors >= threshold (1.01 = off)",
                 "thresholds": {k: thresholds[k] for k in sorted(thresholds)},
                 "vectors": vectors_info(vectors_path)},
        "sampling": {"max_rows": 64, "max_cell_bytes": 64, "rows": "rows[i*n//64]"},
        "counts": {"csv_files": len(csvs), "tables": len(tables),
                   "ignored_by_repository": sum(len(v) for v in ignored.values()),
                   "missing_blobs": len(missing), "unreadable": len(unreadable),
                   "columns": sum(t["columns"] for t in tables), "labels": counts},
        "ignored_by_repository": {k: sorted(v) for k, v in sorted(ignored.items())},
        "missing_blobs": missing, "unreadable": unreadable, "tables": tables,
    }
    data = json.dumps(manifest, ensure_ascii=False, indent=0, sort_keys=True).encode("utf-8")
    write_gzip(out / "manifest.json.gz", data)
    if manifest_copy is not None:
        write_gzip(manifest_copy, data)
    return manifest


def write_fold_csv(path: Path, out: Path, fold_rows, class_ids: dict):
    import csv
    import io
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table_id", "col_idx", "class", "class_id", "data"])
    for t, hits in fold_rows:
        with open(out / t["file"], encoding="utf-8", newline="") as f:
            body = list(csv.reader(f))[1:]
        for col, hit in enumerate(hits):
            cells = [r[col] for r in body if col < len(r) and r[col] != ""]
            w.writerow([t["id"], col, hit[0] if hit else "NaN",
                        class_ids[hit[0]] if hit else -1, ";".join(cells)])
    path.write_text(buf.getvalue(), encoding="utf-8")


def vectors_info(path: Path | None) -> dict | None:
    if path is None:
        return None
    meta = path.parent / "glove.json"
    return json.loads(meta.read_text()) if meta.exists() else {"file": path.name}


def load_thresholds(override: float | None) -> dict:
    th = json.loads((ROOT / "datasets/silver/thresholds.json").read_text())["thresholds"]
    th = {k: v for k, v in th.items() if k.startswith("gittables-")}
    return {k: override for k in th} if override is not None else th


def main():
    ap = builder_arguments(__doc__, "opendata")
    ap.add_argument("clone", type=Path)
    ap.add_argument("--skip-unreadable", action="store_true")
    args = ap.parse_args()
    prog = Progress(1, "opendata")
    m = build(args.clone, args.out, args.vectors if args.vectors.exists() else None,
              load_thresholds(args.threshold), args.skip_unreadable, manifest_copy=args.manifest)
    print_summary(m, args.out, prog)


if __name__ == "__main__":
    run(main)
