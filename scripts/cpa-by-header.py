#!/usr/bin/env python3
"""Where does T2D CPA gain or lose against its peers? The nested protocol's pooled held-out
predictions (`scripts/evaluate-recipe.sh`'s work directory), split by how well each pair's
header spells a relation's name; no training, nothing chosen.

A pair's header words and each relation's name words are split as the label-name prior and the
`header-rule` peer split them (maximal runs of letters, lower-cased, camelCase split; a
relation is named by the part of its URI after the last `/` or `#`; each word compared in its
singular form, `Countries` / `country`). The pair's bucket is its
best Jaccard overlap with the relations its fold's model knows (the labels of its
probabilities): `exact` (1: the header spells a name, `Population` / `population`), `half`
(at least 0.5), `some` (above 0) or `none`. In each bucket the recipe (with its reader when the
work directory has one) is paired against `header-rule`, `header-memory` and
`char-ngram-prior` with `colswarm compare`, 95% intervals over tables.

Usage: scripts/cpa-by-header.py --work runs/evaluate-recipe
       [--tables datasets/t2d-webtables/t2d.tar.gz] [--bin target/release/colswarm]
"""

import argparse
import csv
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from recipe_reader import read

PEERS = ["header-rule", "header-memory", "char-ngram-prior"]
BUCKETS = [
    ("exact", "the header spells a relation's name (overlap 1)"),
    ("half", "overlap 0.5 to 1"),
    ("some", "overlap above 0, below 0.5"),
    ("none", "no word in common"),
]


def name_words(text):
    """Maximal runs of letters, lower-cased, split where a lower-case letter meets an upper-case
    one (`colswarm_model::label_names::name_words`)."""
    words, word, previous_lower = set(), "", False
    for ch in text:
        if not ch.isalpha():
            if word:
                words.add(word)
            word, previous_lower = "", False
            continue
        if ch.isupper() and previous_lower and word:
            words.add(word)
            word = ""
        previous_lower = ch.islower()
        word += ch.lower()
    if word:
        words.add(word)
    return words


def label_words(label):
    return name_words(label.replace("#", "/").rsplit("/", 1)[-1])


def word_form(word):
    """The form the prior compares a word in, one for singular and regular English plural
    (`colswarm_model::label_names::word_form`): `countries`, `country` → `countrie`."""
    if len(word) >= 5 and word.endswith(("sses", "ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif len(word) >= 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) >= 3 and word.endswith("y") and word[-2] not in "aeiou":
        word = word[:-1] + "ie"
    return word


def forms(words):
    return {word_form(w) for w in words}


def jaccard(a, b):
    shared = len(a & b)
    return shared / len(a | b) if shared else 0.0


def bucket(overlap):
    if overlap == 1.0:
        return "exact"
    if overlap >= 0.5:
        return "half"
    return "some" if overlap > 0 else "none"


def headers(tables_tar, wanted):
    """Each wanted table's header row, read from the T2D archive (`tables/ID.csv`)."""
    found = {}
    with tarfile.open(tables_tar) as archive:
        for member in archive:
            name = Path(member.name)
            if member.isfile() and name.suffix == ".csv" and name.stem in wanted:
                text = archive.extractfile(member).read().decode("utf-8", errors="replace")
                found[name.stem] = next(csv.reader(io.StringIO(text)), [])
    missing = wanted - found.keys()
    if missing:
        sys.exit(f"{tables_tar}: no table file for {len(missing)} table(s), e.g. {sorted(missing)[0]}")
    return found


def compare(bin_, a, b):
    result = subprocess.run(bin_ + ["compare", "--json", a, b], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"colswarm compare {a} {b} failed:\n{result.stderr.strip()}")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="runs/evaluate-recipe", help="the protocol's work directory")
    parser.add_argument("--tables", default="datasets/t2d-webtables/t2d.tar.gz")
    parser.add_argument("--bin", default="target/release/colswarm", help="the colswarm command")
    args = parser.parse_args()
    t2d = Path(args.work) / "t2d"
    recipe_file = t2d / "cpa-model-reader.jsonl"
    if not recipe_file.exists():
        recipe_file = t2d / "cpa-model.jsonl"
    files = {"recipe": recipe_file, **{peer: t2d / f"cpa-{peer}.jsonl" for peer in PEERS}}
    for path in files.values():
        if not path.exists():
            sys.exit(f"{path}: missing; run scripts/evaluate-recipe.sh with --benchmarks t2d first")
    keyed = {system: read(path) for system, path in files.items()}
    order = list(keyed["recipe"])
    for system, system_rows in keyed.items():
        if system_rows.keys() != keyed["recipe"].keys():
            sys.exit(f"{files[system]}: not the recipe's pairs")
    rows = {system: [system_rows[k] for k in order] for system, system_rows in keyed.items()}

    header_rows = headers(args.tables, {table for table, _, _ in order})
    buckets = []
    for row in rows["recipe"]:
        header = header_rows[row["table"]]
        words = forms(name_words(header[row["column"]] if row["column"] < len(header) else ""))
        known = row.get("probabilities", {})
        buckets.append(bucket(max((jaccard(words, forms(label_words(l))) for l in known), default=0.0)))

    print(f"T2D CPA, {len(order)} pairs pooled over the folds ({recipe_file.name}); the recipe "
          "against each peer, micro-F1 and the difference with its 95% interval over tables")
    print()
    print("| header | pairs | recipe | " + " | ".join(PEERS) + " |")
    print("|---|---|---|" + "---|" * len(PEERS))
    bin_ = args.bin.split()
    with tempfile.TemporaryDirectory() as tmp:
        for name, meaning in BUCKETS:
            paths = {}
            for system, system_rows in rows.items():
                paths[system] = f"{tmp}/{name}-{system}.jsonl"
                with open(paths[system], "w") as out:
                    for row, b in zip(system_rows, buckets):
                        if b == name:
                            out.write(json.dumps(row) + "\n")
            count = buckets.count(name)
            if count == 0:
                continue
            cells = []
            for peer in PEERS:
                c = compare(bin_, paths["recipe"], paths[peer])
                recipe_f1 = c["micro_f1_a"]
                cells.append(f"{c['micro_f1_b']:.3f}: {c['difference']:+.3f} "
                             f"({c['ci_low']:+.3f} to {c['ci_high']:+.3f})")
            print(f"| {name}: {meaning} | {count} | {recipe_f1:.3f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
