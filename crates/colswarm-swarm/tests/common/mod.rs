//! What the swarm's behavioural tests build: small RWKV-7 configs, perturbed specialists and
//! swarms, and a two-table batch.

use burn::tensor::{Device, Tensor};
use colswarm_rwkv::RwkvConfig;
use colswarm_swarm::{
    FrozenSpecialist, FusionMode, LabelKind, OrchestratorConfig, Routing, Swarm, TableBatch,
};
use colswarm_testing::perturb;
use rand_chacha::ChaCha8Rng;

pub fn rwkv(d: usize, layers: usize, head: usize) -> RwkvConfig {
    RwkvConfig::new(64, d, layers)
        .with_head_size(head)
        .with_d_ffn(Some(2 * d))
        .with_decay_rank(Some(4))
        .with_icl_rank(Some(4))
        .with_value_rank(Some(4))
        .with_gate_rank(Some(4))
}

pub fn specialist(name: &str, config: RwkvConfig, seed: u64) -> FrozenSpecialist {
    let model = perturb(config.init(seed, &Device::flex()), seed + 1, 0.3);
    FrozenSpecialist::from_model(name, model, config)
}

pub fn config(mode: FusionMode) -> OrchestratorConfig {
    OrchestratorConfig::new(rwkv(16, 2, 8), 5, LabelKind::SingleLabel, 3)
        .with_fusion(mode)
        .with_d_head_hidden(8)
}

pub fn swarm(mode: FusionMode, device: &Device, specialists: Vec<FrozenSpecialist>) -> Swarm {
    swarm_of(config(mode), device, specialists)
}

/// A swarm of `config` with every weight moved off its initial value.
pub fn swarm_of(
    config: OrchestratorConfig,
    device: &Device,
    specialists: Vec<FrozenSpecialist>,
) -> Swarm {
    let shapes: Vec<_> = specialists
        .iter()
        .map(FrozenSpecialist::state_shape)
        .collect();
    let orchestrator = perturb(config.init(&shapes, 3, device), 4, 0.3);
    Swarm::new(orchestrator, specialists).unwrap()
}

pub fn batch() -> TableBatch {
    TableBatch {
        tables: vec![
            b"name,age\nann,31\nbob,45\n"
                .iter()
                .map(|&b| b as u32 % 64)
                .collect(),
            b"city;country\nOslo;NO\n"
                .iter()
                .map(|&b| b as u32 % 64)
                .collect(),
        ],
        queries: vec![
            vec![vec![1, 2, 3], vec![4, 5]],
            vec![vec![6, 7, 8, 9], vec![10], vec![11, 12]],
        ],
        spans: vec![vec![0..10, 10..23], vec![0..5, 5..13, 13..21]],
        ngrams: Vec::new(),
        words: Vec::new(),
        cpa_pairs: Vec::new(),
    }
}

pub fn values(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

pub type NoRng = ChaCha8Rng;

pub fn fixed(active: Vec<Vec<bool>>) -> Routing<'static, NoRng> {
    Routing::Fixed(active)
}
