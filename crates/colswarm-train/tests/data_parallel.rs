//! Data-parallel supervised training: two replicas on the CPU take the steps one device takes,
//! up to float rounding.

use std::path::{Path, PathBuf};

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};
use colswarm_model::SerializeSettings;
use colswarm_rwkv::{RwkvConfig, save_checkpoint};
use colswarm_swarm::Swarm;
use colswarm_train::{
    DataSettings, DataSpec, LossSettings, ModelSettings, OptimizerSettings, Regularization,
    RunSettings, SpecialistSpec, Stopping, TrainConfig, TrainOptions, train,
};

fn t2d_train() -> DataSpec {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/t2d-webtables/t2d.tar.gz");
    format!("t2d=t2d:{}#train", root.display()).parse().unwrap()
}

/// A tiny run: T2D (CTA and CPA targets), one random specialist (so the router draws masks),
/// batches of 5 tables (shards of 3 and 2), a checkpoint after every step.
fn tiny(dir: &Path) -> TrainConfig {
    let specialist = RwkvConfig::new(colswarm_tables::VOCAB_SIZE, 32, 1).with_head_size(16);
    let path = dir.join("a.safetensors");
    save_checkpoint(&specialist.init(7, &Device::flex()), &specialist, &path).unwrap();
    TrainConfig {
        model: ModelSettings {
            d_model: 32,
            n_layers: 1,
            head_size: 16,
            d_head_hidden: 16,
            specialists: vec![SpecialistSpec {
                name: "a".into(),
                path,
            }],
            ..ModelSettings::default()
        },
        data: DataSettings {
            train: vec![t2d_train()],
            serialize: SerializeSettings {
                max_table_tokens: 96,
                max_rows: 4,
                max_cell_bytes: 12,
                ..SerializeSettings::default()
            },
            max_tables: 16,
            ..DataSettings::default()
        },
        optimizer: OptimizerSettings {
            batch_size: 5,
            ..OptimizerSettings::default()
        },
        loss: LossSettings::default(),
        regularization: Regularization {
            // Its masks must not depend on how the batch is split.
            column_dropout: 0.2,
        },
        stopping: Stopping {
            epochs: 1,
            ..Stopping::default()
        },
        run: RunSettings {
            checkpoint_every: 1,
            keep_last: 100,
            log_every: 1,
            seed: 5,
            ..RunSettings::default()
        },
    }
}

fn checkpoints(run: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    all.sort();
    all
}

/// Every trainable weight of a checkpoint's orchestrator, in module order.
fn weights(checkpoint: &Path) -> Vec<f32> {
    struct Collect(Vec<f32>);
    impl ModuleVisitor for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let data = param.val().into_data();
            self.0.extend(data.try_into_vec_as::<f32>().unwrap());
        }
    }
    let (swarm, _) = Swarm::load(&checkpoint.join("model"), &Device::flex()).unwrap();
    let mut visitor = Collect(Vec::new());
    swarm.orchestrator.visit(&mut visitor);
    visitor.0
}

fn max_abs_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// `(step, loss, cta_loss, cpa_loss, activation_rate)` of every step.
fn step_log(run: &Path) -> Vec<[f64; 5]> {
    std::fs::read_to_string(run.join("log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "step")
        .map(|v| {
            let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
            [
                f("step"),
                f("loss"),
                f("cta_loss"),
                f("cpa_loss"),
                f("activation_rate"),
            ]
        })
        .collect()
}

#[test]
fn two_replicas_train_to_the_weights_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = tiny(dir.path());
    let one = dir.path().join("one");
    let two = dir.path().join("two");
    let a = train(&config, &one, &TrainOptions::default()).unwrap();
    let b = train(
        &config,
        &two,
        &TrainOptions {
            devices: vec![Device::flex(); 2],
            ..TrainOptions::default()
        },
    )
    .unwrap();
    assert!(a.finished && b.finished);
    assert_eq!(a.steps, b.steps);
    assert!(a.steps >= 3, "{} steps", a.steps);

    // The same losses (each shard's share of the batch's mean adds up to it) and the same
    // router masks (each shard's generator continues where the previous shard's tables end).
    let (log_one, log_two) = (step_log(&one), step_log(&two));
    eprintln!("steps (step, loss, cta, cpa, activation rate): {log_one:?}");
    assert_eq!(log_one.len(), a.steps);
    for (x, y) in log_one.iter().zip(&log_two) {
        assert_eq!(x[0], y[0]);
        assert_eq!(x[4], y[4], "activation rates differ: {x:?} vs {y:?}");
        for k in 1..4 {
            // NaN: no such part in this batch (no CPA target).
            let scale = x[k].abs().max(1e-3);
            assert!(
                (x[k].is_nan() && y[k].is_nan()) || (x[k] - y[k]).abs() / scale < 1e-5,
                "step {}: {x:?} vs {y:?}",
                x[0]
            );
        }
    }

    // The same weights after every step, up to rounding; the steps themselves are far larger.
    let (ckpt_one, ckpt_two) = (checkpoints(&one), checkpoints(&two));
    assert_eq!(ckpt_one.len(), ckpt_two.len());
    let mut largest = 0f32;
    for (x, y) in ckpt_one.iter().zip(&ckpt_two) {
        let difference = max_abs_difference(&weights(x), &weights(y));
        largest = largest.max(difference);
        assert!(
            difference < TOLERANCE,
            "{}: weights differ by {difference}",
            x.display()
        );
    }
    let moved = max_abs_difference(&weights(&ckpt_one[0]), &weights(ckpt_one.last().unwrap()));
    eprintln!("largest difference {largest}, weights moved {moved}");
    assert!(
        moved > 100.0 * TOLERANCE,
        "training moved the weights by {moved} only"
    );
}

/// Largest weight difference allowed between the one- and two-replica runs. Each step's
/// gradient is the same sum taken in another order, so it differs in the last bits (relative
/// differences ~1e-7); Adam's update `lr · m / (√v + ε)` carries that into the weights, which
/// then differ by a few float32 ulps (weights are O(1), ulp ~1e-7). Measured here: at most
/// 8.5e-7 over the 4 steps, against Adam's steps of about lr = 2e-3 per step (the weights move
/// by ~6e-3 from the first checkpoint to the last). 2e-5 leaves a margin of ~25 over the
/// measurement while staying 100 times below that movement, so a shard that routed, weighted
/// or summed differently would stand out.
const TOLERANCE: f32 = 2e-5;

/// The same steps on a CubeCL device (wgpu; Mesa's lavapipe in CI) as on the CPU.
#[cfg(feature = "wgpu")]
mod on_wgpu {
    use super::*;
    use colswarm_rwkv::DeviceChoice;

    fn wgpu() -> Device {
        DeviceChoice::Wgpu
            .device()
            .expect("a wgpu adapter (CI installs Mesa's lavapipe)")
    }

    /// Largest weight difference allowed between a step on wgpu and the same step on the CPU.
    /// The kernels sum in other orders (and the CubeCL WKV-7 backward per column), so the
    /// gradients differ in their last bits; Adam's first step, `lr · g / (|g| + ε)`, then
    /// differs by rounding except where a gradient is within rounding of zero, which moves the
    /// weight by up to `lr` either way. 1e-3 is a fifth of the shipped learning rate (5e-3):
    /// a gradient of the wrong sign or size anywhere that matters stands out.
    const STEP_TOLERANCE: f32 = 1e-3;

    #[test]
    fn one_step_on_wgpu_matches_the_cpu() {
        let dir = tempfile::tempdir().unwrap();
        let config = tiny(dir.path());
        let one_step = |devices: Vec<Device>, out: &Path| {
            let options = TrainOptions {
                devices,
                stop_after_steps: Some(1),
                ..TrainOptions::default()
            };
            let summary = train(&config, out, &options).unwrap();
            assert_eq!(summary.steps, 1);
        };
        let (cpu, gpu) = (dir.path().join("cpu"), dir.path().join("wgpu"));
        one_step(vec![Device::flex()], &cpu);
        one_step(vec![wgpu()], &gpu);

        let (log_cpu, log_gpu) = (step_log(&cpu), step_log(&gpu));
        assert_eq!(log_cpu.len(), 1);
        let (x, y) = (log_cpu[0], log_gpu[0]);
        assert_eq!(x[4], y[4], "activation rates differ: {x:?} vs {y:?}");
        for k in 1..4 {
            let scale = x[k].abs().max(1e-3);
            assert!(
                (x[k].is_nan() && y[k].is_nan()) || (x[k] - y[k]).abs() / scale < 1e-4,
                "losses differ: {x:?} (cpu) vs {y:?} (wgpu)"
            );
        }
        let (after_cpu, after_gpu) = (
            weights(&checkpoints(&cpu)[0]),
            weights(&checkpoints(&gpu)[0]),
        );
        let difference = max_abs_difference(&after_cpu, &after_gpu);
        eprintln!("weights after one step: cpu and wgpu differ by {difference}");
        assert!(
            difference < STEP_TOLERANCE,
            "weights differ by {difference}"
        );
    }

    /// Training on wgpu learns: over three epochs of the same tables the loss falls, and two
    /// replicas on the one adapter (`--replicas 2 --device wgpu`) run too.
    #[test]
    fn a_tiny_run_on_wgpu_lowers_the_loss() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = tiny(dir.path());
        config.data.max_tables = 10;
        config.stopping.epochs = 3;
        config.run.checkpoint_every = 0;
        let out = dir.path().join("run");
        let options = TrainOptions {
            devices: vec![wgpu(), wgpu()],
            ..TrainOptions::default()
        };
        let summary = train(&config, &out, &options).unwrap();
        assert!(summary.finished);
        let losses: Vec<f64> = step_log(&out).iter().map(|s| s[1]).collect();
        let per_epoch = losses.len() / 3;
        let mean = |part: &[f64]| part.iter().sum::<f64>() / part.len() as f64;
        let (first, last) = (mean(&losses[..per_epoch]), mean(&losses[2 * per_epoch..]));
        eprintln!("losses on wgpu: {losses:?}");
        assert!(last < first, "first epoch {first}, last {last}");
    }
}
