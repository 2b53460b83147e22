//! The label-name prior: a column whose header names a label leans towards that label.
//!
//! T2D's labels are DBpedia properties (`populationTotal`, `PopulatedPlace/area`,
//! `releaseDate`), and a web table's headers often say the same words (`Population`, `Area`,
//! `Release date`). The heads learn header n-grams only for labels seen in training, and a
//! property seen once or twice is easily outvoted. The prior adds
//! `weight · jaccard(header words, label-name words)` to every label's logit, so it helps
//! most where the heads know least. The weight is chosen on held-out tables and stored per
//! namespace ([`crate::Namespace::label_name_weight`]); applied after training, it cannot
//! be fitted away on the training tables, as a learned feature would be.
//!
//! Words are maximal runs of letters, lower-cased, with camelCase split (`releaseDate` →
//! `release`, `date`). A label's name is the part after its last `/` or `#`, so
//! `http://dbpedia.org/ontology/PopulatedPlace/area` is named `area`.

use std::collections::{BTreeSet, HashMap};

/// The words of a header or label name: maximal runs of letters, lower-cased, split where a
/// lower-case letter meets an upper-case one.
pub fn name_words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for ch in text.chars() {
        if !ch.is_alphabetic() {
            flush(&mut word, &mut words);
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower {
            flush(&mut word, &mut words);
        }
        previous_lower = ch.is_lowercase();
        word.extend(ch.to_lowercase());
    }
    flush(&mut word, &mut words);
    words
}

fn flush(word: &mut String, words: &mut BTreeSet<String>) {
    if !word.is_empty() {
        words.insert(std::mem::take(word));
    }
}

/// The words of a label's name: of the part after its last `/` or `#`.
pub fn label_words(label: &str) -> BTreeSet<String> {
    let local = label.rsplit(['/', '#']).next().unwrap_or(label);
    name_words(local)
}

/// Shared words over all words of the two sets; 0 when either is empty.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    let shared = a.intersection(b).count();
    let all = a.len() + b.len() - shared;
    if all == 0 || shared == 0 {
        0.0
    } else {
        shared as f32 / all as f32
    }
}

/// The name words of a namespace's labels, split once and indexed by word, so that a column
/// costs a lookup per header word, not a tokenization or a comparison per label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelNames {
    /// Per label, the number of words in its name.
    sizes: Vec<usize>,
    /// Per word, the labels whose names hold it, ascending.
    labels_of: HashMap<String, Vec<usize>>,
}

impl LabelNames {
    /// The name words of each of `labels`, in order.
    pub fn new(labels: &[String]) -> Self {
        let mut labels_of: HashMap<String, Vec<usize>> = HashMap::new();
        let sizes = labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let words = label_words(label);
                for word in &words {
                    labels_of.entry(word.clone()).or_default().push(i);
                }
                words.len()
            })
            .collect();
        LabelNames { sizes, labels_of }
    }

    /// Adds `weight · jaccard(header, label)` to each label's logit (`logits[i]` is label
    /// `i`'s).
    ///
    /// # Shapes
    /// - `logits`: `[labels]`
    pub fn add_prior(&self, logits: &mut [f32], header: &str, weight: f32) {
        let header = name_words(header);
        if header.is_empty() || weight == 0.0 {
            return;
        }
        // Words shared with each label that shares any: the others' Jaccard is 0.
        let mut shared: HashMap<usize, usize> = HashMap::new();
        for word in &header {
            for &label in self.labels_of.get(word).map_or(&[][..], Vec::as_slice) {
                *shared.entry(label).or_default() += 1;
            }
        }
        for (label, shared) in shared {
            if let Some(logit) = logits.get_mut(label) {
                let all = header.len() + self.sizes[label] - shared;
                *logit += weight * (shared as f32 / all as f32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn words_split_on_non_letters_and_camel_case() {
        assert_eq!(name_words("Release date:"), set(&["release", "date"]));
        assert_eq!(name_words("populationTotal"), set(&["population", "total"]));
        assert_eq!(name_words("IATA code (2012)"), set(&["iata", "code"]));
        assert_eq!(name_words("Höhe über NN"), set(&["höhe", "über", "nn"]));
        assert!(name_words("1,234 / 5").is_empty());
    }

    #[test]
    fn a_label_is_named_by_its_last_path_segment() {
        let area = "http://dbpedia.org/ontology/PopulatedPlace/area";
        assert_eq!(label_words(area), set(&["area"]));
        let label = "http://www.w3.org/2000/01/rdf-schema#label";
        assert_eq!(label_words(label), set(&["label"]));
        assert_eq!(label_words("film.director"), set(&["film", "director"]));
    }

    #[test]
    fn jaccard_counts_shared_words_over_all_words() {
        let a = set(&["release", "date"]);
        assert_eq!(jaccard(&a, &set(&["release", "date"])), 1.0);
        assert_eq!(jaccard(&a, &set(&["date"])), 0.5);
        assert_eq!(jaccard(&a, &set(&["date", "of", "birth"])), 0.25);
        assert_eq!(jaccard(&a, &set(&[])), 0.0);
        assert_eq!(jaccard(&set(&[]), &set(&[])), 0.0);
    }

    #[test]
    fn the_indexed_prior_adds_each_labels_jaccard() {
        let labels: Vec<String> = [
            "http://dbpedia.org/ontology/populationTotal",
            "http://dbpedia.org/ontology/PopulatedPlace/populationDensity",
            "http://dbpedia.org/ontology/releaseDate",
            "http://www.w3.org/2000/01/rdf-schema#label",
            "people.person",
            "date",
        ]
        .map(String::from)
        .to_vec();
        let names = LabelNames::new(&labels);
        for header in [
            "Population (total)",
            "population density per km²",
            "Date of release",
            "Label",
            "Person, people",
            "",
            "no match",
        ] {
            let mut logits = vec![0.5; labels.len()];
            names.add_prior(&mut logits, header, 3.0);
            let words = name_words(header);
            let expected: Vec<f32> = labels
                .iter()
                .map(|l| 0.5 + 3.0 * jaccard(&words, &label_words(l)))
                .collect();
            assert_eq!(logits, expected, "{header}");
        }
    }

    #[test]
    fn the_prior_raises_the_labels_the_header_names_in_proportion() {
        let labels: Vec<String> = [
            "http://dbpedia.org/ontology/populationTotal",
            "http://dbpedia.org/ontology/PopulatedPlace/area",
            "http://dbpedia.org/ontology/country",
        ]
        .map(String::from)
        .to_vec();
        let names = LabelNames::new(&labels);
        let mut logits = vec![1.0, 2.0, 3.0];
        names.add_prior(&mut logits, "Total population", 4.0);
        assert_eq!(logits, [5.0, 2.0, 3.0]);
        let mut logits = vec![1.0, 2.0, 3.0];
        names.add_prior(&mut logits, "Population", 4.0);
        assert_eq!(logits, [3.0, 2.0, 3.0]);
        // A header of no words, or a zero weight, leaves the logits alone.
        let mut logits = vec![1.0, 2.0, 3.0];
        names.add_prior(&mut logits, "2012", 4.0);
        names.add_prior(&mut logits, "Area", 0.0);
        assert_eq!(logits, [1.0, 2.0, 3.0]);
    }
}
