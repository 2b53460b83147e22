//! Two peers that read nothing but a column's header, for the baselines a reviewer asks for
//! first: how far does the header alone get?
//!
//! - [`HeaderRule`] trains on nothing: it gives the label whose name shares the largest share of
//!   words with the header (the Jaccard overlap of [`colswarm_model::label_names`], the same
//!   words the model's label-name prior counts). Ties go to the label first in namespace order;
//!   a header that shares no word with any label name (or no header at all) gets no label.
//! - The header-memory peer is the model's own [`colswarm_model::HeaderMemory`] read alone: per header, the
//!   label seen most often with it in training (headers compared by their words, so `Release
//!   date` and `release_date:` are one header; ties go to the label first in namespace
//!   order). An unseen header gets no label.
//!
//! For CPA both read the object column's header. On sets without headers (the GitTables folds,
//! SOTAB) both answer nothing, and score 0: that is what a header rule can do there.

use colswarm_model::label_names::LabelNames;

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
}
