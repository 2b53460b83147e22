//! A supervised run's data: the training sets encoded as examples (tokens, column n-gram bags
//! and word vectors, head targets) in the run's label space, and the dev sets.

use std::sync::Arc;

use colswarm_eval::{DataSpec, EvalError, LoadedData};
use colswarm_model::{
    Activation, Columns, Example, Featurizer, LabelSpace, Task, cta_kind, encode, ngram_config,
};
use colswarm_swarm::{LabelKind, WordVectors};

use super::config::{TrainConfig, orchestrator_config};
use crate::error::TrainError;

/// The label space of a set of training data: per set, a CTA namespace (when its columns carry
/// labels) and a CPA namespace (when it has CPA targets).
pub fn label_space(train: &[(DataSpec, LoadedData)]) -> LabelSpace {
    let mut space = LabelSpace::default();
    for (spec, data) in train {
        if data.tables.iter().any(|t| t.n_labelled_columns() > 0) {
            space.push_label_set(
                Task::Cta,
                &spec.namespace,
                spec.format,
                cta_kind(spec.format),
                &data.cta_labels,
            );
        }
        let cpa = data.cpa_labels.labels().to_vec();
        space.push(
            Task::Cpa,
            &spec.namespace,
            spec.format,
            LabelKind::SingleLabel,
            cpa,
        );
    }
    space
}

/// Loaded data of a run.
#[derive(Debug)]
pub struct RunData {
    /// The label space.
    pub space: LabelSpace,
    /// Training examples (only those with targets).
    pub train: Vec<Example>,
    /// Dev sets.
    pub dev: Vec<(DataSpec, LoadedData)>,
    /// The word vectors the model reads ([`super::ModelSettings::word_vectors`]).
    pub words: Option<Arc<WordVectors>>,
}

/// Reads and encodes the data of `config`.
pub fn load_run_data(config: &TrainConfig) -> Result<RunData, TrainError> {
    let mut train = Vec::new();
    for spec in &config.data.train {
        let mut data = spec.load()?;
        if config.data.max_tables > 0 {
            data.tables.truncate(config.data.max_tables);
        }
        if data.tables.is_empty() {
            return Err(EvalError::Dataset {
                spec: spec.to_string(),
                reason: "no table in this split".into(),
            }
            .into());
        }
        train.push((spec.clone(), data));
    }
    let mut space = label_space(&train);
    if !config.model.hierarchy_closure {
        space.clear_hierarchies();
    }
    if config.model.sigmoid_multi_label {
        for namespace in space.cta.iter_mut().chain(&mut space.cpa) {
            if namespace.kind == LabelKind::MultiLabel {
                namespace.activation = Activation::Sigmoid;
            }
        }
    }
    if space.is_empty() {
        return Err(TrainError::Config(
            "the training sets carry no CTA label and no CPA target".into(),
        ));
    }
    let serialize = config.data.serialize.config();
    let words = config
        .model
        .word_vectors
        .as_deref()
        .map(WordVectors::load)
        .transpose()?
        .map(Arc::new);
    let model = orchestrator_config(config, &space, words.as_deref());
    let features = Featurizer {
        ngrams: model.column_ngrams.as_ref().map(ngram_config),
        words: model.column_words.zip(words.clone()),
    };
    let mut examples = Vec::new();
    for (spec, data) in train {
        let (cta, cpa) = space.positions(&spec.namespace);
        for table in data.tables {
            let example = encode(
                &table,
                &serialize,
                &features,
                &space,
                cta,
                cpa,
                Columns::Targets,
            );
            if example.has_targets() {
                examples.push(example);
            }
        }
    }
    let dev = config
        .data
        .dev
        .iter()
        .map(|spec| Ok((spec.clone(), spec.load()?)))
        .collect::<Result<_, TrainError>>()?;
    Ok(RunData {
        space,
        train: examples,
        dev,
        words,
    })
}
