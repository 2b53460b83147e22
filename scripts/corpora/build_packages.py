"""Silver GitTables labels for the package-shipped tables of the knowledge corpus
(vega-datasets, bokeh-sampledata; scripts/knowledge/export.py writes them).

    python3 scripts/corpora/build_packages.py [KNOWLEDGE_CORPUS] [--out .corpora/packages]
        [--manifest datasets/silver/packages.manifest.json.gz]

KNOWLEDGE_CORPUS defaults to .knowledge/corpus. Only tables whose index entry says `ship`
are read; each package's version, artifact hash and license come from its manifest.json.
Headers are matched as in build_opendata.py; outputs have the same layout (tables are already
stride-sampled to 2,000 rows by export.py and are sampled again to 64 here). Stdlib only."""
from __future__ import annotations

import json
from pathlib import Path

from build_opendata import load_thresholds, vectors_info, write_fold_csv
from common import (Progress, ROOT, SourceError, builder_arguments, decode, json_line, parse_csv,
                    parse_json, print_summary, run, stride, table_csv, write_gzip)
from evaluate import GT_FILES, gittables_labels
from matcher import HeaderMatcher, Vectors


def build(corpus: Path, out: Path, vectors_path: Path | None, thresholds: dict,
          gold: Path = ROOT / "datasets", manifest_copy: Path | None = None) -> dict:
    index_path = corpus / "tables" / "index.json"
    if not index_path.is_file():
        raise SourceError(f"{index_path}: missing (run scripts/knowledge/export.py first)")
    index = parse_json(index_path.read_bytes(), str(index_path))
    sources = {s["id"]: s for s in parse_json((corpus / "manifest.json").read_bytes(),
                                              str(corpus / "manifest.json"))["sources"]}
    entries = sorted(index, key=lambda e: (e["source"], e["name"]))
    tables, headers, left_out = [], {}, []
    prog = Progress(len(entries), "packages")
    for i, e in enumerate(entries, 1):
        prog.tick(i)
        tid = f"{e['source']}/{e['name']}"
        if not e.get("ship"):
            left_out.append({"id": tid, "license": e.get("license")})
            continue
        path = corpus / e["path"]
        try:
            rows = parse_csv(decode(path.read_bytes(), str(path)), str(path))
        except OSError as err:
            raise SourceError(f"{path}: cannot read ({err})") from None
        if not rows:
            raise SourceError(f"{path}: no header row")
        dest = out / "tables" / e["source"] / f"{e['name']}.csv"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(table_csv(rows[0], stride(rows[1:])))
        headers[tid] = rows[0]
        tables.append({"id": tid, "file": f"tables/{e['source']}/{e['name']}.csv",
                       "origin": e["origin"], "license": e["license"],
                       "rows": e.get("rows_total", len(rows) - 1), "columns": len(rows[0])})
    vectors = Vectors.for_headers(vectors_path, headers.values(), thresholds)
    counts = {}
    for ls in sorted(GT_FILES):
        class_ids = gittables_labels(ls, gold)
        m = HeaderMatcher(class_ids, vectors, thresholds["gittables-" + ls])
        labels, fold_rows = [], []
        for t in tables:
            hits = [m.match(h) for h in headers[t["id"]]]
            for col, (h, hit) in enumerate(zip(headers[t["id"]], hits)):
                if hit:
                    labels.append(json_line({"table": t["id"], "column": col, "header": h,
                                             "label": hit[0], "rule": hit[1], "score": hit[2]}))
            if any(hits):
                fold_rows.append((t, hits))
        (out / f"labels-{ls}.jsonl").write_text("".join(labels), encoding="utf-8")
        write_fold_csv(out / f"silver-{ls}.csv", out, fold_rows, class_ids)
        counts[ls] = {"threshold": thresholds["gittables-" + ls],
                      "labelled_columns": len(labels), "labelled_tables": len(fold_rows)}
    used = sorted({t["id"].split("/")[0] for t in tables})
    manifest = {
        "corpus": "packages", "sources": {
            s: {k: sources[s].get(k) for k in ("ecosystem", "package", "version", "license",
                                               "artifact", "artifact_sha256")}
            for s in used},
        "rule": {"exact": "normalised header == normalised label name",
                 "vector": "cosine of mean GloVe vectors >= threshold (1.01 = off)",
                 "thresholds": thresholds, "vectors": vectors_info(vectors_path)},
        "sampling": {"max_rows": 64, "max_cell_bytes": 64, "rows": "rows[i*n//64]"},
        "counts": {"tables": len(tables), "left_out": len(left_out),
                   "columns": sum(t["columns"] for t in tables), "labels": counts},
        "left_out": left_out, "tables": tables,
    }
    data = json.dumps(manifest, ensure_ascii=False, indent=0, sort_keys=True).encode("utf-8")
    write_gzip(out / "manifest.json.gz", data)
    if manifest_copy is not None:
        write_gzip(manifest_copy, data)
    return manifest


def main():
    ap = builder_arguments(__doc__, "packages")
    ap.add_argument("corpus", type=Path, nargs="?", default=ROOT / ".knowledge" / "corpus")
    args = ap.parse_args()
    prog = Progress(1, "packages")
    m = build(args.corpus, args.out, args.vectors if args.vectors.exists() else None,
              load_thresholds(args.threshold), manifest_copy=args.manifest)
    print_summary(m, args.out, prog)


if __name__ == "__main__":
    run(main)
