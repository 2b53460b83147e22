//! CSV read + serialize throughput on one core (MB/s of CSV input).
//!
//! Run: `cargo bench -p colswarm-tables --no-default-features --bench serialize`

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use colswarm_tables::{CsvOptions, SerializeConfig, read_csv_from_reader, serialize_table};

/// A deterministic CSV of about `target_bytes`: 12 columns mixing ids, names, dates, decimals,
/// quoted text with commas, and empty cells; many small tables are typical, so rows are split
/// into tables of 200 rows.
fn synthetic_tables(target_bytes: usize) -> Vec<Vec<u8>> {
    const WORDS: &[&str] = &[
        "Oslo",
        "Bergen",
        "Lisboa",
        "Kraków",
        "São Paulo",
        "Zürich",
        "red",
        "blue",
        "alpha",
        "omega",
        "Bottle Rocket",
        "The Royal Tenenbaums",
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut tables = Vec::new();
    let mut total = 0;
    while total < target_bytes {
        let mut csv = String::from("id,name,city,date,price,qty,ratio,note,flag,code,empty,url\n");
        for row in 0..200 {
            let word = |rng: &mut ChaCha8Rng| WORDS[rng.random_range(0..WORDS.len())];
            csv.push_str(&format!(
                "{row},{} {},{},20{:02}-{:02}-{:02},{}.{:02},{},{:.4},\"{}, {} and {}\",{},{}{},,https://example.org/{}/{}\n",
                word(&mut rng),
                word(&mut rng),
                word(&mut rng),
                rng.random_range(0..25),
                rng.random_range(1..13),
                rng.random_range(1..29),
                rng.random_range(0..1000),
                rng.random_range(0..100),
                rng.random_range(0..10_000),
                rng.random::<f64>(),
                word(&mut rng),
                word(&mut rng),
                word(&mut rng),
                rng.random_bool(0.5),
                word(&mut rng).to_uppercase(),
                rng.random_range(0..100),
                word(&mut rng),
                row,
            ));
        }
        total += csv.len();
        tables.push(csv.into_bytes());
    }
    tables
}

/// On-CPU time of this thread (Linux `schedstat`, nanoseconds), so the single-core number does
/// not depend on what else the machine runs; `None` elsewhere.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

fn read_and_serialize(tables: &[Vec<u8>], options: &CsvOptions, config: &SerializeConfig) {
    for data in tables {
        if let Ok((table, _)) =
            read_csv_from_reader(&data[..], Path::new("bench.csv"), "t", options)
        {
            black_box(serialize_table(&table, config));
        }
    }
}

fn bench(c: &mut Criterion) {
    let tables = synthetic_tables(8 << 20);
    let bytes: usize = tables.iter().map(Vec::len).sum();
    let options = CsvOptions::default();
    let config = SerializeConfig::default();
    let mut group = c.benchmark_group("csv");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    group.bench_function("read", |b| {
        b.iter(|| {
            for data in &tables {
                let read = read_csv_from_reader(&data[..], Path::new("bench.csv"), "t", &options);
                black_box(read.ok());
            }
        })
    });
    group.bench_function("read_and_serialize", |b| {
        b.iter(|| read_and_serialize(&tables, &options, &config))
    });
    // Same work timed in on-CPU time: the one-core throughput on a shared machine.
    group.bench_function("read_and_serialize_cpu_time", |b| {
        b.iter_custom(|iterations| {
            let wall = Instant::now();
            let start = thread_cpu_time();
            for _ in 0..iterations {
                read_and_serialize(&tables, &options, &config);
            }
            match (start, thread_cpu_time()) {
                (Some(start), Some(end)) => end - start,
                _ => wall.elapsed(),
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
