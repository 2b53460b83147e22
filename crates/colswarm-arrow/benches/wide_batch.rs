//! Annotator throughput on one record batch of 1,000 columns × 100 rows (strings, integers,
//! decimals, dates), with 1 and 2 annotating threads. Criterion reports columns per second.
//!
//! ```sh
//! cargo bench --workspace --profile dev --bench wide_batch
//! ```

use std::hint::black_box;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use colswarm_arrow::{AnnotateRecordBatch, BatchOptions};
use colswarm_model::Annotator;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const COLUMNS: usize = 1_000;
const ROWS: usize = 100;
const WORDS: [&str; 12] = [
    "Berlin", "Lagos", "Quito", "Osaka", "Perth", "Oslo", "Lima", "Accra", "Hanoi", "Porto",
    "Dakar", "Sofia",
];

fn wide_batch(seed: u64) -> RecordBatch {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let columns: Vec<(String, ArrayRef)> = (0..COLUMNS)
        .map(|c| {
            let array: ArrayRef = match c % 4 {
                0 => Arc::new(StringArray::from_iter_values(
                    (0..ROWS).map(|_| WORDS[rng.random_range(0..WORDS.len())]),
                )),
                1 => Arc::new(Int64Array::from_iter_values(
                    (0..ROWS).map(|_| rng.random_range(0..1_000_000)),
                )),
                2 => Arc::new(Float64Array::from_iter_values(
                    (0..ROWS).map(|_| rng.random_range(-1.0e3..1.0e3)),
                )),
                _ => Arc::new(StringArray::from_iter_values((0..ROWS).map(|_| {
                    format!(
                        "20{:02}-{:02}-{:02}",
                        rng.random_range(0..25),
                        rng.random_range(1..13),
                        rng.random_range(1..29)
                    )
                }))),
            };
            (format!("field_{c}"), array)
        })
        .collect();
    RecordBatch::try_from_iter(columns).expect("a valid batch")
}

fn wide_batch_throughput(c: &mut Criterion) {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
    let batch = wide_batch(7);
    let options = BatchOptions::default();
    let mut group = c.benchmark_group("annotate_1000_columns");
    group.sample_size(10);
    group.throughput(Throughput::Elements(COLUMNS as u64));
    for threads in [1, 2] {
        let annotator = Annotator::builder(model)
            .threads(threads)
            .build()
            .expect("the shipped model loads");
        group.bench_function(format!("threads={threads}"), |b| {
            b.iter(|| {
                annotator
                    .annotate_record_batch(black_box(&batch), "wide", &options)
                    .expect("annotation succeeds")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, wide_batch_throughput);
criterion_main!(benches);
