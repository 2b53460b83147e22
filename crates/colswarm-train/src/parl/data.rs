//! A PARL run's data: the training tables encoded in the model's label space, with their gold
//! labels as the reward reads them.

use colswarm_model::{Columns, Example, Featurizer, LabelSpace, SerializeSettings, encode};
use colswarm_parl::TableLabels;
use colswarm_tables::DataSpec;

use crate::error::TrainError;

/// The gold labels of an example as `TableLabels` over head outputs.
pub(crate) fn gold_labels(example: &Example) -> TableLabels<usize> {
    let mut labels = TableLabels::default();
    for (q, outputs) in example.cta.iter().enumerate() {
        labels.cta.extend(outputs.iter().map(|&o| (q, o)));
    }
    for (s, o, outputs) in &example.cpa {
        labels.cpa.extend(outputs.iter().map(|&r| ((*s, *o), r)));
    }
    labels
}

pub(super) fn load_train_examples(
    specs: &[DataSpec],
    space: &LabelSpace,
    serialize: &SerializeSettings,
    features: &Featurizer,
) -> Result<Vec<Example>, TrainError> {
    let config = serialize.config();
    let mut examples = Vec::new();
    for spec in specs {
        let data = spec.load()?;
        let (cta, cpa) = space.positions(&spec.namespace);
        if cta.is_none() && cpa.is_none() {
            return Err(TrainError::Config(format!(
                "the model has no namespace `{}` (training set {spec})",
                spec.namespace
            )));
        }
        examples.extend(
            data.tables
                .iter()
                .map(|t| encode(t, &config, features, space, cta, cpa, Columns::Targets))
                .filter(Example::has_targets),
        );
    }
    if examples.is_empty() {
        return Err(TrainError::Config(
            "no training table carries a target".into(),
        ));
    }
    Ok(examples)
}
