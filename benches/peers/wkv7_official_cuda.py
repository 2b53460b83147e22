"""The official RWKV-7 CUDA kernel (fp32, chunk 16) timed with CUDA events: the peer of the
`cube` group of crates/colswarm-kernels/benches/kernels.rs on an NVIDIA GPU.

Reads the kernel from a local clone of RWKV-LM (Apache-2.0; not part of this repository):

    git clone https://github.com/BlinkDL/RWKV-LM && git -C RWKV-LM checkout 524481d
    python3 benches/peers/wkv7_official_cuda.py --rwkv-lm RWKV-LM [--runs 20]

It compiles `RWKV-v7/train_temp/cuda/wkv7_cuda_fp32.cu` with PyTorch's extension loader (needs
torch with CUDA and nvcc), then times, per shape, the forward kernel alone and the forward
followed by the backward kernel, as the median of --runs runs after warm-up. Shapes: B = 8,
H = 4, N = 64 at T = 128, 512, 2048, and B = 8, T = 4096, H = 64. Inputs are RWKV-7-like
(unit-norm removal key, rate in (0, 1), decay in (0.545, 1)).
"""

import argparse
import os
import statistics

import torch
from torch.utils.cpp_extension import load

N = 64
CHUNK = 16
SHAPES = [(8, 128, 4), (8, 512, 4), (8, 2048, 4), (8, 4096, 64)]


def build(rwkv_lm):
    cuda = os.path.join(rwkv_lm, "RWKV-v7", "train_temp", "cuda")
    load(
        name="wind_backstepping",
        sources=[os.path.join(cuda, "wkv7_cuda_fp32.cu"), os.path.join(cuda, "wkv7_op_fp32.cpp")],
        is_python_module=False,
        verbose=False,
        extra_cuda_cflags=[
            "-res-usage",
            f"-D_C_={N}",
            f"-D_CHUNK_LEN_={CHUNK}",
            "--use_fast_math",
            "-O3",
            "-Xptxas -O3",
            "--extra-device-vectorization",
        ],
    )
    return torch.ops.wind_backstepping


def inputs(batch, time, heads):
    def seq(low, high):
        return torch.empty(batch, time, heads, N, device="cuda").uniform_(low, high)

    kappa = seq(-1.0, 1.0)
    kappa = kappa / kappa.norm(dim=-1, keepdim=True)
    rate = seq(0.0, 1.0)
    # The kernel's decay is exp(-exp(w)): a log-decay in (-0.6065, 0) is w = log(-log-decay).
    w_raw = torch.log(seq(1e-3, 0.6065))
    return dict(w=w_raw.contiguous(), q=seq(-1, 1), k=seq(-1, 1), v=seq(-1, 1), z=-kappa, a=kappa * rate)


def time_ms(fn, runs):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rwkv-lm", required=True, help="a local clone of BlinkDL/RWKV-LM")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    ops = build(args.rwkv_lm)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("shape,forward_ms,forward_backward_ms")
    for batch, time, heads in SHAPES:
        x = inputs(batch, time, heads)
        y = torch.empty_like(x["v"])
        s = torch.empty(batch, heads, time // CHUNK, N, N, device="cuda")
        sa = torch.empty_like(x["v"])
        dy = torch.randn_like(y)
        grads = [torch.empty_like(x["v"]) for _ in range(6)]

        def forward():
            ops.forward(x["w"], x["q"], x["k"], x["v"], x["z"], x["a"], y, s, sa)

        def forward_backward():
            forward()
            ops.backward(x["w"], x["q"], x["k"], x["v"], x["z"], x["a"], dy, s, sa, *grads)

        fwd, both = time_ms(forward, args.runs), time_ms(forward_backward, args.runs)
        print(f"B{batch}_T{time}_H{heads},{fwd:.4f},{both:.4f}")


if __name__ == "__main__":
    main()
