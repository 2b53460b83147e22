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
//! `http://dbpedia.org/ontology/PopulatedPlace/area` is named `area`. The prior compares
//! words in one form for singular and regular English plural ([`word_form`]): headers name
//! a column by what each cell holds (`Languages`, `Countries`, `Matches`), labels by the
//! property (`language`, `country`, `match`).

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

/// The form a word is compared in, the same for its singular and its regular English plural:
/// `countries` and `country` → `countrie`, `matches` and `match` → `match`, `languages` →
/// `language`, `movies` → `movie`. Words that only end like a plural keep their end (`status`,
/// `address`, `analysis`, and words of three letters or fewer). Irregular plurals (`people`)
/// and other languages' plurals are not matched. Not a dictionary form: it only ever meets
/// another word's form.
pub fn word_form(word: &str) -> String {
    let chars: Vec<char> = word.chars().collect();
    let n = chars.len();
    let ends = |suffix: &str| word.ends_with(suffix);
    let vowel = |c: char| "aeiou".contains(c);
    let mut form: String = if n >= 5
        && ["sses", "ches", "shes", "xes", "zes"]
            .iter()
            .any(|s| ends(s))
    {
        chars[..n - 2].iter().collect()
    } else if n >= 4 && ends("s") && !["ss", "us", "is"].iter().any(|s| ends(s)) {
        chars[..n - 1].iter().collect()
    } else {
        word.to_string()
    };
    // `country` meets `countries` (now `countrie`): a final `y` after a consonant becomes `ie`.
    let form_chars: Vec<char> = form.chars().collect();
    if let [.., before, 'y'] = form_chars[..]
        && form_chars.len() >= 3
        && !vowel(before)
    {
        form.pop();
        form.push_str("ie");
    }
    form
}

/// [`name_words`] of `text`, each in its [`word_form`].
fn word_forms(text: &str) -> BTreeSet<String> {
    name_words(text).iter().map(|w| word_form(w)).collect()
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

/// Whether `header` names `label`: the two share a word (in its [`word_form`]). A column
/// with no values is answered only with labels its header names.
pub fn header_names(header: &str, label: &str) -> bool {
    let header = word_forms(header);
    label_words(label)
        .iter()
        .any(|word| header.contains(&word_form(word)))
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
                let words: BTreeSet<String> =
                    label_words(label).iter().map(|w| word_form(w)).collect();
                for word in &words {
                    labels_of.entry(word.clone()).or_default().push(i);
                }
                words.len()
            })
            .collect();
        LabelNames { sizes, labels_of }
    }

    /// Adds `weight · jaccard(header, label)` to each label's logit (`logits[i]` is label
    /// `i`'s), both named by their words' [`word_form`]s.
    ///
    /// # Shapes
    /// - `logits`: `[labels]`
    pub fn add_prior(&self, logits: &mut [f32], header: &str, weight: f32) {
        let header = word_forms(header);
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

    fn labels(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
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
        let labels = labels(&[
            "http://dbpedia.org/ontology/populationTotal",
            "http://dbpedia.org/ontology/PopulatedPlace/populationDensity",
            "http://dbpedia.org/ontology/releaseDate",
            "http://www.w3.org/2000/01/rdf-schema#label",
            "people.person",
            "date",
        ]);
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
            let forms = |words: BTreeSet<String>| words.iter().map(|w| word_form(w)).collect();
            let words = forms(name_words(header));
            let expected: Vec<f32> = labels
                .iter()
                .map(|l| 0.5 + 3.0 * jaccard(&words, &forms(label_words(l))))
                .collect();
            assert_eq!(logits, expected, "{header}");
        }
    }

    #[test]
    fn singular_and_regular_plural_share_a_form() {
        for (plural, singular) in [
            ("countries", "country"),
            ("cities", "city"),
            ("languages", "language"),
            ("movies", "movie"),
            ("matches", "match"),
            ("boxes", "box"),
            ("addresses", "address"),
            ("headquarters", "headquarter"),
            ("days", "day"),
        ] {
            assert_eq!(
                word_form(plural),
                word_form(singular),
                "{plural} / {singular}"
            );
        }
        // Words that only end like a plural keep their end.
        assert_eq!(word_form("status"), "status");
        assert_eq!(word_form("address"), "address");
        assert_eq!(word_form("analysis"), "analysis");
        assert_eq!(word_form("gas"), "gas");
        assert_ne!(word_form("state"), word_form("status"));
    }

    #[test]
    fn a_plural_header_names_its_singular_label() {
        let properties = ["language", "country", "headquarter"];
        let uris = properties.map(|p| format!("http://dbpedia.org/ontology/{p}"));
        let names = LabelNames::new(&uris);
        for (header, named) in [("Languages", 0), ("Countries", 1), ("HEADQUARTERS", 2)] {
            let mut logits = vec![0.0; 3];
            names.add_prior(&mut logits, header, 2.0);
            let mut expected = vec![0.0; 3];
            expected[named] = 2.0;
            assert_eq!(logits, expected, "{header}");
        }
    }

    #[test]
    fn the_prior_raises_the_labels_the_header_names_in_proportion() {
        let labels = labels(&[
            "http://dbpedia.org/ontology/populationTotal",
            "http://dbpedia.org/ontology/PopulatedPlace/area",
            "http://dbpedia.org/ontology/country",
        ]);
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

    #[test]
    fn a_header_names_a_label_when_they_share_a_word_in_any_number() {
        assert!(header_names(
            "Countries",
            "http://dbpedia.org/ontology/country"
        ));
        assert!(header_names("Release date", "releaseDate"));
        assert!(header_names("Notes", "notes"));
        assert!(!header_names("col2", "type"));
        assert!(!header_names("", "id"));
        assert!(!header_names("City", "location.citytown"));
    }
}
