//! A seeded "poor man's fuzz" of the model-directory loader: a few hundred mutations of a tiny
//! model's `swarm.json` and component files, none may panic, every error names a file. The same
//! body runs under cargo-fuzz from the workspace's `fuzz-models/` folder.

use crate::manifest::fuzzing::{fuzz_manifest, seeds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CASES: usize = 300;

/// Bytes that matter to the JSON and safetensors parsers, inserted more often than chance would.
const INTERESTING: &[u8] = b"\"{}[],:0123456789-eE \\\x00\xff";

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.random_range(1..4) {
        // Byte 0 is the mode byte: keep it.
        let at = rng.random_range(1..=data.len().max(1));
        match rng.random_range(0..5) {
            0 if at < data.len() => data[at] = rng.random(),
            1 => data.insert(at, INTERESTING[rng.random_range(0..INTERESTING.len())]),
            2 if at < data.len() => {
                let end = (at + rng.random_range(1..8)).min(data.len());
                data.drain(at..end);
            }
            // Numbers in the manifest's config: 0, or far too large.
            3 if at < data.len() && data[at].is_ascii_digit() => {
                let digits: &[u8] = if rng.random_bool(0.5) {
                    b"0"
                } else {
                    b"99999999999"
                };
                data.splice(at..at + 1, digits.iter().copied());
            }
            _ => data.truncate(at.max(1)),
        }
    }
    data
}

#[test]
fn model_directory_loader_never_panics() {
    let mut inputs = seeds();
    assert_eq!(
        inputs.len(),
        8,
        "the manifest and its seven component files"
    );
    // The fuzz crashes of the malformed corpus, as the target read them (mode byte 0).
    let crash = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/malformed/fuzz_crash_zero_decay_rank.json"
    );
    inputs.push([&[0u8][..], &std::fs::read(crash).unwrap()].concat());
    for input in &inputs {
        fuzz_manifest(input);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for _ in 0..CASES {
        let base = &inputs[rng.random_range(0..inputs.len())];
        fuzz_manifest(&mutate(&mut rng, base));
    }
}
