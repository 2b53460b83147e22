//! Helpers shared by the CLI's test files.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use colswarm_tables::{DataFolder, decode_windows_1252};

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

/// `text` in Windows-1252, byte for byte: each character's byte is the one that decodes to it
/// (a character the code page lacks panics).
pub fn windows_1252(text: &str) -> Vec<u8> {
    let byte_of: HashMap<char, u8> = (0..=255u8)
        .map(|b| (decode_windows_1252(&[b]).chars().next().unwrap(), b))
        .collect();
    text.chars()
        .map(|c| byte_of.get(&c).copied().unwrap_or_else(|| panic!("{c:?}")))
        .collect()
}

/// The repository's T2D archive, opened.
pub fn t2d_archive() -> DataFolder {
    DataFolder::open(&root().join("datasets/t2d-webtables/t2d.tar.gz")).unwrap()
}

/// Writes the archive's file `inner` to `path` (creating its folder).
pub fn extract(archive: &DataFolder, inner: &str, path: &Path) {
    let mut bytes = Vec::new();
    archive
        .open_file(inner)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A T2D folder holding the first `n` annotated tables (with the classes file).
pub fn t2d_subset(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let archive = t2d_archive();
    for inner in ["classes_complete.csv".to_string()].into_iter().chain(
        archive
            .list("attributes", "csv")
            .unwrap()
            .iter()
            .take(n)
            .flat_map(|name| [format!("attributes/{name}"), format!("tables/{name}")]),
    ) {
        extract(&archive, &inner, &dir.path().join(&inner));
    }
    dir
}

/// The files directly in `dir` that `keep` keeps, by name, with their bytes, sorted by name.
pub fn file_contents(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && keep(p))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The frozen state specialists the shipped recipe trains beside (`models/specialists/`).
pub const STATE_SPECIALISTS: [&str; 3] = ["wikitables", "gittables", "t2d"];

/// A small swarm whose specialists contribute their state: a primary of the state
/// specialists' shape trained for one epoch on the T2D folder `data` beside the three of
/// [`STATE_SPECIALISTS`] (the shipped model carries none); returns its directory.
pub fn state_swarm(data: &Path, out: &Path) -> PathBuf {
    let train = format!("t2d=t2d:{}", data.display());
    let specialists: Vec<String> = STATE_SPECIALISTS
        .iter()
        .map(|name| format!("{name}=models/specialists/{name}.safetensors"))
        .collect();
    let mut args = vec![
        "train", "--quiet", "--epochs", "1", "--seed", "3", "--train", &train,
    ];
    for setting in [
        "model.d_model=64",
        "model.n_layers=2",
        "model.head_size=32",
        "model.d_head_hidden=16",
    ] {
        args.extend(["--set", setting]);
    }
    for specialist in &specialists {
        args.extend(["--specialist", specialist]);
    }
    let out_arg = out.to_str().unwrap();
    args.extend(["--out", out_arg]);
    stdout(&colswarm(&args));
    out.join("best")
}

/// The model directory's `labels.json`.
pub fn labels_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("labels.json")).unwrap()).unwrap()
}

/// `eval --json` of `model` on T2D data at `input`, with `extra` flags.
pub fn eval_t2d(model: &Path, input: &str, extra: &[&str]) -> serde_json::Value {
    let model = model.to_str().unwrap();
    let mut args = vec![
        "eval", "--model", model, "--format", "t2d", "--input", input,
    ];
    args.extend_from_slice(extra);
    args.push("--json");
    serde_json::from_str(stdout(&colswarm(&args)).trim()).unwrap()
}

/// `calibrate ARGS` on the shipped model fails with `expected` in its error.
pub fn refuses_calibrate(args: &[&str], expected: &str) {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("x");
    let mut all = vec!["calibrate", "--model", shipped.to_str().unwrap()];
    all.extend(args);
    all.extend(["--out", out.to_str().unwrap()]);
    let result = colswarm(&all);
    assert!(!result.status.success());
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(err.contains(expected), "{args:?}: {err}");
    assert!(!out.exists());
}
