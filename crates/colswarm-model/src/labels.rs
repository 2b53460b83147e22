//! The label space of a model: one namespace per training set, so labels of different
//! benchmarks never compete in one softmax, and a model trained on several sets can be
//! evaluated on each in its own terms.
//!
//! The heads' outputs are the namespaces' label lists laid end to end; a namespace is the
//! range `offset..offset + labels.len()`. The manifest stores the flat list as
//! `namespace:label`; `labels.json` beside it stores the namespaces.

use std::path::Path;

use colswarm_rwkv::checkpoint::write_atomically;
use colswarm_swarm::LabelKind;
use colswarm_swarm::manifest::ManifestVersion;
use colswarm_tables::{DatasetFormat, LabelSet};
use serde::{Deserialize, Serialize};

use crate::added_head::HeadFile;
use crate::error::ModelError;
use crate::header_memory::HeaderMemory;
use crate::reader::ReaderFile;
use crate::subject::SubjectLabel;
pub use crate::task::Task;

/// The CTA head's kind for labels of this format: multi-label where its ground truth allows
/// several labels per column.
pub fn cta_kind(format: DatasetFormat) -> LabelKind {
    if format.multi_label_cta() {
        LabelKind::MultiLabel
    } else {
        LabelKind::SingleLabel
    }
}

/// File name of the label space inside a model directory.
pub const LABELS_FILE: &str = "labels.json";

/// How a namespace's logits become probabilities, and the loss that trains them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// One softmax over the namespace, trained with cross-entropy against the uniform
    /// distribution over a target's gold labels; a multi-label target keeps every label with at
    /// least half the best one's probability. What models saved before the option existed use.
    #[default]
    Softmax,
    /// One sigmoid per label, trained with binary cross-entropy (one-vs-rest); a multi-label
    /// target keeps every label above 0.5, at least the best one. Labels that co-occur (a type
    /// and its super-type) then do not compete for one unit of probability.
    Sigmoid,
}

/// The labels of one training set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Namespace {
    /// Name (e.g. `wikitables`).
    pub name: String,
    /// The format it was trained from, used to pick the namespace when evaluating a format.
    pub format: DatasetFormat,
    /// Whether a target may carry several labels.
    pub kind: LabelKind,
    /// First output of the namespace in the head.
    pub offset: usize,
    /// Label names, in head order.
    pub labels: Vec<String>,
    /// Softmax or per-label sigmoids.
    pub activation: Activation,
    /// Per label (parallel to `labels`), the positions of its super-types in this namespace,
    /// from the training set's type hierarchy (WikiTables ships one: a `film.director` is a
    /// `people.person`). Multi-label predictions are closed under it: a predicted type brings
    /// its super-types, and a super-type's reported probability is at least its subtypes'.
    /// Empty: no hierarchy.
    pub ancestors: Vec<Vec<usize>>,
    /// The namespace abstains on a target whose best label's probability is below this: no
    /// label fits ("none"). Chosen on dev by `colswarm calibrate`; `None`: every target gets
    /// its best label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstain_below: Option<f32>,
    /// The weight of the label-name prior (see [`crate::label_names`]): `weight ·
    /// jaccard(header words, label-name words)` is added to each label's logit of a column
    /// with a header. Chosen on held-out tables and set by `colswarm calibrate
    /// --label-names`; `None`: the heads' logits alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_name_weight: Option<f32>,
    /// CTA: the label-name prior leaves the table's subject column out. T2D types every
    /// subject column `rdf-schema#label`, a name no header spells, while its header (`City`)
    /// names another label. Set by `colswarm calibrate --label-names-skip-subject`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub label_name_skip_subject: bool,
    /// CTA: the label this namespace gives subject columns, with which the model may find a
    /// table's subject column ([`crate::SubjectLabel`]). Set by `colswarm calibrate
    /// --subject-label`; `None`: the cell rule alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_label: Option<SubjectLabel>,
    /// The header-memory prior ([`crate::header_memory`]): the labels each header had in the
    /// model's training tables, and their weight. Set by `colswarm calibrate
    /// --header-memory`; `None`: no memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_memory: Option<HeaderMemory>,
    /// CPA: the weight `m` of the object column's type, where the CTA namespace of the same
    /// name types columns by the relations this one predicts (T2D's properties): the
    /// relation's log-probabilities become `(1 − m)·log p_cpa + m·log p_cta`
    /// ([`crate::Decoder`]). Set by `colswarm calibrate --type-view`; `None`: the CPA head
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_view_weight: Option<f32>,
    /// A namespace added after training (`colswarm fine-tune`) has its own head, over the
    /// frozen model's column features ([`crate::added_head`]); its outputs come after every
    /// namespace of the shared heads. `None`: the shared head's outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<HeadFile>,
    /// The namespace's n-gram reader ([`crate::reader`]), whose probabilities are mixed into
    /// its own by the reader's share. Set by `colswarm add-reader`; `None`: no reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<ReaderFile>,
}

impl Namespace {
    /// A namespace of these labels at `offset`, with the defaults: a softmax, no hierarchy, no
    /// abstention, no label-name prior, the shared head.
    pub fn new(
        name: &str,
        format: DatasetFormat,
        kind: LabelKind,
        offset: usize,
        labels: Vec<String>,
    ) -> Self {
        Namespace {
            name: name.to_string(),
            format,
            kind,
            offset,
            labels,
            activation: Activation::Softmax,
            ancestors: Vec::new(),
            abstain_below: None,
            label_name_weight: None,
            label_name_skip_subject: false,
            subject_label: None,
            header_memory: None,
            type_view_weight: None,
            head: None,
            reader: None,
        }
    }

    /// `chosen` (positions in the namespace) with every super-type of each added, sorted.
    pub fn close_under_ancestors(&self, chosen: Vec<usize>) -> Vec<usize> {
        close_under(&self.ancestors, chosen)
    }

    /// The header the label-name prior reads for column `column` of a table whose subject
    /// column is `subject`: none for the subject column where the namespace skips it.
    pub fn prior_header<'a>(
        &self,
        header: Option<&'a str>,
        column: usize,
        subject: usize,
    ) -> Option<&'a str> {
        if self.label_name_skip_subject && column == subject {
            None
        } else {
            header
        }
    }

    /// Head outputs of this namespace.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.labels.len()
    }

    /// Head output of a label of this namespace.
    pub fn output(&self, label: &str) -> Option<usize> {
        self.labels
            .iter()
            .position(|l| l == label)
            .map(|i| self.offset + i)
    }
}

/// CTA and CPA namespaces of a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSpace {
    /// Column-type namespaces.
    pub cta: Vec<Namespace>,
    /// Column-relation namespaces.
    pub cpa: Vec<Namespace>,
}

/// `chosen` with every entry of `ancestors[c]` for each chosen `c` added (transitively), sorted.
pub fn close_under(ancestors: &[Vec<usize>], chosen: Vec<usize>) -> Vec<usize> {
    let mut closed = chosen;
    let mut i = 0;
    while i < closed.len() {
        for &a in ancestors.get(closed[i]).map_or(&[][..], Vec::as_slice) {
            if !closed.contains(&a) {
                closed.push(a);
            }
        }
        i += 1;
    }
    closed.sort_unstable();
    closed
}

/// `labels.json` beside a `colswarm-swarm-v1` manifest: a namespace may lack its activation
/// (files written before it existed: softmax) and its hierarchy (none).
#[derive(Deserialize)]
struct LabelSpaceV1 {
    cta: Vec<NamespaceV1>,
    cpa: Vec<NamespaceV1>,
}

#[derive(Deserialize)]
struct NamespaceV1 {
    name: String,
    format: DatasetFormat,
    kind: LabelKind,
    offset: usize,
    labels: Vec<String>,
    #[serde(default)]
    activation: Activation,
    #[serde(default)]
    ancestors: Vec<Vec<usize>>,
}

impl From<LabelSpaceV1> for LabelSpace {
    fn from(v1: LabelSpaceV1) -> Self {
        let upgrade = |list: Vec<NamespaceV1>| {
            list.into_iter()
                .map(|n| Namespace {
                    name: n.name,
                    format: n.format,
                    kind: n.kind,
                    offset: n.offset,
                    labels: n.labels,
                    activation: n.activation,
                    ancestors: n.ancestors,
                    abstain_below: None,
                    label_name_weight: None,
                    label_name_skip_subject: false,
                    subject_label: None,
                    header_memory: None,
                    type_view_weight: None,
                    head: None,
                    reader: None,
                })
                .collect()
        };
        LabelSpace {
            cta: upgrade(v1.cta),
            cpa: upgrade(v1.cpa),
        }
    }
}

impl LabelSpace {
    /// Adds a namespace at the end of a head's outputs (no-op for an empty label list).
    pub fn push(
        &mut self,
        task: Task,
        name: &str,
        format: DatasetFormat,
        kind: LabelKind,
        labels: Vec<String>,
    ) {
        if labels.is_empty() {
            return;
        }
        let list = self.list_mut(task);
        let offset = list.last().map_or(0, |n| n.range().end);
        list.push(Namespace::new(name, format, kind, offset, labels));
    }

    /// [`Self::push`] of a [`LabelSet`]'s labels, with the super-types its hierarchy gives each
    /// ([`Namespace::ancestors`]).
    pub fn push_label_set(
        &mut self,
        task: Task,
        name: &str,
        format: DatasetFormat,
        kind: LabelKind,
        set: &LabelSet,
    ) {
        self.push(task, name, format, kind, set.labels().to_vec());
        if set.hierarchy().is_some()
            && let Some(namespace) = self.list_mut(task).last_mut()
            && namespace.name == name
        {
            namespace.ancestors = (0..set.len()).map(|id| set.ancestor_ids(id)).collect();
        }
    }

    /// Forgets every namespace's hierarchy ([`Namespace::ancestors`]): multi-label predictions
    /// are then the labels the model itself gives, not closed under super-types. Which decodes
    /// better depends on the training data (see the recipe setting `model.hierarchy_closure`).
    pub fn clear_hierarchies(&mut self) {
        for namespace in self.cta.iter_mut().chain(&mut self.cpa) {
            namespace.ancestors.clear();
        }
    }

    /// The namespaces of a head.
    pub fn list(&self, task: Task) -> &[Namespace] {
        match task {
            Task::Cta => &self.cta,
            Task::Cpa => &self.cpa,
        }
    }

    fn list_mut(&mut self, task: Task) -> &mut Vec<Namespace> {
        match task {
            Task::Cta => &mut self.cta,
            Task::Cpa => &mut self.cpa,
        }
    }

    /// Number of outputs of a head.
    pub fn len(&self, task: Task) -> usize {
        self.list(task).last().map_or(0, |n| n.range().end)
    }

    /// Whether both heads are empty.
    pub fn is_empty(&self) -> bool {
        self.cta.is_empty() && self.cpa.is_empty()
    }

    /// The namespace of a head with this name.
    pub fn namespace(&self, task: Task, name: &str) -> Option<&Namespace> {
        self.list(task).iter().find(|n| n.name == name)
    }

    /// Where the namespace named `name` sits in the CTA and in the CPA head's list (`None`
    /// where that head has no such namespace).
    pub fn positions(&self, name: &str) -> (Option<usize>, Option<usize>) {
        let position = |task: Task| self.list(task).iter().position(|n| n.name == name);
        (position(Task::Cta), position(Task::Cpa))
    }

    /// The namespaces of a head trained from this format.
    pub fn by_format(&self, task: Task, format: DatasetFormat) -> Vec<&Namespace> {
        self.list(task)
            .iter()
            .filter(|n| n.format == format)
            .collect()
    }

    /// The flat output list of the shared head as `namespace:label` (what the manifest
    /// stores): namespaces with their own head ([`Namespace::head`]) are not in it.
    pub fn flat(&self, task: Task) -> Vec<String> {
        self.list(task)
            .iter()
            .filter(|n| n.head.is_none())
            .flat_map(|n| n.labels.iter().map(move |l| format!("{}:{l}", n.name)))
            .collect()
    }

    /// Writes `labels.json` atomically.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| ModelError::File {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        write_atomically(path, &json)?;
        Ok(())
    }

    /// Reads `labels.json`, laid out as in a model directory of `version` (a v1 file is
    /// upgraded in memory), and checks that namespaces tile the outputs.
    pub fn load(path: &Path, version: ManifestVersion) -> Result<Self, ModelError> {
        let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
        let parsed = match version {
            ManifestVersion::V2 | ManifestVersion::V3 => serde_json::from_slice(&bytes),
            ManifestVersion::V1 => serde_json::from_slice::<LabelSpaceV1>(&bytes).map(Into::into),
        };
        let space: LabelSpace = parsed.map_err(|e| ModelError::File {
            path: path.to_path_buf(),
            reason: format!("invalid label space: {e}"),
        })?;
        for task in [Task::Cta, Task::Cpa] {
            let mut end = 0;
            let mut added_before = false;
            for n in space.list(task) {
                if n.offset != end {
                    return Err(ModelError::File {
                        path: path.to_path_buf(),
                        reason: format!(
                            "{task} namespace `{}` starts at {} but the previous one ends at {end}",
                            n.name, n.offset
                        ),
                    });
                }
                end = n.range().end;
                if n.head.is_none() && added_before {
                    return Err(ModelError::File {
                        path: path.to_path_buf(),
                        reason: format!(
                            "{task} namespace `{}` of the shared head comes after a namespace with its own head",
                            n.name
                        ),
                    });
                }
                added_before |= n.head.is_some();
                let broken = !n.ancestors.is_empty()
                    && (n.ancestors.len() != n.labels.len()
                        || n.ancestors.iter().flatten().any(|&a| a >= n.labels.len()));
                if broken {
                    return Err(ModelError::File {
                        path: path.to_path_buf(),
                        reason: format!(
                            "{task} namespace `{}`: its super-type lists do not index its {} labels",
                            n.name,
                            n.labels.len()
                        ),
                    });
                }
            }
        }
        Ok(space)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_tile_the_outputs() {
        let mut space = LabelSpace::default();
        let kind = LabelKind::SingleLabel;
        space.push(
            Task::Cta,
            "a",
            DatasetFormat::TurlCsv,
            kind,
            vec!["x".into(), "y".into()],
        );
        space.push(
            Task::Cta,
            "b",
            DatasetFormat::SatoCv,
            kind,
            vec!["x".into()],
        );
        space.push(Task::Cta, "empty", DatasetFormat::T2d, kind, vec![]);
        assert_eq!(space.len(Task::Cta), 3);
        assert_eq!(
            space.namespace(Task::Cta, "b").unwrap().output("x"),
            Some(2)
        );
        assert_eq!(space.flat(Task::Cta), ["a:x", "a:y", "b:x"]);
        assert_eq!(space.by_format(Task::Cta, DatasetFormat::SatoCv).len(), 1);
        assert_eq!(space.len(Task::Cpa), 0);
        assert_eq!(space.positions("b"), (Some(1), None));
        assert_eq!(space.positions("nope"), (None, None));
    }

    #[test]
    fn a_namespace_that_skips_the_subject_gives_its_prior_no_header_there_alone() {
        let mut space = LabelSpace::default();
        let kind = LabelKind::SingleLabel;
        space.push(Task::Cta, "t2d", DatasetFormat::T2d, kind, vec!["x".into()]);
        let mut n = space.cta[0].clone();
        assert_eq!(n.prior_header(Some("City"), 1, 1), Some("City"));
        let plain = serde_json::to_value(&n).unwrap();
        assert!(plain.get("label_name_skip_subject").is_none(), "{plain}");
        n.label_name_skip_subject = true;
        assert_eq!(n.prior_header(Some("City"), 1, 1), None);
        assert_eq!(n.prior_header(Some("Country"), 2, 1), Some("Country"));
        let json = serde_json::to_value(&n).unwrap();
        assert_eq!(json["label_name_skip_subject"], true);
        let back: Namespace = serde_json::from_value(json).unwrap();
        assert_eq!(back, n);
        let read: Namespace = serde_json::from_value(plain).unwrap();
        assert!(
            !read.label_name_skip_subject,
            "a file without the field skips nothing"
        );
    }

    #[test]
    fn a_hierarchy_gives_super_type_positions_that_close_predictions() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hierarchy.json");
        // `tv actor` lists only its parent: closure is transitive.
        std::fs::write(
            &file,
            r#"{"director": ["director", "person"], "tv actor": ["tv actor", "film actor"],
                "film actor": ["film actor", "person"]}"#,
        )
        .unwrap();
        let set = LabelSet::sorted(["director", "film actor", "person", "tv actor", "city"])
            .with_hierarchy(colswarm_tables::LabelHierarchy::from_json_file(&file).unwrap());
        assert_eq!(
            set.labels(),
            ["city", "director", "film actor", "person", "tv actor"]
        );
        let mut space = LabelSpace::default();
        let multi = LabelKind::MultiLabel;
        space.push_label_set(Task::Cta, "w", DatasetFormat::TurlCsv, multi, &set);
        let namespace = &space.cta[0];
        assert_eq!(
            namespace.ancestors,
            [vec![], vec![3], vec![3], vec![], vec![2]]
        );
        assert_eq!(namespace.close_under_ancestors(vec![4]), [2, 3, 4]);
        assert_eq!(namespace.close_under_ancestors(vec![1, 0]), [0, 1, 3]);
        let mut flat = space.clone();
        flat.clear_hierarchies();
        assert_eq!(flat.cta[0].close_under_ancestors(vec![4]), [4]);
        assert_eq!(flat.cta[0].labels, space.cta[0].labels);
        // Without a hierarchy nothing is added.
        space.push_label_set(
            Task::Cta,
            "plain",
            DatasetFormat::T2d,
            multi,
            &LabelSet::sorted(["a", "b"]),
        );
        assert!(space.cta[1].ancestors.is_empty());
        assert_eq!(space.cta[1].close_under_ancestors(vec![1]), [1]);

        // Saved and loaded back; super-type lists that do not index the labels are refused.
        let path = dir.path().join(LABELS_FILE);
        space.save(&path).unwrap();
        assert_eq!(LabelSpace::load(&path, ManifestVersion::V2).unwrap(), space);
        space.cta[0].ancestors[4] = vec![5];
        space.save(&path).unwrap();
        let err = LabelSpace::load(&path, ManifestVersion::V2)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("namespace `w`: its super-type lists do not index its 5 labels"),
            "{err}"
        );
    }

    #[test]
    fn load_rejects_overlapping_namespaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LABELS_FILE);
        let mut space = LabelSpace::default();
        let kind = LabelKind::MultiLabel;
        space.push(
            Task::Cta,
            "a",
            DatasetFormat::TurlCsv,
            kind,
            vec!["x".into()],
        );
        space.push(
            Task::Cta,
            "b",
            DatasetFormat::TurlCsv,
            kind,
            vec!["y".into()],
        );
        space.save(&path).unwrap();
        assert_eq!(LabelSpace::load(&path, ManifestVersion::V2).unwrap(), space);
        space.cta[1].offset = 0;
        space.save(&path).unwrap();
        let err = LabelSpace::load(&path, ManifestVersion::V2)
            .unwrap_err()
            .to_string();
        assert!(err.contains("namespace `b` starts at 0"), "{err}");
    }
}
