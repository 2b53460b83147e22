//! Helpers shared by the CLI's test files.

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
