//! The malformed-checkpoint corpus in `tests/malformed/`: every file gives its own specific error
//! variant, and the message names the file (and the tensor, where one is at fault).
//!
//! The files are committed; `regenerate_malformed_corpus` (ignored) writes them again:
//! `cargo test --workspace --test malformed regenerate -- --ignored`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use burn::tensor::Device;
use colswarm_rwkv::checkpoint::{CheckpointFile, named_tensors};
use colswarm_rwkv::{RwkvConfig, RwkvError, load_checkpoint};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/malformed")).join(name)
}

/// Loads a corpus file as a model and returns the error, checking that it names the file.
fn load_error(name: &str) -> RwkvError {
    let path = corpus(name);
    let error = load_checkpoint(&path, &Device::flex()).expect_err("malformed input must fail");
    assert!(
        error.to_string().contains(name),
        "`{error}` should name {name}"
    );
    error
}

/// The same, also checking that the message names `tensor`.
fn tensor_error(name: &str, tensor: &str) -> RwkvError {
    let error = load_error(name);
    assert!(
        error.to_string().contains(&format!("`{tensor}`")),
        "`{error}` should name tensor {tensor}"
    );
    error
}

#[test]
fn the_well_formed_base_loads() {
    let (_, config) = load_checkpoint(&corpus("base.safetensors"), &Device::flex()).unwrap();
    assert_eq!(config, tiny_config());
}

#[test]
fn structure() {
    for name in [
        "empty.safetensors",
        "truncated_header_length.safetensors",
        "header_length_past_eof.safetensors",
        "header_not_json.safetensors",
        "header_not_utf8.safetensors",
        "truncated_data.safetensors",
        "header_claims_1gb.safetensors",
        "overlapping_offsets.safetensors",
        "offsets_overflow.safetensors",
    ] {
        let error = load_error(name);
        assert!(
            matches!(error, RwkvError::Corrupted { .. }),
            "{name}: {error}"
        );
    }
}

fn metadata_key(error: &RwkvError) -> Option<&str> {
    match error {
        RwkvError::Metadata { key, .. } => Some(key),
        _ => None,
    }
}

#[test]
fn a_header_claiming_more_bytes_than_present_names_the_tensor() {
    for (name, tensor) in [
        ("header_claims_1gb.safetensors", "emb.weight"),
        ("offsets_overflow.safetensors", "t0"),
    ] {
        let error = load_error(name);
        assert!(
            error
                .to_string()
                .contains(&format!("tensor `{tensor}` claims")),
            "{error}"
        );
    }
}

#[test]
fn format_checksum_and_config() {
    let error = load_error("wrong_format.safetensors");
    assert_eq!(metadata_key(&error), Some("colswarm.format"), "{error}");
    let error = load_error("missing_checksum.safetensors");
    assert_eq!(metadata_key(&error), Some("colswarm.checksum"), "{error}");
    assert!(matches!(
        load_error("checksum_mismatch.safetensors"),
        RwkvError::Checksum { .. }
    ));
    // The checksum is checked before the model is opened, not only when it is loaded.
    assert!(matches!(
        CheckpointFile::open(&corpus("checksum_mismatch.safetensors")),
        Err(RwkvError::Checksum { .. })
    ));
    for (name, reason) in [
        ("missing_config.safetensors", "missing"),
        ("config_not_json.safetensors", "line 1"),
        ("invalid_config.safetensors", "multiple of head_size"),
        (
            "config_larger_than_file.safetensors",
            "parameters but the file holds only",
        ),
        (
            "config_overflowing.safetensors",
            "parameters but the file holds only",
        ),
    ] {
        let error = load_error(name);
        assert_eq!(
            metadata_key(&error),
            Some("colswarm.rwkv.config"),
            "{error}"
        );
        assert!(error.to_string().contains(reason), "{name}: {error}");
    }
}

#[test]
fn tensors() {
    assert!(matches!(
        tensor_error("wrong_dtype.safetensors", "emb.weight"),
        RwkvError::DType { .. }
    ));
    let error = tensor_error("wrong_shape.safetensors", "blocks.0.att.w1");
    assert!(
        matches!(&error, RwkvError::ShapeMismatch { expected, found, .. }
            if expected == &[2, 1] && found == &[1, 2]),
        "{error}"
    );
    assert!(matches!(
        tensor_error("missing_tensor.safetensors", "ln_out.beta"),
        RwkvError::MissingTensor { .. }
    ));
    assert!(matches!(
        tensor_error("unexpected_tensor.safetensors", "blocks.7.extra"),
        RwkvError::UnexpectedTensor { .. }
    ));
    assert!(matches!(
        tensor_error("nan_weights.safetensors", "blocks.0.ffn.key.weight"),
        RwkvError::NonFinite { .. }
    ));
    assert!(matches!(
        tensor_error("infinite_weights.safetensors", "emb.weight"),
        RwkvError::NonFinite { .. }
    ));
}

#[test]
fn every_corpus_file_is_small_and_tested() {
    let listed: Vec<String> = corpus_files().into_iter().map(|(name, _)| name).collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(on_disk, sorted, "the corpus on disk is the generated one");
    for name in &listed {
        let size = std::fs::metadata(corpus(name)).unwrap().len();
        assert!(size < 4096, "{name}: {size} bytes");
    }
    // 23 malformed files besides the well-formed base.
    assert_eq!(listed.len(), 24);
}

#[test]
#[ignore = "writes tests/malformed/; run it to regenerate the corpus"]
fn regenerate_malformed_corpus() {
    let dir = corpus("");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in corpus_files() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

// The generator: hand-made safetensors files built from a tiny model's tensors.

fn tiny_config() -> RwkvConfig {
    RwkvConfig::minimal(4, 2, 1)
}

/// One tensor as stored: name, dtype, shape, little-endian bytes.
#[derive(Clone)]
struct Stored {
    name: String,
    dtype: &'static str,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

fn base_tensors() -> Vec<Stored> {
    let model = tiny_config().init(0, &Device::flex());
    named_tensors(&model)
        .into_iter()
        .map(|t| Stored {
            name: t.name,
            dtype: "F32",
            shape: t.shape,
            bytes: t.values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        })
        .collect()
}

/// colswarm's checksum: SHA-256 over each tensor's name, shape and bytes, in name order.
fn checksum(tensors: &[Stored]) -> String {
    let mut sorted: Vec<&Stored> = tensors.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut hasher = Sha256::new();
    for t in sorted {
        hasher.update((t.name.len() as u64).to_le_bytes());
        hasher.update(t.name.as_bytes());
        hasher.update((t.shape.len() as u64).to_le_bytes());
        for dim in &t.shape {
            hasher.update((*dim as u64).to_le_bytes());
        }
        hasher.update((t.bytes.len() as u64).to_le_bytes());
        hasher.update(&t.bytes);
    }
    format!("{:x}", hasher.finalize())
}

/// The metadata a well-formed checkpoint of `tensors` carries.
fn metadata(tensors: &[Stored]) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("colswarm.format".into(), "colswarm-safetensors-v1".into()),
        ("colswarm.checksum".into(), checksum(tensors)),
        (
            "colswarm.rwkv.config".into(),
            serde_json::to_string(&tiny_config()).unwrap(),
        ),
    ])
}

/// The header of `tensors` (data in name order) with `metadata`.
fn header(
    tensors: &[Stored],
    metadata: &BTreeMap<String, String>,
) -> serde_json::Map<String, Value> {
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), json!(metadata));
    let mut offset = 0;
    for t in tensors {
        header.insert(
            t.name.clone(),
            json!({"dtype": t.dtype, "shape": t.shape, "data_offsets": [offset, offset + t.bytes.len()]}),
        );
        offset += t.bytes.len();
    }
    header
}

/// A safetensors file: little-endian header length, header text (padded to 8 bytes), data.
fn file(header_text: &[u8], data: &[u8]) -> Vec<u8> {
    let mut text = header_text.to_vec();
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&text);
    bytes.extend_from_slice(data);
    bytes
}

fn checkpoint(tensors: &[Stored], metadata: &BTreeMap<String, String>) -> Vec<u8> {
    let text = serde_json::to_vec(&header(tensors, metadata)).unwrap();
    let data: Vec<u8> = tensors.iter().flat_map(|t| t.bytes.clone()).collect();
    file(&text, &data)
}

/// Well-formed checkpoint of `tensors` (checksum recomputed), with `edit` applied to the
/// metadata.
fn with_metadata(tensors: &[Stored], edit: impl FnOnce(&mut BTreeMap<String, String>)) -> Vec<u8> {
    let mut metadata = metadata(tensors);
    edit(&mut metadata);
    checkpoint(tensors, &metadata)
}

/// Well-formed checkpoint of the base tensors after `edit` (checksum recomputed).
fn with_tensors(edit: impl FnOnce(&mut Vec<Stored>)) -> Vec<u8> {
    let mut tensors = base_tensors();
    edit(&mut tensors);
    with_metadata(&tensors, |_| {})
}

fn tensor<'a>(tensors: &'a mut [Stored], name: &str) -> &'a mut Stored {
    tensors.iter_mut().find(|t| t.name == name).unwrap()
}

fn config_json(edit: impl FnOnce(&mut Value)) -> String {
    let mut value = serde_json::to_value(tiny_config()).unwrap();
    edit(&mut value);
    value.to_string()
}

fn corpus_files() -> Vec<(String, Vec<u8>)> {
    let base = base_tensors();
    let good = with_metadata(&base, |_| {});
    let data: Vec<u8> = base.iter().flat_map(|t| t.bytes.clone()).collect();
    let good_header = serde_json::to_vec(&header(&base, &metadata(&base))).unwrap();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("base.safetensors", good.clone()),
        // Structure.
        ("empty.safetensors", Vec::new()),
        ("truncated_header_length.safetensors", good[..5].to_vec()),
        ("header_length_past_eof.safetensors", {
            let mut bytes = 1_000_000u64.to_le_bytes().to_vec();
            bytes.extend_from_slice(br#"{"__metadata__":{}}"#);
            bytes
        }),
        (
            "header_not_json.safetensors",
            file(b"{\"emb.weight\": {dtype: F32", &data),
        ),
        (
            "header_not_utf8.safetensors",
            file(b"{\"emb\xff\xfe\": {}}", &data),
        ),
        (
            "truncated_data.safetensors",
            good[..good.len() - 12].to_vec(),
        ),
        ("header_claims_1gb.safetensors", {
            let text = br#"{"emb.weight":{"dtype":"F32","shape":[250000000],"data_offsets":[0,1000000000]}}"#;
            file(text, &data[..16])
        }),
        // Offsets that sum to just under 2^64: `safetensors` adds the header size to their end
        // unchecked (a panic where overflow checks are on), so the loader refuses them first.
        ("offsets_overflow.safetensors", {
            let size = (1u64 << 61) - 1;
            let mut header = serde_json::Map::new();
            for i in 0..8 {
                header.insert(
                    format!("t{i}"),
                    json!({"dtype": "U8", "shape": [size], "data_offsets": [i * size, (i + 1) * size]}),
                );
            }
            file(&serde_json::to_vec(&header).unwrap(), &data[..16])
        }),
        ("overlapping_offsets.safetensors", {
            let text = String::from_utf8(good_header.clone()).unwrap().replacen(
                "\"data_offsets\":[0,",
                "\"data_offsets\":[4,",
                1,
            );
            file(text.as_bytes(), &data)
        }),
        // Metadata.
        (
            "wrong_format.safetensors",
            with_metadata(&base, |m| {
                m.insert("colswarm.format".into(), "pickle".into());
            }),
        ),
        (
            "missing_checksum.safetensors",
            with_metadata(&base, |m| {
                m.remove("colswarm.checksum");
            }),
        ),
        ("checksum_mismatch.safetensors", {
            let mut bytes = good.clone();
            let last = bytes.len() - 2;
            bytes[last] ^= 0x40;
            bytes
        }),
        (
            "missing_config.safetensors",
            with_metadata(&base, |m| {
                m.remove("colswarm.rwkv.config");
            }),
        ),
        (
            "config_not_json.safetensors",
            with_metadata(&base, |m| {
                m.insert("colswarm.rwkv.config".into(), "{\"vocab_size\": 4,".into());
            }),
        ),
        (
            "invalid_config.safetensors",
            with_metadata(&base, |m| {
                let config = config_json(|c| c["d_model"] = json!(3));
                m.insert("colswarm.rwkv.config".into(), config);
            }),
        ),
        (
            "config_larger_than_file.safetensors",
            with_metadata(&base, |m| {
                let config = config_json(|c| c["d_model"] = json!(4096));
                m.insert("colswarm.rwkv.config".into(), config);
            }),
        ),
        // Parameter counts that overflow `usize` must not wrap to a small number.
        (
            "config_overflowing.safetensors",
            with_metadata(&base, |m| {
                let config = config_json(|c| {
                    c["d_model"] = json!(1u64 << 40);
                    c["head_size"] = json!(1u64 << 20);
                });
                m.insert("colswarm.rwkv.config".into(), config);
            }),
        ),
        // Tensors (each with a valid checksum, so the loader reaches them).
        (
            "wrong_dtype.safetensors",
            with_tensors(|t| {
                let emb = tensor(t, "emb.weight");
                // f32 and f16 load; f64 does not.
                emb.dtype = "F64";
                emb.bytes.extend_from_within(..);
            }),
        ),
        (
            "wrong_shape.safetensors",
            with_tensors(|t| {
                tensor(t, "blocks.0.att.w1").shape.reverse();
            }),
        ),
        (
            "missing_tensor.safetensors",
            with_tensors(|t| {
                t.retain(|t| t.name != "ln_out.beta");
            }),
        ),
        (
            "unexpected_tensor.safetensors",
            with_tensors(|t| {
                t.push(Stored {
                    name: "blocks.7.extra".into(),
                    dtype: "F32",
                    shape: vec![1],
                    bytes: 1.0f32.to_le_bytes().to_vec(),
                });
            }),
        ),
        (
            "nan_weights.safetensors",
            with_tensors(|t| {
                tensor(t, "blocks.0.ffn.key.weight").bytes[..4]
                    .copy_from_slice(&f32::NAN.to_le_bytes());
            }),
        ),
        (
            "infinite_weights.safetensors",
            with_tensors(|t| {
                tensor(t, "emb.weight").bytes[4..8]
                    .copy_from_slice(&f32::NEG_INFINITY.to_le_bytes());
            }),
        ),
    ];
    files
        .into_iter()
        .map(|(name, bytes)| (name.to_string(), bytes))
        .collect()
}
