//! The token-shift mixes as a burn backend extension: the trait and the fused Flex
//! implementation (inference only: under autodiff the entry point runs burn's own ops).

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Shape, TensorData};

use super::cpu;
use crate::cpu::{Isa, unfilled_buffer, written};

/// The token-shift mixes as a backend operation (the extension behind
/// [`token_shift_mix`](super::token_shift_mix)).
///
/// The default body is the backend's own ops; [`Flex`] overrides it with one pass that writes
/// every mix.
#[backend_extension(Flex)]
pub trait TokenShiftMixBackend: Backend {
    /// `x + (x_prev − x) ⊙ μᵢ` for every row `μᵢ` of `mus`.
    ///
    /// # Shapes
    ///
    /// `x`, `x_prev`: `[rows, d]`; `mus`: `[n, d]`; returns `[n, rows, d]`.
    fn fused_token_shift_mix(
        x: FloatTensor<Self>,
        x_prev: FloatTensor<Self>,
        mus: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let ([rows, d], [n, _]) = (dims2(&x.shape()), dims2(&mus.shape()));
        let x = Self::float_reshape(x, Shape::new([1, rows, d]));
        let x_prev = Self::float_reshape(x_prev, Shape::new([1, rows, d]));
        let mus = Self::float_reshape(mus, Shape::new([n, 1, d]));
        let delta = Self::float_sub(x_prev, x.clone());
        Self::float_add(x, Self::float_mul(delta, mus))
    }
}

fn dims2(shape: &Shape) -> [usize; 2] {
    match shape.as_slice() {
        &[rows, d] => [rows, d],
        other => panic!("token_shift_mix: expected a matrix, got {other:?}"),
    }
}

fn f32_contiguous(x: FlexTensor) -> FlexTensor {
    assert_eq!(x.dtype(), DType::F32, "token_shift_mix needs f32 tensors");
    x.to_contiguous()
}

fn f32s(x: &FlexTensor) -> &[f32] {
    x.as_slice::<f32>().expect("made contiguous f32 above")
}

impl TokenShiftMixBackend for Flex {
    fn fused_token_shift_mix(x: FlexTensor, x_prev: FlexTensor, mus: FlexTensor) -> FlexTensor {
        let (x, x_prev, mus) = (
            f32_contiguous(x),
            f32_contiguous(x_prev),
            f32_contiguous(mus),
        );
        let ([rows, d], [n, _]) = (dims2(&x.shape()), dims2(&mus.shape()));
        let mut out = unfilled_buffer(n * rows * d);
        cpu::mix(
            Isa::detect(),
            &mut out,
            f32s(&x),
            f32s(&x_prev),
            f32s(&mus),
            d,
        );
        // SAFETY: the kernel writes every element of `out` (one per mix, row and column; the
        // tests check it on NaN-filled buffers).
        let out = unsafe { written(out) };
        FlexTensor::from_data(TensorData::new(out, Shape::new([n, rows, d])))
    }
}
