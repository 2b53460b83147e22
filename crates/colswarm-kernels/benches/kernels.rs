//! Reference vs fused WKV-7 and state fusion on the CPU (burn Flex), plus the machine's fp32
//! matmul rate measured in the same process as the yardstick.
//!
//! `cargo bench -p colswarm-kernels --bench kernels`. Sizes: B = 8, H = 4, N = 64,
//! T ∈ {128, 512, 2048}. The WKV-7 throughput is reported in FLOP/s of the forward
//! recurrence (9·N² per head per token). The reference's forward+backward at T = 2048 takes
//! minutes per iteration (burn's O(T²) backward of per-step slices) and only runs with
//! `COLSWARM_BENCH_SLOW=1`. With `--features wgpu`, a `cube` group times the CubeCL kernels
//! on wgpu's default adapter. The `rwkv_block_ops` group times the fused linear map, layer norm,
//! sigmoid, tanh and a time mix's six token-shift mixes against burn's own ops at the sizes of
//! one annotation batch (16 tables of 128 tokens at d_model 64: 2,048 rows); the
//! `embedding_bag` group the column n-gram embedding of such a batch with neighbour n-grams (80
//! bags of 2,000 n-grams over 16,384 × 64 rows, the table in `f32` and in half floats), against
//! the same sum as a plain loop, and the `bag_sum` group one n-gram reader's
//! scores (300 n-grams over 1,024 × 273 weights). Results: BENCHMARKS.md, "Kernels".

use std::time::Duration;

use burn::tensor::{Device, Distribution, Tensor};
use colswarm_kernels::activation::{sigmoid_with, tanh_with};
use colswarm_kernels::embedding_bag::{bag_sum, embedding_bag_with};
use colswarm_kernels::layer_norm::layer_norm_with;
use colswarm_kernels::linear::linear_with;
use colswarm_kernels::token_shift_mix::token_shift_mix_with;
use colswarm_kernels::{
    KernelImpl, Then, fuse_states_with, linear, linear_then, sigmoid, wkv7_with,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const BATCH: usize = 8;
const HEADS: usize = 4;
const N: usize = 64;
const TIMES: [usize; 3] = [128, 512, 2048];
const IMPLS: [KernelImpl; 3] = [
    KernelImpl::Reference,
    KernelImpl::Fused,
    KernelImpl::FusedSerial,
];

/// The language-model shape of the official RWKV-7 kernel's benchmarks: B = 8, T = 4096,
/// H = 64 (timed on GPUs only).
#[cfg(feature = "wgpu")]
const LM_SHAPE: [usize; 3] = [8, 4096, 64];

/// Forward FLOPs of the recurrence: 9·N² per head per token.
fn wkv7_flops(time: usize) -> u64 {
    wkv7_flops_of(BATCH, time, HEADS)
}

fn wkv7_flops_of(batch: usize, time: usize, heads: usize) -> u64 {
    (9 * N * N * batch * heads * time) as u64
}

/// RWKV-7-like inputs on `device`: unit-norm removal key, rate in (0, 1), log-decay in
/// (−0.6065, 0).
fn inputs(time: usize, device: &Device) -> [Tensor<4>; 7] {
    inputs_of(BATCH, time, HEADS, device)
}

fn inputs_of(batch: usize, time: usize, heads: usize, device: &Device) -> [Tensor<4>; 7] {
    let seq = |d| Tensor::<4>::random([batch, time, heads, N], d, device);
    let kappa = seq(Distribution::Uniform(-1.0, 1.0));
    let kappa = kappa.clone() / (kappa.powf_scalar(2.0).sum_dim(3).sqrt() + 1e-12);
    let rate = seq(Distribution::Uniform(0.0, 1.0));
    [
        seq(Distribution::Uniform(-1.0, 1.0)),
        seq(Distribution::Uniform(-0.6065, 0.0)),
        seq(Distribution::Uniform(-1.0, 1.0)),
        seq(Distribution::Uniform(-1.0, 1.0)),
        -kappa.clone(),
        kappa * rate,
        Tensor::random(
            [batch, heads, N, N],
            Distribution::Uniform(-0.1, 0.1),
            device,
        ),
    ]
}

fn run(imp: KernelImpl, x: [Tensor<4>; 7]) -> (Tensor<4>, Tensor<4>) {
    let [r, log_w, k, v, a, b, state] = x;
    wkv7_with(imp, r, log_w, k, v, a, b, state)
}

fn name(imp: KernelImpl) -> &'static str {
    match imp {
        KernelImpl::Reference => "reference",
        KernelImpl::Fused => "fused",
        KernelImpl::FusedSerial => "fused_1thread",
    }
}

fn slow_enabled() -> bool {
    std::env::var_os("COLSWARM_BENCH_SLOW").is_some()
}

/// The yardstick: burn Flex's fp32 matmul, 1024³ (2·1024³ FLOP).
fn matmul(c: &mut Criterion) {
    let device = Device::flex();
    let m = 1024;
    let lhs = Tensor::<2>::random([m, m], Distribution::Default, &device);
    let rhs = Tensor::<2>::random([m, m], Distribution::Default, &device);
    let mut group = c.benchmark_group("fp32_matmul");
    group.throughput(Throughput::Elements(2 * (m * m * m) as u64));
    group.sample_size(20);
    group.bench_function("flex_1024", |bench| {
        bench.iter(|| lhs.clone().matmul(rhs.clone()).into_data())
    });
    group.finish();
}

/// The fused element-wise and linear ops of an RWKV-7 block against burn's, forward only (as
/// in annotation), on 2,048 rows.
fn rwkv_block_ops(c: &mut Criterion) {
    const ROWS: usize = 2048;
    let device = Device::flex();
    let random =
        |shape: [usize; 2]| Tensor::<2>::random(shape, Distribution::Normal(0.0, 1.0), &device);
    let (x, hidden) = (random([ROWS, 64]), random([ROWS, 256]));
    // The same rows as 16 sequences of 128 tokens, and the tokens before them.
    let (sequences, shift) = (x.clone().reshape([16, ROWS / 16, 64]), random([16, 64]));
    let mus: Vec<Tensor<1>> = (0..6)
        .map(|_| Tensor::random([64], Distribution::Uniform(0.0, 1.0), &device))
        .collect();
    let weights = [random([64, 64]), random([64, 256]), random([256, 64])];
    let (gamma, beta) = (
        Tensor::<1>::ones([64], &device),
        Tensor::<1>::zeros([64], &device),
    );
    let mut group = c.benchmark_group("rwkv_block_ops_rows2048");
    group.sample_size(30);
    for imp in [KernelImpl::Reference, KernelImpl::FusedSerial] {
        for weight in &weights {
            let [d_in, d_out] = weight.dims();
            let input = if d_in == 64 { &x } else { &hidden };
            group.bench_function(
                BenchmarkId::new(format!("linear_{d_in}x{d_out}"), name(imp)),
                |bench| bench.iter(|| linear_with(imp, input.clone(), weight.clone()).into_data()),
            );
        }
        group.bench_function(BenchmarkId::new("layer_norm_64", name(imp)), |bench| {
            bench.iter(|| {
                layer_norm_with(imp, x.clone(), gamma.clone(), beta.clone(), 1e-5).into_data()
            })
        });
        group.bench_function(BenchmarkId::new("sigmoid_64", name(imp)), |bench| {
            bench.iter(|| sigmoid_with(imp, x.clone()).into_data())
        });
        group.bench_function(BenchmarkId::new("tanh_64", name(imp)), |bench| {
            bench.iter(|| tanh_with(imp, x.clone()).into_data())
        });
        // The decay LoRA's second product, bias, sigmoid and scale: separate ops (the
        // reference row: the linear kernel, a sum, the fused sigmoid, a product) against one
        // pass of the kernel with its epilogue.
        let (lora_in, lora_out, bias) = (random([ROWS, 32]), random([32, 64]), random([1, 64]));
        let bias = bias.reshape([64]);
        group.bench_function(
            BenchmarkId::new("decay_lora_out_32x64", name(imp)),
            |bench| {
                bench.iter(|| {
                    let then = Then::BiasSigmoid {
                        bias: bias.clone(),
                        scale: -0.6,
                    };
                    if imp == KernelImpl::Reference {
                        let c =
                            linear(lora_in.clone(), lora_out.clone()) + bias.clone().unsqueeze();
                        (sigmoid(c) * -0.6).into_data()
                    } else {
                        linear_then(lora_in.clone(), lora_out.clone(), then).into_data()
                    }
                })
            },
        );
        // A time mix's six token-shift mixes (eager on Flex: computed by the call).
        group.bench_function(
            BenchmarkId::new("token_shift_mix_6x64", name(imp)),
            |bench| {
                bench.iter(|| {
                    std::hint::black_box(token_shift_mix_with(
                        imp,
                        sequences.clone(),
                        shift.clone(),
                        &mus,
                    ))
                })
            },
        );
    }
    group.finish();
}

fn wkv7_forward(c: &mut Criterion) {
    let device = Device::flex();
    let mut group = c.benchmark_group("wkv7_forward_b8_h4_n64");
    group.sample_size(10).warm_up_time(Duration::from_secs(1));
    for time in TIMES {
        group.throughput(Throughput::Elements(wkv7_flops(time)));
        let x = inputs(time, &device);
        for imp in IMPLS {
            group.bench_with_input(BenchmarkId::new(name(imp), time), &x, |bench, x| {
                bench.iter(|| {
                    let (y, s) = run(imp, x.clone());
                    (y.into_data(), s.into_data())
                })
            });
        }
    }
    group.finish();
}

fn wkv7_forward_backward(c: &mut Criterion) {
    let device = Device::flex().autodiff();
    let mut group = c.benchmark_group("wkv7_forward_backward_b8_h4_n64");
    group.sample_size(10).warm_up_time(Duration::from_secs(1));
    for time in TIMES {
        group.throughput(Throughput::Elements(wkv7_flops(time)));
        let x = inputs(time, &device);
        for imp in IMPLS {
            if imp == KernelImpl::Reference && time > 512 && !slow_enabled() {
                continue;
            }
            group.bench_with_input(BenchmarkId::new(name(imp), time), &x, |bench, x| {
                bench.iter(|| {
                    let x = x.clone().map(|t| t.detach().require_grad());
                    let (y, s) = run(imp, x.clone());
                    let grads = (y.sum() + s.sum()).backward();
                    x.map(|t| t.grad(&grads).map(|g| g.into_data()))
                })
            });
        }
    }
    group.finish();
}

/// State fusion of 8 agents' states: [8, 8, 4, 64, 64] (4 MiB) → [8, 4, 64, 64].
fn fuse_states(c: &mut Criterion) {
    let (agents, device) = (8, Device::flex().autodiff());
    let states = Tensor::<5>::random([BATCH, agents, HEADS, N, N], Distribution::Default, &device);
    let weights = Tensor::<3>::random([BATCH, agents, HEADS], Distribution::Default, &device);
    let mut group = c.benchmark_group("fuse_states_b8_a8_h4_n64");
    group.sample_size(20).warm_up_time(Duration::from_secs(1));
    for imp in IMPLS {
        group.bench_function(BenchmarkId::new("forward", name(imp)), |bench| {
            bench.iter(|| fuse_states_with(imp, states.clone(), weights.clone()).into_data())
        });
        group.bench_function(BenchmarkId::new("forward_backward", name(imp)), |bench| {
            bench.iter(|| {
                let (s, w) = (
                    states.clone().require_grad(),
                    weights.clone().require_grad(),
                );
                let grads = fuse_states_with(imp, s.clone(), w.clone()).sum().backward();
                (
                    s.grad(&grads).map(|g| g.into_data()),
                    w.grad(&grads).map(|g| g.into_data()),
                )
            })
        });
    }
    group.finish();
}

/// The CubeCL kernels against the reference on the same CubeCL device (wgpu's default
/// adapter), with that device's fp32 matmul as the yardstick. Built with `--features wgpu`;
/// on Mesa's lavapipe (no GPU) the timings say nothing about a GPU. Each iteration ends with
/// `Device::sync`, not a read-back: the times are the kernels' plus launch overhead, as a GPU
/// timer would measure them, without the copy of the results to the host.
#[cfg(feature = "wgpu")]
fn cube(c: &mut Criterion) {
    let device = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);
    let sync = || device.sync().expect("wgpu device sync");
    let mut group = c.benchmark_group("cube");
    group.sample_size(10).warm_up_time(Duration::from_secs(1));
    let m = 1024;
    let a = Tensor::<2>::random([m, m], Distribution::Default, &device);
    group.throughput(Throughput::Elements(2 * (m * m * m) as u64));
    group.bench_function("fp32_matmul_1024", |bench| {
        bench.iter(|| {
            let product = a.clone().matmul(a.clone());
            sync();
            product
        })
    });
    let shapes = TIMES
        .map(|time| [BATCH, time, HEADS])
        .into_iter()
        .chain([LM_SHAPE]);
    for [batch, time, heads] in shapes {
        let label = format!("B{batch}_T{time}_H{heads}");
        group.throughput(Throughput::Elements(wkv7_flops_of(batch, time, heads)));
        let x = inputs_of(batch, time, heads, &device);
        for imp in [KernelImpl::Reference, KernelImpl::Fused] {
            if imp == KernelImpl::Reference && (time > 512 || heads > HEADS) && !slow_enabled() {
                continue;
            }
            let id = BenchmarkId::new(format!("wkv7_forward_{}", name(imp)), &label);
            group.bench_with_input(id, &x, |bench, x| {
                bench.iter(|| {
                    let out = run(imp, x.clone());
                    sync();
                    out
                })
            });
        }
        let x = inputs_of(batch, time, heads, &device.clone().autodiff());
        // A launch wgpu refused would time as nothing at all: check once that every
        // gradient came back finite and not all zero.
        {
            let x = x.clone().map(|t| t.detach().require_grad());
            let (y, s) = run(KernelImpl::Fused, x.clone());
            let grads = (y.sum() + s.sum()).backward();
            for t in &x {
                let total: f32 = t.grad(&grads).expect("tracked").abs().sum().into_scalar();
                assert!(
                    total.is_finite() && total > 0.0,
                    "{label}: gradient sum {total}"
                );
            }
        }
        let id = BenchmarkId::new("wkv7_forward_backward_fused", &label);
        group.bench_with_input(id, &x, |bench, x| {
            bench.iter(|| {
                let x = x.clone().map(|t| t.detach().require_grad());
                let (y, s) = run(KernelImpl::Fused, x.clone());
                let grads = (y.sum() + s.sum()).backward();
                let grads = x.map(|t| t.grad(&grads));
                sync();
                grads
            })
        });
    }
    group.finish();
}

fn embedding_bag(c: &mut Criterion) {
    const BUCKETS: u32 = 16384;
    let device = Device::flex();
    let weight = Tensor::<2>::random(
        [BUCKETS as usize, 64],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    // A fixed pseudo-random stream (SplitMix64) of buckets, each with weight 0.01.
    let mut state = 0u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % u64::from(BUCKETS)) as u32
    };
    let bags: Vec<Vec<(u32, f32)>> = (0..80)
        .map(|_| (0..2000).map(|_| (next(), 0.01)).collect())
        .collect();
    let refs: Vec<&[(u32, f32)]> = bags.iter().map(Vec::as_slice).collect();
    let mut group = c.benchmark_group("embedding_bag_80x2000_d64");
    group.sample_size(30);
    for imp in [KernelImpl::Reference, KernelImpl::FusedSerial] {
        group.bench_function(name(imp), |bench| {
            bench.iter(|| embedding_bag_with(imp, weight.clone(), &refs).into_data())
        });
    }
    // The same weight held in half floats (as shipped models store their n-gram tables).
    let half = weight.clone().cast(burn::tensor::DType::F16);
    group.bench_function("fused_1thread_f16_weight", |bench| {
        bench.iter(|| embedding_bag_with(KernelImpl::FusedSerial, half.clone(), &refs).into_data())
    });
    let rows = weight.clone().into_data().try_to_vec::<f32>().unwrap();
    group.bench_function("plain_loop", |bench| {
        bench.iter(|| {
            let mut out = vec![0.0f32; refs.len() * 64];
            for (sum, bag) in out.chunks_exact_mut(64).zip(&refs) {
                plain_bag_sum(sum, &rows, bag);
            }
            out
        })
    });
    group.finish();

    // An n-gram reader's scores for one column: 300 n-grams over 1,024 buckets × 273 labels
    // (T2D's types), the plain loop against the dispatched kernel.
    const LABELS: usize = 273;
    let rows: Vec<f32> = (0..1024 * LABELS)
        .map(|i| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5)
        .collect();
    let bag: Vec<(u32, f32)> = (0..300).map(|_| (next() % 1024, 0.05)).collect();
    let mut group = c.benchmark_group("bag_sum_300_of_1024x273");
    group.bench_function("plain_loop", |bench| {
        bench.iter(|| {
            let mut sum = vec![0.0f32; LABELS];
            plain_bag_sum(&mut sum, &rows, &bag);
            sum
        })
    });
    group.bench_function("bag_sum", |bench| {
        bench.iter(|| {
            let mut sum = vec![0.0f32; LABELS];
            bag_sum(&mut sum, &rows, &bag);
            sum
        })
    });
    group.finish();
}

/// The weighted row sum as a plain loop, as the workspace's baseline target compiles it.
fn plain_bag_sum(sum: &mut [f32], rows: &[f32], bag: &[(u32, f32)]) {
    let d = sum.len();
    for &(bucket, value) in bag {
        let row = &rows[bucket as usize * d..(bucket as usize + 1) * d];
        for (s, &w) in sum.iter_mut().zip(row) {
            *s += value * w;
        }
    }
}

#[cfg(not(feature = "wgpu"))]
criterion_group!(
    benches,
    matmul,
    rwkv_block_ops,
    embedding_bag,
    wkv7_forward,
    wkv7_forward_backward,
    fuse_states
);
#[cfg(feature = "wgpu")]
criterion_group!(
    benches,
    matmul,
    rwkv_block_ops,
    embedding_bag,
    wkv7_forward,
    wkv7_forward_backward,
    fuse_states,
    cube
);
criterion_main!(benches);
