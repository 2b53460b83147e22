#!/usr/bin/env python3
"""Writes small seed corpora for the table fuzz targets into fuzz/corpus/<target>/ (ignored by
git) from the repository's datasets/ and test fixtures. Deterministic; safe to run again."""

import gzip
import os
import random
import sys
import tarfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "fuzz", "corpus")
FIX = os.path.join(ROOT, "crates", "colswarm-tables", "tests", "fixtures")
BAD = os.path.join(ROOT, "crates", "colswarm-tables", "tests", "malformed")
DATA = os.path.join(ROOT, "datasets")
MAX = 8 * 1024  # keep seeds small: libFuzzer's default -max_len is derived from them


def read(*parts):
    with open(os.path.join(*parts), "rb") as f:
        return f.read()


def t2d_files():
    """{path: bytes} of every file in datasets/t2d-webtables/t2d.tar.gz (about 10 MB), read in
    place: `classes_complete.csv`, `attributes/<id>.csv`, `tables/<id>.csv`."""
    with tarfile.open(os.path.join(DATA, "t2d-webtables", "t2d.tar.gz"), "r:gz") as tf:
        return {m.name: tf.extractfile(m).read() for m in tf if m.isfile()}


def listed(files, folder):
    """The sorted names of the files directly in `folder` of an archive's {path: bytes}."""
    return sorted(p[len(folder) + 1:] for p in files if p.rpartition("/")[0] == folder)


def head(data, n=MAX):
    """The first whole lines of `data` within n bytes."""
    if len(data) <= n:
        return data
    cut = data.rfind(b"\n", 0, n)
    return data[: cut + 1 if cut > 0 else n]


def write(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, name), "wb") as f:
        f.write(data)


def semtab():
    t1 = read(FIX, "semtab", "tables", "T1.csv")
    t2 = read(FIX, "semtab", "tables", "T2.csv")
    ren = lambda b: b.replace(b"T1,", b"t0,").replace(b"T2,", b"t1,")
    parts = [
        t1,
        t2,
        ren(read(FIX, "semtab", "targets", "CTA_Targets.csv")),
        ren(read(FIX, "semtab", "gt", "CTA_gt.csv")),
        ren(read(FIX, "semtab", "targets", "CPA_Targets.csv")),
        ren(read(FIX, "semtab", "gt", "CPA_gt.csv")),
    ]
    write("semtab", "fixture", b"\0".join(parts))
    write("semtab", "tables_only", b"\0".join(parts[:2]))
    write("semtab", "cta_only", b"\0".join(parts[:4]))


def t2d():
    files = t2d_files()
    classes = files["classes_complete.csv"].splitlines(keepends=True)
    names = listed(files, "attributes")
    rng = random.Random(7)
    picks = rng.sample(names, 6)
    for i in range(0, 6, 2):
        a, b = picks[i], picks[i + 1]
        ids = [n[:-4] for n in (a, b)]
        cls = b"".join(
            l.replace(ids[0].encode(), b"t0").replace(ids[1].encode(), b"t1")
            for l in classes
            if any(x.encode() in l for x in ids)
        )
        parts = [cls]
        for n in (a, b):
            parts.append(head(files["attributes/" + n], 2048))
            parts.append(head(files["tables/" + n], 3072))
        write("t2d", f"pair{i // 2}", b"\0".join(parts))


def turl():
    for name in ("test.table_col_type.json", "test.table_rel_extraction.json"):
        write("turl_json", name, read(FIX, "turl", name))
    for name in ("turl_not_array.json", "turl_truncated.json", "turl_wrong_record.json"):
        write("turl_json", name, read(BAD, name))


def wikitables():
    root = os.path.join(DATA, "wikitables-turl-subset")
    for name in ("dev_wikitables_subset_2.csv", "train_wikitables_subset_20.csv"):
        lines = gzip.decompress(read(root, name + ".gz")).splitlines(keepends=True)
        # The header and one record at a time, each small.
        for i, record in enumerate(lines[1:4]):
            if len(record) < MAX:
                write("wikitables_csv", f"{name}.{i}", lines[0] + record)
    for name in ("wikitables_bad_literal.csv", "wikitables_wrong_shape.csv"):
        write("wikitables_csv", name, read(BAD, name))


def parquet():
    root = os.path.join(DATA, "gittables-semtab22", "parquet-fixture")
    for name in sorted(os.listdir(root)):
        write("parquet", name, read(root, name))
    write("parquet", "not_parquet", read(BAD, "not_parquet.parquet"))


def csv_and_sotab():
    for name in sorted(os.listdir(BAD)):
        path = os.path.join(BAD, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(".csv"):
            write("csv", name, read(path))
        if name.endswith(".json.gz"):
            data = read(path)
            write("sotab_json", name, data)
            try:
                write("sotab_json", name + ".plain", gzip.decompress(data))
            except Exception:
                pass
    tables = t2d_files()
    for name in listed(tables, "tables")[:5]:
        write("csv", name, head(tables["tables/" + name], 4096))
    for dirpath, _, files in sorted(os.walk(os.path.join(DATA, "sotab-v2-fixtures"))):
        for name in sorted(files):
            if name.endswith(".json.gz"):
                data = read(dirpath, name)
                try:
                    plain = head(gzip.decompress(data), 4096)
                except Exception:
                    continue
                write("sotab_json", name, plain)
                write("sotab_json", name + ".gz", gzip.compress(plain, mtime=0))
            elif name.endswith(".csv.gz"):  # seeds are the plain CSV the readers see
                write("csv", name[:-3], head(gzip.decompress(read(dirpath, name)), 4096))
            elif name.endswith(".csv"):
                write("csv", name, head(read(dirpath, name), 4096))


def python_literal():
    root = os.path.join(DATA, "wikitables-turl-subset")
    line = gzip.decompress(read(root, "dev_wikitables_subset_2.csv.gz")).splitlines()[1]
    write("python_literal", "record", head(line, 4096))
    write("python_literal", "set", b"{'film', 'tv'}")
    write("python_literal", "mixed", b"['a\\x41\\u00e9', (-1.5e3, None, True)]")


def serialize():
    rng = random.Random(11)
    configs = [
        bytes([0, 0, 1, 8, 48, 8, 32, 64, 2, 16, 32, 0, 0, 0]),  # the defaults, 256 tokens
        bytes([0, 64, 0, 32, 48, 8, 32, 64, 2, 16, 32, 0, 0, 0]),  # 64 tokens
        bytes([3, 10, 0, 4, 4, 1, 4, 4, 1, 4, 4, 7, 0, 0]),  # tiny, no header or context
    ]
    tables = [
        "\x04People\x00Section\x00Caption\x01name\x00Ann\x00Bob\x00\x02\x01born\x001815-12-10\x00\x00x",
        "\x03a\x00b\x00c\x01\x03" + "\x00".join(str(i) for i in range(40)),
        "\x01".join(f"h{i}\x00v{i}\x00héllo wörld" for i in range(12)),
    ]
    for i, c in enumerate(configs):
        for j, t in enumerate(tables):
            write("serialize", f"c{i}t{j}", c + t.encode())
    write("serialize", "random", bytes(rng.randrange(256) for _ in range(200)))


if __name__ == "__main__":
    for step in (semtab, t2d, turl, wikitables, parquet, csv_and_sotab, python_literal, serialize):
        step()
    for target in sorted(os.listdir(OUT)):
        files = os.listdir(os.path.join(OUT, target))
        print(target, len(files), "files", file=sys.stderr)
