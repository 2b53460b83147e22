//! A seeded "poor man's fuzz" of the checkpoint loader: a few hundred mutations of a valid
//! checkpoint and of the malformed corpus, none may panic, every error names the file. The same
//! body runs under cargo-fuzz from the workspace's `fuzz-models/` folder.

use crate::checkpoint::fuzzing::{fuzz_checkpoint, seeds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CASES: usize = 600;

/// Bytes that matter to the header parser, inserted more often than chance would.
const INTERESTING: &[u8] = b"\"{}[],:0123456789-eE \\\x00\xff";

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.random_range(1..6) {
        let at = rng.random_range(0..=data.len());
        match rng.random_range(0..5) {
            0 if at < data.len() => data[at] = rng.random(),
            1 => data.insert(at, INTERESTING[rng.random_range(0..INTERESTING.len())]),
            2 if at < data.len() => {
                let end = (at + rng.random_range(1..16)).min(data.len());
                data.drain(at..end);
            }
            // The header length (first 8 bytes) and the digits of the header are where the
            // interesting damage is.
            3 if data.len() >= 8 => data[rng.random_range(0..8)] = rng.random(),
            _ => data.truncate(at),
        }
    }
    data
}

#[test]
fn checkpoint_loader_never_panics() {
    let mut inputs = seeds();
    assert!(!inputs.is_empty(), "the tiny checkpoint seed is written");
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/malformed");
    for entry in std::fs::read_dir(corpus).unwrap() {
        inputs.push(std::fs::read(entry.unwrap().path()).unwrap());
    }
    for input in &inputs {
        fuzz_checkpoint(input);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    for _ in 0..CASES {
        let base = &inputs[rng.random_range(0..inputs.len())];
        fuzz_checkpoint(&mutate(&mut rng, base));
    }
}
