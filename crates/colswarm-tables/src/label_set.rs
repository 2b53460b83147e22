//! Label sets: label ↔ id maps for CTA types and CPA relations, with optional human-readable
//! label texts and an optional hierarchy.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;

use crate::error::{Result, TableError};

/// Ancestors of each label, keyed by label text (the form WikiTables'
/// `wikitables-hierarchy-v2.json` uses: `{"film actor": ["film actor", "broadcast artist",
/// "person"], ...}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelHierarchy {
    ancestors: BTreeMap<String, Vec<String>>,
}

impl LabelHierarchy {
    /// Reads a JSON object mapping each key to its list of ancestors (which may include the key
    /// itself).
    pub fn from_json_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = fs::read_to_string(path).map_err(|e| TableError::io(path, e))?;
        let ancestors: BTreeMap<String, Vec<String>> =
            serde_json::from_str(&text).map_err(|source| TableError::Json {
                path: path.into(),
                line: source.line() as u64,
                source,
            })?;
        Ok(LabelHierarchy { ancestors })
    }

    /// The ancestors listed for `key` (as in the file, possibly including `key`).
    pub fn ancestors(&self, key: &str) -> Option<&[String]> {
        self.ancestors.get(key).map(Vec::as_slice)
    }

    /// True when `ancestor` is `key` or listed among its ancestors.
    pub fn is_a(&self, key: &str, ancestor: &str) -> bool {
        key == ancestor
            || self
                .ancestors(key)
                .is_some_and(|a| a.iter().any(|x| x == ancestor))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.ancestors.len()
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.ancestors.is_empty()
    }
}

/// An ordered set of labels with dense ids `0..len`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSet {
    labels: Vec<String>,
    ids: HashMap<String, usize>,
    texts: Vec<Option<String>>,
    hierarchy: Option<LabelHierarchy>,
}

impl LabelSet {
    /// A label set in first-seen order; duplicates are ignored.
    pub fn new<S: Into<String>>(labels: impl IntoIterator<Item = S>) -> Self {
        let mut set = LabelSet::default();
        for label in labels {
            set.insert(label.into());
        }
        set
    }

    /// A label set in sorted order (deterministic whatever order labels were met in).
    pub fn sorted<S: Into<String>>(labels: impl IntoIterator<Item = S>) -> Self {
        let mut all: Vec<String> = labels.into_iter().map(Into::into).collect();
        all.sort();
        LabelSet::new(all)
    }

    /// Adds a label if new; returns its id.
    pub fn insert(&mut self, label: String) -> usize {
        if let Some(id) = self.ids.get(&label) {
            return *id;
        }
        let id = self.labels.len();
        self.ids.insert(label.clone(), id);
        self.labels.push(label);
        self.texts.push(None);
        id
    }

    /// Reads one label per line (blank lines skipped, surrounding whitespace trimmed), as in
    /// `wikitables-2_all_labels.txt`.
    pub fn from_lines_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = fs::read_to_string(path).map_err(|e| TableError::io(path, e))?;
        Ok(LabelSet::new(
            text.lines().map(str::trim).filter(|l| !l.is_empty()),
        ))
    }

    /// Reads `<id>\t<label>` lines (SOTAB V1 vocabularies, TURL `type_vocab.txt`). Ids must
    /// be exactly `0..n`, each once.
    pub fn from_id_tsv_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = fs::read_to_string(path).map_err(|e| TableError::io(path, e))?;
        let mut set = LabelSet::default();
        for (index, line) in text.lines().enumerate() {
            let line_number = index as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            let bad = |message: String| TableError::LabelFile {
                path: path.into(),
                line: line_number,
                message,
            };
            let (id, label) = line
                .split_once('\t')
                .ok_or_else(|| bad("expected `<id>\\t<label>`".into()))?;
            let id: usize = id
                .trim()
                .parse()
                .map_err(|_| bad(format!("`{id}` is not an id")))?;
            let label = label.trim().to_string();
            if id != set.len() || set.id(&label).is_some() {
                return Err(bad(format!(
                    "id {id} for `{label}` is out of sequence or the label repeats (expected id {})",
                    set.len()
                )));
            }
            set.insert(label);
        }
        Ok(set)
    }

    /// Reads a JSON object mapping label → text (`labels_to_text_*.json|txt`) as a label set
    /// in sorted label order, with the texts attached.
    pub fn from_text_map_file(path: impl AsRef<Path>) -> Result<Self> {
        let texts = read_text_map(path.as_ref())?;
        let mut set = LabelSet::sorted(texts.keys().cloned());
        for (label, text) in texts {
            set.set_text(&label, text);
        }
        Ok(set)
    }

    /// Attaches texts from a label → text JSON file; labels not in the set are ignored.
    pub fn with_texts_from_file(mut self, path: impl AsRef<Path>) -> Result<Self> {
        for (label, text) in read_text_map(path.as_ref())? {
            self.set_text(&label, text);
        }
        Ok(self)
    }

    /// Attaches a hierarchy (keyed by label text when texts are present, else by label).
    pub fn with_hierarchy(mut self, hierarchy: LabelHierarchy) -> Self {
        self.hierarchy = Some(hierarchy);
        self
    }

    /// Sets the text of a label, if the label is in the set.
    pub fn set_text(&mut self, label: &str, text: String) {
        if let Some(id) = self.id(label) {
            self.texts[id] = Some(text);
        }
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The labels, in id order.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The id of a label.
    pub fn id(&self, label: &str) -> Option<usize> {
        self.ids.get(label).copied()
    }

    /// The label with this id.
    pub fn label(&self, id: usize) -> Option<&str> {
        self.labels.get(id).map(String::as_str)
    }

    /// The human-readable text of the label with this id, when known.
    pub fn text(&self, id: usize) -> Option<&str> {
        self.texts.get(id)?.as_deref()
    }

    /// The hierarchy, when attached.
    pub fn hierarchy(&self) -> Option<&LabelHierarchy> {
        self.hierarchy.as_ref()
    }

    /// Ids of the ancestors of label `id` (excluding itself), through the hierarchy. Hierarchy
    /// keys are label texts when the label has one, else the label itself.
    pub fn ancestor_ids(&self, id: usize) -> Vec<usize> {
        let (Some(hierarchy), Some(label)) = (&self.hierarchy, self.label(id)) else {
            return Vec::new();
        };
        let key = self.text(id).unwrap_or(label);
        let Some(ancestors) = hierarchy.ancestors(key) else {
            return Vec::new();
        };
        ancestors
            .iter()
            .filter_map(|a| self.id_by_text_or_label(a))
            .filter(|a| *a != id)
            .collect()
    }

    fn id_by_text_or_label(&self, key: &str) -> Option<usize> {
        self.id(key)
            .or_else(|| self.texts.iter().position(|t| t.as_deref() == Some(key)))
    }

    /// Ids of `labels`; `None` if any label is unknown.
    pub fn ids_of<S: AsRef<str>>(&self, labels: &[S]) -> Option<Vec<usize>> {
        labels.iter().map(|l| self.id(l.as_ref())).collect()
    }

    /// A multi-hot vector of length `len()` with ones at the known `labels`.
    pub fn multi_hot<S: AsRef<str>>(&self, labels: &[S]) -> Vec<f32> {
        let mut hot = vec![0.0; self.len()];
        for id in labels.iter().filter_map(|l| self.id(l.as_ref())) {
            hot[id] = 1.0;
        }
        hot
    }
}

fn read_text_map(path: &Path) -> Result<BTreeMap<String, String>> {
    let text = fs::read_to_string(path).map_err(|e| TableError::io(path, e))?;
    serde_json::from_str(&text).map_err(|source| TableError::Json {
        path: path.into(),
        line: source.line() as u64,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_stable() {
        let set = LabelSet::new(["b", "a", "b", "c"]);
        assert_eq!(set.len(), 3);
        assert_eq!(set.id("a"), Some(1));
        assert_eq!(set.label(2), Some("c"));
        assert_eq!(set.ids_of(&["c", "b"]), Some(vec![2, 0]));
        assert_eq!(set.ids_of(&["zzz"]), None);
        assert_eq!(set.multi_hot(&["a", "c", "x"]), vec![0.0, 1.0, 1.0]);
        assert_eq!(LabelSet::sorted(["b", "a"]).labels(), ["a", "b"]);
    }

    #[test]
    fn hierarchy_through_texts() {
        let mut set = LabelSet::new(["film.actor", "people.person"]);
        set.set_text("film.actor", "film actor".into());
        set.set_text("people.person", "person".into());
        let hierarchy = LabelHierarchy {
            ancestors: [(
                "film actor".to_string(),
                vec!["film actor".to_string(), "person".to_string()],
            )]
            .into_iter()
            .collect(),
        };
        assert!(hierarchy.is_a("film actor", "person"));
        let set = set.with_hierarchy(hierarchy);
        assert_eq!(set.ancestor_ids(0), vec![1]);
        assert!(set.ancestor_ids(1).is_empty());
    }
}
