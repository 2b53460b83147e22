//! Body of the `checkpoint` fuzz target in the workspace's `fuzz-models/` folder, kept here so
//! it compiles (and runs, from its `smoke_tests` module, under `cargo test`) as ordinary code. It must never panic:
//! arbitrary bytes given as a checkpoint file give a checkpoint or an error that names the file.

use std::path::Path;

use burn::tensor::Device;

use super::{
    CHECKSUM_KEY, CheckpointFile, FORMAT, FORMAT_KEY, checksum, load_checkpoint_file, read_config,
    save_checkpoint,
};
use crate::config::RwkvConfig;
use crate::error::RwkvError;

/// The name fuzzed checkpoints go by in errors.
pub const FUZZ_FILE_NAME: &str = "fuzz.safetensors";

/// A model small enough to build for every input: the tensors of a fuzzed file are loaded into
/// it whatever config the file names.
pub fn tiny_config() -> RwkvConfig {
    RwkvConfig::minimal(4, 2, 1)
}

fn assert_names_file(result: Result<impl Sized, RwkvError>) {
    if let Err(error) = result {
        let message = error.to_string();
        assert!(
            message.contains(FUZZ_FILE_NAME),
            "the error does not name the file: {message}"
        );
    }
}

/// Feeds `data` to the checkpoint loader as a safetensors file, twice:
///
/// - as it is: structure, format, checksum, config, then the model the config describes;
/// - with its format and checksum entries set to what its tensors give, so that the fuzzer gets
///   past the SHA-256 to the config and to every tensor's name, dtype, shape and values: the
///   model its config describes, and a tiny fixed model.
pub fn fuzz_checkpoint(data: &[u8]) {
    let device = Device::flex();
    let path = Path::new(FUZZ_FILE_NAME);
    assert_names_file(
        CheckpointFile::from_bytes(path, data.to_vec())
            .and_then(|file| load_checkpoint_file(&file, &device)),
    );

    let Ok(mut file) = CheckpointFile::parse(path, data.to_vec()) else {
        return;
    };
    let computed = match file.tensors() {
        Ok(tensors) => {
            let entries = tensors.tensors();
            checksum(
                entries
                    .iter()
                    .map(|(name, view)| (name.as_str(), view.shape(), view.data())),
            )
        }
        Err(error) => {
            assert_names_file(Err::<(), _>(error));
            return;
        }
    };
    file.metadata.insert(FORMAT_KEY.into(), FORMAT.into());
    file.metadata.insert(CHECKSUM_KEY.into(), computed);
    if let Err(error) = file.verify_checksum() {
        panic!("a repaired checksum must verify: {error}");
    }
    if read_config(&file).is_ok() {
        let loaded = load_checkpoint_file(&file, &device);
        if let Ok((model, config)) = &loaded {
            assert_eq!(model.d_model(), config.d_model);
        }
        assert_names_file(loaded);
    }
    assert_names_file(file.load_into(tiny_config().init(0, &device), &device));
}

/// Seed inputs for the fuzzer: a checkpoint of the tiny model as [`save_checkpoint`] writes it.
pub fn seeds() -> Vec<Vec<u8>> {
    let device = Device::flex();
    let dir = std::env::temp_dir().join(format!("colswarm-fuzz-seeds-{}", std::process::id()));
    let path = dir.join(FUZZ_FILE_NAME);
    let config = tiny_config();
    let written = std::fs::create_dir_all(&dir)
        .ok()
        .and_then(|()| save_checkpoint(&config.init(0, &device), &config, &path).ok())
        .and_then(|()| std::fs::read(&path).ok());
    let _ = std::fs::remove_dir_all(&dir);
    written.into_iter().collect()
}

#[cfg(test)]
mod smoke_tests;
