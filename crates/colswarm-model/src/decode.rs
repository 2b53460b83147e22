//! Probabilities and predicted labels from the heads' logits.

use std::borrow::Cow;

use colswarm_swarm::LabelKind;
use colswarm_tables::Table;

use crate::label_names::LabelNames;
use crate::labels::{Activation, LabelSpace, Namespace, Task};
use crate::reader::{NgramReader, TableFeatures};

/// Decodes one namespace's probabilities ([`namespace_probs`]) into predicted outputs (indices
/// into `probs`): the argmax for single-label sets; for multi-label sets with a softmax, every
/// label with at least half the probability of the best (the targets of a column with `n`
/// labels are `1/n` each), with sigmoids every label above 0.5, at least the best.
///
/// Multi-label predictions are then closed under the namespace's hierarchy
/// ([`Namespace::ancestors`]). `probs` are the model's own ([`namespace_probs`]), not the
/// hierarchy-raised ones of [`hierarchy_probs`], where a super-type would tie with its subtype.
pub fn decode(namespace: &Namespace, probs: &[f32]) -> Vec<usize> {
    let Some(best) = argmax(probs) else {
        return Vec::new();
    };
    let chosen = match (namespace.kind, namespace.activation) {
        (LabelKind::SingleLabel, _) => return vec![best],
        (LabelKind::MultiLabel, Activation::Softmax) => (0..probs.len())
            .filter(|&i| probs[i] >= 0.5 * probs[best])
            .collect(),
        (LabelKind::MultiLabel, Activation::Sigmoid) => (0..probs.len())
            .filter(|&i| i == best || probs[i] > 0.5)
            .collect(),
    };
    namespace.close_under_ancestors(chosen)
}

/// Whether `namespace` abstains on a target with these probabilities (the model's own,
/// [`namespace_probs`]): its best label's probability is below
/// [`Namespace::abstain_below`]. A namespace without a threshold never abstains.
pub fn abstains(namespace: &Namespace, probs: &[f32]) -> bool {
    namespace
        .abstain_below
        .is_some_and(|threshold| argmax(probs).is_some_and(|best| probs[best] < threshold))
}

fn argmax(values: &[f32]) -> Option<usize> {
    (0..values.len()).max_by(|&a, &b| values[a].total_cmp(&values[b]))
}

/// The probabilities `annotate` reports: in a multi-label namespace with a hierarchy, a type's
/// probability raised to its most probable subtype's (a director is a person), so that every
/// label [`decode`] adds by the hierarchy shows the confidence that brought it; else `probs`.
pub fn hierarchy_probs(namespace: &Namespace, probs: Vec<f32>) -> Vec<f32> {
    if namespace.kind == LabelKind::SingleLabel || namespace.ancestors.is_empty() {
        return probs;
    }
    // Through the same (transitive) closure `decode` adds super-types with, so a grandparent
    // the hierarchy file lists only through its child is raised too.
    let mut raised = probs.clone();
    for (label, &p) in probs.iter().enumerate() {
        for a in namespace.close_under_ancestors(vec![label]) {
            if let Some(r) = raised.get_mut(a) {
                *r = r.max(p);
            }
        }
    }
    raised
}

/// Probabilities of a namespace: a softmax over its outputs, or one sigmoid per output
/// ([`Namespace::activation`]). `header` is the target column's (the object column's, for a
/// relation) with the namespace's [`LabelNames`]: where the namespace has a
/// [`Namespace::label_name_weight`], the label-name prior ([`crate::label_names`]) is added to
/// the logits first.
pub fn namespace_probs(
    namespace: &Namespace,
    logits: &[f32],
    header: Option<(&str, &LabelNames)>,
) -> Vec<f32> {
    activate(namespace, &prior_logits(namespace, logits, header))
}

/// A target column as a [`Decoder`] reads it, besides its logits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Target<'a> {
    /// The column's header (the object column's, for a relation).
    pub header: Option<&'a str>,
    /// Whether the column is the table's subject column: a CTA namespace may leave it out of
    /// its label-name prior ([`Namespace::label_name_skip_subject`]).
    pub is_subject: bool,
    /// The column's row of CTA logits (every CTA namespace's), read by a relation
    /// namespace's type view ([`Namespace::type_view_weight`]).
    pub type_logits: Option<&'a [f32]>,
    /// Where the column is, for the namespace's n-gram reader ([`Decoder::with_reader`]);
    /// `None`: the reader is not asked.
    pub place: Option<Place<'a>>,
}

/// A target column in its table: what an n-gram reader featurizes.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    /// The table.
    pub table: &'a Table,
    /// The column (a relation's object column).
    pub column: usize,
    /// A relation's subject column.
    pub subject: Option<usize>,
    /// The table's n-gram features shared by every reader that decodes it (`None`: the
    /// reader featurizes the column itself).
    pub features: Option<&'a TableFeatures<'a>>,
}

/// How one namespace's logits become a target's probabilities, with everything besides the
/// head they take in: the label-name prior ([`crate::label_names`]), the header memory
/// ([`crate::header_memory`]) and, for a relation, the object column's type. Built once per
/// namespace, so label names are split once, not per column.
#[derive(Debug)]
pub struct Decoder<'a> {
    namespace: &'a Namespace,
    label_names: Option<LabelNames>,
    type_view: Option<TypeView<'a>>,
    reader: Option<&'a NgramReader>,
}

/// A relation namespace's view of the object column's type: the CTA namespace of the same
/// name, whose labels are (some of) its relations.
#[derive(Debug)]
struct TypeView<'a> {
    /// The CTA namespace's position in the label space, and its decoder.
    index: usize,
    types: Box<Decoder<'a>>,
    weight: f32,
    /// Per relation, its position among the types.
    position: Vec<Option<usize>>,
}

/// The probability a relation the type namespace lacks gets from the type view: a relation
/// nothing types is not backed by the column's type.
const UNTYPED: f32 = 1e-12;

impl<'a> Decoder<'a> {
    /// The decoder of namespace `index` of `task`. A relation namespace with a type-view
    /// weight reads the CTA namespace of its name; without one, the weight is ignored.
    pub fn new(space: &'a LabelSpace, task: Task, index: usize) -> Self {
        let namespace = &space.list(task)[index];
        let type_view = (task == Task::Cpa)
            .then_some(namespace.type_view_weight)
            .flatten()
            .and_then(|weight| {
                let index = space.cta.iter().position(|n| n.name == namespace.name)?;
                let types = &space.cta[index];
                let position = namespace
                    .labels
                    .iter()
                    .map(|l| types.labels.iter().position(|t| t == l))
                    .collect();
                Some(TypeView {
                    index,
                    types: Box::new(Decoder::new(space, Task::Cta, index)),
                    weight,
                    position,
                })
            });
        Decoder {
            namespace,
            // Only namespaces with a weight pay for splitting their labels.
            label_names: namespace
                .label_name_weight
                .map(|_| LabelNames::new(&namespace.labels)),
            type_view,
            reader: None,
        }
    }

    /// The decoder with the namespace's n-gram reader ([`Model::reader`](crate::Model::reader)),
    /// whose probabilities it mixes into every target that has a [`Target::place`].
    pub fn with_reader(mut self, reader: Option<&'a NgramReader>) -> Self {
        self.reader = reader;
        self
    }

    /// The namespace it decodes.
    pub fn namespace(&self) -> &'a Namespace {
        self.namespace
    }

    /// The CTA namespace (its position) whose probabilities the type view reads, if any: its
    /// experts must read the table too.
    pub fn type_namespace(&self) -> Option<usize> {
        self.type_view.as_ref().map(|v| v.index)
    }

    /// The target's probabilities in the namespace, from the head's `logits` (every
    /// namespace's outputs): the head's logits plus the label-name prior; mixed in log space
    /// with the object column's type probabilities, `(1 − m)·log p + m·log p_type`; plus the
    /// header memory; then the namespace's activation; then, with an n-gram reader and the
    /// target's place, `(1 − share)·p + share·p_reader`.
    ///
    /// # Shapes
    /// - `logits`: `[outputs of the head]`; `target.type_logits`: `[outputs of the CTA head]`
    /// - returns `[labels of the namespace]`
    pub fn probs(&self, logits: &[f32], target: Target<'_>) -> Vec<f32> {
        let own = self.own_probs(logits, target);
        match (self.reader, target.place) {
            (Some(reader), Some(place)) if reader.share() > 0.0 => {
                let read = match place.features {
                    Some(shared) => reader.probs_shared(shared, place.column, place.subject),
                    None => reader.probs(place.table, place.column, place.subject),
                };
                reader.mix(&own, &read)
            }
            _ => own,
        }
    }

    /// [`Decoder::probs`] without the reader.
    fn own_probs(&self, logits: &[f32], target: Target<'_>) -> Vec<f32> {
        let ns = self.namespace;
        let prior_header = target
            .header
            .filter(|_| !(ns.label_name_skip_subject && target.is_subject));
        let view = self.type_view.as_ref().zip(target.type_logits);
        let memory = ns.header_memory.as_ref().zip(target.header);
        if view.is_none() && memory.is_none() {
            return namespace_probs(ns, logits, prior_header.zip(self.label_names.as_ref()));
        }
        let mut scores =
            prior_logits(ns, logits, prior_header.zip(self.label_names.as_ref())).into_owned();
        if let Some((view, type_logits)) = view {
            let column = Target {
                type_logits: None,
                place: None,
                ..target
            };
            let types = view.types.probs(type_logits, column);
            let m = view.weight;
            scores = log_probs(ns, &scores)
                .into_iter()
                .zip(&view.position)
                .map(|(own, at)| {
                    let typed = at.map_or(UNTYPED, |j| types[j]).max(UNTYPED);
                    (1.0 - m) * own + m * typed.ln()
                })
                .collect();
        }
        if let Some((memory, header)) = memory {
            memory.add_prior(&mut scores, header);
        }
        activate(ns, &scores)
    }
}

/// The namespace's own logits, with the label-name prior added where it has a weight and the
/// column a header.
fn prior_logits<'l>(
    namespace: &Namespace,
    logits: &'l [f32],
    header: Option<(&str, &LabelNames)>,
) -> Cow<'l, [f32]> {
    let own = &logits[namespace.range()];
    // A copy only where the prior changes the logits.
    match (namespace.label_name_weight, header) {
        (Some(weight), Some((header, names))) => {
            let mut shifted = own.to_vec();
            names.add_prior(&mut shifted, header, weight);
            Cow::Owned(shifted)
        }
        _ => Cow::Borrowed(own),
    }
}

/// Softmax or sigmoids of a namespace's scores.
fn activate(namespace: &Namespace, scores: &[f32]) -> Vec<f32> {
    activated(namespace.activation == Activation::Sigmoid, scores)
}

/// Per-score sigmoids, or a softmax of them all.
pub(crate) fn activated(sigmoids: bool, scores: &[f32]) -> Vec<f32> {
    if sigmoids {
        return scores.iter().map(|&x| 1.0 / (1.0 + (-x).exp())).collect();
    }
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = scores.iter().map(|&x| (x - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|&e| e / sum).collect()
}

/// The logarithms of [`activate`], computed without underflow.
fn log_probs(namespace: &Namespace, scores: &[f32]) -> Vec<f32> {
    // log σ(x) = −log(1 + e^−x); log softmax = x − max − log Σ e^(x − max).
    if namespace.activation == Activation::Sigmoid {
        return scores.iter().map(|&x| -(-x).exp().ln_1p()).collect();
    }
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_sum = scores.iter().map(|&x| (x - max).exp()).sum::<f32>().ln();
    scores.iter().map(|&x| x - max - log_sum).collect()
}

/// The probability of a namespace's best label, as [`namespace_probs`] without a header would
/// give it, without computing the others'.
pub(crate) fn best_probability(namespace: &Namespace, logits: &[f32]) -> f32 {
    let own = &logits[namespace.range()];
    let max = own.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if namespace.activation == Activation::Sigmoid {
        return 1.0 / (1.0 + (-max).exp());
    }
    1.0 / own.iter().map(|&x| (x - max).exp()).sum::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header_memory::HeaderMemory;
    use colswarm_tables::DatasetFormat;

    fn namespace(kind: LabelKind, activation: Activation, n: usize) -> Namespace {
        Namespace {
            activation,
            ..Namespace::new(
                "n",
                DatasetFormat::T2d,
                kind,
                0,
                (0..n).map(|i| format!("l{i}")).collect(),
            )
        }
    }

    #[test]
    fn a_namespace_abstains_below_its_threshold_only() {
        let mut single = namespace(LabelKind::SingleLabel, Activation::Softmax, 3);
        assert!(!abstains(&single, &[0.34, 0.33, 0.33]));
        single.abstain_below = Some(0.5);
        assert!(abstains(&single, &[0.4, 0.35, 0.25]));
        assert!(!abstains(&single, &[0.5, 0.25, 0.25]));
        assert!(!abstains(&single, &[]));
    }

    #[test]
    fn the_best_probability_is_the_largest_of_the_namespace_probabilities() {
        let logits = [9.0, -1.5, 0.25, 2.0, -3.0];
        for activation in [Activation::Softmax, Activation::Sigmoid] {
            let mut ns = namespace(LabelKind::SingleLabel, activation, 3);
            ns.offset = 1; // reads logits 1..4, not the larger first one
            let all = namespace_probs(&ns, &logits, None);
            let largest = all.iter().copied().fold(0.0f32, f32::max);
            assert!((best_probability(&ns, &logits) - largest).abs() < 1e-6);
        }
    }

    #[test]
    fn decoding_follows_the_label_kind() {
        let single = namespace(LabelKind::SingleLabel, Activation::Softmax, 3);
        let multi = namespace(LabelKind::MultiLabel, Activation::Softmax, 4);
        assert_eq!(decode(&single, &[0.1, 0.7, 0.2]), [1]);
        assert_eq!(decode(&multi, &[0.45, 0.1, 0.45]), [0, 2]);
        assert_eq!(decode(&multi, &[0.1, 0.6, 0.2, 0.1]), [1]);
        assert!(decode(&single, &[]).is_empty());
    }

    #[test]
    fn super_types_are_at_least_as_probable_as_their_subtypes_and_are_predicted_with_them() {
        // 0 person, 1 director (a person), 2 city.
        let mut multi = namespace(LabelKind::MultiLabel, Activation::Sigmoid, 3);
        multi.ancestors = vec![vec![], vec![0], vec![]];
        let logits = [-2.0f32, 1.0, -1.0];
        let probs = namespace_probs(&multi, &logits, None);
        let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
        assert_eq!(
            hierarchy_probs(&multi, probs.clone()),
            [sigmoid(1.0), sigmoid(1.0), sigmoid(-1.0)]
        );
        assert_eq!(decode(&multi, &probs), [0, 1]);
        // Nothing above 0.5: the best label and its super-types, whichever comes first.
        let probs = namespace_probs(&multi, &[-3.0, -1.0, -2.0], None);
        assert_eq!(decode(&multi, &probs), [0, 1]);
        let mut reversed = multi.clone();
        reversed.ancestors = vec![vec![], vec![2], vec![]];
        let probs = namespace_probs(&reversed, &[-2.0, -1.0, -3.0], None);
        let shown = hierarchy_probs(&reversed, probs.clone());
        assert_eq!(shown[1], shown[2], "the super-type ties with its subtype");
        assert_eq!(decode(&reversed, &probs), [1, 2]);
        // Single-label namespaces never add super-types.
        let mut single = namespace(LabelKind::SingleLabel, Activation::Softmax, 3);
        single.ancestors = multi.ancestors.clone();
        assert_eq!(
            decode(&single, &namespace_probs(&single, &logits, None)),
            [1]
        );
    }

    #[test]
    fn a_grandparent_listed_only_through_its_child_is_raised_as_decode_adds_it() {
        // 0 person ← 1 film actor ← 2 tv actor: the tv actor lists its parent only.
        let mut multi = namespace(LabelKind::MultiLabel, Activation::Sigmoid, 3);
        multi.ancestors = vec![vec![], vec![0], vec![1]];
        let probs = namespace_probs(&multi, &[-3.0, -2.0, 2.0], None);
        assert_eq!(decode(&multi, &probs), [0, 1, 2]);
        let shown = hierarchy_probs(&multi, probs.clone());
        assert_eq!(shown, [probs[2], probs[2], probs[2]]);
    }

    #[test]
    fn sigmoid_namespaces_keep_every_label_above_one_half_and_at_least_the_best() {
        let multi = namespace(LabelKind::MultiLabel, Activation::Sigmoid, 4);
        let probs = namespace_probs(&multi, &[2.0, -1.0, 0.5, -3.0], None);
        let expected = [0.880797, 0.268941, 0.622459, 0.047426];
        for (p, e) in probs.iter().zip(expected) {
            assert!((p - e).abs() < 1e-5, "{p} vs {e}");
        }
        assert_eq!(decode(&multi, &probs), [0, 2]);
        // Nothing above 0.5: the best label alone (every column has a type).
        assert_eq!(decode(&multi, &[0.2, 0.4, 0.1, 0.3]), [1]);
        // A single-label set decodes to its argmax whatever the activation.
        let single = namespace(LabelKind::SingleLabel, Activation::Sigmoid, 3);
        assert_eq!(decode(&single, &[0.9, 0.95, 0.1]), [1]);
    }

    #[test]
    fn namespace_probabilities_stay_inside_the_namespace() {
        let mut space = LabelSpace::default();
        let single = LabelKind::SingleLabel;
        space.push(Task::Cta, "a", DatasetFormat::T2d, single, vec!["x".into()]);
        space.push(
            Task::Cta,
            "b",
            DatasetFormat::T2d,
            single,
            vec!["y".into(), "z".into()],
        );
        let probs = namespace_probs(&space.cta[1], &[100.0, 0.0, 0.0], None);
        assert_eq!(probs, [0.5, 0.5]);
    }

    #[test]
    fn the_label_name_prior_applies_where_the_namespace_has_a_weight_and_the_column_a_header() {
        let mut single = namespace(LabelKind::SingleLabel, Activation::Softmax, 2);
        single.labels = vec!["ontology/country".into(), "ontology/capital".into()];
        let names = LabelNames::new(&single.labels);
        let capital = Some(("Capital", &names));
        let logits = [1.0f32, 0.0];
        let plain = namespace_probs(&single, &logits, None);
        assert_eq!(namespace_probs(&single, &logits, capital), plain);
        single.label_name_weight = Some(2.0);
        assert_eq!(namespace_probs(&single, &logits, None), plain);
        // Capital's logit rises by 2 · 1: softmax([1, 2]).
        let probs = namespace_probs(&single, &logits, capital);
        let e = std::f32::consts::E;
        assert!((probs[1] - e / (1.0 + e)).abs() < 1e-6, "{probs:?}");
        assert_eq!(decode(&single, &probs), [1]);
        // "Capital city" shares one word of two: + 2 · 0.5 ties the two labels.
        let probs = namespace_probs(&single, &logits, Some(("Capital city", &names)));
        assert!((probs[0] - probs[1]).abs() < 1e-6, "{probs:?}");
    }

    /// A space whose `t` namespaces type columns (CTA: a, b, c) and relate them (CPA: b, a, d),
    /// both softmax.
    fn typed_space() -> LabelSpace {
        let mut space = LabelSpace::default();
        let single = LabelKind::SingleLabel;
        let labels = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        space.push(
            Task::Cta,
            "t",
            DatasetFormat::T2d,
            single,
            labels(&["a", "b", "c"]),
        );
        space.push(
            Task::Cpa,
            "t",
            DatasetFormat::T2d,
            single,
            labels(&["b", "a", "d"]),
        );
        space
    }

    #[test]
    fn without_a_type_view_or_memory_the_decoder_gives_the_namespace_probabilities() {
        let space = typed_space();
        let decoder = Decoder::new(&space, Task::Cpa, 0);
        assert_eq!(decoder.type_namespace(), None);
        let logits = [0.5f32, -1.0, 2.0];
        let target = Target {
            header: Some("b"),
            is_subject: false,
            type_logits: Some(&[3.0, 0.0, 0.0]),
            place: None,
        };
        assert_eq!(
            decoder.probs(&logits, target),
            namespace_probs(&space.cpa[0], &logits, None)
        );
    }

    #[test]
    fn the_type_view_mixes_log_probabilities_by_label_name() {
        let mut space = typed_space();
        space.cpa[0].type_view_weight = Some(0.25);
        let decoder = Decoder::new(&space, Task::Cpa, 0);
        assert_eq!(decoder.type_namespace(), Some(0));
        let (logits, types) = ([0.5f32, -1.0, 2.0], [1.0f32, 3.0, -2.0]);
        let target = Target {
            header: None,
            is_subject: false,
            type_logits: Some(&types),
            place: None,
        };
        let probs = decoder.probs(&logits, target);
        // By hand: the relations b, a, d read the types' b, a and nothing.
        let softmax = |x: &[f32]| -> Vec<f64> {
            let sum: f64 = x.iter().map(|&v| (v as f64).exp()).sum();
            x.iter().map(|&v| (v as f64).exp() / sum).collect()
        };
        let (own, typed) = (softmax(&logits), softmax(&types));
        let typed = [typed[1], typed[0], UNTYPED as f64];
        let mixed: Vec<f64> = (0..3)
            .map(|i| (0.75 * own[i].ln() + 0.25 * typed[i].ln()).exp())
            .collect();
        let total: f64 = mixed.iter().sum();
        for (p, m) in probs.iter().zip(&mixed) {
            assert!(
                (*p as f64 - m / total).abs() < 1e-5,
                "{probs:?} vs {mixed:?}"
            );
        }
        // A weight of 1 is the type head's answer; a target without a type row, the own.
        space.cpa[0].type_view_weight = Some(1.0);
        let decoder = Decoder::new(&space, Task::Cpa, 0);
        assert_eq!(decode(&space.cpa[0], &decoder.probs(&logits, target)), [0]);
        let untyped = Target {
            type_logits: None,
            ..target
        };
        assert_eq!(
            decoder.probs(&logits, untyped),
            namespace_probs(&space.cpa[0], &logits, None)
        );
    }

    #[test]
    fn a_reader_mixes_its_probabilities_into_targets_with_a_place_only() {
        use crate::reader::{NgramReader, ReaderFeatures};
        use colswarm_tables::{Cell, Column};
        let space = typed_space();
        let features = ReaderFeatures {
            buckets: 16,
            min_n: 2,
            max_n: 3,
            max_cells: 4,
            value_stats: false,
            position: false,
        };
        let weights: Vec<f32> = (0..48).map(|i| (i % 7) as f32 - 3.0).collect();
        let reader = NgramReader::new(features, weights, vec![0.0, 1.0, -1.0], 0.3, false);
        let decoder = Decoder::new(&space, Task::Cta, 0).with_reader(Some(&reader));
        let table = Table::new(
            "t",
            vec![Column::new(
                Some("b".into()),
                vec![Cell::new("Ada"), Cell::new("Bo")],
            )],
        );
        let logits = [1.0f32, 0.0, -0.5];
        let own = namespace_probs(&space.cta[0], &logits, None);
        assert_eq!(decoder.probs(&logits, Target::default()), own);
        let placed = Target {
            place: Some(Place {
                table: &table,
                column: 0,
                subject: None,
                features: None,
            }),
            ..Target::default()
        };
        let read = reader.probs(&table, 0, None);
        let probs = decoder.probs(&logits, placed);
        // Features shared with other readers give the same mixture, to the bit.
        let shared = crate::reader::TableFeatures::new(&table);
        let with_shared = Target {
            place: Some(Place {
                features: Some(&shared),
                ..placed.place.unwrap()
            }),
            ..placed
        };
        assert_eq!(decoder.probs(&logits, with_shared), probs);
        for ((p, o), r) in probs.iter().zip(&own).zip(&read) {
            assert!((p - (0.7 * o + 0.3 * r)).abs() < 1e-6, "{probs:?}");
        }
        assert!((probs.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        let without = Decoder::new(&space, Task::Cta, 0);
        assert_eq!(without.probs(&logits, placed), own);
    }

    #[test]
    fn the_header_memory_adds_each_labels_share_of_the_header_to_its_logit() {
        let mut space = typed_space();
        let memory = HeaderMemory {
            weight: 2.0,
            headers: [("born".to_string(), vec![(0, 1), (2, 3)])].into(),
        };
        space.cta[0].header_memory = Some(memory);
        let decoder = Decoder::new(&space, Task::Cta, 0);
        let logits = [1.0f32, 0.0, 0.0];
        let at = |header| Target {
            header,
            ..Target::default()
        };
        let expected = namespace_probs(&space.cta[0], &[1.5, 0.0, 1.5], None);
        let probs = decoder.probs(&logits, at(Some("Born:")));
        for (p, e) in probs.iter().zip(&expected) {
            assert!((p - e).abs() < 1e-6, "{probs:?} vs {expected:?}");
        }
        let plain = namespace_probs(&space.cta[0], &logits, None);
        assert_eq!(decoder.probs(&logits, at(Some("died"))), plain);
        assert_eq!(decoder.probs(&logits, at(None)), plain);
    }
}
