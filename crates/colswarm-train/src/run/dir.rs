//! The directory of a training run: its configuration, metric log, checkpoints and best model.
//!
//! ```text
//! run/
//!   run.json                 the configuration (a resumed run must match it)
//!   log.jsonl                one JSON object per event (step, epoch, dev evaluation, skip)
//!   checkpoints/step-000120/ model/ (a model directory), optimizer.bpk, state.json
//!   best/                    the model directory of the best dev score so far
//! ```
//!
//! Every checkpoint is written into a `.tmp-*` directory and renamed into place, so a crash
//! leaves either the old checkpoint or the new one, never half of one; `state.json` records the
//! SHA-256 of the optimizer file and the model directory's manifest records its files', and both
//! are verified when a run resumes. Which older checkpoints survive a new one is the run's
//! [`Retention`]. A model file that a checkpoint holds unchanged from the one before (the fixed
//! word-vector table, 5 MB, above all) becomes a hard link to that one's, so a run stores it
//! once; every file is written whole first and only then replaced by the link.

use std::path::{Path, PathBuf};

use colswarm_rwkv::checkpoint::write_atomically;
use colswarm_swarm::manifest::sha256_file;
use serde::{Deserialize, Serialize};

use crate::error::TrainError;

/// Where a run keeps its files.
#[derive(Clone, Debug)]
pub struct RunDir {
    root: PathBuf,
}

/// Counters and scores a run needs to continue exactly where it stopped (all zero/empty at the
/// start of a run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// Epoch to run next (0-based).
    pub epoch: usize,
    /// Batches of `epoch` already done.
    pub batch: usize,
    /// Optimizer steps done.
    pub step: usize,
    /// Best dev score so far.
    pub best_score: Option<f64>,
    /// Epoch of the best dev score.
    pub best_epoch: Option<usize>,
    /// Epochs since the best dev score.
    pub epochs_without_improvement: usize,
    /// Whether early stopping or the epoch limit ended the run.
    pub finished: bool,
    /// SHA-256 of `optimizer.bpk`.
    pub optimizer_sha256: String,
    /// Sum of the losses of the current epoch's batches so far, and their count (so a resumed
    /// epoch reports the same mean loss).
    #[serde(default)]
    pub epoch_loss: (f64, usize),
}

impl RunState {
    /// Whether the checkpoint holding these counters was written at the end of an epoch (at the
    /// start of the next epoch's first batch), not in the middle of one.
    pub fn ends_epoch(&self) -> bool {
        self.batch == 0 && self.step > 0
    }
}

/// Which checkpoints a run keeps besides the one it has just written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retention {
    /// The newest `n` checkpoints (stages without epochs: PARL, pretraining).
    Newest(usize),
    /// The newest `n` checkpoints and, however many mid-epoch checkpoints came after them, the
    /// newest `n` epoch-end checkpoints, so the last epochs stay there to be averaged.
    EpochEnds(usize),
}

/// A complete checkpoint on disk.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// Its directory.
    pub dir: PathBuf,
    /// Its counters.
    pub state: RunState,
}

impl Checkpoint {
    /// The model directory inside the checkpoint.
    pub fn model_dir(&self) -> PathBuf {
        self.dir.join("model")
    }

    /// The optimizer state file.
    pub fn optimizer_path(&self) -> PathBuf {
        self.dir.join("optimizer.bpk")
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TrainError + '_ {
    move |source| TrainError::io(path, source)
}

impl RunDir {
    /// Opens (creating if needed) a run directory and repairs an interrupted best-model swap.
    pub fn open(root: &Path) -> Result<Self, TrainError> {
        std::fs::create_dir_all(root.join("checkpoints")).map_err(io(root))?;
        let run = RunDir {
            root: root.to_path_buf(),
        };
        // A crash between the two renames of `replace_dir` leaves only `.old-best`.
        let (best, old) = (run.best_dir(), root.join(".old-best"));
        if !best.exists() && old.exists() {
            std::fs::rename(&old, &best).map_err(io(&old))?;
        }
        Ok(run)
    }

    /// Opens the run directory `root` ([`RunDir::open`]) for a run of `config`, which it binds
    /// ([`RunDir::bind_config`]).
    pub fn for_config<C: Serialize + serde::de::DeserializeOwned>(
        root: &Path,
        config: &C,
        resumable: impl Fn(&C) -> bool,
    ) -> Result<Self, TrainError> {
        let run = RunDir::open(root)?;
        run.bind_config(config, resumable)?;
        Ok(run)
    }

    /// `run.json`.
    pub fn config_path(&self) -> PathBuf {
        self.root.join("run.json")
    }

    /// `log.jsonl`.
    pub fn log_path(&self) -> PathBuf {
        self.root.join("log.jsonl")
    }

    /// `best/`.
    pub fn best_dir(&self) -> PathBuf {
        self.root.join("best")
    }

    /// Binds the run to `config`: a directory that already holds a run accepts only a
    /// configuration `resumable` judges compatible with the stored one; `run.json` is then
    /// (re)written atomically.
    pub fn bind_config<C: Serialize + serde::de::DeserializeOwned>(
        &self,
        config: &C,
        resumable: impl Fn(&C) -> bool,
    ) -> Result<(), TrainError> {
        let path = self.config_path();
        if path.exists() {
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            let stored: C = serde_json::from_slice(&bytes).map_err(|e| TrainError::Run {
                path: path.clone(),
                reason: format!("invalid run configuration: {e}"),
            })?;
            if !resumable(&stored) {
                return Err(TrainError::Run {
                    path,
                    reason: "this directory holds a run with a different configuration; \
                             use another output directory"
                        .into(),
                });
            }
        }
        let json = serde_json::to_vec_pretty(config).map_err(|e| TrainError::Run {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        write_atomically(&path, &json)?;
        Ok(())
    }

    /// A fresh temporary directory inside the run (same file system, so renames are atomic).
    pub fn temp_dir(&self, name: &str) -> Result<PathBuf, TrainError> {
        let dir = self.root.join(format!(".tmp-{name}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(dir)
    }

    /// Complete checkpoints, oldest first.
    pub fn checkpoints(&self) -> Result<Vec<PathBuf>, TrainError> {
        let dir = self.root.join("checkpoints");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(io(&dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("step-"))
            })
            .collect();
        found.sort();
        Ok(found)
    }

    /// Moves a finished temporary checkpoint (holding `model/` and `optimizer.bpk`) into place
    /// with its `state.json`, then drops the checkpoints `retention` does not keep.
    pub fn commit_checkpoint(
        &self,
        temp: &Path,
        mut state: RunState,
        retention: Retention,
    ) -> Result<Checkpoint, TrainError> {
        state.optimizer_sha256 = sha256_file(&temp.join("optimizer.bpk"))?;
        let json = serde_json::to_vec_pretty(&state).map_err(|e| TrainError::Run {
            path: temp.join("state.json"),
            reason: e.to_string(),
        })?;
        write_atomically(&temp.join("state.json"), &json)?;
        if let Some(previous) = self.checkpoints()?.last() {
            share_unchanged_files(&temp.join("model"), &previous.join("model"));
        }
        let dir = self
            .root
            .join("checkpoints")
            .join(format!("step-{:09}", state.step));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        std::fs::rename(temp, &dir).map_err(io(&dir))?;
        for old in self.dropped(retention, state.ends_epoch())? {
            std::fs::remove_dir_all(&old).map_err(io(&old))?;
        }
        Ok(Checkpoint { dir, state })
    }

    /// The checkpoints `retention` drops, oldest first. The newest checkpoint, just committed
    /// (`newest_ends_epoch` from its counters), is always kept.
    fn dropped(
        &self,
        retention: Retention,
        newest_ends_epoch: bool,
    ) -> Result<Vec<PathBuf>, TrainError> {
        let mut older = self.checkpoints()?;
        if older.pop().is_none() {
            return Ok(Vec::new());
        }
        let mut dropped = Vec::new();
        match retention {
            Retention::Newest(n) => {
                let kept = n.max(1) - 1;
                dropped.extend(older.drain(..older.len().saturating_sub(kept)));
            }
            Retention::EpochEnds(n) => {
                let n = n.max(1);
                let mut epoch_ends = n - usize::from(newest_ends_epoch);
                // Newest first: `age` 0 is the checkpoint before `newest`.
                for (age, dir) in older.into_iter().rev().enumerate() {
                    let ends_epoch = read_state(&dir)?.ends_epoch();
                    if ends_epoch && epoch_ends > 0 {
                        epoch_ends -= 1;
                    } else if age + 1 >= n {
                        dropped.push(dir);
                    }
                }
                dropped.reverse();
            }
        }
        Ok(dropped)
    }

    /// The newest checkpoint, its state read and its optimizer file verified.
    pub fn latest(&self) -> Result<Option<Checkpoint>, TrainError> {
        let Some(dir) = self.checkpoints()?.pop() else {
            return Ok(None);
        };
        let state = read_state(&dir)?;
        let optimizer = dir.join("optimizer.bpk");
        let computed = sha256_file(&optimizer)?;
        if computed != state.optimizer_sha256 {
            return Err(TrainError::Run {
                path: optimizer,
                reason: format!(
                    "checksum mismatch: state.json records {} but the file has {computed}",
                    state.optimizer_sha256
                ),
            });
        }
        Ok(Some(Checkpoint { dir, state }))
    }

    /// Replaces `best/` with the model directory at `source` (a finished temporary directory).
    pub fn replace_best(&self, source: &Path) -> Result<(), TrainError> {
        replace_dir(source, &self.best_dir(), &self.root.join(".old-best"))
    }
}

/// Replaces each file directly in `model` that `previous` holds byte for byte under the same
/// name by a hard link to `previous`'s. Best effort: a file that cannot be compared or linked
/// (another file system) stays the copy it is. Checkpoints are never written in place, so a
/// shared file never changes under another checkpoint.
fn share_unchanged_files(model: &Path, previous: &Path) {
    let Ok(entries) = std::fs::read_dir(model) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let old = previous.join(entry.file_name());
        let same_size = match (std::fs::metadata(&path), std::fs::metadata(&old)) {
            (Ok(a), Ok(b)) => a.is_file() && b.is_file() && a.len() == b.len(),
            _ => false,
        };
        if !(same_size && same_bytes(&path, &old).unwrap_or(false)) {
            continue;
        }
        let link = model.join(format!(".{}.link", entry.file_name().to_string_lossy()));
        let _ = std::fs::remove_file(&link);
        if std::fs::hard_link(&old, &link).is_ok() && std::fs::rename(&link, &path).is_err() {
            let _ = std::fs::remove_file(&link);
        }
    }
}

/// Whether two files of the same length hold the same bytes, read side by side and stopped at
/// the first difference: a trained file differs within its first block (safetensors put the
/// tensors' checksum in the header), so only unchanged files are read whole.
fn same_bytes(a: &Path, b: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let (mut a, mut b) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    let (mut block_a, mut block_b) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = a.read(&mut block_a)?;
        if n == 0 {
            return Ok(true);
        }
        b.read_exact(&mut block_b[..n])?;
        if block_a[..n] != block_b[..n] {
            return Ok(false);
        }
    }
}

/// The counters (`state.json`) of the checkpoint in `dir`.
pub fn read_state(dir: &Path) -> Result<RunState, TrainError> {
    let path = dir.join("state.json");
    let bytes = std::fs::read(&path).map_err(io(&path))?;
    serde_json::from_slice(&bytes).map_err(|e| TrainError::Run {
        path,
        reason: format!("invalid checkpoint state: {e}"),
    })
}

/// Puts `source` at `target`: `target` → `old`, `source` → `target`, remove `old`. A crash
/// leaves `target` or `old` (repaired by [`RunDir::open`]).
fn replace_dir(source: &Path, target: &Path, old: &Path) -> Result<(), TrainError> {
    if old.exists() {
        std::fs::remove_dir_all(old).map_err(io(old))?;
    }
    if target.exists() {
        std::fs::rename(target, old).map_err(io(target))?;
    }
    std::fs::rename(source, target).map_err(io(target))?;
    if old.exists() {
        std::fs::remove_dir_all(old).map_err(io(old))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(step: usize) -> RunState {
        RunState {
            epoch: 0,
            batch: step,
            step,
            best_score: None,
            best_epoch: None,
            epochs_without_improvement: 0,
            finished: false,
            optimizer_sha256: String::new(),
            epoch_loss: (0.0, 0),
        }
    }

    fn temp_checkpoint(run: &RunDir, bytes: &[u8]) -> PathBuf {
        let temp = run.temp_dir("checkpoint").unwrap();
        std::fs::write(temp.join("optimizer.bpk"), bytes).unwrap();
        temp
    }

    #[test]
    fn keeps_the_newest_and_verifies_the_optimizer_file() {
        let root = tempfile::tempdir().unwrap();
        let run = RunDir::open(root.path()).unwrap();
        assert!(run.latest().unwrap().is_none());
        for step in [3, 7, 12] {
            let temp = temp_checkpoint(&run, &[step as u8]);
            run.commit_checkpoint(&temp, state(step), Retention::Newest(2))
                .unwrap();
        }
        assert_eq!(run.checkpoints().unwrap().len(), 2);
        let latest = run.latest().unwrap().unwrap();
        assert_eq!(latest.state.step, 12);
        std::fs::write(latest.optimizer_path(), b"tampered").unwrap();
        let err = run.latest().unwrap_err().to_string();
        assert!(
            err.contains("optimizer.bpk") && err.contains("checksum"),
            "{err}"
        );
    }

    #[test]
    fn epoch_end_retention_keeps_the_newest_checkpoints_and_the_last_epochs() {
        let root = tempfile::tempdir().unwrap();
        let run = RunDir::open(root.path()).unwrap();
        let steps = |run: &RunDir| -> Vec<usize> {
            let dirs = run.checkpoints().unwrap();
            dirs.iter().map(|d| read_state(d).unwrap().step).collect()
        };
        // Epochs of 10 steps, a checkpoint every 4 steps and at each epoch's end.
        for step in [4, 8, 10, 14, 18, 20, 24, 28, 30, 34] {
            let mut counters = state(step);
            counters.batch = step % 10;
            let temp = temp_checkpoint(&run, &[step as u8]);
            run.commit_checkpoint(&temp, counters, Retention::EpochEnds(2))
                .unwrap();
            if step == 24 {
                assert_eq!(steps(&run), [10, 20, 24]);
            }
        }
        // The newest two alone, 30 and 34, would hold one epoch end.
        assert_eq!(steps(&run), [20, 30, 34]);
        assert_eq!(run.latest().unwrap().unwrap().state.step, 34);
        let temp = temp_checkpoint(&run, b"40");
        let mut counters = state(40);
        counters.batch = 0;
        run.commit_checkpoint(&temp, counters, Retention::EpochEnds(2))
            .unwrap();
        assert_eq!(steps(&run), [30, 34, 40]);
    }

    #[cfg(unix)]
    #[test]
    fn a_model_file_unchanged_since_the_last_checkpoint_is_stored_once() {
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        let run = RunDir::open(root.path()).unwrap();
        let commit = |step: usize, weights: &[u8]| {
            let temp = temp_checkpoint(&run, &[step as u8]);
            let model = temp.join("model");
            std::fs::create_dir_all(&model).unwrap();
            std::fs::write(model.join("word_vectors.safetensors"), b"fixed table").unwrap();
            std::fs::write(model.join("primary.safetensors"), weights).unwrap();
            run.commit_checkpoint(&temp, state(step), Retention::Newest(2))
                .unwrap()
                .dir
                .join("model")
        };
        let inode = |p: PathBuf| std::fs::metadata(p).unwrap().ino();
        let first = commit(1, b"weights 1");
        let second = commit(2, b"weights 2");
        let words = "word_vectors.safetensors";
        assert_eq!(inode(first.join(words)), inode(second.join(words)));
        let primary = "primary.safetensors";
        assert_ne!(inode(first.join(primary)), inode(second.join(primary)));
        // The first checkpoint dropped, the third still shares the table with the second.
        let third = commit(3, b"weights 3");
        assert!(!first.exists());
        assert_eq!(inode(second.join(words)), inode(third.join(words)));
        assert_eq!(std::fs::read(third.join(words)).unwrap(), b"fixed table");
        assert_eq!(std::fs::read(third.join(primary)).unwrap(), b"weights 3");
        let leftovers: Vec<_> = std::fs::read_dir(&third)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn an_unfinished_temp_dir_is_not_a_checkpoint_and_best_survives_a_torn_swap() {
        let root = tempfile::tempdir().unwrap();
        let run = RunDir::open(root.path()).unwrap();
        let _ = temp_checkpoint(&run, b"half");
        assert!(run.latest().unwrap().is_none());
        let best = run.temp_dir("best").unwrap();
        std::fs::write(best.join("swarm.json"), b"{}").unwrap();
        run.replace_best(&best).unwrap();
        // Simulate a crash after `best` → `.old-best`.
        std::fs::rename(run.best_dir(), root.path().join(".old-best")).unwrap();
        let run = RunDir::open(root.path()).unwrap();
        assert!(run.best_dir().join("swarm.json").is_file());
    }
}
