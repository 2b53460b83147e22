//! A stable sort of n-gram entries by their bucket: least-significant-digit radix, a byte at a
//! time, over only the bytes the largest bucket uses.
//!
//! A column's n-gram list holds hundreds to thousands of buckets below 2¹⁴, and counting them
//! sorts the list: two counting passes of a byte each replace about `n·log₂ n` comparisons.
//! Being stable, it orders entries exactly as `sort_by_key` does, so the sums that follow
//! add the same values in the same order.

/// Below this many entries the standard library's stable sort (an insertion sort there) is
/// as fast.
const SMALL: usize = 64;

/// Sorts `items` by `bucket(item)`, stably: entries of equal buckets keep their order.
pub(crate) fn sort_by_bucket<T: Copy>(items: &mut Vec<T>, bucket: impl Fn(&T) -> u32) {
    if items.len() <= SMALL {
        items.sort_by_key(&bucket);
        return;
    }
    let largest = items.iter().map(&bucket).max().unwrap_or(0);
    let bytes = (32 - largest.leading_zeros()).div_ceil(8) as usize;
    let mut scratch: Vec<T> = Vec::with_capacity(items.len());
    for byte in 0..bytes {
        let shift = 8 * byte;
        let digit = |item: &T| ((bucket(item) >> shift) & 0xff) as usize;
        let mut starts = [0usize; 257];
        for item in items.iter() {
            starts[digit(item) + 1] += 1;
        }
        for d in 0..256 {
            starts[d + 1] += starts[d];
        }
        scratch.clear();
        scratch.resize(items.len(), items[0]);
        for item in items.iter() {
            let slot = &mut starts[digit(item)];
            scratch[*slot] = *item;
            *slot += 1;
        }
        std::mem::swap(items, &mut scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of pseudo-random numbers (xorshift).
    fn stream(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn it_orders_as_the_standard_stable_sort_does_ties_included() {
        let mut next = stream(3);
        for (n, range) in [
            (0, 1u64),
            (1, 5),
            (SMALL, 7),
            (SMALL + 1, 16_384),
            (1_500, 16_384),
            (3_000, 300),
            (2_000, 1 << 20),
            (500, 1 << 32),
        ] {
            // (bucket, the entry's place): the place shows whether ties kept their order.
            let items: Vec<(u32, usize)> = (0..n).map(|i| ((next() % range) as u32, i)).collect();
            let mut radix = items.clone();
            sort_by_bucket(&mut radix, |&(b, _)| b);
            let mut std = items;
            std.sort_by_key(|&(b, _)| b);
            assert_eq!(radix, std, "{n} entries below {range}");
        }
    }

    #[test]
    fn buckets_of_every_width_sort() {
        let mut items = vec![u32::MAX, 0, 1 << 24, 255, 256, 1 << 16, u32::MAX - 1];
        items.extend((0..100).map(|i| i * 40_000_000));
        let mut want = items.clone();
        want.sort_unstable();
        sort_by_bucket(&mut items, |&b| b);
        assert_eq!(items, want);
    }
}
