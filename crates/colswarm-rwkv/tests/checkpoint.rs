//! Checkpoints round-trip exactly and refuse wrong or damaged files with a clear error.

use std::collections::HashMap;
use std::path::PathBuf;

use burn::tensor::Device;
use colswarm_rwkv::checkpoint::{
    CheckpointFile, Precision, named_tensors, save_module, save_module_as,
};
use colswarm_rwkv::{RwkvConfig, RwkvError, load_checkpoint, save_checkpoint};
use colswarm_testing::perturb;

/// A fresh directory per test (tests run in parallel), holding `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("colswarm-rwkv-tests-{}", std::process::id()))
        .join(name.replace('.', "_"));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn config() -> RwkvConfig {
    RwkvConfig::new(50, 32, 2)
        .with_head_size(16)
        .with_decay_rank(Some(4))
        .with_icl_rank(Some(4))
        .with_value_rank(Some(4))
        .with_gate_rank(Some(8))
}

#[test]
fn save_then_load_round_trips_exactly() {
    let device = Device::flex();
    let model = perturb(config().init(3, &device), 4, 0.5);
    let path = scratch("roundtrip.safetensors");
    save_checkpoint(&model, &config(), &path).unwrap();
    let (loaded, loaded_config) = load_checkpoint(&path, &device).unwrap();
    assert_eq!(loaded_config, config());
    let (before, after) = (named_tensors(&model), named_tensors(&loaded));
    assert_eq!(before.len(), after.len());
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.shape, b.shape);
        assert!(
            a.values == b.values,
            "tensor `{}` changed in the round trip",
            a.name
        );
    }
    // No temporary file is left beside the checkpoint.
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn equal_models_give_equal_bytes() {
    // The metadata map (config, format, checksum) must not be written in hash order.
    let device = Device::flex();
    let model = config().init(3, &device);
    let (a, b) = (scratch("same_a.safetensors"), scratch("same_b.safetensors"));
    for _ in 0..3 {
        save_checkpoint(&model, &config(), &a).unwrap();
        save_checkpoint(&model, &config(), &b).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    }
    load_checkpoint(&a, &device).unwrap();
}

#[test]
fn checkpoint_names_follow_the_released_rwkv7_keys() {
    let names: Vec<String> = named_tensors(&config().init(0, &Device::flex()))
        .into_iter()
        .map(|t| t.name)
        .collect();
    for expected in [
        "emb.weight",
        "blocks.0.ln0.gamma",
        "blocks.0.att.w1",
        "blocks.1.att.v2",
        "blocks.1.att.receptance.weight",
        "blocks.1.att.ln_x.weight",
        "blocks.1.ffn.key.weight",
        "ln_out.beta",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "no tensor `{expected}` in {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n == "blocks.0.att.v0"),
        "block 0 has no value residual"
    );
}

#[test]
fn shape_mismatch_names_the_tensor_and_both_shapes() {
    let device = Device::flex();
    // A model whose decay LoRA rank differs from what the config in the file says.
    let other = config().with_decay_rank(Some(6)).init(0, &device);
    let path = scratch("mismatch.safetensors");
    let json = serde_json::to_string(&config()).unwrap();
    save_module(
        &other,
        HashMap::from([("colswarm.rwkv.config".to_string(), json)]),
        &path,
    )
    .unwrap();
    let err = load_checkpoint(&path, &device).unwrap_err();
    match &err {
        RwkvError::ShapeMismatch {
            name,
            expected,
            found,
            ..
        } => {
            assert_eq!(name, "blocks.0.att.w1");
            assert_eq!(
                (expected.as_slice(), found.as_slice()),
                (&[32, 4][..], &[32, 6][..])
            );
        }
        other => panic!("expected a shape mismatch, got {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("blocks.0.att.w1")
            && message.contains("[32, 4]")
            && message.contains("[32, 6]"),
        "{message}"
    );
}

#[test]
fn truncated_file_is_an_error_not_a_panic() {
    let device = Device::flex();
    let path = scratch("truncated.safetensors");
    save_checkpoint(&config().init(0, &device), &config(), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for cut in [0, 4, 8, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let err = load_checkpoint(&path, &device).unwrap_err();
        assert!(
            matches!(err, RwkvError::Corrupted { .. }),
            "cut at {cut}: {err}"
        );
        assert!(err.to_string().contains("truncated.safetensors"), "{err}");
    }
}

#[test]
fn flipped_weight_byte_fails_the_checksum() {
    let device = Device::flex();
    let path = scratch("flipped.safetensors");
    save_checkpoint(&config().init(0, &device), &config(), &path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    let err = CheckpointFile::open(&path).unwrap_err();
    assert!(matches!(err, RwkvError::Checksum { .. }), "{err}");
}

#[test]
fn header_claiming_more_bytes_than_present_is_refused() {
    let path = scratch("liar.safetensors");
    // A header that declares a 1 GB tensor in a file of a few bytes.
    let header = br#"{"x":{"dtype":"F32","shape":[250000000],"data_offsets":[0,1000000000]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0; 16]);
    std::fs::write(&path, &bytes).unwrap();
    let err = CheckpointFile::open(&path).unwrap_err();
    assert!(matches!(err, RwkvError::Corrupted { .. }), "{err}");
}

#[test]
fn missing_file_names_the_path() {
    let err = load_checkpoint(&scratch("does-not-exist.safetensors"), &Device::flex()).unwrap_err();
    assert!(matches!(err, RwkvError::Io { .. }));
    assert!(
        err.to_string().contains("does-not-exist.safetensors"),
        "{err}"
    );
}

#[test]
fn f16_checkpoints_load_as_the_nearest_half_floats() {
    let device = Device::flex();
    let model = perturb(config().init(5, &device), 6, 0.5);
    let path = scratch("half.safetensors");
    save_module_as(&model, HashMap::new(), &path, Precision::F16).unwrap();
    let full = scratch("full.safetensors");
    save_module(&model, HashMap::new(), &full).unwrap();
    let (half_bytes, full_bytes) = (
        std::fs::metadata(&path).unwrap().len(),
        std::fs::metadata(&full).unwrap().len(),
    );
    assert!(
        10 * half_bytes < 6 * full_bytes,
        "{half_bytes} against {full_bytes}"
    );
    let loaded = CheckpointFile::open(&path)
        .unwrap()
        .load_into(config().init(0, &device), &device)
        .unwrap();
    let mut moved = 0;
    for (a, b) in named_tensors(&model).iter().zip(&named_tensors(&loaded)) {
        assert_eq!(a.name, b.name);
        for (x, y) in a.values.iter().zip(&b.values) {
            // Round to nearest: within half a unit in the last place of f16 (11 bits).
            let ulp = x.abs().max(6.1e-5) * 2f32.powi(-10);
            assert!(
                (x - y).abs() <= 0.5 * ulp + f32::EPSILON,
                "{}: {x} -> {y}",
                a.name
            );
            moved += usize::from(x != y);
        }
    }
    assert!(moved > 0, "f16 rounds some of these values");
}
