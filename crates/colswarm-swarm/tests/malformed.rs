//! The malformed model-directory corpus in `tests/malformed/`: a tiny well-formed model
//! (`swarm.json` and its component files) and, beside it, broken manifests and component files.
//! Every broken manifest gives its own specific error, and the message names the file at fault
//! (and the component or tensor, where one is).
//!
//! The files are committed; `regenerate_malformed_corpus` (ignored) writes them again:
//! `cargo test --workspace --test malformed regenerate -- --ignored`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::tensor::Device;
use colswarm_rwkv::checkpoint::save_module;
use colswarm_rwkv::{RwkvConfig, RwkvError, save_checkpoint};
use colswarm_swarm::{
    FrozenSpecialist, LabelKind, OrchestratorConfig, SpecialistRouterConfig, Swarm, SwarmError,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/malformed")).join(name)
}

/// Loads a corpus manifest and returns the error, checking that it names `file`.
fn load_error(manifest: &str, file: &str) -> SwarmError {
    let error = Swarm::load(&corpus(manifest), &Device::flex())
        .map(|_| ())
        .expect_err("malformed input must fail");
    assert!(
        error.to_string().contains(file),
        "{manifest}: `{error}` should name {file}"
    );
    error
}

fn reason(error: &SwarmError) -> &str {
    match error {
        SwarmError::Manifest { reason, .. } => reason,
        other => panic!("expected an invalid-manifest error, got {other}"),
    }
}

#[test]
fn the_well_formed_model_loads() {
    let (swarm, manifest) = Swarm::load(&corpus("swarm.json"), &Device::flex()).unwrap();
    assert_eq!(swarm.specialists.len(), 1);
    assert_eq!(manifest.cta_labels.len(), 3);
}

#[test]
fn manifests() {
    let error = load_error("not_json.json", "not_json.json");
    assert!(reason(&error).contains("EOF"), "{error}");
    let error = load_error("wrong_format.json", "wrong_format.json");
    assert!(reason(&error).contains("format"), "{error}");
    let error = load_error("missing_router.json", "missing_router.json");
    assert!(reason(&error).contains("missing field `router`"), "{error}");
    // A primary config that cannot be built is refused, not a panic.
    let error = load_error("invalid_primary_config.json", "invalid_primary_config.json");
    assert!(reason(&error).contains("head_size"), "{error}");
    // Configs describing more weights than their files hold are refused before anything is
    // allocated (the CTA head here would take 8 GiB).
    let error = load_error("head_larger_than_file.json", "head_larger_than_file.json");
    assert!(
        reason(&error).contains("CTA head") && reason(&error).contains("cta_head.safetensors"),
        "{error}"
    );
    let error = load_error(
        "primary_larger_than_file.json",
        "primary_larger_than_file.json",
    );
    assert!(reason(&error).contains("primary"), "{error}");
    // A directory without a manifest is named as not a model directory.
    let empty = tempfile::tempdir().unwrap();
    let error = Swarm::load(empty.path(), &Device::flex())
        .map(|_| ())
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&empty.path().display().to_string()),
        "{error}"
    );
    assert!(
        matches!(&error, SwarmError::NotModelDirectory { path } if path == empty.path()),
        "{error}"
    );
    assert!(
        error.to_string().contains("not a model directory"),
        "{error}"
    );
}

#[test]
fn component_files() {
    assert!(matches!(
        load_error("component_missing.json", "absent.safetensors"),
        SwarmError::Io { .. }
    ));
    assert!(matches!(
        load_error("component_is_a_directory.json", "malformed"),
        SwarmError::Io { .. }
    ));
    let error = load_error("checksum_mismatch.json", "cta_head.safetensors");
    assert!(
        matches!(&error, SwarmError::ChecksumMismatch { what, .. } if what == "CTA head"),
        "{error}"
    );
    let error = load_error(
        "component_wrong_shape.json",
        "router_two_specialists.safetensors",
    );
    assert!(
        matches!(&error, SwarmError::Checkpoint(RwkvError::ShapeMismatch { name, .. }) if name == "gate.weight"),
        "{error}"
    );
    assert!(matches!(
        load_error("component_truncated.json", "primary_truncated.safetensors"),
        SwarmError::Checkpoint(RwkvError::Corrupted { .. })
    ));
    let error = load_error(
        "specialist_larger_than_file.json",
        "specialist_big_config.safetensors",
    );
    assert!(
        matches!(&error, SwarmError::Checkpoint(RwkvError::Metadata { key, .. }) if key == "colswarm.rwkv.config"),
        "{error}"
    );
}

/// Inputs the `manifest` fuzz target crashed on, kept as they were found less the target's
/// mode byte (0: the rest is `swarm.json`), and with the span pooling every v1 model this
/// version loads declares (`"column_pooling": "SpanMean"`).
const FUZZ_CRASHES: [&str; 1] = [
    // `"decay_rank": 0` in the primary's config: building the primary panicked.
    "fuzz_crash_zero_decay_rank.json",
];

#[test]
fn fuzz_crashes_are_errors() {
    let error = load_error(FUZZ_CRASHES[0], FUZZ_CRASHES[0]);
    assert!(
        reason(&error).contains("LoRA ranks must be positive"),
        "{error}"
    );
}

#[test]
fn every_corpus_file_is_small_and_tested() {
    let mut listed: Vec<String> = corpus_files()
        .into_iter()
        .map(|(name, _)| name)
        .chain(MODEL_FILES.iter().map(|n| n.to_string()))
        .chain(FUZZ_CRASHES.iter().map(|n| n.to_string()))
        .collect();
    listed.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus(""))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, listed, "the corpus on disk is the generated one");
    for name in &listed {
        let size = std::fs::metadata(corpus(name)).unwrap().len();
        assert!(size < 4096, "{name}: {size} bytes");
    }
    // 12 broken manifests and the 3 broken component files they name (and the fuzz crashes).
    assert_eq!(corpus_files().len(), 15);
}

#[test]
#[ignore = "writes tests/malformed/; run it to regenerate the corpus"]
fn regenerate_malformed_corpus() {
    // Fuzz crashes are kept as found; everything else is written again.
    let dir = corpus("");
    std::fs::create_dir_all(&dir).unwrap();
    save_model(&dir);
    for (name, bytes) in corpus_files() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

// The generator.

/// The files of the well-formed model.
const MODEL_FILES: [&str; 8] = [
    "swarm.json",
    "primary.safetensors",
    "specialist.safetensors",
    "router.safetensors",
    "fusion.safetensors",
    "cta_head.safetensors",
    "cpa_head.safetensors",
    "alignment-spec.safetensors",
];

fn tiny(d_model: usize) -> RwkvConfig {
    RwkvConfig::minimal(4, d_model, 1)
}

/// Saves the tiny model: a one-head primary, a two-head specialist (so the alignment is a real
/// map), three CTA labels and two CPA relations.
fn save_model(dir: &std::path::Path) {
    let device = Device::flex();
    let spec_path = dir.join("specialist.safetensors");
    save_checkpoint(&tiny(4).init(1, &device), &tiny(4), &spec_path).unwrap();
    let specialist = FrozenSpecialist::load("spec", &spec_path, &device).unwrap();
    let config =
        OrchestratorConfig::new(tiny(2), 3, LabelKind::MultiLabel, 2).with_d_head_hidden(2);
    let orchestrator = config.init(&[specialist.state_shape()], 0, &device);
    let swarm = Swarm::new(orchestrator, vec![specialist]).unwrap();
    let labels =
        |prefix: &str, n: usize| (0..n).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>();
    swarm
        .save(dir, &config, &labels("type", 3), &labels("rel", 2))
        .unwrap();
    // `save` makes a folder for in-memory specialists; this model has none.
    let _ = std::fs::remove_dir(dir.join("specialists"));
}

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The committed well-formed manifest with `edit` applied.
fn manifest(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let bytes = std::fs::read(corpus("swarm.json")).unwrap();
    let mut value: Value = serde_json::from_slice(&bytes).unwrap();
    edit(&mut value);
    serde_json::to_vec_pretty(&value).unwrap()
}

/// A manifest naming `file` (with its true SHA-256) as the component at `key`.
fn naming(key: &str, file: &str, bytes: &[u8]) -> Vec<u8> {
    manifest(|m| {
        let entry = if key == "specialist" {
            &mut m["specialists"][0]["checkpoint"]
        } else {
            &mut m[key]
        };
        *entry = json!({"path": file, "sha256": sha256(bytes)});
    })
}

/// The broken files, built from the committed well-formed model.
fn corpus_files() -> Vec<(String, Vec<u8>)> {
    let device = Device::flex();
    let good = std::fs::read(corpus("swarm.json")).unwrap();
    let primary = std::fs::read(corpus("primary.safetensors")).unwrap();
    let primary_truncated = primary[..primary.len() / 2].to_vec();

    // A router for two specialists where the model has one.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let scratch = std::env::temp_dir().join(format!(
        "colswarm-malformed-{}-{}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&scratch).unwrap();
    let router_path = scratch.join("router.safetensors");
    let router = SpecialistRouterConfig::new(2, 2).init(&device);
    save_module(&router, HashMap::new(), &router_path).unwrap();
    let router_two = std::fs::read(&router_path).unwrap();
    // The specialist with a config of width 4096 in its metadata: its tensors (and checksum)
    // are intact, only the config claims far more weights than the file holds.
    let spec_path = scratch.join("specialist.safetensors");
    let big = tiny(4096);
    let big_json = serde_json::to_string(&big).unwrap();
    save_module(
        &tiny(4).init(1, &device),
        HashMap::from([("colswarm.rwkv.config".to_string(), big_json)]),
        &spec_path,
    )
    .unwrap();
    let spec_big = std::fs::read(&spec_path).unwrap();
    let _ = std::fs::remove_dir_all(&scratch);

    let files: Vec<(&str, Vec<u8>)> = vec![
        ("not_json.json", good[..good.len() / 2].to_vec()),
        (
            "wrong_format.json",
            manifest(|m| m["format"] = json!("colswarm-swarm-v0")),
        ),
        (
            "missing_router.json",
            manifest(|m| {
                m.as_object_mut().unwrap().remove("router");
            }),
        ),
        (
            "invalid_primary_config.json",
            manifest(|m| {
                m["config"]["primary"]["head_size"] = json!(0);
            }),
        ),
        (
            "head_larger_than_file.json",
            manifest(|m| {
                m["config"]["d_head_hidden"] = json!(1u64 << 30);
            }),
        ),
        (
            "primary_larger_than_file.json",
            manifest(|m| {
                m["config"]["primary"]["d_model"] = json!(4096);
            }),
        ),
        (
            "component_missing.json",
            manifest(|m| {
                m["router"]["path"] = json!("absent.safetensors");
            }),
        ),
        (
            "component_is_a_directory.json",
            manifest(|m| m["fusion"]["path"] = json!(".")),
        ),
        (
            "checksum_mismatch.json",
            manifest(|m| {
                m["cta_head"]["sha256"] = json!("0".repeat(64));
            }),
        ),
        ("router_two_specialists.safetensors", router_two.clone()),
        (
            "component_wrong_shape.json",
            naming("router", "router_two_specialists.safetensors", &router_two),
        ),
        ("primary_truncated.safetensors", primary_truncated.clone()),
        (
            "component_truncated.json",
            naming(
                "primary",
                "primary_truncated.safetensors",
                &primary_truncated,
            ),
        ),
        ("specialist_big_config.safetensors", spec_big.clone()),
        (
            "specialist_larger_than_file.json",
            naming("specialist", "specialist_big_config.safetensors", &spec_big),
        ),
    ];
    files
        .into_iter()
        .map(|(name, bytes)| (name.to_string(), bytes))
        .collect()
}
