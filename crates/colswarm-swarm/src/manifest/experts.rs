//! The specialists that contribute their answers (domain experts): whole models, each a model
//! directory of its own, whose logits the model crate mixes into the primary's where the
//! router opens them. The manifest lists them with the state specialists, in one list;
//! directories saved in the v2 layout listed them in a second file, [`LEGACY_EXPERTS_FILE`],
//! which is folded into the manifest when it is read and removed when it is rewritten.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::format::first_repeated;
use super::{FileRef, SwarmManifest};
use crate::error::SwarmError;

/// The second file of a v2 directory: its experts and their routing.
pub const LEGACY_EXPERTS_FILE: &str = "experts.json";

/// A specialist that contributes its answers: a whole model, frozen, kept in the primary's
/// directory, whose logits are mixed into the primary's where the router opens it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertRef {
    /// Name (used in reports and annotations), unique among all the specialists.
    pub name: String,
    /// Its model directory, relative to the primary's.
    pub dir: String,
    /// The confidence rule its gate starts from: it opens on a table where the primary's least
    /// confident answer in its namespaces (the best label's probability, over the table's
    /// columns and relations) is below this; absent: on every table. Once the manifest holds a
    /// trained [`SwarmManifest::expert_routing`], the router decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_below: Option<f32>,
}

/// The contents of a v2 directory's [`LEGACY_EXPERTS_FILE`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LegacyExperts {
    experts: Vec<ExpertRef>,
    #[serde(default)]
    routing: Option<FileRef>,
}

impl SwarmManifest {
    /// Folds the [`LEGACY_EXPERTS_FILE`] beside a manifest read in an older layout into it
    /// (nothing for a v3 manifest, which lists its experts itself, or without the file), and
    /// checks that no name is listed twice among all the specialists.
    pub(super) fn fold_legacy_experts(&mut self, manifest_path: &Path) -> Result<(), SwarmError> {
        let dir = manifest_path.parent().unwrap_or(Path::new("."));
        let legacy = dir.join(LEGACY_EXPERTS_FILE);
        if self.version != super::ManifestVersion::V3 {
            let bytes = match std::fs::read(&legacy) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(SwarmError::Io {
                        path: legacy,
                        source,
                    });
                }
            };
            if let Some(bytes) = bytes {
                let list: LegacyExperts =
                    serde_json::from_slice(&bytes).map_err(|e| SwarmError::Manifest {
                        path: legacy.clone(),
                        reason: format!("invalid list of experts: {e}"),
                    })?;
                self.experts = list.experts;
                self.expert_routing = list.routing;
            }
        }
        if let Some(name) = first_repeated(self.specialist_names()) {
            let path = if self.version == super::ManifestVersion::V3 {
                manifest_path.to_path_buf()
            } else {
                legacy
            };
            return Err(SwarmError::Manifest {
                path,
                reason: format!("the specialist name {name:?} is listed twice"),
            });
        }
        Ok(())
    }

    /// Every specialist's name, in the router's order: the state specialists, then the
    /// answering ones.
    pub fn specialist_names(&self) -> impl Iterator<Item = &str> {
        (self.specialists.iter().map(|s| s.name.as_str()))
            .chain(self.experts.iter().map(|e| e.name.as_str()))
    }
}

/// Replaces the answering specialists of the model saved in `dir` and their routing, rewriting
/// its manifest atomically (as v3; a v2 directory's [`LEGACY_EXPERTS_FILE`] is then removed).
/// Refuses a name that another specialist already has, and a manifest in the v1 layout.
pub fn set_experts(
    dir: &Path,
    experts: Vec<ExpertRef>,
    routing: Option<FileRef>,
) -> Result<SwarmManifest, SwarmError> {
    let (manifest_path, mut manifest) = super::read_manifest(dir)?;
    manifest.experts = experts;
    manifest.expert_routing = routing;
    if let Some(name) = first_repeated(manifest.specialist_names()) {
        return Err(SwarmError::Manifest {
            path: manifest_path,
            reason: format!("the specialist name {name:?} would be listed twice"),
        });
    }
    super::rewrite_manifest(&manifest_path, &manifest)?;
    Ok(manifest)
}
