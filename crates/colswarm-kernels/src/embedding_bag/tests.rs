//! Parity of the fused embedding bag with burn's ops, and the reference under autodiff.

use burn::tensor::{DType, Device, Tensor};
use rand::Rng;

use super::embedding_bag_with;
use crate::implementation::KernelImpl;
use crate::testing::{rel_err, rng, tensor, uniform};

const TOL: f32 = 1e-6;

/// `n` bags over `buckets` rows, of 0 to 40 pairs each (buckets may repeat within a bag).
fn random_bags(seed: u64, n: usize, buckets: u32) -> Vec<Vec<(u32, f32)>> {
    let mut rng = rng(seed);
    (0..n)
        .map(|_| {
            let len = rng.random_range(0..=40);
            (0..len)
                .map(|_| (rng.random_range(0..buckets), rng.random_range(-1.0..1.0)))
                .collect()
        })
        .collect()
}

#[test]
fn fused_matches_burn() {
    let device = Device::flex();
    for (buckets, d, n, seed) in [(97, 7, 11, 1), (16384, 64, 40, 2), (5, 1, 3, 3)] {
        let weight: Tensor<2> = tensor(
            uniform(&mut rng(seed), buckets * d, -1.0, 1.0),
            [buckets, d],
            &device,
        );
        let bags = random_bags(seed, n, buckets as u32);
        let refs: Vec<&[(u32, f32)]> = bags.iter().map(Vec::as_slice).collect();
        let fused = embedding_bag_with(KernelImpl::FusedSerial, weight.clone(), &refs);
        let reference = embedding_bag_with(KernelImpl::Reference, weight, &refs);
        assert_eq!(fused.dims(), [n, d]);
        let err = rel_err(fused, reference);
        assert!(err < TOL, "[{buckets}, {d}] × {n} bags: error {err}");
    }
}

#[test]
fn empty_bags_give_zero_rows() {
    let device = Device::flex();
    let weight: Tensor<2> = tensor(vec![1.0, 2.0, 3.0, 4.0], [2, 2], &device);
    let empty: [&[(u32, f32)]; 2] = [&[], &[]];
    for imp in [KernelImpl::FusedSerial, KernelImpl::Reference] {
        let out = embedding_bag_with(imp, weight.clone(), &empty);
        assert_eq!(
            out.into_data().try_to_vec::<f32>().unwrap(),
            vec![0.0; 4],
            "{imp:?}"
        );
        let none = embedding_bag_with(imp, weight.clone(), &[]);
        assert_eq!(none.dims(), [0, 2]);
    }
}

/// Under autodiff the plain entry point runs burn's ops, so the weight gets its gradient:
/// each bag's values, added to the rows of its buckets.
#[test]
fn autodiff_runs_the_reference_with_its_gradients() {
    let device = Device::flex().autodiff();
    let weight: Tensor<2> = tensor(vec![0.5; 8], [4, 2], &device).require_grad();
    let bags: [&[(u32, f32)]; 2] = [&[(1, 2.0), (3, 0.5)], &[(1, -1.0)]];
    let grads = super::embedding_bag(weight.clone(), &bags).sum().backward();
    let d_w = weight.grad(&grads).expect("tracked");
    let expected = vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.5, 0.5];
    assert_eq!(d_w.into_data().try_to_vec::<f32>().unwrap(), expected);
}

#[test]
#[should_panic(expected = "bucket 4 past the weight's 4 rows")]
fn a_bucket_past_the_weight_panics_with_its_number() {
    let weight: Tensor<2> = tensor(vec![0.0; 8], [4, 2], &Device::flex());
    embedding_bag_with(KernelImpl::FusedSerial, weight, &[&[(4, 1.0)]]);
}

#[test]
#[should_panic(expected = "bucket 9 past the weight's 4 rows")]
fn the_reference_too_panics_with_the_bucket_past_the_weight() {
    let weight: Tensor<2> = tensor(vec![0.0; 8], [4, 2], &Device::flex());
    embedding_bag_with(KernelImpl::Reference, weight, &[&[(1, 1.0)], &[(9, 1.0)]]);
}

/// On a GPU the entry point runs burn's ops; a batch of wide tables' bags (neighbour n-grams,
/// 100 cells a column) holds hundreds of thousands of pairs, past the 65,535 indices one
/// `select_assign` takes there.
#[cfg(feature = "wgpu")]
#[test]
fn on_wgpu_a_batch_of_wide_tables_matches_the_fused_kernel() {
    let gpu = crate::testing::cube_device();
    let (buckets, d) = (16384usize, 64usize);
    let weight = uniform(&mut rng(7), buckets * d, -1.0, 1.0);
    for (n, per_bag) in [(1, 65_535), (1, 65_536), (100, 3_000)] {
        let mut r = rng(n as u64 + per_bag as u64);
        let bags: Vec<Vec<(u32, f32)>> = (0..n)
            .map(|_| {
                (0..per_bag)
                    .map(|_| (r.random_range(0..buckets as u32), r.random_range(0.0..1e-3)))
                    .collect()
            })
            .collect();
        let refs: Vec<&[(u32, f32)]> = bags.iter().map(Vec::as_slice).collect();
        let on_cpu = embedding_bag_with(
            KernelImpl::FusedSerial,
            tensor(weight.clone(), [buckets, d], &Device::flex()),
            &refs,
        );
        let on_gpu = super::embedding_bag(tensor(weight.clone(), [buckets, d], &gpu), &refs);
        let err = rel_err(on_gpu, on_cpu);
        assert!(err < 1e-4, "{n} bags of {per_bag}: error {err}");
    }
}

/// A half-float weight takes the fused kernel too (on a plain Flex device), and gives the sums
/// of its widened `f32` copy to the bit, as `f32`.
#[test]
fn a_half_weight_sums_as_its_widened_copy() {
    let device = Device::flex();
    let (buckets, d, n) = (300, 48, 9);
    let weight: Tensor<2> = tensor(
        uniform(&mut rng(4), buckets * d, -1.0, 1.0),
        [buckets, d],
        &device,
    );
    let half = weight.clone().cast(DType::F16);
    let widened = half.clone().cast(DType::F32);
    let bags = random_bags(4, n, buckets as u32);
    let refs: Vec<&[(u32, f32)]> = bags.iter().map(Vec::as_slice).collect();
    let from_half = super::embedding_bag(half, &refs);
    assert_eq!(from_half.dtype(), DType::F32);
    let from_widened = super::embedding_bag(widened, &refs);
    let bits = |t: Tensor<2>| -> Vec<u32> {
        let values = t.into_data().try_to_vec::<f32>().expect("f32 data");
        values.iter().map(|x| x.to_bits()).collect()
    };
    assert_eq!(bits(from_half), bits(from_widened));
}
