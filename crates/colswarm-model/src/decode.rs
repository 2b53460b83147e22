//! Probabilities and predicted labels from the heads' logits, and the subject column.

use std::borrow::Cow;

use colswarm_swarm::LabelKind;
use colswarm_tables::Table;

use crate::label_names::LabelNames;
use crate::labels::{Activation, Namespace};

/// The subject column: the table's own when it names one, else the first column whose
/// non-empty cells are mostly text (not numbers), else column 0.
pub fn subject_column(table: &Table) -> usize {
    table.subject_column.unwrap_or_else(|| {
        table
            .columns
            .iter()
            .position(|c| {
                let filled: Vec<_> = c.cells.iter().filter(|x| !x.is_null()).collect();
                let text = filled.iter().filter(|x| !x.is_numeric()).count();
                !filled.is_empty() && 2 * text > filled.len()
            })
            .unwrap_or(0)
    })
}

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
    let own = &logits[namespace.range()];
    // A copy only where the prior changes the logits.
    let slice: Cow<[f32]> = match (namespace.label_name_weight, header) {
        (Some(weight), Some((header, names))) => {
            let mut shifted = own.to_vec();
            names.add_prior(&mut shifted, header, weight);
            Cow::Owned(shifted)
        }
        _ => Cow::Borrowed(own),
    };
    if namespace.activation == Activation::Sigmoid {
        return slice.iter().map(|&x| 1.0 / (1.0 + (-x).exp())).collect();
    }
    let max = slice.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = slice.iter().map(|&x| (x - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|&e| e / sum).collect()
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
    use crate::labels::{LabelSpace, Task};
    use colswarm_tables::DatasetFormat;

    fn namespace(kind: LabelKind, activation: Activation, n: usize) -> Namespace {
        Namespace {
            name: "n".into(),
            format: DatasetFormat::T2d,
            kind,
            offset: 0,
            labels: (0..n).map(|i| format!("l{i}")).collect(),
            activation,
            ancestors: Vec::new(),
            abstain_below: None,
            label_name_weight: None,
            label_name_skip_subject: false,
            head: None,
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

    #[test]
    fn subject_column_prefers_the_first_text_column() {
        let t = Table::from_rows(
            "t",
            None,
            vec![
                vec!["1".into(), "Paris".into()],
                vec!["2".into(), "Rome".into()],
            ],
        );
        assert_eq!(subject_column(&t), 1);
    }
}
