//! Domain experts: whole models trained on one benchmark's tables alone, frozen beside the
//! swarm, whose label logits are mixed into the primary's for the labels both know where the
//! router opens them ([`crate::expert_routing`]).
//!
//! A primary trained on every benchmark at once fits each a little worse than a model trained
//! on that benchmark alone, and two models trained apart err apart: averaging their logits is
//! a mixture of experts at the heads. An expert is a model directory of its own (no
//! specialists, no experts), kept in the primary's directory under `experts/` and listed in
//! [`EXPERTS_FILE`]; it must read tables as the primary does (the same serialization and word
//! vectors), so the primary's encoded tables are handed to it as they are. Its n-grams may be
//! configured otherwise (an expert trained with neighbour n-grams): those are computed beside
//! the primary's when the tables are encoded ([`crate::Featurizer::expert_ngrams`]).
//! Attach one with `colswarm expert add` (docs/TRAINING.md).

use std::path::Path;

use colswarm_rwkv::checkpoint::write_atomically;
use colswarm_swarm::manifest::FileRef;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;

/// File name of the list of experts inside a model directory (absent: no experts).
pub const EXPERTS_FILE: &str = "experts.json";

/// One expert of a model directory, as [`EXPERTS_FILE`] lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertRef {
    /// Name (used in reports and annotations).
    pub name: String,
    /// Its model directory, relative to the primary's.
    pub dir: String,
    /// The confidence rule the router starts from: the expert opens on a table where the
    /// primary's least confident answer in the expert's namespaces (the best label's
    /// probability, over the table's columns and relations) is below this; absent: on every
    /// table. Once the list holds a trained [`ExpertList::routing`], the router decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_below: Option<f32>,
}

/// The contents of [`EXPERTS_FILE`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertList {
    /// The experts, in router order.
    pub experts: Vec<ExpertRef>,
    /// The trained router and logit mix ([`crate::expert_routing::ExpertRouting`]); absent:
    /// the experts' confidence rules and the plain average.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<FileRef>,
}

impl ExpertList {
    /// Reads `dir`'s [`EXPERTS_FILE`]; an empty list when the directory has none.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let path = dir.join(EXPERTS_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(ModelError::io(&path, e)),
        };
        let list: Self = serde_json::from_slice(&bytes).map_err(|e| ModelError::File {
            path: path.clone(),
            reason: format!("invalid list of experts: {e}"),
        })?;
        for (i, expert) in list.experts.iter().enumerate() {
            if list.experts[..i].iter().any(|e| e.name == expert.name) {
                return Err(ModelError::File {
                    path,
                    reason: format!("the expert name {:?} is listed twice", expert.name),
                });
            }
        }
        Ok(list)
    }

    /// Writes `dir`'s [`EXPERTS_FILE`] atomically.
    pub fn save(&self, dir: &Path) -> Result<(), ModelError> {
        let path = dir.join(EXPERTS_FILE);
        let json = serde_json::to_vec_pretty(self).map_err(|e| ModelError::File {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        write_atomically(&path, &json)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_list_is_empty_and_a_saved_one_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ExpertList::load(dir.path()).unwrap(), ExpertList::default());
        let list = ExpertList {
            experts: vec![ExpertRef {
                name: "gittables".into(),
                dir: "experts/gittables".into(),
                open_below: Some(0.9),
            }],
            routing: None,
        };
        list.save(dir.path()).unwrap();
        assert_eq!(ExpertList::load(dir.path()).unwrap(), list);
    }

    #[test]
    fn a_name_listed_twice_or_an_unknown_field_is_refused_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EXPERTS_FILE);
        std::fs::write(
            &path,
            r#"{"experts":[{"name":"a","dir":"x"},{"name":"a","dir":"y"}]}"#,
        )
        .unwrap();
        let err = ExpertList::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("experts.json") && err.contains("twice"),
            "{err}"
        );
        std::fs::write(&path, r#"{"experts":[{"name":"a","dir":"x","weight":2}]}"#).unwrap();
        let err = ExpertList::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("experts.json") && err.contains("weight"),
            "{err}"
        );
    }
}
