"""Header matching (stdlib only): normalised exact match first, then word-vector similarity
above a threshold, as GitTables annotated its columns. Also the WikiTables header rule, a
header -> type-set map learned from labelled tables with the same two steps.

Normalisation: camelCase and digit boundaries are split, `_`, `-`, `.` and other punctuation
become spaces, everything is lower-cased and runs of spaces are folded.
A text's vector is the mean of its tokens' word vectors (tokens without a vector are left
out; no token with a vector means no vector match); similarity is the cosine."""
from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

from common import SourceError

_CAMEL1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_DIGIT = re.compile(r"([A-Za-z])([0-9])|([0-9])([A-Za-z])")
_PUNCT = re.compile(r"[^\w]+|_+")


def normalise(text: str) -> str:
    """'startDate' / 'start_date' / 'Start-Date:' -> 'start date'."""
    s = text.split(":", 1)[1] if text.startswith("schema:") else text
    s = _CAMEL2.sub(r"\1 \2", s)
    s = _CAMEL1.sub(r"\1 \2", s)
    s = _DIGIT.sub(lambda m: f"{m.group(1) or m.group(3)} {m.group(2) or m.group(4)}", s)
    s = _PUNCT.sub(" ", s)
    return " ".join(s.lower().split())


def tokens(text: str) -> list[str]:
    return normalise(text).split()


# ------------------------------------------------------------------------------ vectors
class Vectors:
    """Word vectors for the words that are asked for (None: all). File format: one `word v1 v2 ...` per
    line (the GloVe text format); only rows whose word is wanted are parsed."""

    def __init__(self, table: dict[str, list[float]], info: dict | None = None):
        self.table = table
        self.info = info or {}
        self._cache: dict[str, list[float] | None] = {}

    @classmethod
    def load(cls, path: str | Path, words, info: dict | None = None) -> "Vectors":
        wanted = None if words is None else set(words)
        table: dict[str, list[float]] = {}
        dim = None
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                word, _, rest = line.rstrip("\n").partition(" ")
                if (wanted is not None and word not in wanted) or word in table:
                    continue
                try:
                    vec = [float(x) for x in rest.split()]
                except ValueError:
                    raise SourceError(f"{path}:{lineno}: not a word-vector line") from None
                if dim is None:
                    dim = len(vec)
                if len(vec) != dim or dim == 0:
                    raise SourceError(f"{path}:{lineno}: {len(vec)} numbers, expected {dim}")
                table[word] = vec
        return cls(table, info)

    @classmethod
    def for_headers(cls, path: Path | None, headers, thresholds: dict) -> "Vectors | None":
        """The vectors of every word of these header rows, or None when no threshold uses them
        (or no vector file is given)."""
        if path is None or min(thresholds.values()) >= 1.0:
            return None
        return cls.load(path, sorted({w for row in headers for c in row for w in normalise(c).split()}))

    def embed(self, text: str) -> list[float] | None:
        """Unit-length mean of the tokens' vectors, or None."""
        if text in self._cache:
            return self._cache[text]
        vecs = [self.table[t] for t in tokens(text) if t in self.table]
        out = None
        if vecs:
            mean = [sum(col) / len(vecs) for col in zip(*vecs)]
            norm = math.sqrt(sum(x * x for x in mean))
            if norm > 0:
                out = [x / norm for x in mean]
        self._cache[text] = out
        return out


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


# ------------------------------------------------------------------------------ GitTables rule
class HeaderMatcher:
    """Header -> one label of a label set: exact normalised match (score 1), else the label
    with the highest cosine (ties: the label that sorts first) if it is >= threshold."""

    def __init__(self, labels, vectors: Vectors | None, threshold: float):
        self.labels = sorted(set(labels))
        self.vectors = vectors
        self.threshold = threshold
        self.exact: dict[str, str] = {}
        for lab in self.labels:  # sorted, so a clash keeps the first label
            self.exact.setdefault(normalise(lab), lab)
        self.label_vecs = []
        if vectors is not None:
            for lab in self.labels:
                v = vectors.embed(normalise(lab))
                if v is not None:
                    self.label_vecs.append((lab, v))
        self._cache: dict[str, tuple[str, str, float] | None] = {}

    def best_vector(self, header: str) -> tuple[str, float] | None:
        if self.vectors is None:
            return None
        v = self.vectors.embed(normalise(header))
        if v is None:
            return None
        best = None
        for lab, lv in self.label_vecs:
            s = cosine(v, lv)
            if best is None or s > best[1]:
                best = (lab, s)
        return best

    def match(self, header: str, threshold: float | None = None):
        """(label, rule, score) or None."""
        t = self.threshold if threshold is None else threshold
        key = normalise(header)
        if not key:
            return None
        if key in self.exact:
            return (self.exact[key], "exact", 1.0)
        if key not in self._cache:
            self._cache[key] = self.best_vector(key)
        best = self._cache[key]
        if best is not None and best[1] >= t:
            return (best[0], "vector", round(best[1], 4))
        return None


# ------------------------------------------------------------------------------ WikiTables rule
def close_types(types, hierarchy: dict, to_text: dict) -> tuple[str, ...]:
    """A type set closed under the hierarchy (types plus all their ancestors), sorted."""
    from_text = {v: k for k, v in sorted(to_text.items())}
    out = set(types)
    for t in types:
        for anc in hierarchy.get(to_text.get(t, ""), []):
            if anc in from_text:
                out.add(from_text[anc])
    return tuple(sorted(out))


class HeaderTypeMap:
    """Normalised header -> the types seen on at least `min_share` of that header's columns in
    labelled tables (each column's types closed under the hierarchy first if `close`). Unseen
    headers fall back to the most similar seen header if its cosine is >= threshold."""

    def __init__(self, columns, hierarchy: dict, to_text: dict, vectors: Vectors | None,
                 threshold: float, min_share: float = 0.5, close: bool = False):
        seen: dict[str, list] = {}
        for header, types in columns:
            key = normalise(header)
            if key:
                ts = close_types(types, hierarchy, to_text) if close else tuple(sorted(set(types)))
                entry = seen.setdefault(key, [0, Counter()])
                entry[0] += 1
                entry[1].update(ts)
        self.map: dict[str, tuple[tuple[str, ...], int]] = {}
        for key in sorted(seen):
            n, c = seen[key]
            kept = tuple(sorted(t for t, k in c.items() if k / n >= min_share))
            if kept:
                self.map[key] = (kept, n)
        self.vectors = vectors
        self.threshold = threshold
        self.keys_vecs = []
        if vectors is not None:
            for key in self.map:
                v = vectors.embed(key)
                if v is not None:
                    self.keys_vecs.append((key, v))
        self._cache: dict[str, tuple[str, float] | None] = {}

    def nearest(self, key: str):
        if key not in self._cache:
            best = None
            v = self.vectors.embed(key) if self.vectors is not None else None
            if v is not None:
                for k, kv in self.keys_vecs:
                    s = cosine(v, kv)
                    if best is None or s > best[1]:
                        best = (k, s)
            self._cache[key] = best
        return self._cache[key]

    def match(self, header: str, threshold: float | None = None):
        """(types, rule, score, matched header) or None."""
        t = self.threshold if threshold is None else threshold
        key = normalise(header)
        if not key:
            return None
        if key in self.map:
            return (self.map[key][0], "exact", 1.0, key)
        best = self.nearest(key)
        if best is not None and best[1] >= t:
            return (self.map[best[0]][0], "vector", round(best[1], 4), best[0])
        return None
