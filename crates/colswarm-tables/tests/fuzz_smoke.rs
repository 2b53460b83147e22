//! A seeded "poor man's fuzz": ~10k random and mutated inputs per reader, none may panic.
//! The same bodies run under cargo-fuzz from the workspace's `fuzz/` folder.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use colswarm_tables::fuzzing::{fuzz_csv, fuzz_python_literal, fuzz_sotab_json};

const CASES: usize = 10_000;

/// Bytes that matter to the parsers, inserted more often than chance would.
const INTERESTING: &[u8] = b"\",;\t|\n\r{}[]:'\\0123456789-.eE\xEF\xBB\xBF\xFF\xC3";

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.random_range(1..8) {
        let at = if data.is_empty() {
            0
        } else {
            rng.random_range(0..=data.len())
        };
        match rng.random_range(0..5) {
            0 if at < data.len() => data[at] = rng.random(),
            1 => data.insert(at, INTERESTING[rng.random_range(0..INTERESTING.len())]),
            2 if at < data.len() => {
                let end = (at + rng.random_range(1..16)).min(data.len());
                data.drain(at..end);
            }
            3 => {
                let copy: Vec<u8> = data[at..].iter().take(32).copied().collect();
                data.splice(at..at, copy);
            }
            _ => data.truncate(at),
        }
    }
    data
}

fn random_bytes(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let len = rng.random_range(0..256);
    (0..len)
        .map(|_| {
            if rng.random_bool(0.5) {
                INTERESTING[rng.random_range(0..INTERESTING.len())]
            } else {
                rng.random()
            }
        })
        .collect()
}

fn run(seeds: &[&[u8]], target: fn(&[u8]), seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for case in 0..CASES {
        let data = if case % 4 == 0 {
            random_bytes(&mut rng)
        } else {
            let base = seeds[rng.random_range(0..seeds.len())];
            mutate(&mut rng, base)
        };
        target(&data);
    }
}

#[test]
fn csv_reader_never_panics() {
    let seeds: &[&[u8]] = &[
        b"a,b,c\n1,2,3\n4,5,6\n",
        b"\xEF\xBB\xBFname;city\r\n\"Ann \"\"A\"\"\";Oslo\r\nBob;\"Ber\ngen\"\r\n",
        b"x\ty\n1\t\n\t2\n",
        b"\"unclosed,1\n2,3\n",
    ];
    run(seeds, fuzz_csv, 1);
}

#[test]
fn sotab_reader_never_panics() {
    let seeds: &[&[u8]] = &[
        b"{\"0\":\"Desejo\",\"1\":\"978-972\",\"2\":336,\"3\":\"2013-06-12\"}\n{\"0\":null,\"1\":[\"$9.75\"],\"2\":16.0}\n",
        b"{\"0\":{\"a\":[1,2,{\"b\":null}]},\"5\":true}\n",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56\x32\x50\xb2\x52\x4a\x54\xaa\xe5\x02\x00",
    ];
    run(seeds, fuzz_sotab_json, 2);
}

#[test]
fn python_literal_parser_never_panics() {
    let seeds: &[&[u8]] = &[
        b"[[[[0, 0], [524139, 'Bottle Rocket']], [[10, 0], [26121980, \"Today's Special\"]]]]",
        b"{'film', 'tv'}",
        b"['a\\x41\\u00e9', (-1.5e3, None, True)]",
    ];
    run(seeds, fuzz_python_literal, 3);
}
