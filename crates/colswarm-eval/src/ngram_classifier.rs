//! The character n-gram baseline's classifier: a linear layer over hashed byte n-grams of a
//! column (`colswarm_tables::NgramConfig`), trained with SGD (softmax and cross-entropy for single-label
//! namespaces, one-vs-rest sigmoids and binary cross-entropy for multi-label ones). Its tests
//! are the baseline's, in `baseline.rs`.

use colswarm_swarm::LabelKind;
use colswarm_tables::SparseFeatures;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Scores `bias + xᵀW` over the labels; `W` is `buckets × labels`, row-major. The char n-gram
/// baseline's classifier, and the n-gram reader of a fine-tuned namespace.
#[derive(Clone, Debug)]
pub struct NgramClassifier {
    n_labels: usize,
    weights: Vec<f32>,
    bias: Vec<f32>,
}

/// How [`NgramClassifier::fit`] trains: plain SGD, one target at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NgramTraining {
    /// Seed of the order targets are visited in.
    pub seed: u64,
    /// Passes over the targets.
    pub epochs: usize,
    /// Initial step size, decaying linearly to zero.
    pub learning_rate: f32,
}

impl NgramClassifier {
    /// Trains on `(features, gold label positions)` pairs: softmax and cross-entropy (gold
    /// spread evenly over a target's labels) for a single-label namespace, one-vs-rest sigmoids
    /// and binary cross-entropy for a multi-label one.
    pub fn fit(
        training: &NgramTraining,
        buckets: usize,
        n_labels: usize,
        kind: LabelKind,
        data: &[(SparseFeatures, Vec<usize>)],
    ) -> Self {
        let mut model = NgramClassifier {
            n_labels,
            weights: vec![0.0; buckets * n_labels],
            bias: vec![0.0; n_labels],
        };
        let mut rng = ChaCha8Rng::seed_from_u64(training.seed);
        let mut order: Vec<usize> = (0..data.len()).collect();
        let total = (training.epochs * data.len()).max(1) as f32;
        let rate = training.learning_rate.max(0.0);
        let mut step = 0usize;
        let mut grad = vec![0.0f32; n_labels];
        for _ in 0..training.epochs {
            order.shuffle(&mut rng);
            for &i in &order {
                let (features, gold) = &data[i];
                let lr = rate * (1.0 - step as f32 / total);
                step += 1;
                let scores = model.scores(features);
                match kind {
                    LabelKind::SingleLabel => {
                        // Softmax cross-entropy: grad = p − y, y spread evenly over the gold
                        // labels (a single-label namespace may still list two for one target).
                        let probs = softmax(&scores);
                        grad.copy_from_slice(&probs);
                        let share = 1.0 / gold.len() as f32;
                        for &g in gold {
                            grad[g] -= share;
                        }
                    }
                    LabelKind::MultiLabel => {
                        // One-vs-rest binary cross-entropy: grad = σ(s) − y per label.
                        for (g, s) in grad.iter_mut().zip(&scores) {
                            *g = sigmoid(*s);
                        }
                        for &g in gold {
                            grad[g] -= 1.0;
                        }
                    }
                }
                for (b, g) in model.bias.iter_mut().zip(&grad) {
                    *b -= lr * g;
                }
                for &(bucket, x) in features {
                    let bucket = bucket as usize;
                    let row = &mut model.weights[bucket * n_labels..(bucket + 1) * n_labels];
                    for (w, g) in row.iter_mut().zip(&grad) {
                        *w -= lr * x * g;
                    }
                }
            }
        }
        model
    }

    /// The weights, `buckets × labels` row-major, and the biases.
    pub fn parts(&self) -> (&[f32], &[f32]) {
        (&self.weights, &self.bias)
    }

    /// `bias + xᵀW` for one column's features.
    pub fn scores(&self, features: &[(u32, f32)]) -> Vec<f32> {
        let mut scores = self.bias.clone();
        for &(bucket, x) in features {
            let bucket = bucket as usize;
            let row = &self.weights[bucket * self.n_labels..(bucket + 1) * self.n_labels];
            for (s, w) in scores.iter_mut().zip(row) {
                *s += x * w;
            }
        }
        scores
    }

    /// Single-label: the arg-max. Multi-label: every label with probability above 0.5, else the
    /// arg-max (every target has at least one label).
    pub(crate) fn decide(scores: &[f32], kind: LabelKind) -> Vec<usize> {
        let mut best = None;
        for (i, &s) in scores.iter().enumerate() {
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((i, s));
            }
        }
        let Some((top, _)) = best else {
            return Vec::new();
        };
        if kind == LabelKind::MultiLabel {
            // σ(s) > 0.5 ⇔ s > 0.
            let above: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
            if !above.is_empty() {
                return above;
            }
        }
        vec![top]
    }
}

/// Softmax of scores.
pub fn softmax(scores: &[f32]) -> Vec<f32> {
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.into_iter().map(|e| e / sum).collect()
}

/// The logistic function.
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}
