#!/usr/bin/env python3
"""NumPy CPU peer of colswarm's WKV-7 bench (forward only): the same recurrence, one timestep
at a time, batched over (batch, head) with matmul. A light stand-in where torch is unavailable.

    python3 benches/peers/wkv7_numpy.py [--runs 5] [--times 128 512 2048]

Threads follow OpenBLAS (set OPENBLAS_NUM_THREADS=2 to match the other peers).
"""

import argparse
import statistics
import time

import numpy as np

B, H, N = 8, 4, 64


def inputs(t, seed=0):
    rng = np.random.default_rng(seed)
    uni = lambda lo, hi, *shape: rng.uniform(lo, hi, shape).astype(np.float32)
    kappa = uni(-1, 1, B, t, H, N)
    kappa /= np.maximum(np.linalg.norm(kappa, axis=-1, keepdims=True), 1e-12)
    return [
        uni(-1, 1, B, t, H, N),
        uni(-0.6065, 0, B, t, H, N),
        uni(-1, 1, B, t, H, N),
        uni(-1, 1, B, t, H, N),
        -kappa,
        kappa * uni(0, 1, B, t, H, N),
        uni(-0.1, 0.1, B, H, N, N),
    ]


def wkv7(r, log_w, k, v, a, b, s):
    w = np.exp(log_w)
    y = np.empty_like(r)
    for t in range(r.shape[1]):
        u = s @ a[:, t, :, :, None]  # [B, H, N, 1]
        s = s * w[:, t, :, None, :] + u @ b[:, t, :, None, :] + v[:, t, :, :, None] @ k[:, t, :, None, :]
        y[:, t] = (s @ r[:, t, :, :, None])[..., 0]
    return y, s


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--times", type=int, nargs="+", default=[128, 512, 2048])
    args = p.parse_args()
    print(f"numpy {np.__version__}, B={B} H={H} N={N}")
    print("mode,T,median_s,GFLOP/s")
    for t in args.times:
        x = inputs(t)
        wkv7(*x)
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            wkv7(*x)
            times.append(time.perf_counter() - t0)
        s = statistics.median(times)
        print(f"forward,{t},{s:.4f},{9 * N * N * B * H * t / s / 1e9:.2f}", flush=True)


if __name__ == "__main__":
    main()
