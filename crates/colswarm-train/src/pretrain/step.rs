//! One pretraining step's batch: synthetic tables serialized as the swarm reads them, the
//! model's outputs for their columns, and the objective's loss.

use std::ops::Range;

use burn::tensor::Tensor;
use colswarm_tables::serialize_table;

use super::config::PretrainConfig;
use super::data::{SynthTable, Target};
use super::model::{PretrainModel, cosine_loss, cross_entropy};

/// A batch of serialized synthetic tables.
pub(super) struct Batch {
    pub(super) tokens: Vec<Vec<u32>>,
    pub(super) spans: Vec<Vec<Range<usize>>>,
    pub(super) targets: Vec<Target>,
    pub(super) headers: Vec<String>,
}

impl Batch {
    pub(super) fn of(tables: Vec<SynthTable>, config: &PretrainConfig) -> Self {
        let serialize = config.data.serialize.config();
        let mut batch = Batch {
            tokens: Vec::new(),
            spans: Vec::new(),
            targets: Vec::new(),
            headers: Vec::new(),
        };
        for table in tables {
            let serialized = serialize_table(&table.table, &serialize);
            batch.tokens.push(serialized.table_tokens);
            batch.spans.push(serialized.column_spans);
            batch.targets.extend(table.targets);
            batch.headers.extend(table.headers);
        }
        batch
    }

    pub(super) fn forward(&self, model: &PretrainModel) -> Tensor<2> {
        let tables: Vec<&[u32]> = self.tokens.iter().map(Vec::as_slice).collect();
        model.forward(&tables, &self.spans)
    }

    pub(super) fn loss(&self, outputs: Tensor<2>) -> Tensor<1> {
        match self.targets.first() {
            Some(Target::Class(_)) => {
                let classes: Vec<usize> = self
                    .targets
                    .iter()
                    .map(|t| match t {
                        Target::Class(c) => *c,
                        Target::Embedding(_) => 0,
                    })
                    .collect();
                cross_entropy(outputs, &classes)
            }
            _ => {
                let flat: Vec<f32> = self
                    .targets
                    .iter()
                    .flat_map(|t| match t {
                        Target::Embedding(e) => e.clone(),
                        Target::Class(_) => Vec::new(),
                    })
                    .collect();
                cosine_loss(outputs, &flat)
            }
        }
    }
}
