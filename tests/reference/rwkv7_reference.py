#!/usr/bin/env python3
"""Independent NumPy reference of the RWKV-7 forward pass used by colswarm's parity tests.

Written from the equations (docs/RWKV7.md §2-§6), not from colswarm's Rust code:
float64, one token at a time, one head at a time, explicit loops over rows of the state.

It writes two safetensors files:
  tests/fixtures/rwkv7_tiny.safetensors       a random tiny model in colswarm's checkpoint layout
                                               (names, burn [d_in, d_out] linear weights, config
                                               and checksum metadata)
  tests/fixtures/rwkv7_tiny_expected.safetensors  inputs (tokens, lengths) and the reference
                                               outputs: hidden states and final per-layer states

Run from the repository root:  python3 tests/reference/rwkv7_reference.py [--seed N]
Needs: numpy, safetensors (pip install numpy safetensors).
"""
import argparse
import hashlib
import json
import math

import numpy as np
from safetensors.numpy import save_file

VOCAB, D, LAYERS, N = 260, 64, 3, 16
H = D // N
FFN = 128
RANK_W, RANK_A, RANK_V, RANK_G = 8, 8, 8, 16


def random_model(rng):
    """Random weights of moderate scale, so every term of the equations matters."""
    u = lambda lo, hi, *shape: rng.uniform(lo, hi, size=shape)
    p = {"emb.weight": u(-1, 1, VOCAB, D)}
    for l in range(LAYERS):
        b = f"blocks.{l}."
        norms = ["ln1", "ln2"] + (["ln0"] if l == 0 else [])
        for ln in norms:
            p[b + ln + ".gamma"] = u(0.5, 1.5, D)
            p[b + ln + ".beta"] = u(-0.2, 0.2, D)
        a = b + "att."
        for s in "rwkvag":
            p[a + "x_" + s] = u(0, 1, D)
        p[a + "w0"] = u(-3, 1, D)
        p[a + "w1"] = u(-0.3, 0.3, D, RANK_W)
        p[a + "w2"] = u(-0.3, 0.3, RANK_W, D)
        p[a + "a0"] = u(-1, 1, D)
        p[a + "a1"] = u(-0.3, 0.3, D, RANK_A)
        p[a + "a2"] = u(-0.3, 0.3, RANK_A, D)
        if l > 0:
            p[a + "v0"] = u(-1, 1, D)
            p[a + "v1"] = u(-0.3, 0.3, D, RANK_V)
            p[a + "v2"] = u(-0.3, 0.3, RANK_V, D)
        p[a + "g1"] = u(-0.3, 0.3, D, RANK_G)
        p[a + "g2"] = u(-0.3, 0.3, RANK_G, D)
        p[a + "k_k"] = u(0.5, 1.2, D)
        p[a + "k_a"] = u(0.5, 1.5, D)
        p[a + "r_k"] = u(-0.5, 0.5, H, N)
        scale = 1 / math.sqrt(D)
        for name in ["receptance", "key", "value", "output"]:
            p[a + name + ".weight"] = u(-scale, scale, D, D)  # [d_in, d_out]
        p[a + "ln_x.weight"] = u(0.5, 1.5, D)
        p[a + "ln_x.bias"] = u(-0.2, 0.2, D)
        f = b + "ffn."
        p[f + "x_k"] = u(0, 1, D)
        p[f + "key.weight"] = u(-scale, scale, D, FFN)
        p[f + "value.weight"] = u(-1 / math.sqrt(FFN), 1 / math.sqrt(FFN), FFN, D)
    p["ln_out.gamma"] = u(0.5, 1.5, D)
    p["ln_out.beta"] = u(-0.2, 0.2, D)
    return p


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean()
    var = ((x - mu) ** 2).mean()
    return (x - mu) / math.sqrt(var + eps) * g + b


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def run_sequence(p, tokens):
    """Reads `tokens` from the zero state; returns per-token hidden states and final states."""
    wkv = [np.zeros((H, N, N)) for _ in range(LAYERS)]  # [head][value i][key j]
    att_prev = [np.zeros(D) for _ in range(LAYERS)]
    ffn_prev = [np.zeros(D) for _ in range(LAYERS)]
    hidden = []
    for tok in tokens:
        x = p["emb.weight"][tok].copy()
        v_first = None
        for l in range(LAYERS):
            b, a = f"blocks.{l}.", f"blocks.{l}.att."
            if l == 0:
                x = layer_norm(x, p[b + "ln0.gamma"], p[b + "ln0.beta"])
            # --- time mix
            xa = layer_norm(x, p[b + "ln1.gamma"], p[b + "ln1.beta"])
            delta = att_prev[l] - xa
            att_prev[l] = xa
            mix = {s: xa + delta * p[a + "x_" + s] for s in "rwkvag"}
            r = mix["r"] @ p[a + "receptance.weight"]
            k = mix["k"] @ p[a + "key.weight"]
            v = mix["v"] @ p[a + "value.weight"]
            z = p[a + "w0"] + np.tanh(mix["w"] @ p[a + "w1"]) @ p[a + "w2"]
            w = np.exp(-math.exp(-0.5) * sigmoid(z))  # decay factor in (0.545, 1)
            icl = sigmoid(p[a + "a0"] + (mix["a"] @ p[a + "a1"]) @ p[a + "a2"])
            g = sigmoid(mix["g"] @ p[a + "g1"]) @ p[a + "g2"]
            if l == 0:
                v_first = v
            else:
                nu = sigmoid(p[a + "v0"] + (mix["v"] @ p[a + "v1"]) @ p[a + "v2"])
                v = v + (v_first - v) * nu
            kappa = k * p[a + "k_k"]
            k_tilde = k * (1 + (icl - 1) * p[a + "k_a"])
            out = np.zeros(D)
            for h in range(H):
                sl = slice(h * N, (h + 1) * N)
                kh = kappa[sl]
                kh = kh / max(np.linalg.norm(kh), 1e-12)
                alpha, beta = -kh, kh * icl[sl]
                S = wkv[l][h]
                y = np.zeros(N)
                for i in range(N):  # row-local update, docs/RWKV7.md §4
                    u_i = S[i] @ alpha
                    S[i] = S[i] * w[sl] + u_i * beta + v[sl][i] * k_tilde[sl]
                    y[i] = S[i] @ r[sl]
                # group norm per head, eps = N * 1e-5
                mu, var = y.mean(), ((y - y.mean()) ** 2).mean()
                yn = (y - mu) / math.sqrt(var + N * 1e-5)
                yn = yn * p[a + "ln_x.weight"][sl] + p[a + "ln_x.bias"][sl]
                bonus = np.sum(r[sl] * k_tilde[sl] * p[a + "r_k"][h]) * v[sl]
                out[sl] = yn + bonus
            x = x + (out * g) @ p[a + "output.weight"]
            # --- channel mix
            f = b + "ffn."
            xf = layer_norm(x, p[b + "ln2.gamma"], p[b + "ln2.beta"])
            xk = xf + (ffn_prev[l] - xf) * p[f + "x_k"]
            ffn_prev[l] = xf
            x = x + (np.maximum(xk @ p[f + "key.weight"], 0) ** 2) @ p[f + "value.weight"]
        hidden.append(layer_norm(x, p["ln_out.gamma"], p["ln_out.beta"]))
    return np.array(hidden).reshape(len(tokens), D), wkv, att_prev, ffn_prev


def checksum(tensors):
    """SHA-256 over (name, shape, little-endian f32 bytes) in name order: colswarm's format."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype="<f4")
        data = arr.tobytes()
        h.update(len(name).to_bytes(8, "little"))
        h.update(name.encode())
        h.update(len(arr.shape).to_bytes(8, "little"))
        for dim in arr.shape:
            h.update(int(dim).to_bytes(8, "little"))
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--out", default="tests/fixtures")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    params = random_model(rng)
    weights = {k: np.ascontiguousarray(v, dtype="<f4") for k, v in params.items()}
    # Compute with the f32-rounded weights, so only the arithmetic differs from Rust.
    params = {k: v.astype(np.float64) for k, v in weights.items()}
    config = {
        "vocab_size": VOCAB, "d_model": D, "n_layers": LAYERS, "head_size": N, "d_ffn": FFN,
        "decay_rank": RANK_W, "icl_rank": RANK_A, "value_rank": RANK_V, "gate_rank": RANK_G,
    }
    metadata = {
        "colswarm.format": "colswarm-safetensors-v1",
        "colswarm.rwkv.config": json.dumps(config),
        "colswarm.checksum": checksum(weights),
    }
    save_file(weights, f"{args.out}/rwkv7_tiny.safetensors", metadata=metadata)

    lengths = [11, 7, 1]
    T = max(lengths)
    tokens = rng.integers(0, VOCAB, size=(len(lengths), T))
    hidden = np.zeros((len(lengths), T, D))
    wkv = np.zeros((LAYERS, len(lengths), H, N, N))
    att = np.zeros((LAYERS, len(lengths), D))
    ffn = np.zeros((LAYERS, len(lengths), D))
    for b, length in enumerate(lengths):
        hs, S, ap_, fp_ = run_sequence(params, tokens[b, :length])
        hidden[b, :length] = hs
        for l in range(LAYERS):
            wkv[l, b], att[l, b], ffn[l, b] = S[l], ap_[l], fp_[l]
    expected = {
        "tokens": tokens.astype("<f4"),
        "lengths": np.array(lengths, dtype="<f4"),
        "hidden": hidden.astype("<f4"),
        "wkv": wkv.astype("<f4"),
        "att_shift": att.astype("<f4"),
        "ffn_shift": ffn.astype("<f4"),
    }
    save_file(expected, f"{args.out}/rwkv7_tiny_expected.safetensors",
              metadata={"seed": str(args.seed)})
    print(f"wrote {args.out}/rwkv7_tiny.safetensors and rwkv7_tiny_expected.safetensors "
          f"(seed {args.seed}, hidden |max| {np.abs(hidden).max():.3f}, wkv |max| {np.abs(wkv).max():.3f})")


if __name__ == "__main__":
    main()
