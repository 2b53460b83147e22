//! A supervised run's data: the training sets encoded as examples (tokens, column n-gram bags
//! and word vectors, head targets) in the run's label space, and the dev sets.

use std::sync::Arc;

use colswarm_model::{
    Activation, Columns, Example, Featurizer, LabelSpace, Task, cta_kind, encode, ngram_config,
};
use colswarm_swarm::{LabelKind, WordVectors};
use colswarm_tables::{DataSpec, LabelSet, LoadedData, TableError};
use colswarm_tables::{SerializeConfig, Table};

use super::config::{TrainConfig, orchestrator_config};
use crate::error::TrainError;

/// The label space of a set of training data: per namespace, a CTA namespace (when its sets'
/// columns carry labels) and a CPA namespace (when they have CPA targets). A namespace may be
/// trained from several sets, e.g. gold tables in one format and silver columns in another:
/// its labels are their union in first-seen order, its format and hierarchy the first
/// labelled set's. Sets whose formats read CTA labels differently (one label per column
/// against several) cannot share a namespace.
pub fn label_space(train: &[(DataSpec, LoadedData)]) -> Result<LabelSpace, TrainError> {
    let mut names: Vec<&str> = Vec::new();
    for (spec, _) in train {
        if !names.contains(&spec.namespace.as_str()) {
            names.push(&spec.namespace);
        }
    }
    let mut space = LabelSpace::default();
    for name in names {
        let sets: Vec<_> = train.iter().filter(|(s, _)| s.namespace == name).collect();
        let labelled: Vec<_> = sets
            .iter()
            .filter(|(_, d)| d.tables.iter().any(|t| t.n_labelled_columns() > 0))
            .collect();
        if let Some((first, first_data)) = labelled.first() {
            let kind = cta_kind(first.format);
            let mut labels = first_data.cta_labels.clone();
            for (spec, data) in &labelled[1..] {
                if cta_kind(spec.format) != kind {
                    return Err(TrainError::Config(format!(
                        "training sets {first} and {spec} share the namespace `{name}` but                          label columns differently ({kind:?} against {:?}): give them                          different names",
                        cta_kind(spec.format)
                    )));
                }
                for (id, label) in data.cta_labels.labels().iter().enumerate() {
                    let new = labels.id(label).is_none();
                    labels.insert(label.clone());
                    if let (true, Some(text)) = (new, data.cta_labels.text(id)) {
                        labels.set_text(label, text.to_string());
                    }
                }
            }
            space.push_label_set(Task::Cta, name, first.format, kind, &labels);
        }
        let mut relations = LabelSet::default();
        for (_, data) in &sets {
            for label in data.cpa_labels.labels() {
                relations.insert(label.clone());
            }
        }
        space.push(
            Task::Cpa,
            name,
            sets[0].0.format,
            LabelKind::SingleLabel,
            relations.labels().to_vec(),
        );
    }
    Ok(space)
}

/// The sigmoid CTA namespaces none of whose labelled training columns is a quantity
/// ([`colswarm_tables::Column::is_quantity`]): entity-type label sets, which should give a
/// column of numbers no label ([`super::LossSettings::quantity_negatives`]).
fn entity_namespaces(space: &LabelSpace, train: &[(DataSpec, LoadedData)]) -> Vec<usize> {
    // A namespace may be trained from several sets: one labelled quantity in any rules it out.
    let mut with_quantities = vec![false; space.cta.len()];
    for (spec, data) in train {
        if let Some(ns) = space.positions(&spec.namespace).0 {
            let mut columns = data.tables.iter().flat_map(|t| &t.columns);
            with_quantities[ns] |= columns.any(|c| c.is_labelled() && c.is_quantity());
        }
    }
    (0..space.cta.len())
        .filter(|&ns| space.cta[ns].activation == Activation::Sigmoid && !with_quantities[ns])
        .collect()
}

/// The example of a training table whose set has the (CTA, CPA) `namespaces`: its targets, and
/// its quantity columns as negatives of the `entity_namespaces` not its own.
fn training_example(
    table: &Table,
    serialize: &SerializeConfig,
    features: &Featurizer,
    space: &LabelSpace,
    (cta, cpa): (Option<usize>, Option<usize>),
    entity_namespaces: &[usize],
) -> Example {
    let mut example = encode(
        table,
        serialize,
        features,
        space,
        cta,
        cpa,
        Columns::Targets,
    );
    add_quantity_negatives(&mut example, table, cta, entity_namespaces);
    example
}

/// Marks each queried quantity column of `table` (whose own CTA namespace is `own`) as having
/// no label in each of `entity_namespaces` but its own.
fn add_quantity_negatives(
    example: &mut Example,
    table: &Table,
    own: Option<usize>,
    entity_namespaces: &[usize],
) {
    for (query, &column) in example.columns.iter().enumerate() {
        if !table.columns[column].is_quantity() {
            continue;
        }
        for &ns in entity_namespaces.iter().filter(|&&ns| Some(ns) != own) {
            example.cta_none.push((query, ns));
        }
    }
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

/// Reads every training set of `config`, each cut to `data.max_tables`; an empty one is an
/// error naming its spec.
fn load_training_sets(config: &TrainConfig) -> Result<Vec<(DataSpec, LoadedData)>, TrainError> {
    let mut train = Vec::new();
    for spec in &config.data.train {
        let mut data = spec.load()?;
        if config.data.max_tables > 0 {
            data.tables.truncate(config.data.max_tables);
        }
        if data.tables.is_empty() {
            return Err(TableError::Spec {
                spec: spec.to_string(),
                reason: "no table in this split".into(),
            }
            .into());
        }
        train.push((spec.clone(), data));
    }
    Ok(train)
}

/// Reads and encodes the data of `config`.
pub fn load_run_data(config: &TrainConfig) -> Result<RunData, TrainError> {
    let train = load_training_sets(config)?;
    let mut space = label_space(&train)?;
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
        ..Featurizer::default()
    };
    let entity_namespaces = if config.loss.quantity_negatives {
        entity_namespaces(&space, &train)
    } else {
        Vec::new()
    };
    let mut examples = Vec::new();
    for (spec, data) in train {
        let namespaces = space.positions(&spec.namespace);
        for table in data.tables {
            let example = training_example(
                &table,
                &serialize,
                &features,
                &space,
                namespaces,
                &entity_namespaces,
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

#[cfg(test)]
mod tests {
    use super::*;
    use colswarm_model::SerializeSettings;
    use colswarm_tables::{Cell, Column, LabelSet};

    fn column(label: Option<&str>, cells: &[&str]) -> Column {
        let mut column = Column::new(None, cells.iter().map(|&c| Cell::new(c)).collect());
        column.labels = label.into_iter().map(String::from).collect();
        column
    }

    fn set(spec: &str, tables: Vec<Table>, labels: &[&str]) -> (DataSpec, LoadedData) {
        let data = LoadedData {
            tables,
            cta_labels: LabelSet::sorted(labels.iter().copied()),
            cpa_labels: LabelSet::default(),
        };
        (spec.parse().unwrap(), data)
    }

    /// An entity-type set (sigmoids, no labelled quantity), a set whose labels include a
    /// quantity, and the space they make.
    fn sets() -> (LabelSpace, Vec<(DataSpec, LoadedData)>) {
        let names = Table::new(
            "names",
            vec![
                column(Some("person"), &["Ada", "Alan"]),
                // An unlabelled quantity column of the entity set does not count against it.
                column(None, &["12", "40"]),
            ],
        );
        let cities = Table::new(
            "cities",
            vec![
                column(Some("city"), &["Paris", "Lyon"]),
                column(Some("population"), &["2,140,526", "513,275"]),
                column(Some("year"), &["1998", "2004"]),
            ],
        );
        let train = vec![
            set("people=turl-csv:people.csv", vec![names], &["person"]),
            set(
                "places=sato-cv:places.csv",
                vec![cities],
                &["city", "population", "year"],
            ),
        ];
        let mut space = label_space(&train).unwrap();
        for namespace in &mut space.cta {
            namespace.activation = Activation::Sigmoid;
        }
        (space, train)
    }

    #[test]
    fn only_sigmoid_namespaces_without_labelled_quantities_take_negatives() {
        let (mut space, train) = sets();
        let (people, places) = (space.positions("people").0, space.positions("places").0);
        assert_eq!(entity_namespaces(&space, &train), vec![people.unwrap()]);
        // A softmax cannot say "none": no negatives for it.
        space.cta[people.unwrap()].activation = Activation::Softmax;
        assert!(entity_namespaces(&space, &train).is_empty());
        assert_ne!(people, places);
    }

    #[test]
    fn a_labelled_quantity_in_any_set_of_a_namespace_rules_it_out() {
        let (space, mut train) = sets();
        let ages = Table::new("ages", vec![column(Some("person"), &["31", "45", "27"])]);
        train.push(set(
            "people=turl-csv:more-people.csv",
            vec![ages],
            &["person"],
        ));
        assert!(entity_namespaces(&space, &train).is_empty());
    }

    #[test]
    fn the_other_sets_quantity_columns_become_negatives() {
        let (space, train) = sets();
        let entity = entity_namespaces(&space, &train);
        let serialize = SerializeSettings::default().config();
        let encoded = |set: usize| {
            let (spec, data) = &train[set];
            let namespaces = space.positions(&spec.namespace);
            let features = Featurizer::default();
            training_example(
                &data.tables[0],
                &serialize,
                &features,
                &space,
                namespaces,
                &entity,
            )
        };
        // The population column (query 1), not the city or the years.
        let places = encoded(1);
        assert_eq!(places.columns, vec![0, 1, 2]);
        assert_eq!(places.cta_none, vec![(1, entity[0])]);
        // A set's own namespace gets none from its own columns.
        assert!(encoded(0).cta_none.is_empty());
    }
}
