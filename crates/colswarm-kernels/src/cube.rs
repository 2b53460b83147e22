//! Helpers shared by the CubeCL kernels (features `wgpu` / `cuda`).

use burn::backend::cubecl::dtype_to_storage_type;
use burn::tensor::Shape;
use burn_cubecl::ops::numeric::{empty_device_dtype, full_device_dtype};
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::InputScalar;

/// A new tensor of `shape` on `like`'s device and of its dtype, for a kernel to write.
/// NaN-filled in debug builds, so an element a kernel misses fails the parity tests.
pub(crate) fn output(like: &CubeTensor, shape: Shape) -> CubeTensor {
    let (client, device, dtype) = (like.client.clone(), like.device.clone(), like.dtype);
    if cfg!(debug_assertions) {
        let nan = InputScalar::new(f32::NAN, dtype_to_storage_type(dtype));
        full_device_dtype(client, shape, device, nan, dtype)
    } else {
        empty_device_dtype(client, device, shape, dtype)
    }
}
