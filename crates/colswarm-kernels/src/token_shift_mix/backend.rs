//! The token-shift mixes as a burn backend extension: the trait and the fused Flex
//! implementation (inference only: under autodiff the entry point runs burn's own ops).

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Shape, Slice, TensorData};

use super::cpu::{self, Dims};
use crate::cpu::{Isa, unfilled_buffer, written};

/// The token-shift mixes as a backend operation (the extension behind
/// [`token_shift_mix`](super::token_shift_mix)).
///
/// The default body is the backend's own ops; [`Flex`] overrides it with one pass that writes
/// every mix.
#[backend_extension(Flex)]
pub trait TokenShiftMixBackend: Backend {
    /// `x + (x_prev − x) ⊙ μᵢ` for every row `μᵢ` of `mus`, `x_prev` the sequences shifted by
    /// one token behind `shift`.
    ///
    /// # Shapes
    ///
    /// `x`: `[batch, time, d]`; `shift`: `[batch, d]`; `mus`: `[n, d]`; returns
    /// `[n, batch·time, d]`.
    fn fused_token_shift_mix(
        x: FloatTensor<Self>,
        shift: FloatTensor<Self>,
        mus: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let ([batch, time, d], [n, _]) = (dims3(&x.shape()), dims2(&mus.shape()));
        let first = Self::float_reshape(shift, Shape::new([batch, 1, d]));
        let x_prev = if time <= 1 {
            first
        } else {
            let earlier = Self::float_slice(
                x.clone(),
                &[Slice::from(..), Slice::from(..time - 1), Slice::from(..)],
            );
            Self::float_cat(vec![first, earlier], 1)
        };
        let rows = Shape::new([1, batch * time, d]);
        let x = Self::float_reshape(x, rows.clone());
        let x_prev = Self::float_reshape(x_prev, rows);
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

fn dims3(shape: &Shape) -> [usize; 3] {
    match shape.as_slice() {
        &[batch, time, d] => [batch, time, d],
        other => panic!("token_shift_mix: expected [batch, time, d], got {other:?}"),
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
    fn fused_token_shift_mix(x: FlexTensor, shift: FlexTensor, mus: FlexTensor) -> FlexTensor {
        let (x, shift, mus) = (
            f32_contiguous(x),
            f32_contiguous(shift),
            f32_contiguous(mus),
        );
        let ([batch, time, d], [n, _]) = (dims3(&x.shape()), dims2(&mus.shape()));
        let mut out = unfilled_buffer(n * batch * time * d);
        let dims = Dims { time, d };
        cpu::mix(
            Isa::detect(),
            &mut out,
            f32s(&x),
            f32s(&shift),
            f32s(&mus),
            dims,
        );
        // SAFETY: the kernel writes every element of `out` (one per mix, row and column; the
        // tests check it on NaN-filled buffers).
        let out = unsafe { written(out) };
        FlexTensor::from_data(TensorData::new(out, Shape::new([n, batch * time, d])))
    }
}
