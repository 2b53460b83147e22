//! The weighted sum of embedding rows per bag (fastText's `EmbeddingBag`), with a CPU kernel.
//!
//! The column n-gram embedding sums, for every column, the rows of its n-grams' hash buckets,
//! each weighted by its share of the column's bag. burn's ops do it in three passes over a
//! `[n-grams, d]` matrix (gather the rows, scale them, scatter-add them per bag); a bag that
//! holds its table's other columns (neighbour n-grams) has a few thousand n-grams, and those
//! passes took about a tenth of annotation's time. The fused kernel accumulates each bag's rows
//! in place, reading the weight where it lies.
//!
//! Implementations: burn's ops (the reference, every backend, differentiable) and a fused Flex
//! kernel for inference, reached through the [`EmbeddingBagBackend`] extension. Training keeps
//! the reference: its backward is burn's.

mod backend;
mod cpu;
#[cfg(test)]
mod tests;

pub use backend::EmbeddingBagBackend;
pub use cpu::{bag_sum, bag_sum_half};

use burn::backend::Dispatch;
use burn::tensor::{DType, IndexingUpdateOp, Int, Tensor, TensorData};

use crate::implementation::KernelImpl;

/// Row `r` of the result: `Σ value · weight[bucket]` over the `(bucket, value)` pairs of
/// `bags[r]` (zeros for an empty bag): the fused kernel for `f32` or `f16` weights on a plain
/// Flex device (the sums in `f32` either way), the reference elsewhere (autodiff included, so
/// it stays differentiable).
///
/// # Shapes
///
/// - `weight`: `[buckets, d]`
/// - `bags`: `m` bags of `(bucket, value)`, every bucket below `buckets`
/// - returns `[m, d]`
///
/// # Panics
///
/// If a bucket is not below `buckets` (callers check bags that come from data).
pub fn embedding_bag(weight: Tensor<2>, bags: &[&[(u32, f32)]]) -> Tensor<2> {
    let imp = KernelImpl::fastest_for_inference(&weight.device(), kernel_dtype(weight.dtype()));
    embedding_bag_with(imp, weight, bags)
}

/// The dtype the fused kernel is chosen for: it reads half-float weights as they are, widening
/// each row as it adds it, so an `f16` weight counts as `f32` (the sums are `f32`).
fn kernel_dtype(dtype: DType) -> DType {
    if dtype == DType::F16 {
        DType::F32
    } else {
        dtype
    }
}

/// [`embedding_bag`] with an explicit implementation.
///
/// # Shapes
///
/// As [`embedding_bag`].
///
/// # Panics
///
/// If a bucket is not below `buckets`, or if `imp` is fused and `weight` is not an `f32` or
/// `f16` tensor on a plain (not autodiff) Flex device.
pub fn embedding_bag_with(imp: KernelImpl, weight: Tensor<2>, bags: &[&[(u32, f32)]]) -> Tensor<2> {
    if imp == KernelImpl::Reference {
        return reference(weight, bags);
    }
    imp.check_for_inference(
        "embedding_bag",
        &weight.device(),
        kernel_dtype(weight.dtype()),
    );
    Tensor::from_dispatch(<Dispatch as EmbeddingBagBackend>::fused_embedding_bag(
        weight.into_dispatch(),
        bags,
    ))
}

/// burn's ops: gather the rows, scale them, add them up per bag. (The fused kernel checks the
/// buckets as it reads them.)
fn reference(weight: Tensor<2>, bags: &[&[(u32, f32)]]) -> Tensor<2> {
    let [buckets, d] = weight.dims();
    if let Some(&(bucket, _)) = bags
        .iter()
        .flat_map(|b| b.iter())
        .find(|&&(b, _)| b as usize >= buckets)
    {
        panic!("embedding bag: bucket {bucket} past the weight's {buckets} rows");
    }
    let device = weight.device();
    let total: usize = bags.iter().map(|b| b.len()).sum();
    let sums = Tensor::<2>::zeros([bags.len(), d], &device);
    if total == 0 {
        return sums;
    }
    let (mut rows, mut ids, mut values) = (
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
    );
    for (row, bag) in bags.iter().enumerate() {
        for &(bucket, value) in *bag {
            rows.push(row as i64);
            ids.push(i64::from(bucket));
            values.push(value);
        }
    }
    // burn 0.22.1's `select_assign` on wgpu leaves out every index past the 65,535th (one
    // workgroup per index along one dispatch dimension), and a batch of wide tables' bags holds
    // hundreds of thousands of pairs: they are added in chunks that stay under that.
    let mut sums = sums;
    for start in (0..total).step_by(MAX_INDICES) {
        let end = (start + MAX_INDICES).min(total);
        let ids = Tensor::<1, Int>::from_data(&ids[start..end], &device);
        let values = Tensor::<2>::from_data(
            TensorData::new(values[start..end].to_vec(), [end - start, 1]),
            &device,
        );
        let weighted = weight.clone().select(0, ids) * values;
        let rows = Tensor::<1, Int>::from_data(&rows[start..end], &device);
        sums = sums.select_assign(0, rows, weighted, IndexingUpdateOp::Add);
    }
    sums
}

/// The most indices one `select_assign` gets (the largest count wgpu dispatches along one
/// dimension).
const MAX_INDICES: usize = 65_535;
