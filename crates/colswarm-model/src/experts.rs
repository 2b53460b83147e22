//! Domain experts: whole models trained on one benchmark's tables alone, frozen beside the
//! swarm, whose label logits are mixed into the primary's for the labels both know where the
//! router opens them ([`crate::expert_routing`]).
//!
//! A primary trained on every benchmark at once fits each a little worse than a model trained
//! on that benchmark alone, and two models trained apart err apart: averaging their logits is
//! a mixture of experts at the heads. An expert is a model directory of its own (no
//! specialists, no experts), kept in the primary's directory under `experts/` and listed among
//! the specialists of its manifest (`swarm.json`, [`ExpertRef`]: a specialist that contributes
//! its answers); it must read tables as the primary does (the same serialization and word
//! vectors), so the primary's encoded tables are handed to it as they are. Its n-grams may be
//! configured otherwise (an expert trained with neighbour n-grams): those are computed beside
//! the primary's when the tables are encoded ([`crate::Featurizer::expert_ngrams`]).
//! Attach one with `colswarm expert add` (docs/TRAINING.md).

use std::path::Path;

pub use colswarm_swarm::manifest::ExpertRef;
use colswarm_swarm::manifest::{FileRef, SwarmManifest, set_experts};

use crate::error::ModelError;

/// A model directory's experts and their routing, as its manifest lists them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExpertList {
    /// The experts, in router order (after the state specialists).
    pub experts: Vec<ExpertRef>,
    /// The trained router and logit mix ([`crate::expert_routing::ExpertRouting`]); absent:
    /// the experts' confidence rules and the plain average.
    pub routing: Option<FileRef>,
}

impl ExpertList {
    /// The experts the manifest of `dir` lists (a v2 directory's `experts.json` folded in).
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        Ok(Self::of(&SwarmManifest::read(dir)?))
    }

    /// The experts `manifest` lists.
    pub fn of(manifest: &SwarmManifest) -> Self {
        ExpertList {
            experts: manifest.experts.clone(),
            routing: manifest.expert_routing.clone(),
        }
    }

    /// Stores this list in the manifest of `dir`, rewritten atomically (a v2 directory's
    /// `experts.json` is then removed). Refuses a name another specialist already has.
    pub fn save(&self, dir: &Path) -> Result<(), ModelError> {
        set_experts(dir, self.experts.clone(), self.routing.clone())?;
        Ok(())
    }
}
