//! Parity with the independent NumPy reference (tests/reference/rwkv7_reference.py).

use std::path::PathBuf;

use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm_rwkv::load_checkpoint;
use safetensors::SafeTensors;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Reads an f32 tensor of the expected-outputs fixture.
fn expected(bytes: &[u8], name: &str) -> (Vec<usize>, Vec<f32>) {
    let tensors = SafeTensors::deserialize(bytes).expect("fixture parses");
    let view = tensors.tensor(name).expect("fixture tensor present");
    let values = view
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (view.shape().to_vec(), values)
}

/// max |a − b| / max |b| over the elements where `keep` holds.
fn relative_error(actual: &[f32], reference: &[f32], keep: impl Fn(usize) -> bool) -> f32 {
    assert_eq!(actual.len(), reference.len());
    let (mut diff, mut scale) = (0f32, 0f32);
    for i in (0..actual.len()).filter(|&i| keep(i)) {
        assert!(actual[i].is_finite(), "non-finite output at {i}");
        diff = diff.max((actual[i] - reference[i]).abs());
        scale = scale.max(reference[i].abs());
    }
    diff / scale
}

#[test]
fn sequence_mode_matches_numpy_reference() {
    let device = Device::flex();
    let (model, config) =
        load_checkpoint(&fixture("rwkv7_tiny.safetensors"), &device).expect("checkpoint loads");
    let bytes = std::fs::read(fixture("rwkv7_tiny_expected.safetensors")).unwrap();
    let (token_shape, tokens) = expected(&bytes, "tokens");
    let (_, lengths) = expected(&bytes, "lengths");
    let lengths: Vec<usize> = lengths.iter().map(|&l| l as usize).collect();
    let (batch, time) = (token_shape[0], token_shape[1]);
    let tokens: Vec<i64> = tokens.iter().map(|&t| t as i64).collect();
    let tokens = Tensor::<2, Int>::from_data(TensorData::new(tokens, [batch, time]), &device);

    let out = model.forward(tokens, Some(&lengths), None);

    let d = config.d_model;
    let (_, hidden_ref) = expected(&bytes, "hidden");
    let hidden = out.hidden.into_data().try_to_vec::<f32>().unwrap();
    let is_real_token = |i: usize| (i / d) % time < lengths[i / (d * time)];
    let err = relative_error(&hidden, &hidden_ref, is_real_token);
    assert!(
        err < 1e-4,
        "hidden states differ from the reference: relative error {err}"
    );

    for (name, pick) in [("wkv", 0usize), ("att_shift", 1), ("ffn_shift", 2)] {
        let (shape, reference) = expected(&bytes, name);
        let per_layer = reference.len() / shape[0];
        for (layer, state) in out.state.layers.iter().enumerate() {
            let actual = match pick {
                0 => state.wkv.to_data(),
                1 => state.att_shift.to_data(),
                _ => state.ffn_shift.to_data(),
            }
            .try_to_vec::<f32>()
            .unwrap();
            let reference = &reference[layer * per_layer..(layer + 1) * per_layer];
            let err = relative_error(&actual, reference, |_| true);
            assert!(
                err < 1e-4,
                "layer {layer} `{name}` state differs: relative error {err}"
            );
        }
    }
}
