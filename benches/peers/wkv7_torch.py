#!/usr/bin/env python3
"""PyTorch CPU peer of colswarm's WKV-7 bench: the same recurrence, one timestep at a time.

Per head (S is value x key):  u = S.a ;  S = S.diag(exp(log_w)) + u.b^T + v.k^T ;  y = S.r
Sizes match crates/colswarm-kernels/benches/kernels.rs: B=8, H=4, N=64, T in {128, 512, 2048}.
Forward under torch.inference_mode(); forward+backward with autograd (loss = sum(y) + sum(S_T)).
Reports the median of --runs runs (default 5) after one warm-up run, in seconds and in GFLOP/s
of the forward recurrence (9*N^2 per head per token).

    python3 -m venv .venv-torch && .venv-torch/bin/pip install torch numpy
    .venv-torch/bin/python benches/peers/wkv7_torch.py [--threads 2] [--runs 5] [--times 128 512 2048]
"""

import argparse
import statistics
import time

import torch

B, H, N = 8, 4, 64


def inputs(t, requires_grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    uni = lambda lo, hi, *shape: torch.rand(*shape, generator=g) * (hi - lo) + lo
    kappa = uni(-1, 1, B, t, H, N)
    kappa = kappa / kappa.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    xs = [
        uni(-1, 1, B, t, H, N),  # r
        uni(-0.6065, 0, B, t, H, N),  # log_w
        uni(-1, 1, B, t, H, N),  # k
        uni(-1, 1, B, t, H, N),  # v
        -kappa,  # a
        kappa * uni(0, 1, B, t, H, N),  # b
        uni(-0.1, 0.1, B, H, N, N),  # state
    ]
    return [x.contiguous().requires_grad_(requires_grad) for x in xs]


def wkv7(r, log_w, k, v, a, b, s):
    """Per-timestep recurrence. `unbind` (not indexing) keeps autograd's backward O(T)."""
    w = log_w.exp()
    ys = []
    for r_t, w_t, k_t, v_t, a_t, b_t in zip(*(x.unbind(1) for x in (r, w, k, v, a, b))):
        u = s @ a_t.unsqueeze(-1)  # [B, H, N, 1]
        s = s * w_t.unsqueeze(-2) + u @ b_t.unsqueeze(-2) + v_t.unsqueeze(-1) @ k_t.unsqueeze(-2)
        ys.append((s @ r_t.unsqueeze(-1)).squeeze(-1))
    return torch.stack(ys, 1), s


def median_time(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--times", type=int, nargs="+", default=[128, 512, 2048])
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, B={B} H={H} N={N}")
    print("mode,T,median_s,GFLOP/s")
    for t in args.times:
        flops = 9 * N * N * B * H * t

        x = inputs(t)

        def fwd():
            with torch.inference_mode():
                wkv7(*x)

        s = median_time(fwd, args.runs)
        print(f"forward,{t},{s:.4f},{flops / s / 1e9:.2f}", flush=True)

        def fwd_bwd():
            xg = inputs(t, requires_grad=True)
            y, s_t = wkv7(*xg)
            (y.sum() + s_t.sum()).backward()

        s = median_time(fwd_bwd, args.runs)
        print(f"forward_backward,{t},{s:.4f},{flops / s / 1e9:.2f}", flush=True)


if __name__ == "__main__":
    main()
