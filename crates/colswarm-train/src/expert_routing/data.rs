//! The frozen reads a routing run learns from: per table, the primary's outputs, every
//! expert's, and the router's input, computed once (nothing that reads them is trained).

use colswarm_model::{Columns, Example, Featurizer, Model, Outputs, encode, featurizer, rows_of};
use colswarm_model::{Progress, subject_column};
use colswarm_tables::DataSpec;

use crate::error::TrainError;

/// One table as the routing sees it.
#[derive(Clone, Debug)]
pub(super) struct TableRead {
    /// The table, every column queried, with its gold targets.
    pub(super) example: Example,
    /// The primary's outputs alone.
    pub(super) primary: Outputs,
    /// Each expert's outputs.
    pub(super) experts: Vec<Outputs>,
    /// The router's input: the pooled read, then the primary's confidence per expert.
    pub(super) features: Vec<f32>,
}

/// Reads every table of `specs` that carries a target with `model` and each of its experts,
/// `batch_size` tables at a time.
pub(super) fn read_tables(
    model: &Model,
    specs: &[DataSpec],
    batch_size: usize,
    progress: bool,
) -> Result<Vec<TableRead>, TrainError> {
    let serialize = model.serialize.config();
    let features = Featurizer {
        expert_ngrams: model.expert_ngrams(),
        ..featurizer(&model.swarm.orchestrator)
    };
    let mut reads = Vec::new();
    for spec in specs {
        let data = spec.load()?;
        let (cta, cpa) = model.space.positions(&spec.namespace);
        if cta.is_none() && cpa.is_none() {
            return Err(TrainError::Config(format!(
                "the model has no namespace `{}` (data set {spec})",
                spec.namespace
            )));
        }
        let tables: Vec<_> = data
            .tables
            .iter()
            .filter(|t| t.n_columns() > 0)
            .map(|t| {
                let example = encode(
                    t,
                    &serialize,
                    &features,
                    &model.space,
                    cta,
                    cpa,
                    Columns::All,
                );
                (example, subject_column(t))
            })
            .filter(|(e, _)| e.has_targets())
            .collect();
        let mut shown = Progress::new(format!("reading {spec}"), tables.len(), progress);
        let mut done = 0;
        for chunk in tables.chunks(batch_size.max(1)) {
            let examples: Vec<&Example> = chunk.iter().map(|(e, _)| e).collect();
            let subjects: Vec<usize> = chunk.iter().map(|(_, s)| *s).collect();
            let Some(read) = model.expert_reads(&examples, &subjects)? else {
                return Err(TrainError::Config(
                    "the model has no experts: there is nothing to route".into(),
                ));
            };
            let pooled = rows_of(read.pooled);
            for (b, (example, _)) in chunk.iter().enumerate() {
                let columns = example.columns.len();
                let mut features = pooled[b].clone();
                features.extend(&read.confidence[b]);
                reads.push(TableRead {
                    example: example.clone(),
                    primary: read.primary.one_table(b, columns),
                    experts: read
                        .experts
                        .iter()
                        .map(|o| o.one_table(b, columns))
                        .collect(),
                    features,
                });
            }
            done += chunk.len();
            shown.set(done, "");
        }
        shown.finish(&format!("{} tables", tables.len()));
    }
    if reads.is_empty() {
        return Err(TrainError::Config("no table carries a target".into()));
    }
    Ok(reads)
}
