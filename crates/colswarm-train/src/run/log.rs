//! The run's metric log, `log.jsonl`: one JSON object per event.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::TrainError;

/// Appends JSON lines to the run's log.
pub struct Log {
    path: PathBuf,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Log({})", self.path.display())
    }
}

impl Log {
    /// Opens the log, dropping entries after `step` (a resumed run rewrites them).
    pub fn open(path: &Path, keep_until_step: usize) -> Result<Self, TrainError> {
        if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| TrainError::io(path, e))?;
            let kept: String = text
                .lines()
                .filter(|line| {
                    serde_json::from_str::<serde_json::Value>(line)
                        .ok()
                        .and_then(|v| v.get("step").and_then(serde_json::Value::as_u64))
                        .is_some_and(|s| s as usize <= keep_until_step)
                })
                .map(|line| format!("{line}\n"))
                .collect();
            colswarm_rwkv::checkpoint::write_atomically(path, kept.as_bytes())?;
        }
        Ok(Log {
            path: path.to_path_buf(),
        })
    }

    /// Appends one entry.
    pub fn write(&self, entry: &serde_json::Value) -> Result<(), TrainError> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| TrainError::io(&self.path, e))?;
        writeln!(file, "{entry}").map_err(|e| TrainError::io(&self.path, e))
    }
}
