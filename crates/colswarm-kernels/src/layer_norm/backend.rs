//! Layer normalisation as a burn backend extension: the trait and the fused Flex
//! implementation (inference only: under autodiff [`layer_norm`](super::layer_norm) runs
//! burn's own).

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, TensorData};

use super::cpu;
use crate::cpu::{Isa, unfilled_buffer, written};

/// Layer normalisation over the last dimension as a backend operation (the extension behind
/// [`layer_norm`](super::layer_norm)).
///
/// The default body is the backend's own layer norm; [`Flex`] overrides it with the fused
/// kernel.
#[backend_extension(Flex)]
pub trait LayerNormBackend: Backend {
    /// `(x − μ) / √(σ² + ε) ⊙ gamma + beta`, with `μ`, `σ²` over the last dimension.
    ///
    /// # Shapes
    ///
    /// `x`: `[..., d]`; `gamma`, `beta`: `[d]`; returns `x`'s shape.
    fn fused_layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f32,
    ) -> FloatTensor<Self> {
        Self::layer_norm(x, gamma, Some(beta), f64::from(epsilon))
    }
}

fn f32_contiguous(x: FlexTensor) -> FlexTensor {
    assert_eq!(
        x.dtype(),
        DType::F32,
        "the fused layer norm needs f32 tensors"
    );
    x.to_contiguous()
}

fn f32s(x: &FlexTensor) -> &[f32] {
    x.as_slice::<f32>().expect("made contiguous f32 above")
}

impl LayerNormBackend for Flex {
    fn fused_layer_norm(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        epsilon: f32,
    ) -> FlexTensor {
        let (x, gamma, beta) = (
            f32_contiguous(x),
            f32_contiguous(gamma),
            f32_contiguous(beta),
        );
        let mut out = unfilled_buffer(f32s(&x).len());
        cpu::forward(
            Isa::detect(),
            &mut out,
            f32s(&x),
            f32s(&gamma),
            f32s(&beta),
            epsilon,
        );
        // SAFETY: the kernel writes every element of every row (it checks that the rows
        // cover the input and that the output is as long).
        let out = unsafe { written(out) };
        FlexTensor::from_data(TensorData::new(out, x.shape()))
    }
}
