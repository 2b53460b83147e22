//! Two peers that read nothing but a column's header, for the baselines a reviewer asks for
//! first: how far does the header alone get?
//!
//! - [`HeaderRule`] trains on nothing: it gives the label whose name shares the largest share of
//!   words with the header (the Jaccard overlap of [`colswarm_model::label_names`], the same
//!   words the model's label-name prior counts). Ties go to the label first in namespace order;
//!   a header that shares no word with any label name (or no header at all) gets no label.
//! - [`HeaderMemory`] remembers, per header, the label seen most often with it in training
//!   (headers compared by their words, so `Release date` and `release_date:` are one header;
//!   ties go to the label first in namespace order). An unseen header gets no label.
//!
//! For CPA both read the object column's header. On sets without headers (the GitTables folds,
//! SOTAB) both answer nothing, and score 0: that is what a header rule can do there.

use std::collections::HashMap;

use colswarm_model::label_names::{LabelNames, name_words};

/// The label-name rule: no training, the best word overlap of header and label name.
#[derive(Clone, Debug)]
pub(crate) struct HeaderRule {
    names: LabelNames,
    n_labels: usize,
}

impl HeaderRule {
    /// The rule over a namespace's `labels` (in namespace order).
    pub(crate) fn new(labels: &[String]) -> Self {
        HeaderRule {
            names: LabelNames::new(labels),
            n_labels: labels.len(),
        }
    }

    /// The label whose name overlaps `header` most, if any overlaps at all.
    pub(crate) fn predict(&self, header: &str) -> Option<usize> {
        let mut overlap = vec![0.0f32; self.n_labels];
        self.names.add_prior(&mut overlap, header, 1.0);
        first_maximum(&overlap).filter(|&best| overlap[best] > 0.0)
    }
}

/// The header-memory peer: the label most often seen with this header in training.
#[derive(Clone, Debug, Default)]
pub(crate) struct HeaderMemory {
    by_header: HashMap<String, usize>,
}

impl HeaderMemory {
    /// Counts, per header, the gold labels (namespace indices) of `examples` and keeps the most
    /// frequent. Headers with no words are skipped.
    pub(crate) fn train<'a>(
        examples: impl IntoIterator<Item = (&'a str, &'a [usize])>,
        n_labels: usize,
    ) -> Self {
        let mut counts: HashMap<String, Vec<usize>> = HashMap::new();
        for (header, gold) in examples {
            let Some(key) = header_key(header) else {
                continue;
            };
            let row = counts.entry(key).or_insert_with(|| vec![0; n_labels]);
            for &label in gold {
                if let Some(count) = row.get_mut(label) {
                    *count += 1;
                }
            }
        }
        let by_header = counts
            .into_iter()
            .filter_map(|(key, row)| {
                let counts: Vec<f32> = row.iter().map(|&c| c as f32).collect();
                first_maximum(&counts)
                    .filter(|&best| row[best] > 0)
                    .map(|best| (key, best))
            })
            .collect();
        HeaderMemory { by_header }
    }

    /// The label remembered for `header`, if it was seen in training.
    pub(crate) fn predict(&self, header: &str) -> Option<usize> {
        header_key(header).and_then(|key| self.by_header.get(&key).copied())
    }

    /// Headers remembered.
    pub(crate) fn len(&self) -> usize {
        self.by_header.len()
    }
}

/// A header's words, sorted and joined: headers that differ only in case, punctuation or
/// camelCase are one key. `None` for a header without words.
fn header_key(header: &str) -> Option<String> {
    let words = name_words(header);
    (!words.is_empty()).then(|| words.into_iter().collect::<Vec<_>>().join(" "))
}

/// The index of the largest value; the first of equal ones.
fn first_maximum(values: &[f32]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &v) in values.iter().enumerate() {
        if best.is_none_or(|b| v > values[b]) {
            best = Some(i);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_rule_takes_the_best_overlap_and_the_first_of_ties() {
        let rule = HeaderRule::new(&labels(&[
            "http://dbpedia.org/ontology/populationTotal",
            "http://dbpedia.org/ontology/populationMetro",
            "http://dbpedia.org/ontology/PopulatedPlace/area",
            "http://dbpedia.org/ontology/releaseDate",
        ]));
        // `population total`: 2 of 2 words with populationTotal, 1 of 3 with populationMetro.
        assert_eq!(rule.predict("Population (total)"), Some(0));
        assert_eq!(rule.predict("metro population"), Some(1));
        assert_eq!(rule.predict("Area"), Some(2));
        assert_eq!(rule.predict("Release date:"), Some(3));
        // `population`: 1 of 2 words with both populations, a tie: the first label.
        assert_eq!(rule.predict("population"), Some(0));
    }

    #[test]
    fn the_rule_gives_nothing_without_a_shared_word() {
        let rule = HeaderRule::new(&labels(&["city", "country"]));
        assert_eq!(rule.predict("mayor"), None);
        assert_eq!(rule.predict(""), None);
        assert_eq!(rule.predict("1,234"), None);
    }

    #[test]
    fn memory_keeps_the_most_frequent_label_per_header_and_forgets_nothing_else() {
        let gold = [vec![1usize], vec![1], vec![0], vec![2], vec![0]];
        let headers = ["Rank", "rank", "RANK:", "city", "city"];
        let memory = HeaderMemory::train(
            headers.iter().zip(&gold).map(|(h, g)| (*h, g.as_slice())),
            3,
        );
        assert_eq!(memory.len(), 2);
        // `rank`: label 1 twice, label 0 once.
        assert_eq!(memory.predict("rank"), Some(1));
        // `city`: labels 2 and 0 once each, a tie: the first in namespace order.
        assert_eq!(memory.predict("City"), Some(0));
        assert_eq!(memory.predict("mayor"), None);
        assert_eq!(memory.predict(""), None);
    }
}
