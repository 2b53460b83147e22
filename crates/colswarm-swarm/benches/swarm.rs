//! Swarm costs on this machine.
//!
//! - `specialists/*`: the specialist stage with 4 active specialists, run concurrently (one
//!   thread each, as the orchestrator does) against the same four reads one after another.
//! - `fusion/*`: router + alignment + fusion for N = 4, 16, 64 small specialists with k active.
//! - `specialist_read/*`: one read of a specialist of the shipped shape (d_model 64, 2 layers)
//!   for its states: the whole forward pass against the states alone
//!   (`Rwkv::read_wkv_states`, what the swarm runs).
//!
//! `cargo bench -p colswarm-swarm`; results in BENCHMARKS.md.

use std::time::Duration;

use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use colswarm_rwkv::RwkvConfig;
use colswarm_swarm::{
    FrozenSpecialist, FusionMode, LabelKind, OrchestratorConfig, RouterDecision, SpecialistStates,
    StateShape, Swarm, TableBatch,
};
use colswarm_testing::perturb;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn specialist_config() -> RwkvConfig {
    RwkvConfig::new(272, 128, 2).with_head_size(32)
}

fn table_batch(tables: usize, bytes: usize) -> TableBatch {
    TableBatch {
        tables: (0..tables)
            .map(|t| {
                (0..bytes)
                    .map(|i| ((i * 7 + t * 13) % 250) as u32)
                    .collect()
            })
            .collect(),
        queries: (0..tables).map(|_| vec![vec![1, 2, 3]; 4]).collect(),
        spans: (0..tables)
            .map(|_| (0..4).map(|c| c * bytes / 4..(c + 1) * bytes / 4).collect())
            .collect(),
        ngrams: Vec::new(),
        words: Vec::new(),
        cpa_pairs: Vec::new(),
    }
}

fn specialists(c: &mut Criterion) {
    let device = Device::flex();
    let config = specialist_config();
    let experts: Vec<FrozenSpecialist> = (0..4)
        .map(|i| {
            let model = perturb(config.init(i, &device), i + 10, 0.05);
            FrozenSpecialist::from_model(&format!("s{i}"), model, config.clone())
        })
        .collect();
    let shapes: Vec<StateShape> = experts.iter().map(FrozenSpecialist::state_shape).collect();
    let orchestrator = OrchestratorConfig::new(config.clone(), 8, LabelKind::SingleLabel, 4)
        .init(&shapes, 0, &device);
    let swarm = Swarm::new(orchestrator, experts).expect("consistent swarm");
    let batch = table_batch(4, 256);
    let all_active = vec![vec![true; 4]; 4];

    let mut group = c.benchmark_group("specialists_4_active_b4_t256");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    group.bench_function("concurrent", |b| {
        b.iter(|| swarm.run_specialists(&batch, &all_active))
    });
    let tables: Vec<&[u32]> = batch.tables.iter().map(Vec::as_slice).collect();
    group.bench_function("serial", |b| {
        b.iter(|| {
            for specialist in &swarm.specialists {
                let states = specialist.read(&tables, &device);
                let _ = states[0].clone().into_data();
            }
        })
    });
    group.finish();
}

fn fusion_scale(c: &mut Criterion) {
    let device = Device::flex();
    let primary = RwkvConfig::new(272, 128, 2).with_head_size(32);
    let batch = 8;
    let mut group = c.benchmark_group("router_alignment_fusion_b8_d128_l2");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for n in [4usize, 16, 64] {
        // Specialists with a different head size, so alignment does real work.
        let shape = StateShape {
            layers: 2,
            heads: 2,
            head_size: 64,
            d_model: 128,
        };
        let orchestrator = OrchestratorConfig::new(primary.clone(), 8, LabelKind::SingleLabel, 4)
            .with_fusion(FusionMode::WeightedSum)
            .init(&vec![shape; n], 0, &device);
        let read_state = orchestrator.primary.zero_state(batch, &device);
        let raw: Vec<Vec<Tensor<4>>> = (0..n)
            .map(|_| {
                (0..2)
                    .map(|_| Tensor::random([batch, 2, 64, 64], Distribution::Default, &device))
                    .collect()
            })
            .collect();
        let pooled = Tensor::<2>::random([batch, 128], Distribution::Default, &device);
        let mut counts = vec![1usize, n / 4, n];
        counts.dedup();
        for active in counts {
            let mask: Vec<Vec<bool>> = (0..batch)
                .map(|_| (0..n).map(|i| i < active).collect())
                .collect();
            group.bench_with_input(
                BenchmarkId::new(format!("n{n}"), active),
                &active,
                |b, _| {
                    b.iter(|| {
                        let decision: RouterDecision =
                            orchestrator.router.evaluate(pooled.clone(), mask.clone());
                        let aligned = orchestrator
                            .alignments
                            .iter()
                            .zip(&raw)
                            .map(|(a, s)| a.forward(s))
                            .collect();
                        let states = SpecialistStates {
                            aligned,
                            work: vec![(0, 0.0); n],
                            tokens: vec![vec![0; batch]; n],
                            columns: vec![None; n],
                        };
                        let fused = orchestrator.fuse(&read_state, &states, &decision);
                        fused.layers[1].wkv.clone().into_data()
                    })
                },
            );
        }
    }
    group.finish();
}

fn specialist_read(c: &mut Criterion) {
    let device = Device::flex();
    let config = RwkvConfig::new(267, 64, 2).with_head_size(32);
    let model = perturb(config.init(3, &device), 4, 0.05);
    let (tables, time) = (8, 128);
    let ids: Vec<i64> = (0..tables * time).map(|i| (i * 7 % 250) as i64).collect();
    let tokens =
        || Tensor::<2, Int>::from_data(TensorData::new(ids.clone(), [tables, time]), &device);
    let lengths = vec![time; tables];

    let mut group = c.benchmark_group("specialist_read_d64_l2_b8_t128");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("full_forward", |b| {
        b.iter(|| {
            let state = model.forward(tokens(), Some(&lengths), None).state;
            state
                .layers
                .into_iter()
                .map(|l| l.wkv.into_data())
                .collect::<Vec<_>>()
        })
    });
    group.bench_function("states_alone", |b| {
        b.iter(|| {
            let states = model.read_wkv_states(tokens(), Some(&lengths));
            states
                .into_iter()
                .map(Tensor::into_data)
                .collect::<Vec<_>>()
        })
    });
    group.finish();
}

criterion_group!(benches, specialists, fusion_scale, specialist_read);
criterion_main!(benches);
