//! Every random choice of a run derives from its seed, a stream per kind of choice and an
//! index (a step, an epoch, a table), so a resumed run draws exactly what the uninterrupted run
//! would have drawn.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Stream of the example order of each epoch ([`epoch_order`]).
pub(crate) const ORDER_STREAM: u64 = 1;
/// Stream of the supervised stage's router masks, one generator per step.
pub(crate) const ROUTING_STREAM: u64 = 2;
/// Stream of the supervised stage's column-dropout masks, one generator per table.
pub(crate) const DROPOUT_STREAM: u64 = 3;
/// Stream of the PARL stage's rollout masks, one generator per step (a PARL run draws no
/// dropout mask, so it shares the number).
pub(crate) const ROLLOUT_STREAM: u64 = 3;

/// The generator of draw `index` of `stream` in a run seeded with `seed`.
pub(crate) fn rng_for(seed: u64, stream: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng.set_word_pos(u128::from(index) << 16);
    rng
}

/// The examples (indices into `n`) of step `step` of a run that goes through them
/// `batch_size` at a time, each epoch in its [`epoch_order`] (the last batch of an epoch may be
/// shorter).
pub(crate) fn step_batch(seed: u64, step: usize, batch_size: usize, n: usize) -> Vec<usize> {
    let batches = n.div_ceil(batch_size).max(1);
    let order = epoch_order(seed, step / batches, n);
    let at = (step % batches) * batch_size;
    order[at..(at + batch_size).min(n)].to_vec()
}

/// The example order of an epoch.
pub fn epoch_order(seed: u64, epoch: usize, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng_for(seed, ORDER_STREAM, epoch as u64));
    order
}
