//! Helpers for the parity tests: seeded random tensors and a norm-wise error measure.

use burn::tensor::{Device, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The device the CubeCL kernels are tested on: wgpu's default adapter (in CI, Mesa's
/// lavapipe, which implements Vulkan on the CPU).
#[cfg(feature = "wgpu")]
pub(crate) fn cube_device() -> Device {
    Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)
}

/// A seeded generator, so every failure is reproducible.
pub(crate) fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Uniform values in `[lo, hi)`.
pub(crate) fn uniform(rng: &mut ChaCha8Rng, len: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

/// A tensor of `values` with `shape` on `device`.
pub(crate) fn tensor<const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &Device,
) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// `max |x − reference| / max |reference|` (norm-wise relative error, with the reference's
/// scale floored at 1e-6). Panics if `x` holds a NaN or an infinity, so an element a kernel
/// never wrote (poisoned with NaN in debug builds) always fails.
pub(crate) fn rel_err<const D: usize>(x: Tensor<D>, reference: Tensor<D>) -> f32 {
    assert_eq!(x.dims(), reference.dims(), "shapes differ");
    let x = x.into_data().try_to_vec::<f32>().expect("f32 data");
    let reference = reference.into_data().try_to_vec::<f32>().expect("f32 data");
    assert!(
        x.iter().all(|v| v.is_finite()),
        "non-finite value in the output"
    );
    let scale = reference.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    let diff = x
        .iter()
        .zip(&reference)
        .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    diff / scale
}
