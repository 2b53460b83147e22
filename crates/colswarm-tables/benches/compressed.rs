//! What reading the repository's benchmark data compressed costs: the GitTables DBpedia folds
//! (`db_semi1_cv_0..3`, 13 MB of CSV, the largest set) from `.csv.gz` against the same files
//! decompressed into a temporary folder, and T2D from `t2d.tar.gz` against its unpacked folder;
//! both through `load_tables`, as training and evaluation read them.
//!
//! Run: `cargo bench -p colswarm-tables --bench compressed`

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use flate2::read::MultiGzDecoder;

use colswarm_tables::{DataFolder, DatasetFormat, Split, load_tables};

fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets")
}

/// A scratch folder, emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("colswarm-bench-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn gunzip(from: &Path, to: &Path) {
    let mut input = MultiGzDecoder::new(File::open(from).unwrap());
    io::copy(&mut input, &mut File::create(to).unwrap()).unwrap();
}

fn bench_gittables(c: &mut Criterion) {
    let folder = datasets().join("gittables-semtab22/gt-semtab22-dbpedia-all");
    let plain_dir = scratch("gittables");
    let mut gz = Vec::new();
    let mut plain = Vec::new();
    for fold in 0..4 {
        let name = format!("db_semi1_cv_{fold}.csv");
        gz.push(folder.join(format!("{name}.gz")));
        plain.push(plain_dir.join(&name));
        gunzip(gz.last().unwrap(), plain.last().unwrap());
    }
    let mut group = c.benchmark_group("load-gittables-dbpedia-4-folds");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("plain", |b| {
        b.iter(|| load_tables(DatasetFormat::SatoCv, &plain, Split::All).unwrap())
    });
    group.bench_function("gzip", |b| {
        b.iter(|| load_tables(DatasetFormat::SatoCv, &gz, Split::All).unwrap())
    });
    group.finish();
    let _ = fs::remove_dir_all(plain_dir);
}

fn bench_t2d(c: &mut Criterion) {
    let archive_path = datasets().join("t2d-webtables/t2d.tar.gz");
    let plain_dir = scratch("t2d");
    let archive = DataFolder::open(&archive_path).unwrap();
    let DataFolder::Archive { files, .. } = &archive else {
        unreachable!("a .tar.gz opens as an archive")
    };
    for (inner, bytes) in files {
        let path = plain_dir.join(inner);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
    let mut group = c.benchmark_group("load-t2d");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("plain", |b| {
        b.iter(|| {
            load_tables(
                DatasetFormat::T2d,
                std::slice::from_ref(&plain_dir),
                Split::All,
            )
            .unwrap()
        })
    });
    group.bench_function("tar-gz", |b| {
        b.iter(|| {
            load_tables(
                DatasetFormat::T2d,
                std::slice::from_ref(&archive_path),
                Split::All,
            )
            .unwrap()
        })
    });
    group.finish();
    let _ = fs::remove_dir_all(plain_dir);
}

criterion_group!(benches, bench_gittables, bench_t2d);
criterion_main!(benches);
