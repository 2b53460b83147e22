"""What the knowledge scripts share: where the corpus lives, file checksums and the datasets'
split hash (stdlib only)."""

import hashlib
import os
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
