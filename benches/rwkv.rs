//! RWKV-7 forward throughput: d_model=256, 4 layers, head size 64, T=512, B=8.
//!
//! `cargo bench --bench rwkv` (flex); `cargo bench --bench rwkv --features ndarray` adds the
//! ndarray backend side by side. Results: BENCHMARKS.md.

use std::time::Duration;

use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm::rwkv::RwkvConfig;
use colswarm_testing::perturb;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BATCH: usize = 8;
const TIME: usize = 512;

fn devices() -> Vec<(&'static str, Device)> {
    #[allow(unused_mut)]
    let mut devices = vec![("flex", Device::flex())];
    #[cfg(feature = "ndarray")]
    #[allow(deprecated)]
    devices.push(("ndarray", Device::ndarray()));
    devices
}

fn forward(c: &mut Criterion) {
    let config = RwkvConfig::new(260, 256, 4).with_head_size(64);
    let mut group = c.benchmark_group("rwkv_forward_d256_l4_t512_b8");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements((BATCH * TIME) as u64));
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let tokens: Vec<i64> = (0..BATCH * TIME)
        .map(|_| rng.random_range(0..256))
        .collect();
    for (name, device) in devices() {
        let model = perturb(config.init(0, &device), 1, 0.05);
        let tokens =
            Tensor::<2, Int>::from_data(TensorData::new(tokens.clone(), [BATCH, TIME]), &device);
        group.bench_function(BenchmarkId::from_parameter(name), |bench| {
            bench.iter(|| {
                let out = model.forward(tokens.clone(), None, None);
                // Reading the data forces the computation to finish.
                out.hidden.into_data()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, forward);
criterion_main!(benches);
