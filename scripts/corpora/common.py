"""What the corpus builders share (stdlib only): reading a source repository through git,
reading the gold files where they are compressed, errors that name the file, stride sampling,
capped cells, deterministic CSV/JSON/gzip output and a progress line with an ETA."""
from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("CORPORA_DIR", ROOT / ".corpora"))
MAX_ROWS = 64
MAX_CELL_BYTES = 64

csv.field_size_limit(1 << 30)


class SourceError(Exception):
    """A source file could not be read; the message names the file."""


# ------------------------------------------------------------------------------ git source
class GitSource:
    """Files of one commit of a repository, read with git plumbing. Works on a normal clone
    and on a bare mirror; a blob that the mirror lacks is reported as missing (None)."""

    def __init__(self, path: str | Path, rev: str = "HEAD"):
        self.path = Path(path)
        self._cat = None
        if not self.path.is_dir():
            raise SourceError(f"{self.path}: no such folder (expected a clone of the source)")
        try:
            self.commit = self._git("rev-parse", rev + "^{commit}").strip()
        except SourceError as e:
            raise SourceError(f"{self.path}: not a git repository ({e})") from None

    def _git(self, *args: str, binary: bool = False):
        p = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True)
        if p.returncode != 0:
            raise SourceError(f"git {' '.join(args)} in {self.path}: "
                              f"{p.stderr.decode('utf-8', 'replace').strip()}")
        return p.stdout if binary else p.stdout.decode("utf-8")

    def list(self, under: str = "") -> list[tuple[str, str]]:
        """(path, blob id) of every file under a folder, sorted by path."""
        out = self._git("ls-tree", "-r", "-z", self.commit, *([under] if under else []),
                        binary=True)
        rows = []
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, path = entry.split(b"\t", 1)
            mode, kind, oid = meta.decode().split()
            if kind == "blob":
                rows.append((path.decode("utf-8"), oid))
        rows.sort()
        return rows

    def read(self, oid: str) -> bytes | None:
        """A blob's bytes, or None when the object is absent from this copy."""
        if self._cat is None:
            self._cat = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._cat.stdin.write(oid.encode() + b"\n")
        self._cat.stdin.flush()
        head = self._cat.stdout.readline().split()
        if len(head) < 2 or head[1] == b"missing":
            return None
        size = int(head[2])
        data = self._cat.stdout.read(size)
        self._cat.stdout.read(1)  # trailing newline
        return data

    def close(self):
        if self._cat is not None:
            self._cat.stdin.close()
            self._cat.stdout.close()
            self._cat.wait()
            self._cat = None

    def __del__(self):  # a build that stops on a bad file still ends its git process
        self.close()


# ------------------------------------------------------------------------------ gold datasets
T2D_ARCHIVE = "t2d.tar.gz"


def open_text(path: Path):
    """A UTF-8 text file for csv; a `.gz` one is decompressed as it is read."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def t2d_source(path: Path) -> Path:
    """The T2D data at `path`: a t2d.tar.gz archive, a folder holding one (datasets/t2d-webtables),
    or a plain T2D folder (tables/, attributes/, classes_complete.csv)."""
    path = Path(path)
    if path.is_dir() and (path / T2D_ARCHIVE).is_file():
        return path / T2D_ARCHIVE
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder (T2D's {T2D_ARCHIVE} or its folder)")
    return path


def t2d_files(path: Path, folder: str = "") -> list[tuple[str, bytes]]:
    """(path inside T2D, bytes) of the `.csv` files directly in `folder` (`attributes`, `tables`,
    or "" for classes_complete.csv), sorted by path. The archive is read in place, not extracted."""
    source = t2d_source(path)
    prefix = f"{folder}/" if folder else ""
    out = []
    if source.is_dir():
        root = source / folder
        if not root.is_dir():
            raise SourceError(f"{root}: no such folder (T2D's {folder or 'root'})")
        for p in sorted(root.glob("*.csv")):
            out.append((prefix + p.name, p.read_bytes()))
        return out
    try:
        with tarfile.open(source, "r:gz") as tf:
            for m in tf:
                name = m.name.removeprefix("./")
                if (m.isfile() and name.endswith(".csv") and name.startswith(prefix)
                        and "/" not in name[len(prefix):]):
                    out.append((name, tf.extractfile(m).read()))
    except (OSError, tarfile.TarError, EOFError) as e:
        raise SourceError(f"{source}: not a readable tar.gz archive ({e})") from None
    if folder and not out:
        raise SourceError(f"{source}: holds no {folder}/*.csv")
    return sorted(out)


EXCLUDED_PAGES = ROOT / "datasets" / "wikitables-turl-subset" / "excluded-pages.txt"


def read_excluded_pages(path: Path) -> set[str]:
    """The Wikipedia page ids listed in an excluded-pages file (one a line; `#` comment lines
    and blank lines are skipped), as decimal strings without leading zeros, the form
    `page_key` gives a page id. A line that is not a page id is an error naming the file and
    line, and so is a file that lists none."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read the excluded pages ({e})") from None
    pages = set()
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not s.isascii() or not s.isdigit():
            raise SourceError(f"{path}:{n}: not a Wikipedia page id ({s!r}); expected one "
                              "page id a line, or a '#' comment")
        pages.add(str(int(s)))
    if not pages:
        raise SourceError(f"{path}: lists no page ids")
    return pages


def page_key(page_id) -> str | None:
    """A page id as excluded-pages files list it (decimal, no leading zeros), or None when it is
    not a number."""
    s = str(page_id).strip()
    return str(int(s)) if s.isascii() and s.isdigit() else None


def shown_path(path: Path) -> str:
    """A path as a manifest records it: relative to the repository when inside it."""
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------ tables
def decode(data: bytes, name: str, encoding: str = "utf-8") -> str:
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as e:
        raise SourceError(f"{name}: not valid {encoding} text ({e})") from None
    if "\0" in text:
        raise SourceError(f"{name}: contains NUL bytes, not a text CSV file")
    return text.lstrip("\ufeff")


def parse_csv(text: str, name: str, delimiter: str = ",", quotechar: str = '"') -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter,
                               quotechar=quotechar, strict=True))
    except csv.Error as e:
        raise SourceError(f"{name}: malformed CSV ({e})") from None


def parse_json(data: bytes, name: str):
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise SourceError(f"{name}: malformed JSON ({e})") from None


def hash_order(ids) -> list[str]:
    """`ids` sorted by the SHA-256 of each: a fixed order, independent of how a corpus was built,
    in which nested subsets of a corpus take their tables (the smaller ones first)."""
    return sorted(ids, key=lambda t: hashlib.sha256(t.encode()).hexdigest())


def stride(rows: list, n: int = MAX_ROWS) -> list:
    """rows[i*len//n] for i < n: deterministic, and a sorted table keeps its spread."""
    if len(rows) <= n:
        return list(rows)
    return [rows[i * len(rows) // n] for i in range(n)]


def cap(s: str, limit: int = MAX_CELL_BYTES) -> str:
    """A cell cut to `limit` UTF-8 bytes (never inside a character), whitespace folded."""
    s = " ".join(s.split())
    b = s.encode("utf-8")
    if len(b) <= limit:
        return s
    return b[:limit].decode("utf-8", "ignore").rstrip()


def table_csv(header: list[str], rows: list[list[str]]) -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([cap(h) for h in header])
    for r in rows:
        r = list(r[:len(header)]) + [""] * (len(header) - len(r))
        w.writerow([cap(c) for c in r])
    return buf.getvalue().encode("utf-8")


def json_line(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def write_gzip(path: Path, data: bytes):
    """gzip with mtime 0 and no file name, so equal inputs give equal bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            f.write(data)


def write_json(path: Path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                    encoding="utf-8")


def dir_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


class Progress:
    """A progress line with an ETA on stderr, at most every `every` seconds."""

    def __init__(self, total: int, what: str, every: float = 10.0):
        self.total, self.what, self.every = total, what, every
        self.start = self.last = time.monotonic()

    def tick(self, done: float):
        now = time.monotonic()
        if now - self.last < self.every and done != self.total:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        eta = (self.total - done) / rate if rate > 0 else 0.0
        shown = f"{done:.1f}" if isinstance(done, float) else str(done)
        print(f"[{self.what}] {shown}/{self.total} ({100.0 * done / max(self.total, 1):.1f}%) "
              f"{now - self.start:.0f}s elapsed, ETA {eta:.0f}s", file=sys.stderr, flush=True)

    def seconds(self) -> float:
        return time.monotonic() - self.start


def builder_arguments(doc: str, corpus: str) -> argparse.ArgumentParser:
    """The options every builder takes; each adds its source argument."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT / corpus)
    ap.add_argument("--vectors", type=Path, default=OUT / "glove" / "glove.6B.50d.txt")
    ap.add_argument("--threshold", type=float, help="override the chosen similarity thresholds")
    ap.add_argument("--manifest", type=Path, help="also write the manifest here")
    return ap


def print_summary(manifest: dict, out: Path, progress: "Progress") -> None:
    """One JSON line: the corpus's counts (labelled columns per label set, not per label),
    files, bytes and build time."""
    n, size = dir_size(out)
    c = manifest["counts"]
    summary = {k: v for k, v in c.items() if k not in ("labels", "per_type")}
    if "labels" in c:
        summary["labelled_columns"] = {k: v["labelled_columns"] for k, v in c["labels"].items()}
    print(json.dumps(summary | {"files": n, "bytes": size, "seconds": round(progress.seconds(), 1)}))


def run(main) -> None:
    """Runs a builder's main: a bad source file ends it with one line naming the file."""
    try:
        main()
    except SourceError as e:
        sys.exit(f"error: {e}")
