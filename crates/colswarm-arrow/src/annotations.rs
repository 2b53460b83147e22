//! Annotations as Arrow [`RecordBatch`]es, for writing to parquet or joining in SQL.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float32Builder, StringBuilder, UInt32Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use colswarm_model::TableAnnotation;

use crate::error::ArrowError;

/// The schema of [`annotations_to_record_batch`]: one row per predicted label.
///
/// | field | type | meaning |
/// |---|---|---|
/// | `table` | Utf8 | table id |
/// | `column` | UInt32 | column index |
/// | `header` | Utf8, nullable | column header |
/// | `task` | Utf8 | `cta` (a type of the column) or `cpa` (its relation to the subject column) |
/// | `namespace` | Utf8 | label namespace (training set) |
/// | `label` | Utf8 | the label |
/// | `confidence` | Float32 | softmax probability within the namespace |
/// | `subject_column` | UInt32, nullable | for `cpa` rows, the subject column |
pub fn annotation_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("column", DataType::UInt32, false),
        Field::new("header", DataType::Utf8, true),
        Field::new("task", DataType::Utf8, false),
        Field::new("namespace", DataType::Utf8, false),
        Field::new("label", DataType::Utf8, false),
        Field::new("confidence", DataType::Float32, false),
        Field::new("subject_column", DataType::UInt32, true),
    ]))
}

/// Column indices as UInt32; tables wider than `u32::MAX` columns cannot be read in the first
/// place, so this saturates rather than fails.
fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Flattens annotations into one batch with [`annotation_schema`]: every decoded type of every
/// column (one row per label of a multi-label namespace; none where the namespace abstains)
/// and every relation.
pub fn annotations_to_record_batch(
    annotations: &[TableAnnotation],
) -> Result<RecordBatch, ArrowError> {
    let mut table = StringBuilder::new();
    let mut column = UInt32Builder::new();
    let mut header = StringBuilder::new();
    let mut task = StringBuilder::new();
    let mut namespace = StringBuilder::new();
    let mut label = StringBuilder::new();
    let mut confidence = Float32Builder::new();
    let mut subject = UInt32Builder::new();
    for annotation in annotations {
        for col in &annotation.columns {
            let mut row =
                |kind: &str, ns: &str, name: &str, p: f32, subject_column: Option<usize>| {
                    table.append_value(&annotation.table);
                    column.append_value(index(col.index));
                    header.append_option(col.header.as_deref());
                    task.append_value(kind);
                    namespace.append_value(ns);
                    label.append_value(name);
                    confidence.append_value(p);
                    subject.append_option(subject_column.map(index));
                };
            for types in &col.types {
                for scored in &types.labels {
                    row(
                        "cta",
                        &types.namespace,
                        &scored.label,
                        scored.confidence,
                        None,
                    );
                }
            }
            // An abstaining relation namespace gives no row, as an abstaining type namespace
            // gives no label.
            for relation in &col.relations {
                if let Some(best) = &relation.relation {
                    row(
                        "cpa",
                        &relation.namespace,
                        &best.label,
                        best.confidence,
                        Some(relation.subject_column),
                    );
                }
            }
        }
    }
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(table.finish()),
        Arc::new(column.finish()),
        Arc::new(header.finish()),
        Arc::new(task.finish()),
        Arc::new(namespace.finish()),
        Arc::new(label.finish()),
        Arc::new(confidence.finish()),
        Arc::new(subject.finish()),
    ];
    RecordBatch::try_new(annotation_schema(), arrays).map_err(ArrowError::Build)
}

/// The router's decisions as a batch: `table` (Utf8), `specialist` (Utf8), `gate` (Float32),
/// `active` (Boolean); one row per (table, specialist).
pub fn router_to_record_batch(annotations: &[TableAnnotation]) -> Result<RecordBatch, ArrowError> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("table", DataType::Utf8, false),
        Field::new("specialist", DataType::Utf8, false),
        Field::new("gate", DataType::Float32, false),
        Field::new("active", DataType::Boolean, false),
    ]));
    let mut table = StringBuilder::new();
    let mut specialist = StringBuilder::new();
    let mut gate = Float32Builder::new();
    let mut active = BooleanBuilder::new();
    for annotation in annotations {
        for decision in &annotation.router {
            table.append_value(&annotation.table);
            specialist.append_value(&decision.specialist);
            gate.append_value(decision.gate);
            active.append_value(decision.active);
        }
    }
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(table.finish()),
        Arc::new(specialist.finish()),
        Arc::new(gate.finish()),
        Arc::new(active.finish()),
    ];
    RecordBatch::try_new(schema, arrays).map_err(ArrowError::Build)
}

#[cfg(test)]
mod tests {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, UInt32Type};
    use colswarm_model::{
        ColumnAnnotation, GateAnnotation, RelationAnnotation, Scored, TypeAnnotation,
    };

    use super::*;

    fn scored(label: &str, confidence: f32) -> Scored {
        Scored {
            label: label.into(),
            confidence,
        }
    }

    fn annotation() -> TableAnnotation {
        TableAnnotation {
            table: "films".into(),
            subject_column: 0,
            router: vec![GateAnnotation {
                specialist: "t2d".into(),
                gate: 0.7,
                active: true,
            }],
            columns: vec![
                ColumnAnnotation {
                    index: 0,
                    header: Some("title".into()),
                    types: vec![TypeAnnotation {
                        namespace: "wikitables".into(),
                        // Multi-label: two decoded labels give two rows.
                        labels: vec![scored("film.film", 0.5), scored("common.topic", 0.4)],
                        top_k: vec![],
                        abstained: false,
                    }],
                    relations: vec![],
                },
                ColumnAnnotation {
                    index: 1,
                    header: None,
                    types: vec![TypeAnnotation {
                        namespace: "wikitables".into(),
                        labels: vec![scored("time.year", 0.9)],
                        top_k: vec![],
                        abstained: false,
                    }],
                    relations: vec![RelationAnnotation {
                        namespace: "t2d".into(),
                        subject_column: 0,
                        relation: Some(scored("releaseDate", 0.6)),
                        top_k: vec![],
                        abstained: false,
                    }],
                },
                // The namespace abstained: no label, so no row.
                ColumnAnnotation {
                    index: 2,
                    header: Some("population".into()),
                    types: vec![TypeAnnotation {
                        namespace: "gittables".into(),
                        labels: vec![],
                        top_k: vec![scored("location", 0.27)],
                        abstained: true,
                    }],
                    relations: vec![],
                },
            ],
        }
    }

    #[test]
    fn every_decoded_label_and_relation_is_one_row() {
        let batch = annotations_to_record_batch(&[annotation()]).unwrap();
        assert_eq!(batch.schema(), annotation_schema());
        assert_eq!(batch.num_rows(), 4);
        let task = batch.column(3).as_string::<i32>();
        let label = batch.column(5).as_string::<i32>();
        let got: Vec<(&str, &str)> = (0..4).map(|i| (task.value(i), label.value(i))).collect();
        assert_eq!(
            got,
            vec![
                ("cta", "film.film"),
                ("cta", "common.topic"),
                ("cta", "time.year"),
                ("cpa", "releaseDate")
            ]
        );
        let header = batch.column(2).as_string::<i32>();
        assert!(header.is_null(2));
        let subject = batch.column(7).as_primitive::<UInt32Type>();
        assert!(subject.is_null(0));
        assert_eq!(subject.value(3), 0);
        let confidence = batch.column(6).as_primitive::<Float32Type>();
        assert_eq!(confidence.value(3), 0.6);
    }

    #[test]
    fn router_rows_per_table_and_specialist() {
        let batch = router_to_record_batch(&[annotation(), annotation()]).unwrap();
        assert_eq!(batch.num_rows(), 2);
        assert!(batch.column(3).as_boolean().value(1));
    }
}
