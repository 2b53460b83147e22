//! A model directory, file by file: what it holds, each file's checksum, and the edits that
//! write it (each one whole, or not at all).
//!
//! ```text
//! DIR/
//!   swarm.json                 the swarm's manifest (colswarm_swarm::manifest): every weight
//!                              file below with its SHA-256, the orchestrator's configuration,
//!                              and every specialist: those fused by state and the experts
//!   primary.safetensors, [router.safetensors, fusion.safetensors] (with specialists),
//!   cta_head.safetensors, cpa_head.safetensors, [column_ngrams.safetensors], [column_words.safetensors],
//!   [word_vectors.safetensors], [alignment-NAME.safetensors], [specialists/NAME.safetensors]
//!   labels.json                the label space (crate::labels): namespaces, thresholds,
//!                              label-name prior weights, fine-tuned heads with their SHA-256
//!   [head-NAME.safetensors]    a namespace added by fine-tuning, and its n-gram reader
//!   [readers/TASK-NAME.safetensors] a namespace's n-gram reader (crate::reader), named with
//!                              its checksum and share in labels.json
//!   serialize.json             how tables are serialized (crate::SerializeSettings)
//!   [expert_routing.safetensors] the experts' trained router and logit mix
//!   [experts/NAME/]            each expert (a specialist that contributes its answers,
//!                              crate::experts): a model directory of its own
//! ```
//!
//! [`ModelDir::files`] lists every file with the checksum its directory records;
//! [`ModelDir::verify`] checks them all. [`ModelDir::copy_to`] writes a copy into a new
//! directory beside it and renames it into place, so a failed copy leaves nothing behind.

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use colswarm_rwkv::checkpoint::Precision;
use colswarm_swarm::Swarm;
use colswarm_swarm::manifest::{MANIFEST_FILE, SwarmManifest, set_experts, sha256_file};

use crate::error::ModelError;
use crate::expert_routing::ExpertRouting;
use crate::experts::{ExpertList, ExpertRef};
use crate::labels::{LABELS_FILE, LabelSpace, Namespace, Task};
use crate::reader::{NgramReader, ReaderFeatures, ReaderFile};
use crate::serialize_settings::SERIALIZE_FILE;

/// One file of a model directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelFile {
    /// What it is (`primary`, `labels`, `expert t2d-expert: cta head`, …).
    pub role: String,
    /// Its path, relative to the directory.
    pub path: PathBuf,
    /// The SHA-256 its directory records for it; `None` for the files that hold the records
    /// (the manifests, the label space, the serialization settings).
    pub sha256: Option<String>,
}

/// A model directory, read (nothing loaded onto a device).
#[derive(Clone, Debug)]
pub struct ModelDir {
    path: PathBuf,
    manifest: SwarmManifest,
    space: LabelSpace,
    experts: ExpertList,
}

impl ModelDir {
    /// Reads the manifest, the label space and the list of experts of the directory `path`.
    pub fn open(path: &Path) -> Result<Self, ModelError> {
        let manifest = SwarmManifest::read(&path.join(MANIFEST_FILE))?;
        let space = LabelSpace::load(&path.join(LABELS_FILE), manifest.version)?;
        let experts = ExpertList::of(&manifest);
        Ok(ModelDir {
            path: path.to_path_buf(),
            manifest,
            space,
            experts,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its swarm's manifest.
    pub fn manifest(&self) -> &SwarmManifest {
        &self.manifest
    }

    /// Its experts: the specialists its manifest lists that contribute their answers.
    pub fn experts(&self) -> &ExpertList {
        &self.experts
    }

    /// Every file of the directory, its experts' included, in the order of the layout above.
    pub fn files(&self) -> Result<Vec<ModelFile>, ModelError> {
        let file = |role: &str, path: &str, sha256: Option<&str>| ModelFile {
            role: role.to_string(),
            path: PathBuf::from(path),
            sha256: sha256.map(str::to_string),
        };
        let m = &self.manifest;
        let mut files = vec![file("manifest", MANIFEST_FILE, None)];
        for (role, f) in [
            ("primary", Some(&m.primary)),
            ("router", m.router.as_ref()),
            ("fusion", m.fusion.as_ref()),
            ("cta head", Some(&m.cta_head)),
            ("cpa head", Some(&m.cpa_head)),
        ] {
            if let Some(f) = f {
                files.push(file(role, &f.path, Some(&f.sha256)));
            }
        }
        if let Some(f) = &m.column_ngrams {
            files.push(file("n-grams", &f.path, Some(&f.sha256)));
        }
        if let Some(words) = &m.column_words {
            files.push(file(
                "word map",
                &words.projection.path,
                Some(&words.projection.sha256),
            ));
            files.push(file(
                "word table",
                &words.vectors.path,
                Some(&words.vectors.sha256),
            ));
        }
        for s in &m.specialists {
            let role = format!("specialist {}", s.name);
            files.push(file(&role, &s.checkpoint.path, Some(&s.checkpoint.sha256)));
            let role = format!("alignment {}", s.name);
            files.push(file(&role, &s.alignment.path, Some(&s.alignment.sha256)));
        }
        files.push(file("labels", LABELS_FILE, None));
        for ns in &self.space.cta {
            if let Some(head) = &ns.head {
                let role = format!("head {}", ns.name);
                files.push(file(&role, &head.path, Some(&head.sha256)));
                if let Some(ngrams) = &head.ngrams {
                    let role = format!("n-gram reader {}", ns.name);
                    files.push(file(&role, &ngrams.path, Some(&ngrams.sha256)));
                }
            }
        }
        for (task, list) in [("cta", &self.space.cta), ("cpa", &self.space.cpa)] {
            for ns in list {
                if let Some(reader) = &ns.reader {
                    let role = format!("{task} reader {}", ns.name);
                    files.push(file(&role, &reader.path, Some(&reader.sha256)));
                }
            }
        }
        files.push(file("serialization", SERIALIZE_FILE, None));
        if let Some(f) = &self.experts.routing {
            files.push(file("expert routing", &f.path, Some(&f.sha256)));
        }
        for expert in &self.experts.experts {
            let inner = ModelDir::open(&self.path.join(&expert.dir))?;
            for f in inner.files()? {
                let path = Path::new(&expert.dir).join(&f.path);
                // An expert may read the primary's own word vectors (`../../`): listed once.
                if files.iter().any(|known| self.same_file(&known.path, &path)) {
                    continue;
                }
                files.push(ModelFile {
                    role: format!("expert {}: {}", expert.name, f.role),
                    path,
                    sha256: f.sha256,
                });
            }
        }
        Ok(files)
    }

    /// Whether two paths relative to the directory name the same file.
    fn same_file(&self, a: &Path, b: &Path) -> bool {
        let (a, b) = (self.path.join(a), self.path.join(b));
        match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        }
    }

    /// Checks every recorded checksum; the error names the first file that differs or is
    /// missing.
    pub fn verify(&self) -> Result<(), ModelError> {
        for f in self.files()? {
            let path = self.path.join(&f.path);
            if !path.is_file() {
                return Err(ModelError::File {
                    path,
                    reason: format!("the model's {} is missing", f.role),
                });
            }
            if let Some(expected) = &f.sha256 {
                let found = sha256_file(&path)?;
                if &found != expected {
                    return Err(ModelError::File {
                        path,
                        reason: format!(
                            "the {}'s checksum is {found}, but the directory records {expected}",
                            f.role
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Where the model directory `expert_dir` (being added as an expert, at
    /// `experts/NAME/` or beside it) reads the same word-vector file as this model (the same
    /// SHA-256), points its manifest at this model's (`../../`) and drops its own copy: the
    /// vectors are a model's largest file. Returns whether it did.
    pub fn share_word_vectors_with(&self, expert_dir: &Path) -> Result<bool, ModelError> {
        let expert = ModelDir::open(expert_dir)?;
        let (Some(own), Some(theirs)) =
            (&self.manifest.column_words, &expert.manifest.column_words)
        else {
            return Ok(false);
        };
        if own.vectors.sha256 != theirs.vectors.sha256 {
            return Ok(false);
        }
        let shared = if Path::new(&own.vectors.path).is_absolute() {
            own.vectors.path.clone()
        } else {
            format!("../../{}", own.vectors.path)
        };
        // Only a copy inside the expert's own directory is dropped: an expert taken from
        // another model's `experts/` already points outside it, and that path, joined to its
        // new place, names this model's own file.
        let inside = Path::new(&theirs.vectors.path)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        colswarm_swarm::manifest::point_word_vectors(expert_dir, &shared)?;
        if inside {
            let copy = expert_dir.join(&theirs.vectors.path);
            std::fs::remove_file(&copy).map_err(|e| ModelError::io(&copy, e))?;
        }
        Ok(true)
    }

    /// Stores `routing` as the experts' trained routing: its file, then the manifest pointing
    /// at it, each written atomically.
    pub fn set_expert_routing(&mut self, routing: &ExpertRouting) -> Result<(), ModelError> {
        self.store_routing(routing)?;
        self.save_experts()
    }

    /// Lists `expert` (already copied into the directory) after the others, with `routing`
    /// as the experts' routing where the directory has a trained one (it must then route the
    /// new expert too): the routing's file, then the manifest, each written atomically. Refuses
    /// a name another specialist (of either kind) already has.
    pub fn add_expert(
        &mut self,
        expert: ExpertRef,
        routing: Option<&ExpertRouting>,
    ) -> Result<(), ModelError> {
        if routing.is_none() && self.experts.routing.is_some() {
            return Err(ModelError::File {
                path: self.path.join(MANIFEST_FILE),
                reason: "has a trained routing, which must be given a gate for the new expert"
                    .into(),
            });
        }
        let before = self.experts.clone();
        self.experts.experts.push(expert);
        let stored = match routing {
            Some(routing) => self.store_routing(routing),
            None => Ok(()),
        };
        if let Err(error) = stored.and_then(|()| self.save_experts()) {
            self.experts = before;
            return Err(error);
        }
        Ok(())
    }

    /// Removes the specialist `name`, of either kind, from the directory, in place (work on a
    /// [`ModelDir::copy_to`] copy to keep the original):
    ///
    /// - an expert leaves the list, and its gate and mix weight the trained routing, if any
    ///   ([`ExpertRouting::without_expert`]); its directory under `experts/` is deleted;
    /// - a state specialist leaves the swarm, which is saved again: its gate, alignment and
    ///   fusion parameters go ([`Swarm::without_specialist`]), so the model answers as it did
    ///   with that specialist closed; its checkpoint and alignment files (and the router's
    ///   and fusion's, once none is left) are deleted.
    ///
    /// The manifest is written before any file is deleted: an interruption leaves files no
    /// manifest lists, never a manifest naming a missing file.
    pub fn remove_specialist(&mut self, name: &str, device: &Device) -> Result<(), ModelError> {
        if let Some(i) = self.experts.experts.iter().position(|e| e.name == name) {
            return self.remove_expert(i, device);
        }
        if self.manifest.specialists.iter().any(|s| s.name == name) {
            return self.remove_state_specialist(name, device);
        }
        let known: Vec<&str> = self.manifest.specialist_names().collect();
        Err(ModelError::File {
            path: self.path.join(MANIFEST_FILE),
            reason: format!(
                "lists no specialist {name:?} (it lists: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        })
    }

    fn remove_expert(&mut self, i: usize, device: &Device) -> Result<(), ModelError> {
        let d_model = self.manifest.config.primary.d_model;
        let routing = match self.experts.routing {
            Some(_) => {
                ExpertRouting::of(&self.path, &self.experts, (d_model, &self.space), device)?
                    .map(|r| r.without_expert(i))
            }
            None => None,
        };
        let before = self.experts.clone();
        let removed = self.experts.experts.remove(i);
        let stored = match routing {
            Some(routing) if !self.experts.experts.is_empty() => self.store_routing(&routing),
            _ => {
                self.experts.routing = None;
                Ok(())
            }
        };
        if let Err(error) = stored.and_then(|()| self.save_experts()) {
            self.experts = before;
            return Err(error);
        }
        if self.experts.routing.is_none()
            && let Some(file) = &before.routing
        {
            remove_inside(&self.path, &file.path)?;
        }
        remove_inside(&self.path, &removed.dir)
    }

    fn remove_state_specialist(&mut self, name: &str, device: &Device) -> Result<(), ModelError> {
        let (swarm, old) = Swarm::load(&self.path, device)?;
        let Some(listed) = old.specialists.iter().find(|s| s.name == name).cloned() else {
            return Ok(());
        };
        let Some(swarm) = swarm.without_specialist(name) else {
            return Ok(());
        };
        let saved = swarm.save(&self.path, &old.config, &old.cta_labels, &old.cpa_labels)?;
        let gone = [
            Some(&listed.checkpoint),
            Some(&listed.alignment),
            old.router.as_ref().filter(|_| saved.router.is_none()),
            old.fusion.as_ref().filter(|_| saved.fusion.is_none()),
        ];
        self.manifest = saved;
        for file in gone.into_iter().flatten() {
            let still_listed = self
                .manifest
                .specialists
                .iter()
                .any(|s| s.checkpoint.path == file.path || s.alignment.path == file.path);
            if !still_listed {
                remove_inside(&self.path, &file.path)?;
            }
        }
        // The checkpoints' folder goes once it is empty (removing a full one fails: kept).
        let _ = std::fs::remove_dir(self.path.join("specialists"));
        Ok(())
    }

    /// Writes the list of experts in memory into the manifest, and keeps the manifest it wrote.
    fn save_experts(&mut self) -> Result<(), ModelError> {
        let (experts, routing) = (self.experts.experts.clone(), self.experts.routing.clone());
        self.manifest = set_experts(&self.path, experts, routing)?;
        Ok(())
    }

    /// Writes `routing`'s file and records it in the list in memory.
    fn store_routing(&mut self, routing: &ExpertRouting) -> Result<(), ModelError> {
        if routing.experts() != self.experts.experts.len() {
            return Err(ModelError::File {
                path: self.path.join(MANIFEST_FILE),
                reason: format!(
                    "lists {} experts, but the routing routes {}",
                    self.experts.experts.len(),
                    routing.experts()
                ),
            });
        }
        self.experts.routing = Some(routing.save(&self.path)?);
        Ok(())
    }

    /// Copies the directory, its subdirectories included, into `to`, which must not exist: the
    /// copy is written beside it (`to` with `.partial` added) and renamed into place.
    pub fn copy_to(&self, to: &Path) -> Result<ModelDir, ModelError> {
        if to.exists() {
            return Err(ModelError::File {
                path: to.to_path_buf(),
                reason: "exists: a model is copied into a new directory".into(),
            });
        }
        let mut partial = to.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(|e| ModelError::io(&partial, e))?;
        }
        copy_tree(&self.path, &partial)?;
        std::fs::rename(&partial, to).map_err(|e| ModelError::io(to, e))?;
        ModelDir::open(to)
    }
}

impl ModelDir {
    /// Stores an n-gram reader for namespace `name` of `task` ([`crate::reader`]): its weights
    /// (`buckets × labels` row-major, and a bias per label) in `readers/TASK-NAME.safetensors`
    /// at `precision`, then the label space naming it with `share`, each written atomically.
    /// A reader the namespace had is replaced.
    #[allow(clippy::too_many_arguments)]
    pub fn set_reader(
        &mut self,
        task: Task,
        name: &str,
        features: ReaderFeatures,
        (weights, bias): (&[f32], &[f32]),
        share: f32,
        precision: Precision,
        device: &Device,
    ) -> Result<(), ModelError> {
        let labels = self.namespace_mut(task, name)?.labels.len();
        let buckets = features.buckets as usize;
        if bias.len() != labels || weights.len() != buckets * labels {
            return Err(ModelError::File {
                path: self.path.join(LABELS_FILE),
                reason: format!(
                    "a reader of {task} namespace `{name}` needs {buckets} × {labels} weights and \
                     {labels} biases, not {} and {}",
                    weights.len(),
                    bias.len()
                ),
            });
        }
        check_share(&self.path, share)?;
        let relative = format!("readers/{task}-{name}.safetensors");
        let sha256 = NgramReader::save(&self.path, &relative, weights, bias, precision, device)?;
        self.namespace_mut(task, name)?.reader = Some(ReaderFile {
            path: relative,
            sha256,
            share,
            features,
        });
        self.space.save(&self.path.join(LABELS_FILE))
    }

    /// Sets the share of the reader of namespace `name` of `task`.
    pub fn set_reader_share(
        &mut self,
        task: Task,
        name: &str,
        share: f32,
    ) -> Result<(), ModelError> {
        check_share(&self.path, share)?;
        let path = self.path.join(LABELS_FILE);
        let reader = self.namespace_mut(task, name)?.reader.as_mut();
        let Some(reader) = reader else {
            return Err(ModelError::File {
                path,
                reason: format!("{task} namespace `{name}` has no n-gram reader"),
            });
        };
        reader.share = share;
        self.space.save(&path)
    }

    /// The namespace `name` of `task`, or an error that lists the namespaces there are.
    fn namespace_mut(&mut self, task: Task, name: &str) -> Result<&mut Namespace, ModelError> {
        let path = self.path.join(LABELS_FILE);
        let list = match task {
            Task::Cta => &mut self.space.cta,
            Task::Cpa => &mut self.space.cpa,
        };
        let known: Vec<String> = list.iter().map(|n| n.name.clone()).collect();
        list.iter_mut()
            .find(|n| n.name == name)
            .ok_or_else(|| ModelError::File {
                path,
                reason: format!(
                    "has no {task} namespace `{name}` (it has: {})",
                    known.join(", ")
                ),
            })
    }

    /// Copies the directory's files and subdirectories into `staging`, created if missing,
    /// beside what it already holds: for a run that builds a new model directory there and
    /// renames it into place when it is whole (`fine-tune`'s `OUT.partial`).
    pub fn copy_into(&self, staging: &Path) -> Result<(), ModelError> {
        copy_tree(&self.path, staging)
    }
}

/// Deletes `relative` (a file or a directory) inside `dir`; a path that leaves `dir` (absolute,
/// or with `..`) is someone else's and is left alone, as is one already gone.
/// A reader's share must lie in `[0, 1]`.
fn check_share(dir: &Path, share: f32) -> Result<(), ModelError> {
    if (0.0..=1.0).contains(&share) {
        Ok(())
    } else {
        Err(ModelError::File {
            path: dir.join(LABELS_FILE),
            reason: format!("a reader's share must lie in [0, 1], not {share}"),
        })
    }
}

fn remove_inside(dir: &Path, relative: &str) -> Result<(), ModelError> {
    let inside = Path::new(relative)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    let path = dir.join(relative);
    if !inside || !path.exists() {
        return Ok(());
    }
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(&path)
    } else {
        std::fs::remove_file(&path)
    };
    removed.map_err(|e| ModelError::io(&path, e))
}

/// Copies a directory tree into `to`, created if missing.
fn copy_tree(from: &Path, to: &Path) -> Result<(), ModelError> {
    std::fs::create_dir_all(to).map_err(|e| ModelError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| ModelError::io(from, e))? {
        let entry = entry.map_err(|e| ModelError::io(from, e))?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| ModelError::io(&target, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/colswarm-small")
    }

    #[test]
    fn every_file_of_the_shipped_model_is_listed_once_and_verifies() {
        let dir = ModelDir::open(&shipped()).unwrap();
        let files = dir.files().unwrap();
        dir.verify().unwrap();
        // Every file on disk is listed, and nothing else (the card is documentation).
        let mut on_disk = Vec::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(relative) = stack.pop() {
            for entry in std::fs::read_dir(shipped().join(&relative)).unwrap() {
                let entry = entry.unwrap();
                let path = relative.join(entry.file_name());
                if entry.path().is_dir() {
                    stack.push(path);
                } else if entry.file_name() != "MODEL_CARD.md" {
                    on_disk.push(path);
                }
            }
        }
        let normal = |p: &Path| shipped().join(p).canonicalize().unwrap();
        let mut listed: Vec<PathBuf> = files.iter().map(|f| normal(&f.path)).collect();
        let mut found: Vec<PathBuf> = on_disk.iter().map(|p| normal(p)).collect();
        listed.sort();
        found.sort();
        let count = listed.len();
        listed.dedup();
        assert_eq!(listed.len(), count, "a file is listed twice");
        assert_eq!(listed, found);
        assert!(files.iter().any(|f| f.role == "labels"));
        assert!(
            files
                .iter()
                .any(|f| f.role == "expert t2d-expert: cta head")
        );
    }

    #[test]
    fn a_trained_routing_is_stored_and_an_added_expert_must_get_a_gate() {
        use crate::model::Model;
        use burn::tensor::Device;

        let work = tempfile::tempdir().unwrap();
        let mut copy = ModelDir::open(&shipped())
            .unwrap()
            .copy_to(&work.path().join("copy"))
            .unwrap();
        let device = Device::default();
        let model = Model::load(copy.path(), &device).unwrap();
        let routing = model.expert_routing.as_ref().unwrap();
        copy.set_expert_routing(routing).unwrap();
        assert!(
            copy.files()
                .unwrap()
                .iter()
                .any(|f| f.role == "expert routing")
        );
        copy.verify().unwrap();

        let again = ExpertRef {
            name: "silver-again".into(),
            dir: "experts/t2d-silver".into(),
            open_below: Some(0.5),
        };
        let error = copy
            .add_expert(again.clone(), None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("gate for the new expert"), "{error}");
        let grown = routing.with_expert(Some(0.5));
        copy.add_expert(again, Some(&grown)).unwrap();
        let loaded = Model::load(copy.path(), &device).unwrap();
        assert_eq!(loaded.experts.len(), 5);
        assert_eq!(loaded.expert_routing.as_ref().unwrap().experts(), 5);
    }

    #[test]
    fn a_changed_file_is_named_and_a_copy_is_whole_or_absent() {
        let work = tempfile::tempdir().unwrap();
        let copy = ModelDir::open(&shipped())
            .unwrap()
            .copy_to(&work.path().join("copy"))
            .unwrap();
        copy.verify().unwrap();
        assert!(!work.path().join("copy.partial").exists());
        let error = ModelDir::open(&shipped())
            .unwrap()
            .copy_to(copy.path())
            .unwrap_err();
        assert!(error.to_string().contains("exists"), "{error}");

        let head = copy
            .path()
            .join("experts/gittables-expert/cta_head.safetensors");
        let mut bytes = std::fs::read(&head).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&head, bytes).unwrap();
        let error = copy.verify().unwrap_err().to_string();
        assert!(
            error.contains("gittables-expert/cta_head.safetensors")
                && error.contains("expert gittables-expert: cta head"),
            "{error}"
        );
    }
}
