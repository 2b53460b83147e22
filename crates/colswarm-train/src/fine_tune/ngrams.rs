//! The new namespace's n-gram reader: the character n-gram classifier (the baseline's), fitted
//! on the labelled columns' n-gram bags as the model reads them, and the share of its
//! probabilities mixed into the head's, chosen on the held-out slice.

use colswarm_eval::{NgramClassifier, NgramTraining};
use colswarm_swarm::LabelKind;
use colswarm_tables::SparseFeatures;

use super::fit::log_loss;

/// The shares the held-out slice chooses from (0: the head alone).
pub(super) const SHARES: [f32; 5] = [0.0, 0.2, 0.4, 0.6, 0.8];

/// The baseline's SGD settings (10 passes from a step of 2), with the run's seed.
fn training(seed: u64) -> NgramTraining {
    NgramTraining {
        seed,
        epochs: 10,
        learning_rate: 2.0,
    }
}

/// Fits the reader on the columns `keep` selects.
pub(super) fn fit_reader(
    bags: &[SparseFeatures],
    labels: &[Vec<usize>],
    keep: impl Fn(usize) -> bool,
    buckets: usize,
    n_labels: usize,
    multi_label: bool,
    seed: u64,
) -> NgramClassifier {
    let data: Vec<(SparseFeatures, Vec<usize>)> = (0..labels.len())
        .filter(|&i| keep(i))
        .map(|i| (bags[i].clone(), labels[i].clone()))
        .collect();
    let kind = if multi_label {
        LabelKind::MultiLabel
    } else {
        LabelKind::SingleLabel
    };
    NgramClassifier::fit(&training(seed), buckets, n_labels, kind, &data)
}

/// The reader's probabilities for one column: a softmax, or per-label sigmoids.
pub(super) fn reader_probabilities(
    reader: &NgramClassifier,
    bag: &[(u32, f32)],
    multi_label: bool,
) -> Vec<f32> {
    let scores = reader.scores(bag);
    if multi_label {
        scores.into_iter().map(colswarm_eval::sigmoid).collect()
    } else {
        colswarm_eval::softmax(&scores)
    }
}

/// `(1 − share)·head + share·reader`, row by row.
pub(super) fn mixed(head: &[Vec<f32>], reader: &[Vec<f32>], share: f32) -> Vec<Vec<f32>> {
    head.iter()
        .zip(reader)
        .map(|(h, r)| {
            h.iter()
                .zip(r)
                .map(|(a, b)| (1.0 - share) * a + share * b)
                .collect()
        })
        .collect()
}

/// The share with the lowest held-out log-loss (ties to the smaller share), and the mixed
/// held-out probabilities.
pub(super) fn choose_share(
    head: &[Vec<f32>],
    reader: &[Vec<f32>],
    gold: &[&Vec<usize>],
    multi_label: bool,
) -> (f32, Vec<Vec<f32>>) {
    let mut best: Option<(f64, f32, Vec<Vec<f32>>)> = None;
    for share in SHARES {
        let probs = mixed(head, reader, share);
        let loss = log_loss(&probs, gold, multi_label);
        if best.as_ref().is_none_or(|(b, _, _)| loss < *b) {
            best = Some((loss, share, probs));
        }
    }
    let (_, share, probs) = best.unwrap_or((0.0, 0.0, head.to_vec()));
    (share, probs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_follows_the_better_reader() {
        // Two columns, gold labels 0 and 1: the head is wrong on both, the reader right.
        let head = vec![vec![0.2, 0.8], vec![0.8, 0.2]];
        let reader = vec![vec![0.9, 0.1], vec![0.1, 0.9]];
        let gold = [vec![0], vec![1]];
        let gold: Vec<&Vec<usize>> = gold.iter().collect();
        let (share, probs) = choose_share(&head, &reader, &gold, false);
        assert_eq!(share, 0.8);
        assert!((probs[0][0] - (0.2 * 0.2 + 0.8 * 0.9)).abs() < 1e-6);
        // And the head alone when the reader is the one that is wrong.
        let (share, _) = choose_share(&reader, &head, &gold, false);
        assert_eq!(share, 0.0);
    }

    #[test]
    fn a_reader_learns_separable_bags() {
        let bags: Vec<SparseFeatures> = (0..20)
            .map(|i| vec![(if i % 2 == 0 { 3 } else { 7 }, 1.0)])
            .collect();
        let labels: Vec<Vec<usize>> = (0..20).map(|i| vec![i % 2]).collect();
        let reader = fit_reader(&bags, &labels, |_| true, 16, 2, false, 0);
        let p = reader_probabilities(&reader, &[(3, 1.0)], false);
        assert!(p[0] > 0.9, "{p:?}");
        let p = reader_probabilities(&reader, &[(7, 1.0)], false);
        assert!(p[1] > 0.9, "{p:?}");
    }
}
