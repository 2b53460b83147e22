//! Domain experts: whole models trained on one benchmark's tables alone, frozen beside the
//! swarm, whose label logits are averaged into the primary's for the labels both know.
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
use std::sync::Arc;

use colswarm_rwkv::checkpoint::write_atomically;
use colswarm_tables::NgramConfig;
use serde::{Deserialize, Serialize};

use crate::encode::featurizer;
use crate::error::ModelError;
use crate::labels::Task;
use crate::model::Model;

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
    /// The expert opens on a table where the primary's least confident answer in the
    /// expert's namespaces (the best label's probability, over the table's columns and
    /// relations) is below this; absent: on every table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_below: Option<f32>,
}

/// The contents of [`EXPERTS_FILE`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertList {
    /// The experts, in the order their logits are averaged.
    pub experts: Vec<ExpertRef>,
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

/// A loaded expert: its model and where its labels sit among the primary's.
#[derive(Clone, Debug)]
pub struct Expert {
    /// Its name.
    pub name: String,
    /// The expert's model (no specialists, no experts).
    pub model: Model,
    /// It opens where the primary's least confident answer in its namespaces is below this
    /// ([`ExpertRef::open_below`]); `None`: on every table.
    pub open_below: Option<f32>,
    /// `(expert label, primary label)` flat CTA indices of the labels both know.
    cta: Vec<(usize, usize)>,
    /// The same for CPA relations.
    cpa: Vec<(usize, usize)>,
    /// The primary's CTA namespaces (indices) where the expert knows a label.
    cta_namespaces: Vec<usize>,
    /// The same for CPA.
    cpa_namespaces: Vec<usize>,
    /// Its n-gram configuration where it differs from the primary's (`None`: the primary's).
    own_ngrams: Option<NgramConfig>,
}

impl Expert {
    /// Pairs `model` with `primary`: refused (naming `dir`) when it has specialists or experts
    /// of its own, reads tables otherwise than the primary, or knows none of its labels.
    pub fn new(
        name: &str,
        model: Model,
        open_below: Option<f32>,
        primary: &Model,
        dir: &Path,
    ) -> Result<Self, ModelError> {
        let refuse = |reason: String| ModelError::File {
            path: dir.to_path_buf(),
            reason: format!("expert {name:?}: {reason}"),
        };
        if !model.swarm.specialists.is_empty() || !model.experts.is_empty() {
            return Err(refuse(
                "an expert has no specialists or experts of its own; train it without --specialist"
                    .into(),
            ));
        }
        if model.serialize != primary.serialize {
            return Err(refuse(format!(
                "it serializes tables as {:?}, the primary as {:?}",
                model.serialize, primary.serialize
            )));
        }
        let (own, primary_features) = (
            featurizer(&model.swarm.orchestrator),
            featurizer(&primary.swarm.orchestrator),
        );
        if own.ngrams.is_some() != primary_features.ngrams.is_some() {
            return Err(refuse(format!(
                "it reads n-grams as {:?}, the primary as {:?}: both or neither must read them",
                own.ngrams, primary_features.ngrams
            )));
        }
        let own_ngrams = own.ngrams.filter(|_| own.ngrams != primary_features.ngrams);
        let same_words = match (&own.words, &primary_features.words) {
            (None, None) => true,
            (Some((a, va)), Some((b, vb))) => a == b && (Arc::ptr_eq(va, vb) || va == vb),
            _ => false,
        };
        if !same_words {
            return Err(refuse(
                "it does not read the primary's word vectors with the primary's settings".into(),
            ));
        }
        let shared = |task: Task| -> Vec<(usize, usize)> {
            let primary_labels = primary.space.flat(task);
            model
                .space
                .flat(task)
                .iter()
                .enumerate()
                .filter_map(|(e, label)| {
                    primary_labels
                        .iter()
                        .position(|p| p == label)
                        .map(|p| (e, p))
                })
                .collect()
        };
        let (cta, cpa) = (shared(Task::Cta), shared(Task::Cpa));
        if cta.is_empty() && cpa.is_empty() {
            return Err(refuse(
                "it shares no label with the primary (labels are matched as NAMESPACE:LABEL)"
                    .into(),
            ));
        }
        if let Some(p) = open_below
            && !(0.0..=1.0).contains(&p)
        {
            return Err(refuse(format!(
                "it opens below {p}, which is not a probability"
            )));
        }
        if primary.specialist_names.iter().any(|s| s == name) {
            return Err(refuse(
                "a specialist of the primary has that name; give the expert another".into(),
            ));
        }
        let namespaces = |task: Task, map: &[(usize, usize)]| -> Vec<usize> {
            let list = primary.space.list(task);
            (0..list.len())
                .filter(|&n| map.iter().any(|&(_, p)| list[n].range().contains(&p)))
                .collect()
        };
        let (cta_namespaces, cpa_namespaces) =
            (namespaces(Task::Cta, &cta), namespaces(Task::Cpa, &cpa));
        Ok(Self {
            name: name.to_string(),
            model,
            open_below,
            cta,
            cpa,
            cta_namespaces,
            cpa_namespaces,
            own_ngrams,
        })
    }

    /// How many of the primary's labels of `task` this expert knows.
    pub fn shared_labels(&self, task: Task) -> usize {
        match task {
            Task::Cta => self.cta.len(),
            Task::Cpa => self.cpa.len(),
        }
    }

    /// The primary's namespaces of `task` (indices into its label space's list) where the
    /// expert knows a label: those whose confidence opens it.
    pub fn namespaces(&self, task: Task) -> &[usize] {
        match task {
            Task::Cta => &self.cta_namespaces,
            Task::Cpa => &self.cpa_namespaces,
        }
    }

    /// Its n-gram configuration where it differs from the primary's: its tables' n-grams are
    /// then [`crate::Example::expert_ngrams`]'s, not the primary's.
    pub fn own_ngrams(&self) -> Option<&NgramConfig> {
        self.own_ngrams.as_ref()
    }

    /// `(expert label, primary label)` pairs of `task`.
    pub(crate) fn label_map(&self, task: Task) -> &[(usize, usize)] {
        match task {
            Task::Cta => &self.cta,
            Task::Cpa => &self.cpa,
        }
    }
}

/// One expert's logits for a column or pair, with its `(expert label, primary label)` map.
pub(crate) type ExpertRow<'a> = (&'a [f32], &'a [(usize, usize)]);

/// Replaces each of the primary's logits in `row` by the mean of it and the logits the experts
/// give the same label. A label no expert knows keeps the primary's logit.
pub(crate) fn average_logits(row: &mut [f32], others: &[ExpertRow<'_>]) {
    let mut count = vec![1u16; row.len()];
    for (logits, map) in others {
        for &(e, p) in *map {
            row[p] += logits[e];
            count[p] += 1;
        }
    }
    for (value, n) in row.iter_mut().zip(count) {
        if n > 1 {
            *value /= f32::from(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logits_are_averaged_over_the_models_that_know_the_label() {
        let mut row = vec![1.0, 2.0, 3.0];
        let a = [5.0, 7.0];
        let b = [-3.0];
        average_logits(&mut row, &[(&a, &[(0, 0), (1, 2)]), (&b, &[(0, 0)])]);
        // Label 0: all three; label 1: the primary alone; label 2: primary and first expert.
        assert_eq!(row, vec![1.0, 2.0, 5.0]);
    }

    #[test]
    fn no_experts_leave_the_row_as_it_is() {
        let mut row = vec![0.25, -1.5];
        average_logits(&mut row, &[]);
        assert_eq!(row, vec![0.25, -1.5]);
    }

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

    /// The shipped T2D expert's weights, told to read neighbour n-grams: a model whose bags
    /// differ from the primary's, without training one.
    #[test]
    fn an_expert_with_its_own_ngrams_reads_its_own_bags_beside_the_primary() {
        use crate::encode::{Columns, Example};
        use crate::model::{SpecialistUse, copy_model_dir};
        use burn::tensor::Device;
        use colswarm_tables::Table;

        let shipped = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/colswarm-small"
        ));
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("experts/t2d-neighbours");
        copy_model_dir(&shipped.join("experts/t2d-expert"), &dir).unwrap();
        // Its word vectors are the primary's file, two directories up.
        std::fs::copy(
            shipped.join("word_vectors.safetensors"),
            work.path().join("word_vectors.safetensors"),
        )
        .unwrap();
        let manifest = dir.join("swarm.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
        json["config"]["column_ngrams"]["neighbours"] = true.into();
        std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();

        let device = Device::default();
        let mut primary = Model::load(shipped, &device).unwrap();
        primary.experts.clear();
        let expert = Model::load(&dir, &device).unwrap();
        let joined = Expert::new("t2d-neighbours", expert.clone(), None, &primary, &dir).unwrap();
        assert!(joined.own_ngrams().is_some_and(|n| n.neighbours));
        let bare = primary.clone();
        primary.experts.push(joined);

        let rows = [
            ["Rushmore", "Wes Anderson", "1998"],
            ["Heat", "Michael Mann", "1995"],
            ["Alien", "Ridley Scott", "1979"],
        ];
        let table = Table::from_rows(
            "films",
            Some(vec!["title".into(), "director".into(), "year".into()]),
            rows.iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
        );
        let encoded = primary.encode(std::slice::from_ref(&table), Columns::All);
        let own = expert.encode(std::slice::from_ref(&table), Columns::All);
        assert_eq!(encoded[0].expert_ngrams, vec![own[0].ngrams.clone()]);
        assert_ne!(encoded[0].ngrams, own[0].ngrams);

        let predict = |model: &Model, examples: &[Example], use_: SpecialistUse| {
            let refs: Vec<&Example> = examples.iter().collect();
            model.predict(&refs, &[0], use_)
        };
        let swarm = predict(&primary, &encoded, SpecialistUse::All).unwrap();
        // The primary with its specialists open as in `swarm`, without the expert.
        let alone = predict(&bare, &encoded, SpecialistUse::All).unwrap();
        let expert_out = predict(&expert, &own, SpecialistUse::Off).unwrap();
        let map = primary.experts[0].label_map(Task::Cta);
        assert!(!map.is_empty());
        for c in 0..3 {
            let mut expected = alone.cta[c].clone();
            for &(e, p) in map {
                expected[p] = (alone.cta[c][p] + expert_out.cta[c][e]) / 2.0;
            }
            for (got, want) in swarm.cta[c].iter().zip(&expected) {
                assert!(
                    (got - want).abs() < 1e-5,
                    "column {c}: {got} against {want}"
                );
            }
        }
        // The primary's bags would have given the expert other logits.
        let plain = predict(&expert, &encoded, SpecialistUse::Off).unwrap();
        assert_ne!(plain.cta, expert_out.cta);

        // With no expert to read them, the bags are left out and the primary's answers stay.
        let lean = primary.encode_for(std::slice::from_ref(&table), Columns::All, false);
        assert!(lean[0].expert_ngrams.is_empty());
        let off = predict(&primary, &lean, SpecialistUse::Off).unwrap();
        assert_eq!(
            off.cta,
            predict(&primary, &encoded, SpecialistUse::Off).unwrap().cta
        );

        // Tables encoded without the expert's bags are refused, naming the table.
        let err = predict(&primary, &own, SpecialistUse::All)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("films") && err.contains("t2d-neighbours"),
            "{err}"
        );
    }
}
