"""What the knowledge scripts share: where the corpus lives, file checksums, the datasets'
split hash and their compressed files (stdlib only)."""

import gzip
import hashlib
import os
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
K = Path(os.environ.get("KNOWLEDGE_DIR", ROOT / ".knowledge"))


def sha256_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fnv1a64(text: str) -> int:
    """FNV-1a 64 of a table id: `fnv1a64(id) % 5` is its fold, as in the Rust `#folds=` specs."""
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def open_text(path: Path):
    """A UTF-8 text file for csv; a `.gz` one is decompressed as it is read."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def t2d_files(source: Path, folder: str) -> list[tuple[str, bytes]]:
    """(file name, bytes) of the `.csv` files directly in `folder` of T2D (`attributes`, `tables`),
    sorted by name. `source` is datasets/t2d-webtables/t2d.tar.gz, read in place, or a plain T2D
    folder."""
    source = Path(source)
    if source.is_dir():
        return [(p.name, p.read_bytes()) for p in sorted((source / folder).glob("*.csv"))]
    out = []
    with tarfile.open(source, "r:gz") as tf:
        for m in tf:
            parent, _, name = m.name.removeprefix("./").rpartition("/")
            if m.isfile() and parent == folder and name.endswith(".csv"):
                out.append((name, tf.extractfile(m).read()))
    return sorted(out)
