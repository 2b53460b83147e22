//! Sigmoid and tanh as a burn backend extension: the trait and the fused Flex implementation
//! (inference only: under autodiff the entry points run burn's own ops).

use std::mem::MaybeUninit;

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, TensorData};

use super::cpu;
use crate::cpu::{Isa, unfilled_buffer, written};

/// Sigmoid and tanh as backend operations (the extension behind
/// [`sigmoid`](super::sigmoid) and [`tanh`](super::tanh)).
///
/// The default bodies are the backend's own ops; [`Flex`] overrides them with vectorised
/// kernels.
#[backend_extension(Flex)]
pub trait ActivationBackend: Backend {
    /// `σ(x)`, element-wise.
    ///
    /// # Shapes
    ///
    /// Any; the output has `x`'s shape.
    fn fused_sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::sigmoid(x)
    }

    /// `tanh(x)`, element-wise.
    ///
    /// # Shapes
    ///
    /// Any; the output has `x`'s shape.
    fn fused_tanh(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_tanh(x)
    }
}

/// `kernel(out, x)` over a contiguous copy of `x`, into a new tensor of `x`'s shape.
fn unary(x: FlexTensor, kernel: fn(Isa, &mut [MaybeUninit<f32>], &[f32])) -> FlexTensor {
    assert_eq!(x.dtype(), DType::F32, "fused activations need f32 tensors");
    let x = x.to_contiguous();
    let input = x.as_slice::<f32>().expect("made contiguous f32 above");
    let mut out = unfilled_buffer(input.len());
    kernel(Isa::detect(), &mut out, input);
    // SAFETY: both kernels write every element of an output as long as their input (checked
    // in the kernels).
    let out = unsafe { written(out) };
    FlexTensor::from_data(TensorData::new(out, x.shape()))
}

impl ActivationBackend for Flex {
    fn fused_sigmoid(x: FlexTensor) -> FlexTensor {
        unary(x, cpu::sigmoid_into)
    }

    fn fused_tanh(x: FlexTensor) -> FlexTensor {
        unary(x, cpu::tanh_into)
    }
}
