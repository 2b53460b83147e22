"""What the knowledge scripts share: where the corpus lives, and file checksums (stdlib only)."""

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
