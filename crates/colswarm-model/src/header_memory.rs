//! The header-memory prior: a header seen in training leans towards the labels it had there.
//!
//! Web tables repeat their headers (`Population`, `Born`, `Year`), and the labels a header had
//! in training are strong evidence for a new column under the same header. The heads learn
//! this only through their n-grams, smoothed against everything else. The prior adds
//! `weight · n(header, label) / n(header)` to every label's logit, the counts taken from the
//! model's own training tables (`colswarm calibrate --header-memory-from`), the weight chosen
//! on held-out tables. Headers are compared by their words ([`header_key`]), so `Release date`
//! and `release_date:` are one header. An unseen header changes nothing.
//!
//! For a relation (CPA) the header is the object column's, and the counts are the relations
//! that column held.

use std::collections::{BTreeMap, HashMap};

use colswarm_tables::Table;
use serde::{Deserialize, Serialize};

use crate::label_names::name_words;
use crate::task::Task;

/// A header's words, sorted and joined: headers that differ only in case, punctuation or
/// camelCase are one key. `None` for a header without words.
pub fn header_key(header: &str) -> Option<String> {
    let words = name_words(header);
    (!words.is_empty()).then(|| words.into_iter().collect::<Vec<_>>().join(" "))
}

/// Per header seen in training, how often each label went with it, and the prior's weight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderMemory {
    /// `weight · n(header, label) / n(header)` is added to a label's logit.
    pub weight: f32,
    /// Per header key ([`header_key`]), `(label position in the namespace, count)` pairs,
    /// by position.
    pub headers: BTreeMap<String, Vec<(usize, u32)>>,
}

impl HeaderMemory {
    /// Counts the gold labels of `tables` per header, as positions in `labels` (a namespace's
    /// of `task`): each labelled column's (CTA) or each labelled pair's object column's (CPA).
    /// Labels outside `labels` and headers without words are skipped.
    pub fn count(tables: &[Table], task: Task, labels: &[String], weight: f32) -> Self {
        let position: HashMap<&str, usize> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.as_str(), i))
            .collect();
        let positions = |labels: &[String]| -> Vec<usize> {
            labels
                .iter()
                .filter_map(|l| position.get(l.as_str()).copied())
                .collect()
        };
        let mut examples: Vec<(&str, Vec<usize>)> = Vec::new();
        for table in tables {
            let header = |c: usize| table.columns.get(c).and_then(|c| c.header.as_deref());
            match task {
                Task::Cta => {
                    for (c, column) in table.columns.iter().enumerate() {
                        examples.extend(header(c).map(|h| (h, positions(&column.labels))));
                    }
                }
                Task::Cpa => {
                    for target in &table.cpa_targets {
                        let object = header(target.object_column);
                        examples.extend(object.map(|h| (h, positions(&target.labels))));
                    }
                }
            }
        }
        Self::from_examples(examples.iter().map(|(h, g)| (*h, g.as_slice())), weight)
    }

    /// Counts `(header, gold label positions)` examples per header. Headers without words,
    /// and headers no example gives a label, are skipped.
    pub fn from_examples<'a>(
        examples: impl IntoIterator<Item = (&'a str, &'a [usize])>,
        weight: f32,
    ) -> Self {
        let mut counts: BTreeMap<String, BTreeMap<usize, u32>> = BTreeMap::new();
        for (header, gold) in examples {
            let Some(key) = header_key(header) else {
                continue;
            };
            let row = counts.entry(key).or_default();
            for &label in gold {
                *row.entry(label).or_default() += 1;
            }
        }
        let headers = counts
            .into_iter()
            .filter(|(_, row)| !row.is_empty())
            .map(|(key, row)| (key, row.into_iter().collect()))
            .collect();
        HeaderMemory { weight, headers }
    }

    /// Adds `weight · n(header, label) / n(header)` to each label's logit (`logits[i]` is the
    /// namespace's label `i`).
    ///
    /// # Shapes
    /// - `logits`: `[labels]`
    pub fn add_prior(&self, logits: &mut [f32], header: &str) {
        if self.weight == 0.0 {
            return;
        }
        let Some(row) = header_key(header).and_then(|key| self.headers.get(&key)) else {
            return;
        };
        let seen: u32 = row.iter().map(|&(_, n)| n).sum();
        for &(label, n) in row {
            if let Some(logit) = logits.get_mut(label) {
                *logit += self.weight * n as f32 / seen as f32;
            }
        }
    }

    /// The label seen most often with `header` (the first of ties, in namespace order), if
    /// the header was seen.
    pub fn most_frequent(&self, header: &str) -> Option<usize> {
        let row = self.headers.get(&header_key(header)?)?;
        row.iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|&(label, _)| label)
    }

    /// Number of headers remembered.
    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// Whether no header is remembered.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_tables::CpaTarget;

    fn labels() -> Vec<String> {
        ["population", "area", "mayor"].map(String::from).to_vec()
    }

    fn table(headers: &[&str], labels: &[&[&str]]) -> Table {
        let mut t = Table::from_rows("t", None, vec![vec!["x".to_string(); headers.len()]]);
        for (c, (h, l)) in headers.iter().zip(labels).enumerate() {
            t.columns[c].header = Some(h.to_string());
            t.columns[c].labels = l.iter().map(|s| s.to_string()).collect();
        }
        t
    }

    #[test]
    fn headers_are_one_key_whatever_their_case_punctuation_and_order() {
        assert_eq!(header_key("Release date:"), header_key("release_date"));
        assert_eq!(header_key("date release"), Some("date release".into()));
        assert_eq!(header_key("releaseDate"), Some("date release".into()));
        assert_eq!(header_key("1,234"), None);
    }

    #[test]
    fn counts_give_each_label_its_share_of_the_header() {
        let tables = [
            table(&["Population", "Area"], &[&["population"], &["area"]]),
            table(
                &["population:", "Area"],
                &[&["population"], &["population"]],
            ),
            table(&["Area", "unknown label"], &[&["area"], &["elsewhere"]]),
        ];
        let memory = HeaderMemory::count(&tables, Task::Cta, &labels(), 3.0);
        assert_eq!(
            memory.len(),
            2,
            "the header with no label of the namespace is dropped"
        );
        assert_eq!(memory.headers["area"], [(0, 1), (1, 2)]);
        let mut logits = [0.0f32; 3];
        memory.add_prior(&mut logits, "AREA");
        assert_eq!(logits, [1.0, 2.0, 0.0]);
        assert_eq!(memory.most_frequent("area"), Some(1));
        assert_eq!(memory.most_frequent("Population"), Some(0));
        // Unseen headers, and a weight of zero, change nothing.
        let mut unseen = [0.5f32; 3];
        memory.add_prior(&mut unseen, "mayor");
        assert_eq!(unseen, [0.5; 3]);
        let off = HeaderMemory {
            weight: 0.0,
            ..memory
        };
        off.add_prior(&mut unseen, "area");
        assert_eq!(unseen, [0.5; 3]);
    }

    #[test]
    fn the_most_frequent_label_wins_and_ties_go_to_the_first_in_namespace_order() {
        let gold = [vec![1usize], vec![1], vec![0], vec![2], vec![0]];
        let headers = ["Rank", "rank", "RANK:", "city", "city"];
        let examples = headers.iter().zip(&gold).map(|(h, g)| (*h, g.as_slice()));
        let memory = HeaderMemory::from_examples(examples, 1.0);
        assert_eq!(memory.len(), 2);
        // `rank`: label 1 twice, label 0 once.
        assert_eq!(memory.most_frequent("rank"), Some(1));
        // `city`: labels 2 and 0 once each, a tie: the first in namespace order.
        assert_eq!(memory.most_frequent("City"), Some(0));
        assert_eq!(memory.most_frequent("mayor"), None);
        assert_eq!(memory.most_frequent(""), None);
    }

    #[test]
    fn relations_are_counted_under_their_object_columns_header() {
        let mut t = table(&["City", "Mayor", "Pop."], &[&[], &[], &[]]);
        t.cpa_targets = vec![
            CpaTarget {
                subject_column: 0,
                object_column: 1,
                labels: vec!["mayor".into()],
            },
            CpaTarget {
                subject_column: 0,
                object_column: 2,
                labels: vec!["population".into()],
            },
        ];
        let memory = HeaderMemory::count(&[t], Task::Cpa, &labels(), 1.0);
        assert_eq!(memory.headers.len(), 2);
        assert_eq!(memory.most_frequent("mayor"), Some(2));
        assert_eq!(memory.most_frequent("pop"), Some(0));
        assert_eq!(memory.most_frequent("city"), None);
    }
}
