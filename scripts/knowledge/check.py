#!/usr/bin/env python3
"""Verify .knowledge/corpus against its manifests (stdlib only; any Python 3.9+).

  python3 scripts/knowledge/check.py [--corpus DIR]

Checks: every file in corpus/manifest.json and teacher/manifest.json has its recorded
sha256 and size; no unlisted files; the downloaded artifacts still hash as recorded;
gazetteer/table counts match the indexes; teacher embeddings match teacher/strings.jsonl
in count and width and were computed from the current strings.jsonl.
Prints 'N passed, M failed' and exits 1 if anything failed.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import K, ROOT, sha256_file  # noqa: E402



def safetensors_header(p: Path) -> dict:
    with open(p, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=K / "corpus")
    args = ap.parse_args()
    c = args.corpus
    passed, failed = 0, []

    def ok(cond, what):
        nonlocal passed
        if cond:
            passed += 1
        else:
            failed.append(what)
            print(f"FAIL {what}")

    mpath = c / "manifest.json"
    if not mpath.exists():
        sys.exit(f"no {mpath}: run export.py")
    m = json.load(open(mpath, encoding="utf-8"))
    for rel, f in m["files"].items():
        p = c / rel
        ok(p.is_file() and p.stat().st_size == f["bytes"] and sha256_file(p) == f["sha256"], f"sha256 {rel}")
    listed = set(m["files"]) | {"manifest.json"}
    extra = [p.relative_to(c).as_posix() for p in c.rglob("*")
             if p.is_file() and p.relative_to(c).parts[0] != "teacher"
             and p.relative_to(c).as_posix() not in listed]
    ok(not extra, f"unlisted files in corpus: {extra[:5]}")

    for s in m["sources"]:  # the downloaded artifacts still hash as when exported
        hits = list(K.glob(f"dl/*/{s['artifact']}"))
        ok(len(hits) == 1 and sha256_file(hits[0]) == s["artifact_sha256"], f"artifact {s['artifact']}")

    gi = json.load(open(c / "gazetteers/index.json", encoding="utf-8"))
    for t, v in gi.items():
        n = sum(1 for _ in open(c / f"gazetteers/{t}.txt", encoding="utf-8"))
        ok(n == v["count"], f"gazetteer count {t}")
    for idx in ("tables/index.json", "tables-gpl/index.json"):
        if (c / idx).exists():
            for t in json.load(open(c / idx, encoding="utf-8")):
                with open(c / t["path"], encoding="utf-8", newline="") as f:
                    rows = list(csv.reader(f))
                ok(rows[0] == t["headers"] and len(rows) - 1 == t["rows"], f"table {t['path']}")
    n_strings = sum(1 for _ in open(c / "strings.jsonl", encoding="utf-8"))
    ok(n_strings == m["counts"]["strings"], "strings.jsonl count")

    tm = c / "teacher/manifest.json"
    if tm.exists():
        t = json.load(open(tm, encoding="utf-8"))
        for rel, f in t["files"].items():
            p = c / "teacher" / rel
            ok(p.is_file() and p.stat().st_size == f["bytes"] and sha256_file(p) == f["sha256"],
               f"sha256 teacher/{rel}")
        if t["corpus_strings_sha256"] != sha256_file(c / "strings.jsonl"):
            # A re-export that only dropped strings (a source taken out) leaves the teacher
            # valid: it must still embed every string of the corpus.
            def texts(path):
                return {json.loads(line)["text"] for line in open(path, encoding="utf-8")}
            missing = texts(c / "strings.jsonl") - texts(c / "teacher/strings.jsonl")
            ok(not missing, f"teacher embeds every corpus string ({len(missing)} missing: re-run embed.py)")
        shape = safetensors_header(c / "teacher/embeddings.safetensors")["embeddings"]["shape"]
        n = sum(1 for _ in open(c / "teacher/strings.jsonl", encoding="utf-8"))
        ok(shape == [n, 384], f"embeddings shape {shape} vs {n} strings")
        g = safetensors_header(c / "teacher/glove.safetensors")["vectors"]["shape"]
        nv = sum(1 for _ in open(c / "teacher/glove_vocab.txt", encoding="utf-8"))
        ok(g == [nv, 50], f"glove shape {g} vs {nv} words")
        ok(all(v["pass"] for v in t["checks"].values()), "teacher parity checks recorded as passing")
    else:
        print("note: no teacher/ yet (run embed.py)")
    print(f"{passed} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
