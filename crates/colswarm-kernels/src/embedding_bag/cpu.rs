//! `sum += Σ value · rows[bucket]` over one bag of `(bucket, value)` pairs, on the host: the
//! fused embedding bag's inner loop, and an n-gram reader's scores (a linear layer over a
//! sparse bag).
//!
//! The workspace builds for baseline x86-64 (SSE2), so the plain loop ran four lanes wide.
//! This one runs on the machine's widest vectors ([`isa_dispatch!`]) and keeps a block of the
//! sum in registers while it walks the whole bag, so each element of the sum is loaded and
//! stored once per block rather than once per pair.

use crate::cpu::{Isa, isa_dispatch};
use crate::simd::Simd;

/// The block of `V` vectors of `sum` at `j0`, accumulated over the whole bag in registers.
#[inline(always)]
fn block<S: Simd, const V: usize>(
    s: S,
    sum: &mut [f32],
    rows: &[f32],
    bag: &[(u32, f32)],
    j0: usize,
) {
    let d = sum.len();
    let mut acc: [S::V; V] = core::array::from_fn(|v| s.load(&sum[j0 + v * S::LANES..]));
    for &(bucket, value) in bag {
        let row = &rows[bucket as usize * d + j0..];
        let x = s.splat(value);
        for (v, acc) in acc.iter_mut().enumerate() {
            *acc = s.fmadd(x, s.load(&row[v * S::LANES..]), *acc);
        }
    }
    for (v, &acc) in acc.iter().enumerate() {
        s.store(&mut sum[j0 + v * S::LANES..], acc);
    }
}

#[inline(always)]
fn bag_sum_generic<S: Simd>(s: S, sum: &mut [f32], rows: &[f32], bag: &[(u32, f32)]) {
    let d = sum.len();
    // Four vectors a block: 32 floats with AVX2, 64 with AVX-512, in 4 of 16 or 32 registers.
    let mut j0 = 0;
    while j0 + 4 * S::LANES <= d {
        block::<S, 4>(s, sum, rows, bag, j0);
        j0 += 4 * S::LANES;
    }
    while j0 + S::LANES <= d {
        block::<S, 1>(s, sum, rows, bag, j0);
        j0 += S::LANES;
    }
    // Elements left over from the vectors (none when d is a multiple of the width).
    for &(bucket, value) in bag {
        let row = &rows[bucket as usize * d..(bucket as usize + 1) * d];
        for (s, &w) in sum[j0..].iter_mut().zip(&row[j0..]) {
            *s += value * w;
        }
    }
}

isa_dispatch!(
    fn bag_sum_on = bag_sum_generic(sum: &mut [f32], rows: &[f32], bag: &[(u32, f32)]) -> ()
);

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
    let d = sum.len();
    if d == 0 {
        return;
    }
    assert!(
        rows.len().is_multiple_of(d),
        "embedding bag: {} weights are not rows of {d}",
        rows.len()
    );
    let buckets = rows.len() / d;
    if let Some(&(bucket, _)) = bag.iter().find(|(b, _)| *b as usize >= buckets) {
        panic!("embedding bag: bucket {bucket} past the weight's {buckets} rows");
    }
    bag_sum_on(Isa::detect(), sum, rows, bag);
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

    #[test]
    #[should_panic(expected = "bucket 4 past the weight's 4 rows")]
    fn a_bucket_past_the_rows_is_named() {
        bag_sum(&mut [0.0; 3], &[0.0; 12], &[(4, 1.0)]);
    }
}
