//! Behavioural tests of the whole swarm (the data flow of docs/ORCHESTRATOR.md §1).

use burn::module::Param;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_rwkv::checkpoint::named_tensors;
use colswarm_rwkv::save_checkpoint;
use colswarm_swarm::manifest::set_router_threshold;
use colswarm_swarm::{FrozenSpecialist, FusionMode, Routing, Swarm, SwarmError, TableBatch};
use colswarm_testing::perturb;
use rand_chacha::ChaCha8Rng;

mod common;
use common::*;

#[test]
fn an_inactive_specialist_cannot_change_any_output() {
    let device = Device::flex();
    for mode in [
        FusionMode::WeightedSum,
        FusionMode::Gated,
        FusionMode::ConcatProject,
    ] {
        let make = |seed| {
            swarm(
                mode,
                &device,
                vec![
                    specialist("a", rwkv(16, 2, 8), 10),
                    specialist("b", rwkv(16, 2, 8), seed),
                ],
            )
        };
        let active = vec![vec![true, false], vec![true, false]];
        let one = make(20).forward(&batch(), fixed(active.clone())).unwrap();
        let other = make(30).forward(&batch(), fixed(active)).unwrap();
        assert_eq!(values(one.cta_logits), values(other.cta_logits), "{mode:?}");
    }
}

#[test]
fn all_inactive_is_exactly_the_primary_alone() {
    let device = Device::flex();
    let s = swarm(
        FusionMode::WeightedSum,
        &device,
        vec![
            specialist("a", rwkv(16, 2, 8), 10),
            specialist("b", rwkv(32, 3, 16), 11),
        ],
    );
    let out = s
        .forward(&batch(), fixed(vec![vec![false, false]; 2]))
        .unwrap();
    let read = s.orchestrator.read_tables(&batch()).unwrap();
    let alone = s.orchestrator.answer(&read.state, &batch()) + read.column_pooled;
    assert_eq!(values(out.columns), values(alone));
    assert_eq!(out.steps.critical_steps(), out.steps.serial_steps());
}

#[test]
fn active_specialists_do_change_the_result() {
    let device = Device::flex();
    let s = swarm(
        FusionMode::WeightedSum,
        &device,
        vec![specialist("a", rwkv(16, 2, 8), 10)],
    );
    let on = s.forward(&batch(), fixed(vec![vec![true]; 2])).unwrap();
    let off = s.forward(&batch(), fixed(vec![vec![false]; 2])).unwrap();
    assert_ne!(values(on.columns), values(off.columns));
    assert!(on.steps.serial_steps() > off.steps.serial_steps());
}

#[test]
fn permuting_specialists_with_their_router_rows_permutes_nothing_else() {
    let device = Device::flex();
    let (a, b) = (rwkv(16, 2, 8), rwkv(32, 3, 16));
    let original = swarm(
        FusionMode::WeightedSum,
        &device,
        vec![
            specialist("a", a.clone(), 10),
            specialist("b", b.clone(), 11),
        ],
    );
    let o = &original.orchestrator;
    // Swap specialists, router columns, alignments and the fusion's per-agent biases.
    let mut swapped = o.clone();
    let swap_columns = |t: Tensor<2>| {
        let [_, n] = t.dims();
        assert_eq!(n, 2);
        Tensor::cat(vec![t.clone().narrow(1, 1, 1), t.narrow(1, 0, 1)], 1)
    };
    swapped.router.gate.weight = swapped.router.gate.weight.map(swap_columns);
    swapped.router.gate.bias = swapped
        .router
        .gate
        .bias
        .map(|b| b.map(|b| swap_columns(b.unsqueeze::<2>()).reshape([2])));
    swapped.alignments.swap(0, 1);
    swapped.fusion.agent_bias = swapped.fusion.agent_bias.map(|p| {
        p.map(|t| {
            let [_, agents, _] = t.dims();
            assert_eq!(agents, 3);
            Tensor::cat(
                vec![
                    t.clone().narrow(1, 0, 1),
                    t.clone().narrow(1, 2, 1),
                    t.narrow(1, 1, 1),
                ],
                1,
            )
        })
    });
    let permuted = Swarm::new(
        swapped,
        vec![specialist("b", b, 11), specialist("a", a, 10)],
    )
    .unwrap();
    let active = vec![vec![true, false], vec![true, true]];
    let swapped_active: Vec<Vec<bool>> = active.iter().map(|r| vec![r[1], r[0]]).collect();
    let x = original.forward(&batch(), fixed(active)).unwrap();
    let y = permuted.forward(&batch(), fixed(swapped_active)).unwrap();
    for (p, q) in values(x.cta_logits).iter().zip(values(y.cta_logits)) {
        assert!((p - q).abs() < 1e-5, "{p} vs {q}");
    }
    let (gx, gy) = (values(x.router.probs), values(y.router.probs));
    assert!((gx[0] - gy[1]).abs() < 1e-6 && (gx[1] - gy[0]).abs() < 1e-6);
}

#[test]
fn a_removed_specialist_leaves_the_swarm_answering_as_with_it_closed() {
    let device = Device::flex();
    for mode in [
        FusionMode::WeightedSum,
        FusionMode::Gated,
        FusionMode::ConcatProject,
    ] {
        let full = swarm(
            mode,
            &device,
            vec![
                specialist("a", rwkv(16, 2, 8), 10),
                specialist("b", rwkv(32, 3, 16), 11),
                specialist("c", rwkv(16, 2, 8), 12),
            ],
        );
        assert!(full.clone().without_specialist("nobody").is_none());
        let reduced = full.clone().without_specialist("b").unwrap();
        let names: Vec<&str> = reduced.specialists.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["a", "c"], "{mode:?}");
        assert_eq!(reduced.orchestrator.router.n_specialists(), 2);

        let with_b_closed = vec![vec![true, false, true], vec![false, false, true]];
        let without_b: Vec<Vec<bool>> = with_b_closed.iter().map(|r| vec![r[0], r[2]]).collect();
        let x = full.forward(&batch(), fixed(with_b_closed)).unwrap();
        let y = reduced.forward(&batch(), fixed(without_b)).unwrap();
        for (p, q) in values(x.cta_logits).iter().zip(values(y.cta_logits)) {
            assert!((p - q).abs() < 1e-5, "{mode:?}: {p} vs {q}");
        }
        let pairs = |o: Option<Tensor<2>>| o.map(values).unwrap_or_default();
        for (p, q) in pairs(x.cpa_logits).iter().zip(pairs(y.cpa_logits)) {
            assert!((p - q).abs() < 1e-5, "{mode:?}: {p} vs {q}");
        }
        let (gx, gy) = (values(x.router.probs), values(y.router.probs));
        for table in 0..2 {
            assert_eq!(gx[table * 3], gy[table * 2], "{mode:?}: gate of a");
            assert_eq!(gx[table * 3 + 2], gy[table * 2 + 1], "{mode:?}: gate of c");
        }

        // With none left, the swarm is its primary: what every specialist closed gives.
        let none = ["a", "c"]
            .iter()
            .fold(reduced, |s, name| s.without_specialist(name).unwrap());
        assert_eq!(none.orchestrator.router.n_specialists(), 0);
        let closed = full
            .forward(&batch(), fixed(vec![vec![false; 3], vec![false; 3]]))
            .unwrap();
        let alone = none.forward(&batch(), fixed(vec![vec![], vec![]])).unwrap();
        assert_eq!(
            values(closed.cta_logits),
            values(alone.cta_logits),
            "{mode:?}"
        );
    }
}

#[test]
fn gradients_reach_every_trainable_part_and_never_a_specialist() {
    let device = Device::flex().autodiff();
    // A differently shaped specialist, so its alignment has parameters.
    let s = swarm(
        FusionMode::WeightedSum,
        &device,
        vec![specialist("wide", rwkv(32, 3, 16), 12)],
    );
    let before = named_tensors(s.specialists[0].model());
    let out = s.forward(&batch(), fixed(vec![vec![true]; 2])).unwrap();
    let targets = Tensor::<2>::from_data(
        TensorData::new(
            (0..5 * 5)
                .map(|i| if i % 6 == 0 { 1.0f32 } else { 0.0 })
                .collect::<Vec<_>>(),
            [5, 5],
        ),
        &device,
    );
    let cpa = s.orchestrator.cpa_logits(&out, &[(0, 1), (2, 3), (2, 4)]);
    let loss = s.orchestrator.cta.loss(out.cta_logits, targets) + cpa.sum() * 0.1;
    let grads = loss.backward();
    let o = &s.orchestrator;
    let has_grad = |p: &Param<Tensor<2>>| {
        p.val()
            .grad(&grads)
            .map(|g| g.abs().sum().into_scalar::<f32>() > 0.0)
            .unwrap_or(false)
    };
    assert!(has_grad(&o.router.gate.weight), "router");
    assert!(has_grad(&o.cta.hidden.weight), "CTA head");
    assert!(has_grad(&o.cpa.hidden.weight), "CPA head");
    assert!(has_grad(&o.primary.emb.weight), "primary");
    let fusion_grad = o.fusion.agent_bias.as_ref().unwrap().val().grad(&grads);
    assert!(
        fusion_grad.is_some_and(|g| g.abs().sum().into_scalar::<f32>() > 0.0),
        "fusion"
    );
    let align = o.alignments[0]
        .value_map
        .as_ref()
        .unwrap()
        .val()
        .grad(&grads);
    assert!(
        align.is_some_and(|g| g.abs().sum().into_scalar::<f32>() > 0.0),
        "alignment"
    );
    // The specialist lives off autodiff: it has no gradient to give.
    assert!(!s.specialists[0].model().emb.weight.val().is_autodiff());

    // An optimizer step over the orchestrator leaves the specialist untouched.
    let mut optim = AdamConfig::new().init();
    let grads = GradientsParams::from_grads(grads, &s.orchestrator);
    let stepped = optim.step(1e-2, s.orchestrator.clone(), grads);
    assert_ne!(
        named_tensors(&stepped.primary)[0].values,
        named_tensors(&s.orchestrator.primary)[0].values
    );
    let after = named_tensors(s.specialists[0].model());
    for (x, y) in before.iter().zip(&after) {
        assert!(
            x.values == y.values,
            "specialist tensor `{}` changed",
            x.name
        );
    }
}

#[test]
fn manifest_round_trips_and_refuses_a_changed_specialist() {
    let device = Device::flex();
    let dir = std::env::temp_dir().join(format!("colswarm-swarm-manifest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let spec_path = dir.join("spec.safetensors");
    let spec_config = rwkv(32, 3, 16);
    save_checkpoint(
        &perturb(spec_config.init(5, &device), 6, 0.3),
        &spec_config,
        &spec_path,
    )
    .unwrap();
    let loaded = FrozenSpecialist::load("wide", &spec_path, &device).unwrap();
    let s = swarm(FusionMode::ConcatProject, &device, vec![loaded]);
    let labels: Vec<String> = (0..5).map(|i| format!("type{i}")).collect();
    s.save(&dir, &config(FusionMode::ConcatProject), &labels, &[])
        .unwrap();

    let (back, manifest) = Swarm::load(&dir, &device).unwrap();
    assert_eq!(manifest.cta_labels, labels);
    assert_eq!(manifest.specialists[0].checkpoint.path, "spec.safetensors");
    let active = vec![vec![true]; 2];
    let x = s.forward(&batch(), fixed(active.clone())).unwrap();
    let y = back.forward(&batch(), fixed(active)).unwrap();
    assert_eq!(values(x.cta_logits), values(y.cta_logits));

    // Replace the specialist with other weights: the manifest's checksum no longer matches.
    save_checkpoint(&spec_config.init(99, &device), &spec_config, &spec_path).unwrap();
    let err = Swarm::load(&dir, &device).unwrap_err();
    assert!(matches!(err, SwarmError::ChecksumMismatch { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("specialist \"wide\"") && message.contains("spec.safetensors"),
        "{message}"
    );
}

#[test]
fn a_stored_router_threshold_decides_which_specialists_open() {
    let device = Device::flex();
    let dir = std::env::temp_dir().join(format!("colswarm-swarm-threshold-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = swarm(
        FusionMode::WeightedSum,
        &device,
        vec![
            specialist("a", rwkv(16, 2, 8), 10),
            specialist("b", rwkv(16, 2, 8), 11),
        ],
    );
    let labels: Vec<String> = (0..5).map(|i| format!("type{i}")).collect();
    s.save(&dir, &config(FusionMode::WeightedSum), &labels, &[])
        .unwrap();
    let opened = |dir: &std::path::Path| {
        let (loaded, manifest) = Swarm::load(dir, &device).unwrap();
        let out = loaded
            .forward(&batch(), Routing::<NoRng>::Threshold)
            .unwrap();
        (
            manifest.config.threshold,
            out.router.active,
            values(out.cta_logits),
        )
    };
    let before = std::fs::read_dir(&dir).unwrap().count();

    // τ = 0: every gate, a sigmoid, lies above it.
    set_router_threshold(&dir, 0.0).unwrap();
    let (threshold, active, _) = opened(&dir);
    assert_eq!(threshold, 0.0);
    assert_eq!(active, vec![vec![true, true]; 2]);

    // τ = 1 closes every specialist: the primary alone, bit for bit.
    let manifest = set_router_threshold(&dir.join("swarm.json"), 1.0).unwrap();
    assert_eq!(manifest.config.threshold, 1.0);
    let (threshold, active, logits) = opened(&dir);
    assert_eq!(threshold, 1.0);
    assert_eq!(active, vec![vec![false, false]; 2]);
    let alone = s
        .forward(&batch(), fixed(vec![vec![false, false]; 2]))
        .unwrap();
    assert_eq!(logits, values(alone.cta_logits));
    // Only the manifest changed: no file was added, and every checksum still holds (it loaded).
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before);

    for bad in [-0.1, 1.5, f64::NAN] {
        let err = set_router_threshold(&dir, bad).unwrap_err();
        assert!(matches!(err, SwarmError::Input(_)), "{bad}: {err}");
    }
    assert_eq!(
        opened(&dir).0,
        1.0,
        "a refused threshold leaves the manifest as it was"
    );
    let missing = dir.join("no-such-model");
    let err = set_router_threshold(&missing, 0.5).unwrap_err();
    assert!(err.to_string().contains("no-such-model"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn empty_inputs_are_clear_errors() {
    let device = Device::flex();
    let s = swarm(
        FusionMode::Gated,
        &device,
        vec![specialist("a", rwkv(16, 2, 8), 10)],
    );
    let empty = TableBatch::default();
    assert!(matches!(
        s.forward(&empty, fixed(vec![])),
        Err(SwarmError::Input(_))
    ));
    let mut bad = batch();
    bad.queries[1][2].clear();
    let err = s.forward(&bad, fixed(vec![vec![false]; 2])).unwrap_err();
    assert!(err.to_string().contains("table 1, column 2"), "{err}");
}

#[test]
fn the_forward_pass_scores_the_cpa_pairs_the_batch_asks_for() {
    let device = Device::flex();
    let s = swarm(
        FusionMode::WeightedSum,
        &device,
        vec![specialist("wide", rwkv(32, 3, 16), 12)],
    );
    let plain = s.forward(&batch(), fixed(vec![vec![true]; 2])).unwrap();
    assert!(plain.cpa_logits.is_none(), "no pairs asked, none scored");
    let mut asking = batch();
    asking.cpa_pairs = vec![vec![(0, 1)], vec![(1, 0), (0, 1)]];
    let out = s.forward(&asking, fixed(vec![vec![true]; 2])).unwrap();
    // The first table has two columns, so the second's start at row 2.
    let after = s.orchestrator.cpa_logits(&plain, &[(0, 1), (3, 2), (2, 3)]);
    let inside = out.cpa_logits.expect("pairs asked for");
    assert_eq!(inside.dims(), after.dims());
    assert_eq!(values(inside), values(after));
}

#[test]
fn a_mask_drawn_on_the_device_gives_the_host_masks_answers() {
    use rand::SeedableRng;
    let device = Device::flex();
    let specialists = vec![
        specialist("a", rwkv(16, 2, 8), 10),
        specialist("wide", rwkv(32, 3, 16), 11),
    ];
    let mut mixed = 0;
    for mode in [
        FusionMode::WeightedSum,
        FusionMode::Gated,
        FusionMode::ConcatProject,
    ] {
        let s = swarm_of(
            config(mode).with_column_fusion(true),
            &device,
            specialists.clone(),
        );
        for seed in 0..6 {
            let host = s
                .forward(
                    &batch(),
                    Routing::Sample(&mut ChaCha8Rng::seed_from_u64(seed)),
                )
                .unwrap();
            let on_device = s
                .forward(
                    &batch(),
                    Routing::SampleOnDevice(&mut ChaCha8Rng::seed_from_u64(seed)),
                )
                .unwrap();
            assert!(on_device.router.on_device);
            let mask: Vec<bool> = values(on_device.router.mask.clone())
                .iter()
                .map(|&m| m == 1.0)
                .collect();
            let active: Vec<bool> = host.router.active.concat();
            assert_eq!(mask, active, "{mode:?}, seed {seed}");
            if active.iter().any(|&a| a) && !active.iter().all(|&a| a) {
                mixed += 1;
            }
            for (got, want) in [
                (on_device.columns, host.columns),
                (on_device.cta_logits, host.cta_logits),
            ] {
                for (k, (g, w)) in values(got).iter().zip(values(want)).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "{mode:?} {k}: {g} {w}"
                    );
                }
            }
        }
    }
    assert!(
        mixed > 3,
        "masks that open some specialists but not all: {mixed}"
    );
}

#[test]
fn a_swarm_without_specialists_saves_no_router_or_fusion_and_older_ones_still_load() {
    let device = Device::flex();
    let dir = tempfile::tempdir().unwrap();
    let alone = swarm(FusionMode::WeightedSum, &device, Vec::new());
    let labels: Vec<String> = (0..5).map(|i| format!("type{i}")).collect();
    let manifest = alone
        .save(dir.path(), &config(FusionMode::WeightedSum), &labels, &[])
        .unwrap();
    assert!(manifest.router.is_none() && manifest.fusion.is_none());
    for file in ["router.safetensors", "fusion.safetensors"] {
        assert!(!dir.path().join(file).exists(), "{file} written");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("swarm.json")).unwrap()).unwrap();
    assert!(json["router"].is_null() && json["fusion"].is_null());
    let answers = |s: &Swarm| {
        values(
            s.forward(&batch(), Routing::<NoRng>::Threshold)
                .unwrap()
                .cta_logits,
        )
    };
    let (loaded, _) = Swarm::load(dir.path(), &device).unwrap();
    assert_eq!(answers(&loaded), answers(&alone));

    // A directory written when every swarm had both files: they are checked and loaded.
    let mut json = serde_json::to_value(&manifest).unwrap();
    let router = &alone.orchestrator.router;
    let fusion = &alone.orchestrator.fusion;
    for (key, path) in [
        ("router", "router.safetensors"),
        ("fusion", "fusion.safetensors"),
    ] {
        let file = dir.path().join(path);
        let empty = std::collections::HashMap::new();
        match key {
            "router" => colswarm_rwkv::checkpoint::save_module(router, empty, &file).unwrap(),
            _ => colswarm_rwkv::checkpoint::save_module(fusion, empty, &file).unwrap(),
        }
        let sha256 = colswarm_swarm::manifest::sha256_file(&file).unwrap();
        json[key] = serde_json::json!({ "path": path, "sha256": sha256 });
    }
    std::fs::write(
        dir.path().join("swarm.json"),
        serde_json::to_vec_pretty(&json).unwrap(),
    )
    .unwrap();
    let (loaded, read) = Swarm::load(dir.path(), &device).unwrap();
    assert!(read.router.is_some() && read.fusion.is_some());
    assert_eq!(answers(&loaded), answers(&alone));

    let routed = swarm(
        FusionMode::WeightedSum,
        &device,
        vec![specialist("a", rwkv(16, 2, 8), 10)],
    );
    let old = tempfile::tempdir().unwrap();
    let with_files = routed
        .save(old.path(), &config(FusionMode::WeightedSum), &labels, &[])
        .unwrap();
    // A routed swarm whose manifest names no router is refused, naming what is missing.
    let mut json = serde_json::to_value(&with_files).unwrap();
    json["router"] = serde_json::Value::Null;
    std::fs::write(
        old.path().join("swarm.json"),
        serde_json::to_vec_pretty(&json).unwrap(),
    )
    .unwrap();
    let err = Swarm::load(old.path(), &device).unwrap_err().to_string();
    assert!(err.contains("no file for the router"), "{err}");
}
