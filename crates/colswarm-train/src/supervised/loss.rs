//! The supervised loss of a forward pass: per namespace, cross-entropy (softmax) or binary
//! cross-entropy (sigmoids) against the examples' targets, CTA and CPA.

use burn::tensor::activation::{log_sigmoid, log_softmax};
use burn::tensor::{Int, Tensor, TensorData};
use colswarm_model::{Activation, Example, LabelSpace, Namespace};
use colswarm_swarm::{Orchestrator, SwarmOutput};

/// Per-head losses of a forward pass against the examples' targets.
#[derive(Debug)]
pub struct Losses {
    /// Weighted sum of the two.
    pub total: Tensor<1>,
    /// CTA part (mean over labelled columns), when any; `[1]`, detached.
    pub cta: Option<Tensor<1>>,
    /// CPA part (mean over targets), when any; `[1]`, detached.
    pub cpa: Option<Tensor<1>>,
}

/// The loss of `rows` of `logits`, restricted to one namespace's outputs: with
/// [`Activation::Softmax`], cross-entropy against the uniform distribution over each target's
/// gold labels; with [`Activation::Sigmoid`], binary cross-entropy per label, summed over the
/// namespace. Softmax is the default for multi-label sets too: without column n-grams a small
/// byte-level model trained with sigmoids settled on the label priors (loss ≈ the entropy of
/// the label frequencies) and never discriminated.
pub(crate) fn namespace_loss(
    logits: &Tensor<2>,
    rows: &[usize],
    namespace: &Namespace,
    targets: &[&[usize]],
) -> Tensor<1> {
    let device = logits.device();
    let range = namespace.range();
    let n = range.len();
    let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    let picked = logits
        .clone()
        .select(0, Tensor::<1, Int>::from_data(index.as_slice(), &device))
        .narrow(1, range.start, n);
    let sigmoid = namespace.activation == Activation::Sigmoid;
    let mut dense = vec![0f32; rows.len() * n];
    for (r, outputs) in targets.iter().enumerate() {
        for &o in *outputs {
            dense[r * n + (o - range.start)] = if sigmoid {
                1.0
            } else {
                1.0 / outputs.len() as f32
            };
        }
    }
    let target = Tensor::<2>::from_data(TensorData::new(dense, [rows.len(), n]), &device);
    if sigmoid {
        // Binary cross-entropy with logits, summed over the labels: −y·log σ(x) − (1−y)·log σ(−x).
        let positive = log_sigmoid(picked.clone()) * target.clone();
        let negative = log_sigmoid(picked.neg()) * (target.neg() + 1.0);
        return (positive + negative).sum().neg() / rows.len() as f64;
    }
    (log_softmax(picked, 1) * target).sum().neg() / rows.len() as f64
}

/// How many targets a batch holds: the denominators of its mean losses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetCounts {
    /// Labelled columns (CTA targets).
    pub cta: usize,
    /// CPA targets.
    pub cpa: usize,
}

impl TargetCounts {
    /// The targets of `examples` that [`supervised_loss`] counts.
    pub fn of(examples: &[&Example]) -> Self {
        let mut counts = TargetCounts::default();
        for example in examples {
            if example.cta_namespace.is_some() {
                counts.cta += example.cta.iter().filter(|o| !o.is_empty()).count();
            }
            counts.cta += example.cta_none.len();
            if example.cpa_namespace.is_some() {
                counts.cpa += example.cpa.len();
            }
        }
        counts
    }
}

/// The supervised loss of a forward pass: mean over labelled columns (and columns that have no
/// label of a namespace, [`Example::cta_none`]) of their namespace's CTA
/// loss, plus `cpa_weight` times the mean CPA loss over targets.
pub fn supervised_loss(
    orchestrator: &Orchestrator,
    space: &LabelSpace,
    examples: &[&Example],
    out: &SwarmOutput,
    cpa_weight: f64,
) -> Option<Losses> {
    let counts = TargetCounts::of(examples);
    shard_loss(orchestrator, space, examples, out, cpa_weight, counts)
}

/// Per namespace: rows (CTA) or row pairs (CPA), and their targets.
type Targets<'e, R> = Vec<(Vec<R>, Vec<&'e [usize]>)>;

/// The batch's CTA rows and CPA row pairs, with their targets, per namespace of `space`.
fn gather_targets<'e>(
    space: &LabelSpace,
    examples: &[&'e Example],
) -> (Targets<'e, usize>, Targets<'e, (usize, usize)>) {
    let mut row = 0;
    let mut cta: Targets<usize> = vec![(Vec::new(), Vec::new()); space.cta.len()];
    let mut cpa: Targets<(usize, usize)> = vec![(Vec::new(), Vec::new()); space.cpa.len()];
    for example in examples {
        if let Some(ns) = example.cta_namespace {
            for (q, outputs) in example.cta.iter().enumerate() {
                if !outputs.is_empty() {
                    cta[ns].0.push(row + q);
                    cta[ns].1.push(outputs);
                }
            }
        }
        for &(q, ns) in &example.cta_none {
            cta[ns].0.push(row + q);
            cta[ns].1.push(&[]);
        }
        if let Some(ns) = example.cpa_namespace {
            for (s, o, outputs) in &example.cpa {
                cpa[ns].0.push((row + s, row + o));
                cpa[ns].1.push(outputs);
            }
        }
        row += example.queries.len();
    }
    (cta, cpa)
}

/// The part of a batch's [`supervised_loss`] that falls on `examples`, one shard of the batch:
/// the same per-target losses, but each mean divides by the whole batch's target count
/// (`batch`, which must count the shard's targets too), so the losses of the shards of a batch
/// (and their `cta` / `cpa` parts) add up to the batch's loss. `None` when the shard holds no
/// target.
pub fn shard_loss(
    orchestrator: &Orchestrator,
    space: &LabelSpace,
    examples: &[&Example],
    out: &SwarmOutput,
    cpa_weight: f64,
    batch: TargetCounts,
) -> Option<Losses> {
    let (cta, cpa) = gather_targets(space, examples);
    let n_cta = batch.cta;
    let n_cpa = batch.cpa;
    debug_assert!(n_cta >= cta.iter().map(|(r, _)| r.len()).sum::<usize>());
    debug_assert!(n_cpa >= cpa.iter().map(|(r, _)| r.len()).sum::<usize>());
    let mut parts: Vec<(Tensor<1>, f64)> = Vec::new();
    let mut cta_total: Option<Tensor<1>> = None;
    for (ns, (rows, targets)) in space.cta.iter().zip(&cta) {
        if rows.is_empty() {
            continue;
        }
        let loss =
            namespace_loss(&out.cta_logits, rows, ns, targets) * (rows.len() as f64 / n_cta as f64);
        cta_total = Some(match cta_total {
            Some(t) => t + loss,
            None => loss,
        });
    }
    let mut cpa_total: Option<Tensor<1>> = None;
    for (ns, (pairs, targets)) in space.cpa.iter().zip(&cpa) {
        if pairs.is_empty() {
            continue;
        }
        let logits = orchestrator.cpa_logits(out, pairs);
        let rows: Vec<usize> = (0..pairs.len()).collect();
        let loss =
            namespace_loss(&logits, &rows, ns, targets) * (pairs.len() as f64 / n_cpa as f64);
        cpa_total = Some(match cpa_total {
            Some(t) => t + loss,
            None => loss,
        });
    }
    let detached = |t: &Tensor<1>| t.clone().detach();
    let (cta_value, cpa_value) = (
        cta_total.as_ref().map(detached),
        cpa_total.as_ref().map(detached),
    );
    if let Some(t) = cta_total {
        parts.push((t, 1.0));
    }
    if let Some(t) = cpa_total {
        parts.push((t, cpa_weight));
    }
    let total = parts.into_iter().map(|(t, w)| t * w).reduce(|a, b| a + b)?;
    Some(Losses {
        total,
        cta: cta_value,
        cpa: cpa_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;
    use colswarm_swarm::LabelKind;

    #[test]
    fn namespace_losses_match_a_by_hand_computation() {
        // Rows 0 and 2 of a 3-row head with 5 outputs; the namespace is outputs 1..4.
        let logits = [
            [0.3f32, 1.0, -2.0, 0.5, 9.0],
            [5.0, 5.0, 5.0, 5.0, 5.0],
            [-1.0, 0.0, 2.0, -0.5, -9.0],
        ];
        let tensor =
            Tensor::<2>::from_data(TensorData::new(logits.concat(), [3, 5]), &Device::flex());
        let labels = vec!["a".into(), "b".into(), "c".into()];
        let format = colswarm_tables::DatasetFormat::TurlCsv;
        let mut namespace = Namespace::new("n", format, LabelKind::MultiLabel, 1, labels);
        let targets: [&[usize]; 2] = [&[1, 3], &[2]];
        let gold: [&[usize]; 2] = [&[0, 2], &[1]];
        let rows = [logits[0], logits[2]].map(|r| [r[1], r[2], r[3]]);
        let loss = |namespace: &Namespace| -> f64 {
            namespace_loss(&tensor, &[0, 2], namespace, &targets).into_scalar::<f32>() as f64
        };
        // Softmax: −Σ (1/|gold|)·log p, mean over rows.
        let softmax: f64 = rows
            .iter()
            .zip(gold)
            .map(|(x, g)| {
                let z: f64 = x.iter().map(|&v| (v as f64).exp()).sum();
                g.iter()
                    .map(|&i| -((x[i] as f64).exp() / z).ln() / g.len() as f64)
                    .sum::<f64>()
            })
            .sum::<f64>()
            / 2.0;
        assert!(
            (loss(&namespace) - softmax).abs() < 1e-5,
            "{} vs {softmax}",
            loss(&namespace)
        );
        // Sigmoid: Σ over labels of −y·log σ(x) − (1−y)·log(1−σ(x)), mean over rows.
        namespace.activation = Activation::Sigmoid;
        let bce: f64 = rows
            .iter()
            .zip(gold)
            .map(|(x, g)| {
                (0..3)
                    .map(|i| {
                        let p = 1.0 / (1.0 + (-(x[i] as f64)).exp());
                        if g.contains(&i) {
                            -p.ln()
                        } else {
                            -(1.0 - p).ln()
                        }
                    })
                    .sum::<f64>()
            })
            .sum::<f64>()
            / 2.0;
        assert!(
            (loss(&namespace) - bce).abs() < 1e-5,
            "{} vs {bce}",
            loss(&namespace)
        );
        assert!((softmax - bce).abs() > 0.1, "the two losses differ here");
        // A row with no label of the namespace (a quantity negative): every sigmoid towards 0.
        let none: [&[usize]; 1] = [&[]];
        let negative = namespace_loss(&tensor, &[2], &namespace, &none).into_scalar::<f32>() as f64;
        let by_hand: f64 = rows[1]
            .iter()
            .map(|&x| -(1.0 - 1.0 / (1.0 + (-(x as f64)).exp())).ln())
            .sum();
        assert!((negative - by_hand).abs() < 1e-5, "{negative} vs {by_hand}");
    }

    #[test]
    fn columns_with_no_label_count_as_cta_targets() {
        let mut example = Example {
            table_id: "t".into(),
            tokens: vec![1, 2],
            columns: vec![0, 1],
            queries: vec![vec![3], vec![4]],
            spans: vec![0..1, 1..2],
            ngrams: Vec::new(),
            expert_ngrams: Vec::new(),
            words: Vec::new(),
            cta: vec![vec![0], Vec::new()],
            cta_namespace: Some(0),
            cpa: Vec::new(),
            cpa_namespace: None,
            cta_none: Vec::new(),
        };
        assert_eq!(TargetCounts::of(&[&example]).cta, 1);
        example.cta_none.push((1, 1));
        assert_eq!(TargetCounts::of(&[&example]).cta, 2);
    }
}
