//! `sum += Σ value · rows[bucket]` over one bag of `(bucket, value)` pairs, on the host: the
//! fused embedding bag's inner loop, and an n-gram reader's scores (a linear layer over a
//! sparse bag).
//!
//! The workspace builds for baseline x86-64 (SSE2), so the plain loop ran four lanes wide.
//! This one runs on the machine's widest vectors ([`isa_dispatch!`]) and keeps a block of the
//! sum in registers while it walks the whole bag, so each element of the sum is loaded and
//! stored once per block rather than once per pair.

use crate::cpu::{Isa, isa_dispatch};
use crate::simd::{Simd, f16};

/// What a weight row holds: `f32`, or half floats widened as they are read (half the bytes
/// to fetch from memory, the same sums).
pub(crate) trait RowElement: Copy {
    /// The first `S::LANES` elements of `x` as `f32`.
    fn load<S: Simd>(s: S, x: &[Self]) -> S::V;
    /// One element as `f32`.
    fn widen(self) -> f32;
}

impl RowElement for f32 {
    #[inline(always)]
    fn load<S: Simd>(s: S, x: &[f32]) -> S::V {
        s.load(x)
    }
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}

impl RowElement for f16 {
    #[inline(always)]
    fn load<S: Simd>(s: S, x: &[f16]) -> S::V {
        s.load_half(x)
    }
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

/// The block of `V` vectors of `sum` at `j0`, accumulated over the whole bag in registers.
#[inline(always)]
fn block<S: Simd, T: RowElement, const V: usize>(
    s: S,
    sum: &mut [f32],
    rows: &[T],
    bag: &[(u32, f32)],
    j0: usize,
) {
    let d = sum.len();
    let mut acc: [S::V; V] = core::array::from_fn(|v| s.load(&sum[j0 + v * S::LANES..]));
    for &(bucket, value) in bag {
        let row = &rows[bucket as usize * d + j0..];
        let x = s.splat(value);
        for (v, acc) in acc.iter_mut().enumerate() {
            *acc = s.fmadd(x, T::load(s, &row[v * S::LANES..]), *acc);
        }
    }
    for (v, &acc) in acc.iter().enumerate() {
        s.store(&mut sum[j0 + v * S::LANES..], acc);
    }
}

#[inline(always)]
fn bag_sum_rows<S: Simd, T: RowElement>(s: S, sum: &mut [f32], rows: &[T], bag: &[(u32, f32)]) {
    let d = sum.len();
    // Four vectors a block: 32 floats with AVX2, 64 with AVX-512, in 4 of 16 or 32 registers.
    let mut j0 = 0;
    while j0 + 4 * S::LANES <= d {
        block::<S, T, 4>(s, sum, rows, bag, j0);
        j0 += 4 * S::LANES;
    }
    while j0 + S::LANES <= d {
        block::<S, T, 1>(s, sum, rows, bag, j0);
        j0 += S::LANES;
    }
    // Elements left over from the vectors (none when d is a multiple of the width).
    for &(bucket, value) in bag {
        let row = &rows[bucket as usize * d..(bucket as usize + 1) * d];
        for (s, &w) in sum[j0..].iter_mut().zip(&row[j0..]) {
            *s += value * w.widen();
        }
    }
}

#[inline(always)]
fn bag_sum_generic<S: Simd>(s: S, sum: &mut [f32], rows: &[f32], bag: &[(u32, f32)]) {
    bag_sum_rows(s, sum, rows, bag);
}

#[inline(always)]
fn bag_sum_half_generic<S: Simd>(s: S, sum: &mut [f32], rows: &[f16], bag: &[(u32, f32)]) {
    bag_sum_rows(s, sum, rows, bag);
}

isa_dispatch!(
    fn bag_sum_on = bag_sum_generic(sum: &mut [f32], rows: &[f32], bag: &[(u32, f32)]) -> ()
);
isa_dispatch!(
    fn bag_sum_half_on = bag_sum_half_generic(sum: &mut [f32], rows: &[f16], bag: &[(u32, f32)]) -> ()
);

/// Checks that `rows` is a whole number of rows of `d` and that every bucket of `bag` is one
/// of them.
fn check_bag(d: usize, rows: usize, bag: &[(u32, f32)]) {
    assert!(
        rows.is_multiple_of(d),
        "embedding bag: {rows} weights are not rows of {d}"
    );
    let buckets = rows / d;
    if let Some(&(bucket, _)) = bag.iter().find(|(b, _)| *b as usize >= buckets) {
        panic!("embedding bag: bucket {bucket} past the weight's {buckets} rows");
    }
}

/// Adds `Σ value · rows[bucket]` over the `(bucket, value)` pairs of `bag` to `sum`, where
/// `rows` holds `rows.len() / sum.len()` rows of `sum.len()` values, row-major.
///
/// # Shapes
///
/// - `sum`: `[d]`; `rows`: `[buckets, d]` flattened; `bag`: pairs with `bucket < buckets`
///
/// # Panics
///
/// If `rows` is not a whole number of rows, or a bucket is not below their count.
pub fn bag_sum(sum: &mut [f32], rows: &[f32], bag: &[(u32, f32)]) {
    if sum.is_empty() {
        return;
    }
    check_bag(sum.len(), rows.len(), bag);
    bag_sum_on(Isa::detect(), sum, rows, bag);
}

/// [`bag_sum`] over rows of half floats, each widened to `f32` as it is read: the same sums
/// as [`bag_sum`] over the widened rows, from half the bytes.
///
/// # Shapes
///
/// As [`bag_sum`].
///
/// # Panics
///
/// As [`bag_sum`].
pub fn bag_sum_half(sum: &mut [f32], rows: &[f16], bag: &[(u32, f32)]) {
    if sum.is_empty() {
        return;
    }
    check_bag(sum.len(), rows.len(), bag);
    bag_sum_half_on(Isa::detect(), sum, rows, bag);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::Scalar;

    fn naive(sum: &[f32], rows: &[f32], bag: &[(u32, f32)]) -> Vec<f32> {
        let d = sum.len();
        let mut out: Vec<f64> = sum.iter().map(|&x| f64::from(x)).collect();
        for &(bucket, value) in bag {
            for (j, out) in out.iter_mut().enumerate() {
                *out += f64::from(value) * f64::from(rows[bucket as usize * d + j]);
            }
        }
        out.into_iter().map(|x| x as f32).collect()
    }

    #[test]
    fn every_width_and_instruction_set_matches_a_naive_sum() {
        let value = |i: usize| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5;
        // Whole blocks, one-vector blocks, scalar tails, a repeated bucket, an empty bag.
        for (d, buckets, bag) in [
            (64, 50, vec![(3, 0.5), (49, -1.25), (3, 2.0)]),
            (273, 40, vec![(0, 1.0), (39, 0.1), (17, -0.7), (8, 0.3)]),
            (5, 7, vec![(6, 1.5), (1, -2.0)]),
            (1, 3, vec![(2, 4.0)]),
            (40, 4, vec![]),
        ] {
            let rows: Vec<f32> = (0..d * buckets).map(value).collect();
            let start: Vec<f32> = (0..d).map(|j| value(j + 101)).collect();
            let expected = naive(&start, &rows, &bag);
            let mut fast = start.clone();
            bag_sum(&mut fast, &rows, &bag);
            let mut scalar = start.clone();
            bag_sum_generic(Scalar, &mut scalar, &rows, &bag);
            for (what, got) in [("detected", &fast), ("scalar", &scalar)] {
                for (x, e) in got.iter().zip(&expected) {
                    assert!(
                        (x - e).abs() <= 1e-5 * (1.0 + e.abs()),
                        "{what} d {d}: {x} vs {e}"
                    );
                }
            }
        }
    }

    /// Half rows give the sums of their widened `f32` rows to the bit, on every instruction
    /// set this CPU has: the same products and additions, in the same order.
    #[test]
    fn half_rows_sum_as_their_widened_rows_on_every_instruction_set() {
        fn both<S: Simd>(s: S, rows: &[f32], halves: &[f16], bag: &[(u32, f32)], d: usize) {
            let start: Vec<f32> = (0..d).map(|j| j as f32 * 0.01).collect();
            let (mut full, mut half) = (start.clone(), start);
            bag_sum_rows(s, &mut full, rows, bag);
            bag_sum_rows(s, &mut half, halves, bag);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&full), bits(&half), "d {d}, {} lanes", S::LANES);
        }
        let value = |i: usize| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5;
        for (d, buckets) in [(64, 50), (32, 9), (273, 40), (5, 7)] {
            let halves: Vec<f16> = (0..d * buckets).map(|i| f16::from_f32(value(i))).collect();
            let rows: Vec<f32> = halves.iter().map(|h| h.to_f32()).collect();
            let bag: Vec<(u32, f32)> = (0..3 * buckets)
                .map(|i| ((i * 31 % buckets) as u32, value(i + 7)))
                .collect();
            both(Scalar, &rows, &halves, &bag, d);
            #[cfg(target_arch = "x86_64")]
            {
                if let Some(s) = crate::simd::Avx2::new() {
                    both(s, &rows, &halves, &bag, d);
                }
                if let Some(s) = crate::simd::Avx512::new() {
                    both(s, &rows, &halves, &bag, d);
                }
            }
            let (mut detected, mut widened) = (vec![0.0; d], vec![0.0; d]);
            bag_sum_half(&mut detected, &halves, &bag);
            bag_sum(&mut widened, &rows, &bag);
            assert_eq!(detected, widened);
        }
    }

    #[test]
    #[should_panic(expected = "bucket 9 past the weight's 2 rows")]
    fn a_bucket_past_the_half_rows_is_named() {
        bag_sum_half(&mut [0.0; 3], &[f16::ZERO; 6], &[(9, 1.0)]);
    }

    #[test]
    #[should_panic(expected = "bucket 4 past the weight's 4 rows")]
    fn a_bucket_past_the_rows_is_named() {
        bag_sum(&mut [0.0; 3], &[0.0; 12], &[(4, 1.0)]);
    }
}
