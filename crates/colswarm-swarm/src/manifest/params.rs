//! How many parameters each file of a manifest must hold, from its configuration alone: a
//! manifest claiming a 10⁹-wide head is refused before anything is allocated.

use crate::alignment::{AlignmentProjection, StateShape};
use crate::fusion::{FusionMode, StateFusionConfig};
use crate::orchestrator::OrchestratorConfig;

/// The number of parameters of each trainable component an [`OrchestratorConfig`] builds for
/// specialists of the given state shapes, computed without building anything (saturating at
/// `usize::MAX`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ComponentParams {
    pub(super) primary: usize,
    pub(super) router: usize,
    pub(super) fusion: usize,
    pub(super) cta: usize,
    pub(super) cpa: usize,
    pub(super) ngrams: Option<usize>,
    pub(super) alignments: Vec<usize>,
}

/// The saturating product of `factors`.
fn product(factors: &[usize]) -> usize {
    factors.iter().fold(1, |a: usize, b| a.saturating_mul(*b))
}

/// The saturating sum of `terms`.
fn sum(terms: &[usize]) -> usize {
    terms.iter().fold(0, |a: usize, b| a.saturating_add(*b))
}

impl ComponentParams {
    /// `config.primary` must be valid (its head size is not zero).
    pub(super) fn of(config: &OrchestratorConfig, shapes: &[StateShape]) -> Self {
        let p = &config.primary;
        let (d, l, h, n, s) = (
            p.d_model,
            p.n_layers,
            p.n_heads(),
            p.head_size,
            shapes.len(),
        );
        let hidden = config.d_head_hidden;
        // A two-layer head: `d_in × hidden` and `hidden × labels`, with biases.
        let head = |d_in: usize, labels: usize| {
            let labels = labels.max(1);
            let skip = if config.head_skip.is_some() {
                product(&[d_in, labels])
            } else {
                0
            };
            sum(&[
                product(&[d_in, hidden]),
                hidden,
                product(&[hidden, labels]),
                labels,
                skip,
            ])
        };
        let rank = StateFusionConfig::new(config.fusion, l, h, n, s).rank;
        let agent_bias = product(&[l, s.saturating_add(1), h]);
        let fusion = match config.fusion {
            FusionMode::WeightedSum => sum(&[agent_bias, product(&[2, l, h, n])]),
            FusionMode::Gated => agent_bias,
            FusionMode::ConcatProject => product(&[2, l, s, h, n, rank]),
        };
        let alignments = shapes
            .iter()
            .map(|shape| {
                let target = StateShape {
                    layers: l,
                    heads: h,
                    head_size: n,
                    d_model: d,
                };
                let columns = if config.column_fusion {
                    product(&[shape.d_model, d])
                } else {
                    0
                };
                if !AlignmentProjection::has_parameters(*shape, target) {
                    columns
                } else {
                    sum(&[
                        product(&[2, l, h, n, shape.head_size]),
                        product(&[l, h, shape.heads]),
                        columns,
                    ])
                }
            })
            .collect();
        ComponentParams {
            primary: p.num_params(),
            router: sum(&[product(&[d, s]), s]),
            fusion,
            cta: head(d, config.cta_labels),
            cpa: head(product(&[3, d]), config.cpa_labels),
            ngrams: config
                .column_ngrams
                .map(|n| product(&[n.buckets as usize, d])),
            alignments,
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::tensor::Device;
    use colswarm_rwkv::RwkvConfig;

    use super::*;
    use crate::heads::LabelKind;
    use crate::ngram_embedding::ColumnNgramsConfig;
    use crate::orchestrator::HeadSkip;

    #[test]
    fn component_params_count_the_built_modules() {
        let device = Device::flex();
        let primary = RwkvConfig::new(10, 8, 2)
            .with_head_size(4)
            .with_d_ffn(Some(8))
            .with_decay_rank(Some(2))
            .with_icl_rank(Some(2))
            .with_value_rank(Some(2))
            .with_gate_rank(Some(2));
        // One specialist of the primary's shapes (identity alignment), one with other heads.
        let shapes = [
            StateShape {
                layers: 1,
                heads: 2,
                head_size: 4,
                d_model: 8,
            },
            StateShape {
                layers: 3,
                heads: 3,
                head_size: 2,
                d_model: 6,
            },
        ];
        for fusion in [
            FusionMode::WeightedSum,
            FusionMode::Gated,
            FusionMode::ConcatProject,
        ] {
            for (cta, cpa, ngrams, skip, columns) in
                [(5, 0, None, false, false), (1, 3, Some(7), true, true)]
            {
                let config =
                    OrchestratorConfig::new(primary.clone(), cta, LabelKind::MultiLabel, cpa)
                        .with_fusion(fusion)
                        .with_d_head_hidden(6)
                        .with_column_ngrams(
                            ngrams.map(|b| ColumnNgramsConfig::new().with_buckets(b)),
                        )
                        .with_head_skip(skip.then_some(HeadSkip::Linear))
                        .with_column_fusion(columns);
                let built = config.init(&shapes, 0, &device);
                let counted = ComponentParams::of(&config, &shapes);
                let alignments: Vec<usize> =
                    built.alignments.iter().map(Module::num_params).collect();
                // A specialist of the primary's shapes is aligned as it is (its states).
                assert_eq!(alignments[0], if columns { 8 * 8 } else { 0 });
                assert_eq!(
                    counted,
                    ComponentParams {
                        primary: built.primary.num_params(),
                        router: built.router.num_params(),
                        fusion: built.fusion.num_params(),
                        cta: built.cta.num_params(),
                        cpa: built.cpa.num_params(),
                        ngrams: built.ngrams.as_ref().map(Module::num_params),
                        alignments,
                    },
                    "{fusion:?}, {cta} CTA and {cpa} CPA labels"
                );
            }
        }
    }

    #[test]
    fn huge_configs_saturate_instead_of_wrapping() {
        let primary = RwkvConfig::new(4, 1 << 40, 1).with_head_size(1 << 20);
        let config = OrchestratorConfig::new(primary, 1 << 40, LabelKind::SingleLabel, 0)
            .with_d_head_hidden(1 << 40);
        let counted = ComponentParams::of(&config, &[]);
        assert_eq!(counted.primary, usize::MAX);
        assert_eq!(counted.cta, usize::MAX);
    }
}
