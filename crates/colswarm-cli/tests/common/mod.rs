//! Helpers shared by the CLI's test files.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root, where the commands run.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `colswarm` with `args` in the repository's root.
pub fn colswarm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_colswarm"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

/// The stdout of a successful run (its stderr in the panic message otherwise).
pub fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// A T2D folder holding the first `n` annotated tables (with the classes file).
pub fn t2d_subset(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let source = root().join("datasets/t2d-webtables");
    std::fs::copy(
        source.join("classes_complete.csv"),
        dir.path().join("classes_complete.csv"),
    )
    .unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(source.join("attributes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for sub in ["attributes", "tables"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    for file in files.iter().take(n) {
        let name = file.file_name().unwrap();
        for sub in ["attributes", "tables"] {
            std::fs::copy(source.join(sub).join(name), dir.path().join(sub).join(name)).unwrap();
        }
    }
    dir
}
