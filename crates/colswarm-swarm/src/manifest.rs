//! Saving and loading a swarm as a manifest plus one safetensors file per component.
//!
//! ```text
//! model-dir/
//!   swarm.json                 the manifest: configs, labels, files with their SHA-256
//!   primary.safetensors        the primary RWKV-7 model (a regular RWKV checkpoint)
//!   router.safetensors  fusion.safetensors  cta_head.safetensors  cpa_head.safetensors
//!   alignment-<name>.safetensors   one per specialist
//!   specialists/<name>.safetensors (or any path the manifest names)
//! ```
//!
//! Loading recomputes every file's SHA-256 and refuses a file whose checksum differs from the
//! manifest's, naming the file and the component.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::tensor::Device;
use colswarm_rwkv::checkpoint::{CheckpointFile, save_module, write_atomically};
use colswarm_rwkv::save_checkpoint;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::SwarmError;
use crate::orchestrator::{OrchestratorConfig, Swarm};
use crate::specialist::FrozenSpecialist;

/// The manifest's `format` value.
pub const MANIFEST_FORMAT: &str = "colswarm-swarm-v1";
/// The manifest's file name inside a model directory.
pub const MANIFEST_FILE: &str = "swarm.json";

/// A file of the model and its checksum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileRef {
    /// Path, relative to the manifest's directory unless absolute.
    pub path: String,
    /// SHA-256 of the file, hex.
    pub sha256: String,
}

/// A specialist of the swarm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecialistRef {
    /// Name (used in reports and annotations).
    pub name: String,
    /// Its checkpoint.
    pub checkpoint: FileRef,
    /// Its alignment to the primary.
    pub alignment: FileRef,
}

/// The manifest of a saved swarm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwarmManifest {
    /// [`MANIFEST_FORMAT`].
    pub format: String,
    /// The orchestrator's configuration.
    pub config: OrchestratorConfig,
    /// CTA label names, in head order.
    #[serde(default)]
    pub cta_labels: Vec<String>,
    /// CPA relation names, in head order.
    #[serde(default)]
    pub cpa_labels: Vec<String>,
    /// The primary model.
    pub primary: FileRef,
    /// The router.
    pub router: FileRef,
    /// The fusion layer.
    pub fusion: FileRef,
    /// The CTA head.
    pub cta_head: FileRef,
    /// The CPA head.
    pub cpa_head: FileRef,
    /// The specialists, in router order.
    pub specialists: Vec<SpecialistRef>,
}

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, SwarmError> {
    let io = |source| SwarmError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer).map_err(io)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

fn resolve(dir: &Path, file: &FileRef) -> PathBuf {
    let path = Path::new(&file.path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

/// Checks a file against its recorded checksum.
fn verify(dir: &Path, file: &FileRef, what: &str) -> Result<PathBuf, SwarmError> {
    let path = resolve(dir, file);
    let computed = sha256_file(&path)?;
    if computed != file.sha256 {
        return Err(SwarmError::ChecksumMismatch {
            path,
            what: what.to_string(),
            recorded: file.sha256.clone(),
            computed,
        });
    }
    Ok(path)
}

fn save_component<M: Module>(module: &M, dir: &Path, name: &str) -> Result<FileRef, SwarmError> {
    let path = dir.join(name);
    save_module(module, HashMap::new(), &path)?;
    Ok(FileRef {
        path: name.to_string(),
        sha256: sha256_file(&path)?,
    })
}

impl Swarm {
    /// Saves the swarm into `dir` (created if needed) with its manifest. Specialists loaded from
    /// a file keep their path (relative to `dir` when inside it); in-memory ones are written to
    /// `dir/specialists/`.
    pub fn save(
        &self,
        dir: &Path,
        config: &OrchestratorConfig,
        cta_labels: &[String],
        cpa_labels: &[String],
    ) -> Result<SwarmManifest, SwarmError> {
        let io = |source| SwarmError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir.join("specialists")).map_err(io)?;
        let o = &self.orchestrator;
        let primary_path = dir.join("primary.safetensors");
        save_checkpoint(&o.primary, &config.primary, &primary_path)?;
        let primary = FileRef {
            path: "primary.safetensors".into(),
            sha256: sha256_file(&primary_path)?,
        };
        let mut specialists = Vec::with_capacity(self.specialists.len());
        for (specialist, alignment) in self.specialists.iter().zip(&o.alignments) {
            let checkpoint = match specialist.source() {
                Some((path, sha256)) => FileRef {
                    path: relative_to(path, dir),
                    sha256: sha256.to_string(),
                },
                None => {
                    let name = format!("specialists/{}.safetensors", specialist.name());
                    save_checkpoint(specialist.model(), specialist.config(), &dir.join(&name))?;
                    FileRef {
                        sha256: sha256_file(&dir.join(&name))?,
                        path: name,
                    }
                }
            };
            specialists.push(SpecialistRef {
                name: specialist.name().to_string(),
                checkpoint,
                alignment: save_component(
                    alignment,
                    dir,
                    &format!("alignment-{}.safetensors", specialist.name()),
                )?,
            });
        }
        let manifest = SwarmManifest {
            format: MANIFEST_FORMAT.into(),
            config: config.clone(),
            cta_labels: cta_labels.to_vec(),
            cpa_labels: cpa_labels.to_vec(),
            primary,
            router: save_component(&o.router, dir, "router.safetensors")?,
            fusion: save_component(&o.fusion, dir, "fusion.safetensors")?,
            cta_head: save_component(&o.cta, dir, "cta_head.safetensors")?,
            cpa_head: save_component(&o.cpa, dir, "cpa_head.safetensors")?,
            specialists,
        };
        let json = serde_json::to_vec_pretty(&manifest).map_err(|e| SwarmError::Manifest {
            path: dir.join(MANIFEST_FILE),
            reason: e.to_string(),
        })?;
        write_atomically(&dir.join(MANIFEST_FILE), &json)?;
        Ok(manifest)
    }

    /// Loads a swarm from its manifest (a `swarm.json` file or the directory holding it),
    /// verifying every file's checksum.
    pub fn load(path: &Path, device: &Device) -> Result<(Self, SwarmManifest), SwarmError> {
        let manifest_path = if path.is_dir() {
            path.join(MANIFEST_FILE)
        } else {
            path.to_path_buf()
        };
        let dir = manifest_path
            .parent()
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let bytes = std::fs::read(&manifest_path).map_err(|source| SwarmError::Io {
            path: manifest_path.clone(),
            source,
        })?;
        let manifest: SwarmManifest =
            serde_json::from_slice(&bytes).map_err(|e| SwarmError::Manifest {
                path: manifest_path.clone(),
                reason: e.to_string(),
            })?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(SwarmError::Manifest {
                path: manifest_path,
                reason: format!("format `{}` is not `{MANIFEST_FORMAT}`", manifest.format),
            });
        }
        let mut specialists = Vec::with_capacity(manifest.specialists.len());
        for s in &manifest.specialists {
            let path = verify(&dir, &s.checkpoint, &format!("specialist \"{}\"", s.name))?;
            specialists.push(FrozenSpecialist::load(&s.name, &path, device)?);
        }
        let shapes: Vec<_> = specialists
            .iter()
            .map(FrozenSpecialist::state_shape)
            .collect();
        let mut orchestrator = manifest.config.init(&shapes, 0, device);
        let open = |file: &FileRef, what: &str| -> Result<CheckpointFile, SwarmError> {
            Ok(CheckpointFile::open(&verify(&dir, file, what)?)?)
        };
        orchestrator.primary =
            open(&manifest.primary, "primary")?.load_into(orchestrator.primary, device)?;
        orchestrator.router =
            open(&manifest.router, "router")?.load_into(orchestrator.router, device)?;
        orchestrator.fusion =
            open(&manifest.fusion, "fusion")?.load_into(orchestrator.fusion, device)?;
        orchestrator.cta =
            open(&manifest.cta_head, "CTA head")?.load_into(orchestrator.cta, device)?;
        orchestrator.cpa =
            open(&manifest.cpa_head, "CPA head")?.load_into(orchestrator.cpa, device)?;
        let alignments = std::mem::take(&mut orchestrator.alignments);
        for (alignment, s) in alignments.into_iter().zip(&manifest.specialists) {
            let file = open(&s.alignment, &format!("alignment of \"{}\"", s.name))?;
            orchestrator
                .alignments
                .push(file.load_into(alignment, device)?);
        }
        Ok((Swarm::new(orchestrator, specialists)?, manifest))
    }
}

fn relative_to(path: &Path, dir: &Path) -> String {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (path, dir) = (canonical(path), canonical(dir));
    path.strip_prefix(&dir)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string_lossy().into_owned())
}
