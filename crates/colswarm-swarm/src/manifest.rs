//! Saving and loading a swarm as a manifest plus one safetensors file per component.
//!
//! ```text
//! model-dir/
//!   swarm.json                 the manifest: configs, labels, files with their SHA-256
//!   primary.safetensors        the primary RWKV-7 model (a regular RWKV checkpoint)
//!   cta_head.safetensors  cpa_head.safetensors
//!   router.safetensors  fusion.safetensors   with specialists only: the sigmoid router and the
//!                                 state fusion (a swarm without specialists has neither)
//!   column_ngrams.safetensors     the column n-gram embedding, when the config reads n-grams
//!   column_words.safetensors  word_vectors.safetensors   the word-vector projection and the
//!                                 fixed word vectors (f16), when the config reads word vectors
//!   alignment-<name>.safetensors   one per specialist
//!   specialists/<name>.safetensors (or any path the manifest names)
//!   experts/<name>/               each specialist that contributes its answers: a model
//!                                 directory of its own ([`ExpertRef`])
//! ```
//!
//! The manifest lists every specialist in one list, each saying what it contributes: its state
//! (fused into the primary's) or its answers (mixed into the primary's). Older layouts are
//! read and migrated ([`ManifestVersion`]).
//!
//! Loading recomputes every file's SHA-256 and refuses a file whose checksum differs from the
//! manifest's, naming the file and the component.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::module::Module;
use burn::tensor::Device;
use colswarm_rwkv::checkpoint::{CheckpointFile, save_module, write_atomically};
use colswarm_rwkv::save_checkpoint;
use serde::{Deserialize, Serialize};

pub use crate::checksum::sha256_file;
use crate::error::SwarmError;
use crate::orchestrator::{Orchestrator, OrchestratorConfig, Swarm};
use crate::specialist::FrozenSpecialist;
use crate::word_vectors::{ColumnWordsConfig, WordVectors};

mod experts;
mod format;
mod params;

use params::ComponentParams;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;

pub use experts::{ExpertRef, LEGACY_EXPERTS_FILE, set_experts};
pub use format::{MANIFEST_FORMAT, MANIFEST_FORMAT_V1, MANIFEST_FORMAT_V2, ManifestVersion};
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

/// The files of a model's word-vector features.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordFiles {
    /// The learned projection.
    pub projection: FileRef,
    /// The fixed word vectors ([`WordVectors`]).
    pub vectors: FileRef,
}

/// A specialist that contributes its state: a frozen RWKV-7 checkpoint whose recurrent state
/// is aligned and fused into the primary's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecialistRef {
    /// Name (used in reports and annotations).
    pub name: String,
    /// Its checkpoint.
    pub checkpoint: FileRef,
    /// Its alignment to the primary.
    pub alignment: FileRef,
}

/// The manifest of a saved swarm, in memory: whatever layout it was read from (see
/// [`ManifestVersion`]), upgraded to the current one. It is always written as
/// [`MANIFEST_FORMAT`].
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmManifest {
    /// The layout the manifest was read in ([`ManifestVersion::V3`] for one just saved): it
    /// says how the directory's other files (`labels.json`, `serialize.json`) are laid out.
    pub version: ManifestVersion,
    /// The orchestrator's configuration.
    pub config: OrchestratorConfig,
    /// CTA label names, in head order.
    pub cta_labels: Vec<String>,
    /// CPA relation names, in head order.
    pub cpa_labels: Vec<String>,
    /// The primary model.
    pub primary: FileRef,
    /// The router (present exactly when the swarm has specialists: without them it has
    /// nothing to route, and its file would be a placeholder; older directories list one).
    pub router: Option<FileRef>,
    /// The fusion layer (as the router).
    pub fusion: Option<FileRef>,
    /// The CTA head.
    pub cta_head: FileRef,
    /// The CPA head.
    pub cpa_head: FileRef,
    /// The column n-gram embedding (present exactly when the config reads n-grams).
    pub column_ngrams: Option<FileRef>,
    /// The word-vector files (present exactly when the config reads word vectors).
    pub column_words: Option<WordFiles>,
    /// The specialists that contribute their state, in router order.
    pub specialists: Vec<SpecialistRef>,
    /// The specialists that contribute their answers (whole models), in router order, after
    /// the state specialists.
    pub experts: Vec<ExpertRef>,
    /// Their trained router and logit mix (the model crate's `ExpertRouting`); `None`: each
    /// one's [`ExpertRef::open_below`] rule and the plain average.
    pub expert_routing: Option<FileRef>,
}

impl SwarmManifest {
    /// The manifest at `path` (a `swarm.json` file or the directory holding it), an older
    /// layout migrated in memory (a v2 directory's `experts.json` folded in).
    pub fn read(path: &Path) -> Result<Self, SwarmError> {
        read_manifest(path).map(|(_, manifest)| manifest)
    }
}

fn resolve(dir: &Path, file: &FileRef) -> PathBuf {
    let path = Path::new(&file.path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

/// The word-vector files of `o` written to `dir`: its projection and the vectors; none when it
/// reads no word vectors.
fn save_words(o: &Orchestrator, dir: &Path) -> Result<Option<WordFiles>, SwarmError> {
    Ok(match (&o.words, o.column_words()) {
        (None, _) => None,
        (Some(projection), Some((_, vectors))) => {
            let path = dir.join("word_vectors.safetensors");
            vectors.save(&path)?;
            Some(WordFiles {
                projection: save_component(projection, dir, "column_words.safetensors")?,
                vectors: FileRef {
                    path: "word_vectors.safetensors".into(),
                    sha256: sha256_file(&path)?,
                },
            })
        }
        (Some(_), None) => {
            return Err(SwarmError::Inconsistent(
                "the model reads word vectors but none are attached".into(),
            ));
        }
    })
}

/// `orchestrator` with the weights of its optional parts read from their files: the n-gram
/// embedding, the word vectors and their projection, and the alignments.
#[allow(clippy::type_complexity)]
fn load_optional(
    mut orchestrator: Orchestrator,
    (ngrams, words, alignments): (
        Option<PathBuf>,
        Option<(PathBuf, ColumnWordsConfig, Arc<WordVectors>)>,
        &[PathBuf],
    ),
    device: &Device,
) -> Result<Orchestrator, SwarmError> {
    let open = |path: &Path| CheckpointFile::open(path);
    if let (Some(path), Some(embedding)) = (&ngrams, orchestrator.ngrams.take()) {
        orchestrator.ngrams = Some(open(path)?.load_into(embedding, device)?);
    }
    if let Some((path, config, vectors)) = words {
        orchestrator = orchestrator.with_word_vectors(Some((config, vectors)), device)?;
        if let Some(projection) = orchestrator.words.take() {
            orchestrator.words = Some(open(&path)?.load_into(projection, device)?);
        }
    }
    let initial = std::mem::take(&mut orchestrator.alignments);
    for (alignment, path) in initial.into_iter().zip(alignments) {
        orchestrator
            .alignments
            .push(open(path)?.load_into(alignment, device)?);
    }
    Ok(orchestrator)
}

/// Verifies a manifest's files: each against its checksum and against the bytes the weights
/// the config describes need, before anything is allocated (a manifest claiming a 10⁹-wide
/// head must be refused, not allocated).
struct Checked<'a> {
    dir: &'a Path,
    manifest_path: &'a Path,
}

impl Checked<'_> {
    fn mismatch(&self, reason: &str) -> SwarmError {
        SwarmError::Manifest {
            path: self.manifest_path.to_path_buf(),
            reason: reason.into(),
        }
    }

    /// The verified path of `file`, the `what` of `params` parameters.
    fn file(&self, file: &FileRef, what: &str, params: usize) -> Result<PathBuf, SwarmError> {
        let path = verify(self.dir, file, what)?;
        let bytes = std::fs::metadata(&path)
            .map_err(|source| SwarmError::Io {
                path: path.clone(),
                source,
            })?
            .len();
        // Two bytes a parameter at least: a checkpoint stores f32 or f16.
        if params as u128 * 2 > u128::from(bytes) {
            return Err(self.mismatch(&format!(
                "the config describes {params} parameters for the {what} but {} holds only {bytes} bytes",
                path.display()
            )));
        }
        Ok(path)
    }

    /// The router's or the fusion's file: required with specialists, optional without (a
    /// directory saved before they were left out lists one).
    fn routing(
        &self,
        file: &Option<FileRef>,
        what: &str,
        params: usize,
        routed: bool,
    ) -> Result<Option<PathBuf>, SwarmError> {
        match file {
            Some(file) => self.file(file, what, params).map(Some),
            None if routed => Err(self.mismatch(&format!(
                "the swarm has specialists but the manifest names no file for the {what}"
            ))),
            None => Ok(None),
        }
    }

    /// An optional component: its file exactly when the config asks for it (`config` says how).
    fn optional(
        &self,
        file: &Option<FileRef>,
        params: Option<usize>,
        what: &str,
        config: &str,
    ) -> Result<Option<PathBuf>, SwarmError> {
        match (file, params) {
            (Some(file), Some(params)) => self.file(file, what, params).map(Some),
            (None, None) => Ok(None),
            (None, Some(_)) => Err(self.mismatch(&format!(
                "the config {config} but the manifest names no file for the {what}"
            ))),
            (Some(_), None) => Err(self.mismatch(&format!(
                "the manifest names a file for the {what} but the config does not ask for it"
            ))),
        }
    }

    /// The word-vector projection's path, its config and the vectors (`known` when they are
    /// the same file, already loaded); none when the model reads no word vectors.
    #[allow(clippy::type_complexity)]
    fn words(
        &self,
        manifest: &SwarmManifest,
        known: Option<(&str, &Arc<WordVectors>)>,
    ) -> Result<Option<(PathBuf, ColumnWordsConfig, Arc<WordVectors>)>, SwarmError> {
        match (&manifest.column_words, manifest.config.column_words) {
            (Some(files), Some(config)) => {
                let projection = self.file(
                    &files.projection,
                    "word-vector projection",
                    config.num_params(manifest.config.primary.d_model),
                )?;
                let vectors = match known {
                    Some((sha256, vectors)) if sha256 == files.vectors.sha256 => {
                        Arc::clone(vectors)
                    }
                    _ => Arc::new(WordVectors::load(&verify(
                        self.dir,
                        &files.vectors,
                        "word vectors",
                    )?)?),
                };
                Ok(Some((projection, config, vectors)))
            }
            (None, None) => Ok(None),
            (None, Some(_)) => Err(self
                .mismatch("the config reads word vectors but the manifest names no file for them")),
            (Some(_), None) => Err(self.mismatch(
                "the manifest names word-vector files but the config does not read them",
            )),
        }
    }
}

/// Checks a file against its recorded checksum. Only regular files are read: a manifest naming
/// a device or a pipe (`/dev/zero`) must not make loading hang.
fn verify(dir: &Path, file: &FileRef, what: &str) -> Result<PathBuf, SwarmError> {
    let path = resolve(dir, file);
    let io = |source| SwarmError::Io {
        path: path.clone(),
        source,
    };
    if !std::fs::metadata(&path).map_err(io)?.is_file() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}: not a regular file"),
        )));
    }
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
    /// `dir/specialists/`. The answering specialists the directory lists already (and their
    /// routing) are kept, as their directories are.
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
        std::fs::create_dir_all(dir).map_err(io)?;
        let o = &self.orchestrator;
        let primary_path = dir.join("primary.safetensors");
        save_checkpoint(&o.primary, &config.primary, &primary_path)?;
        let primary = FileRef {
            path: "primary.safetensors".into(),
            sha256: sha256_file(&primary_path)?,
        };
        let specialists = self.save_specialists(dir)?;
        let routed = !specialists.is_empty();
        let (experts, expert_routing) = match dir.join(MANIFEST_FILE).exists() {
            true => {
                let old = SwarmManifest::read(dir)?;
                (old.experts, old.expert_routing)
            }
            false => (Vec::new(), None),
        };
        let mut manifest = SwarmManifest {
            version: ManifestVersion::V3,
            config: config.clone(),
            cta_labels: cta_labels.to_vec(),
            cpa_labels: cpa_labels.to_vec(),
            primary,
            router: routed
                .then(|| save_component(&o.router, dir, "router.safetensors"))
                .transpose()?,
            fusion: routed
                .then(|| save_component(&o.fusion, dir, "fusion.safetensors"))
                .transpose()?,
            cta_head: save_component(&o.cta, dir, "cta_head.safetensors")?,
            cpa_head: save_component(&o.cpa, dir, "cpa_head.safetensors")?,
            column_ngrams: o
                .ngrams
                .as_ref()
                .map(|e| save_component(e, dir, "column_ngrams.safetensors"))
                .transpose()?,
            column_words: save_words(o, dir)?,
            specialists,
            experts,
            expert_routing,
        };
        if let Some(name) = format::first_repeated(manifest.specialist_names()) {
            return Err(SwarmError::Manifest {
                path: dir.join(MANIFEST_FILE),
                reason: format!("the specialist name {name:?} would be listed twice"),
            });
        }
        manifest.version = ManifestVersion::V3;
        rewrite_manifest(&dir.join(MANIFEST_FILE), &manifest)?;
        Ok(manifest)
    }

    /// Each specialist's checkpoint (its own file when it has one, else written to
    /// `dir/specialists/`) and its alignment, written to `dir`.
    fn save_specialists(&self, dir: &Path) -> Result<Vec<SpecialistRef>, SwarmError> {
        let mut specialists = Vec::with_capacity(self.specialists.len());
        for (specialist, alignment) in self.specialists.iter().zip(&self.orchestrator.alignments) {
            let checkpoint = match specialist.source() {
                Some((path, sha256)) => FileRef {
                    path: relative_to(path, dir),
                    sha256: sha256.to_string(),
                },
                None => {
                    let folder = dir.join("specialists");
                    std::fs::create_dir_all(&folder).map_err(|source| SwarmError::Io {
                        path: folder,
                        source,
                    })?;
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
        Ok(specialists)
    }

    /// Loads a swarm from its manifest (a `swarm.json` file or the directory holding it),
    /// verifying every file's checksum.
    pub fn load(path: &Path, device: &Device) -> Result<(Self, SwarmManifest), SwarmError> {
        Self::load_sharing(path, device, None)
    }

    /// [`Swarm::load`], reusing `known` word vectors (with the SHA-256 of their file) where the
    /// manifest names a word-vector file of the same checksum, instead of reading and verifying
    /// that file again: a model directory's domain experts share their primary's vectors.
    pub fn load_sharing(
        path: &Path,
        device: &Device,
        known: Option<(&str, &Arc<WordVectors>)>,
    ) -> Result<(Self, SwarmManifest), SwarmError> {
        let (manifest_path, manifest) = read_manifest(path)?;
        let dir = manifest_path
            .parent()
            .unwrap_or(Path::new("."))
            .to_path_buf();
        // The config comes from the file: one that cannot be built is an error, not a panic.
        manifest
            .config
            .primary
            .validate()
            .map_err(|e| SwarmError::Manifest {
                path: manifest_path.clone(),
                reason: format!("primary: {e}"),
            })?;
        let mut specialists = Vec::with_capacity(manifest.specialists.len());
        for s in &manifest.specialists {
            let path = verify(&dir, &s.checkpoint, &format!("specialist \"{}\"", s.name))?;
            specialists.push(FrozenSpecialist::load(&s.name, &path, device)?);
        }
        let shapes: Vec<_> = specialists
            .iter()
            .map(FrozenSpecialist::state_shape)
            .collect();
        // Every file is verified, and the weights the config describes are checked against the
        // bytes each file holds, before the orchestrator is allocated: a manifest claiming a
        // 10⁹-wide head must be refused, not allocated.
        let params = ComponentParams::of(&manifest.config, &shapes);
        let checked = Checked {
            dir: &dir,
            manifest_path: &manifest_path,
        };
        let primary = checked.file(&manifest.primary, "primary", params.primary)?;
        // Without specialists the router and fusion have nothing to do: older directories
        // still list a file for each, which is checked and loaded.
        let routed = !manifest.specialists.is_empty();
        let router = checked.routing(&manifest.router, "router", params.router, routed)?;
        let fusion = checked.routing(&manifest.fusion, "fusion", params.fusion, routed)?;
        let cta = checked.file(&manifest.cta_head, "CTA head", params.cta)?;
        let cpa = checked.file(&manifest.cpa_head, "CPA head", params.cpa)?;
        let ngrams = checked.optional(
            &manifest.column_ngrams,
            params.ngrams,
            "column n-gram embedding",
            "reads column n-grams",
        )?;
        let words = checked.words(&manifest, known)?;
        let alignments = manifest
            .specialists
            .iter()
            .zip(&params.alignments)
            .map(|(s, params)| {
                checked.file(
                    &s.alignment,
                    &format!("alignment of \"{}\"", s.name),
                    *params,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;

        let mut orchestrator = manifest.config.init(&shapes, 0, device);
        let open = |path: &Path| CheckpointFile::open(path);
        orchestrator.primary = open(&primary)?.load_into(orchestrator.primary, device)?;
        if let Some(router) = &router {
            orchestrator.router = open(router)?.load_into(orchestrator.router, device)?;
        }
        if let Some(fusion) = &fusion {
            orchestrator.fusion = open(fusion)?.load_into(orchestrator.fusion, device)?;
        }
        orchestrator.cta = open(&cta)?.load_into(orchestrator.cta, device)?;
        orchestrator.cpa = open(&cpa)?.load_into(orchestrator.cpa, device)?;
        let orchestrator = load_optional(orchestrator, (ngrams, words, &alignments), device)?;
        Ok((Swarm::new(orchestrator, specialists)?, manifest))
    }
}

/// The manifest at `path` (a `swarm.json` file or the directory holding it), with its path; a
/// v2 directory's `experts.json` folded in.
fn read_manifest(path: &Path) -> Result<(PathBuf, SwarmManifest), SwarmError> {
    let manifest_path = if path.is_dir() {
        path.join(MANIFEST_FILE)
    } else {
        path.to_path_buf()
    };
    if path.is_dir() && !manifest_path.exists() {
        return Err(SwarmError::NotModelDirectory {
            path: path.to_path_buf(),
        });
    }
    let bytes = std::fs::read(&manifest_path).map_err(|source| SwarmError::Io {
        path: manifest_path.clone(),
        source,
    })?;
    let mut manifest: SwarmManifest =
        serde_json::from_slice(&bytes).map_err(|e| SwarmError::Manifest {
            path: manifest_path.clone(),
            reason: e.to_string(),
        })?;
    manifest.fold_legacy_experts(&manifest_path)?;
    Ok((manifest_path, manifest))
}

/// Stores a new inference threshold τ for the router of the swarm saved at `path` (a
/// `swarm.json` file or the directory holding it): specialist `i` opens on a table where its
/// gate `g_i > τ`, so `τ = 1` closes every specialist. Only the manifest is rewritten
/// (atomically); no weight and no checksum changes.
///
/// Refuses a τ outside `[0, 1]`, and a manifest in the older layout
/// ([`ManifestVersion::V1`]): rewritten, it would make the directory's other files be read in
/// the current layout.
pub fn set_router_threshold(path: &Path, threshold: f64) -> Result<SwarmManifest, SwarmError> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(SwarmError::Input(format!(
            "router threshold {threshold}: a gate is a probability, so the threshold must lie in [0, 1]"
        )));
    }
    let (manifest_path, mut manifest) = read_manifest(path)?;
    manifest.config.threshold = threshold;
    rewrite_manifest(&manifest_path, &manifest)?;
    Ok(manifest)
}

/// Points the word-vector file of the manifest of `dir` at `path` (relative to `dir`, or
/// absolute), which must hold the same vectors: its checksum must be the one the manifest
/// records. Only the manifest is rewritten (atomically). Refuses a manifest without word
/// vectors or in the older layout.
pub fn point_word_vectors(dir: &Path, path: &str) -> Result<SwarmManifest, SwarmError> {
    let (manifest_path, mut manifest) = read_manifest(dir)?;
    let Some(words) = manifest.column_words.as_mut() else {
        return Err(SwarmError::Manifest {
            path: manifest_path,
            reason: "the model reads no word vectors".into(),
        });
    };
    let target = dir.join(path);
    let found = sha256_file(&target)?;
    if found != words.vectors.sha256 {
        return Err(SwarmError::Manifest {
            path: target,
            reason: format!(
                "holds other word vectors (checksum {found}) than the manifest's ({})",
                words.vectors.sha256
            ),
        });
    }
    words.vectors.path = path.to_string();
    rewrite_manifest(&manifest_path, &manifest)?;
    Ok(manifest)
}

/// Writes a manifest read by [`read_manifest`] back in place, atomically, as v3; then removes a
/// v2 directory's `experts.json`, which the manifest now holds. Refuses one read in the v1
/// layout, whose directory's other files would then be read in the current one.
fn rewrite_manifest(manifest_path: &Path, manifest: &SwarmManifest) -> Result<(), SwarmError> {
    ensure_rewritable(manifest_path, manifest)?;
    let json = serde_json::to_vec_pretty(manifest).map_err(|e| SwarmError::Manifest {
        path: manifest_path.to_path_buf(),
        reason: e.to_string(),
    })?;
    write_atomically(manifest_path, &json)?;
    let legacy = manifest_path
        .parent()
        .unwrap_or(Path::new("."))
        .join(LEGACY_EXPERTS_FILE);
    match std::fs::remove_file(&legacy) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SwarmError::Io {
            path: legacy,
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Refuses a manifest read in an older layout ([`rewrite_manifest`]).
fn ensure_rewritable(manifest_path: &Path, manifest: &SwarmManifest) -> Result<(), SwarmError> {
    if manifest.version.rewritable() {
        return Ok(());
    }
    Err(SwarmError::Manifest {
        path: manifest_path.to_path_buf(),
        reason: format!(
            "a {} manifest cannot be changed in place; save the model again to upgrade it",
            manifest.version.format()
        ),
    })
}

/// Copies every specialist checkpoint that the swarm saved in `dir` names outside `dir` into
/// `dir/specialists/` and points the manifest at the copy (the same checksum, verified), so
/// that the directory stands alone: a model averaged from a run's checkpoints no longer needs
/// them. Returns the manifest, rewritten atomically where a path changed.
pub fn localize_specialists(dir: &Path) -> Result<SwarmManifest, SwarmError> {
    let (manifest_path, mut manifest) = read_manifest(dir)?;
    let inside = |path: &str| {
        let path = Path::new(path);
        path.is_relative()
            && path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    if manifest
        .specialists
        .iter()
        .all(|s| inside(&s.checkpoint.path))
    {
        return Ok(manifest);
    }
    ensure_rewritable(&manifest_path, &manifest)?;
    let folder = dir.join("specialists");
    std::fs::create_dir_all(&folder).map_err(|source| SwarmError::Io {
        path: folder.clone(),
        source,
    })?;
    for specialist in &mut manifest.specialists {
        if inside(&specialist.checkpoint.path) {
            continue;
        }
        let source = dir.join(&specialist.checkpoint.path);
        let local = format!("specialists/{}.safetensors", specialist.name);
        let target = dir.join(&local);
        std::fs::copy(&source, &target).map_err(|e| SwarmError::Io {
            path: source.clone(),
            source: e,
        })?;
        let computed = sha256_file(&target)?;
        if computed != specialist.checkpoint.sha256 {
            return Err(SwarmError::ChecksumMismatch {
                path: source,
                what: format!("specialist {:?}", specialist.name),
                recorded: specialist.checkpoint.sha256.clone(),
                computed,
            });
        }
        specialist.checkpoint.path = local;
    }
    rewrite_manifest(&manifest_path, &manifest)?;
    Ok(manifest)
}

fn relative_to(path: &Path, dir: &Path) -> String {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (path, dir) = (canonical(path), canonical(dir));
    path.strip_prefix(&dir)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string_lossy().into_owned())
}
