//! A namespace's n-gram reader ([`colswarm_model::reader`]): trained as the `char-ngram` peer
//! is, on the namespace's own labels, and its share of the mixture chosen on labelled dev
//! tables from the model's own probabilities there, read once.

use std::collections::HashMap;

use colswarm_model::{Namespace, NgramReader, ReaderFeatures, Task, decode};
use colswarm_tables::{NgramConfig, Table};

use crate::baseline::{BaselineConfig, BaselineKind, train_baseline};
use crate::compare::{TargetPrediction, score_predictions};

/// The shares a dev set chooses among: none, then a tenth at a time.
pub const SHARE_GRID: [f32; 10] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// How a reader is trained: the `char-ngram` peer's settings ([`BaselineConfig`]; its kind
/// and label-name prior are ignored).
#[derive(Clone, Debug)]
pub struct ReaderTraining {
    /// Features, epochs, step size and seed, as for the peer.
    pub config: BaselineConfig,
}

/// A trained reader's features, weights (`buckets × labels`) and biases, in the order of
/// `namespace`'s labels. Gold labels outside the namespace are ignored.
pub fn train_reader(
    training: &ReaderTraining,
    task: Task,
    namespace: &Namespace,
    tables: &[Table],
) -> (ReaderFeatures, Vec<f32>, Vec<f32>) {
    let config = BaselineConfig {
        kind: BaselineKind::CharNgram,
        label_name_weight: None,
        ..training.config.clone()
    };
    let baseline = train_baseline(&config, task, namespace, tables);
    match baseline.linear_parts() {
        Some((featurizer, weights, bias)) => (
            ReaderFeatures::of(featurizer),
            weights.to_vec(),
            bias.to_vec(),
        ),
        // A char-ngram baseline is always linear; nothing trained reads as zeros.
        None => {
            let features = ReaderFeatures::of(&NgramConfig::default());
            let n = namespace.labels.len();
            (
                features,
                vec![0.0; features.buckets as usize * n],
                vec![0.0; n],
            )
        }
    }
}

/// Micro-F1 of the mixture at each share of `grid`: the model's predictions of a dev set
/// (`targets`, each with every label's probability, from `evaluate` without the reader) mixed
/// with `reader`'s probabilities on the same targets of `tables`, and decoded as the model
/// decodes. A target the model kept no probabilities for keeps its prediction.
pub fn share_curve(
    targets: &[TargetPrediction],
    tables: &[Table],
    namespace: &Namespace,
    reader: &NgramReader,
    grid: &[f32],
) -> Vec<(f32, f64)> {
    let by_id: HashMap<&str, &Table> = tables.iter().map(|t| (t.id.as_str(), t)).collect();
    // Per target: the model's probabilities and the reader's, in namespace order.
    let read: Vec<Option<(Vec<f32>, Vec<f32>)>> = targets
        .iter()
        .map(|t| {
            let table = by_id.get(t.table.as_str())?;
            if t.probabilities.is_empty() {
                return None;
            }
            let own = namespace
                .labels
                .iter()
                .map(|l| t.probabilities.get(l).copied().unwrap_or(0.0))
                .collect();
            Some((own, reader.probs(table, t.column, t.subject)))
        })
        .collect();
    grid.iter()
        .map(|&w| {
            let mixed: Vec<TargetPrediction> = targets
                .iter()
                .zip(&read)
                .map(|(t, r)| match r {
                    Some((own, theirs)) => {
                        let p: Vec<f32> = own
                            .iter()
                            .zip(theirs)
                            .map(|(a, b)| (1.0 - w) * a + w * b)
                            .collect();
                        TargetPrediction {
                            predicted: decode(namespace, &p)
                                .into_iter()
                                .map(|i| namespace.labels[i].clone())
                                .collect(),
                            probabilities: Default::default(),
                            ..t.clone()
                        }
                    }
                    None => t.clone(),
                })
                .collect();
            (w, score_predictions(&mixed, namespace).micro_f1)
        })
        .collect()
}

/// The share of the best micro-F1 on the curve, the smaller share on a tie (0 for an empty
/// curve).
pub fn choose_share(curve: &[(f32, f64)]) -> f32 {
    let mut best: Option<(f32, f64)> = None;
    for &(w, f1) in curve {
        if best.is_none_or(|(_, b)| f1 > b) {
            best = Some((w, f1));
        }
    }
    best.map_or(0.0, |(w, _)| w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_model::Activation;
    use colswarm_swarm::LabelKind;
    use colswarm_tables::{Cell, Column, DatasetFormat};

    fn namespace() -> Namespace {
        let mut n = Namespace::new(
            "toy",
            DatasetFormat::T2d,
            LabelKind::SingleLabel,
            0,
            vec!["city".into(), "year".into()],
        );
        n.activation = Activation::Softmax;
        n
    }

    /// Tables of one column each: city names labelled `city`, years labelled `year`.
    fn tables(n: usize) -> Vec<Table> {
        let cities = [
            "Paris", "Lyon", "Berlin", "Oslo", "Rome", "Madrid", "Vienna", "Bern",
        ];
        (0..n)
            .map(|i| {
                let (cells, label): (Vec<String>, &str) = if i % 2 == 0 {
                    (
                        (0..4)
                            .map(|j| cities[(i + j) % cities.len()].to_string())
                            .collect(),
                        "city",
                    )
                } else {
                    (
                        (0..4).map(|j| (1900 + 7 * i + j).to_string()).collect(),
                        "year",
                    )
                };
                let mut column =
                    Column::new(None, cells.iter().map(|c| Cell::new(c.as_str())).collect());
                column.labels = vec![label.to_string()];
                Table::new(format!("t{i}"), vec![column])
            })
            .collect()
    }

    #[test]
    fn a_reader_learns_the_labels_and_a_useless_model_gives_it_the_largest_share() {
        let train = tables(16);
        let ns = namespace();
        let training = ReaderTraining {
            config: BaselineConfig {
                buckets: 256,
                ..BaselineConfig::default()
            },
        };
        let (features, weights, bias) = train_reader(&training, Task::Cta, &ns, &train);
        assert_eq!(features.buckets, 256);
        assert_eq!((weights.len(), bias.len()), (512, 2));
        let reader = NgramReader::new(features, weights, bias, 0.0, false);
        let dev = tables(6);
        // A model that always says `city`, unsure.
        let targets: Vec<TargetPrediction> = dev
            .iter()
            .map(|t| TargetPrediction {
                table: t.id.clone(),
                subject: None,
                column: 0,
                gold: t.columns[0].labels.clone(),
                predicted: vec!["city".into()],
                probabilities: [("city".to_string(), 0.55), ("year".to_string(), 0.45)].into(),
            })
            .collect();
        let curve = share_curve(&targets, &dev, &ns, &reader, &SHARE_GRID);
        assert_eq!(curve.len(), SHARE_GRID.len());
        // At share 0 the model's own answers: half right.
        assert!((curve[0].1 - 0.5).abs() < 1e-9, "{curve:?}");
        // With the reader every column is right.
        assert!((curve[9].1 - 1.0).abs() < 1e-9, "{curve:?}");
        let chosen = choose_share(&curve);
        assert!(chosen > 0.0);
        let best = curve.iter().map(|c| c.1).fold(0.0, f64::max);
        // The smallest share that reaches the best.
        assert_eq!(chosen, curve.iter().find(|c| c.1 == best).unwrap().0);
    }

    #[test]
    fn ties_choose_the_smaller_share() {
        assert_eq!(choose_share(&[(0.0, 0.5), (0.1, 0.6), (0.2, 0.6)]), 0.1);
        assert_eq!(choose_share(&[]), 0.0);
    }
}
