//! The embedding bag as a burn backend extension: the trait and the fused Flex kernel
//! (inference only: under autodiff the entry point runs burn's own ops).

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Shape, TensorData, f16};

use super::{bag_sum, bag_sum_half};

/// The weighted sum of embedding rows per bag as a backend operation (the extension behind
/// [`embedding_bag`](super::embedding_bag)).
///
/// The default body is a matrix product with the bags written out as a dense
/// `[bags, buckets]` matrix (correct on any backend, wasteful: the entry point runs the
/// reference there instead); [`Flex`] overrides it with a kernel that adds each bag's rows in
/// place.
#[backend_extension(Flex)]
pub trait EmbeddingBagBackend: Backend {
    /// Row `r`: `Σ value · weight[bucket]` over `bags[r]`.
    ///
    /// # Shapes
    ///
    /// `weight`: `[buckets, d]`; returns `[bags.len(), d]`.
    fn fused_embedding_bag(weight: FloatTensor<Self>, bags: &[&[(u32, f32)]]) -> FloatTensor<Self> {
        let buckets = weight.shape()[0];
        let mut dense = vec![0.0f32; bags.len() * buckets];
        for (row, bag) in bags.iter().enumerate() {
            for &(bucket, value) in *bag {
                dense[row * buckets + bucket as usize] += value;
            }
        }
        let dense = Self::float_from_data(
            TensorData::new(dense, [bags.len(), buckets]),
            &weight.device(),
        );
        Self::float_matmul(dense, weight)
    }
}

impl EmbeddingBagBackend for Flex {
    fn fused_embedding_bag(weight: FlexTensor, bags: &[&[(u32, f32)]]) -> FlexTensor {
        let weight = weight.to_contiguous();
        let &[_, d] = weight.shape().as_slice() else {
            panic!(
                "embedding bag: the weight is {:?}, not a matrix",
                weight.shape()
            );
        };
        let mut out = vec![0.0f32; bags.len() * d];
        let sums = out.chunks_exact_mut(d.max(1)).zip(bags);
        // Each bag's buckets are checked against the weight's rows before one is read.
        match weight.dtype() {
            DType::F32 => {
                let rows = weight.as_slice::<f32>().expect("made contiguous f32 above");
                sums.for_each(|(sum, bag)| bag_sum(sum, rows, bag));
            }
            DType::F16 => {
                let rows = weight.as_slice::<f16>().expect("made contiguous f16 above");
                sums.for_each(|(sum, bag)| bag_sum_half(sum, rows, bag));
            }
            other => panic!("the fused embedding bag needs an f32 or f16 weight, not {other:?}"),
        }
        FlexTensor::from_data(TensorData::new(out, Shape::new([bags.len(), d])))
    }
}
