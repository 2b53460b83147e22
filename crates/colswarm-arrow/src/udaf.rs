//! A DataFusion aggregate UDF that annotates a whole column: `annotate_column(x)`.
//!
//! An aggregate, not a scalar function, because a column's type is a property of all its values
//! together. Each accumulator keeps a bounded, deterministic sample of the column's distinct
//! values — the `sample_size` values with the smallest 64-bit FNV-1a hashes — so the sample (and
//! the annotation) is the same whatever the row order and however DataFusion partitions the
//! input: partitions are sampled in parallel and their samples merged. The sampled values, in
//! hash order, become a one-column table named after the argument's field, which the
//! [`Annotator`] annotates; the result is a struct `{label: Utf8, confidence: Float32}` for one
//! CTA namespace (null for a column with no non-null values, or where the namespace abstains:
//! its best label is below the threshold the model stores).

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Float32Array, StringArray, StructArray};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, FieldRef, Fields};
use colswarm_model::Annotator;
use colswarm_model::Task;
use colswarm_tables::{Cell, Column, Table};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use crate::error::ArrowError;

/// Distinct values kept per column unless [`AnnotateColumn::sample_size`] says otherwise.
pub const DEFAULT_SAMPLE_SIZE: usize = 256;

/// The `annotate_column` aggregate function. Build it, then register it with
/// `SessionContext::register_udaf(annotate.into_udaf())`.
#[derive(Debug, Clone)]
pub struct AnnotateColumn {
    annotator: Annotator,
    name: String,
    namespace: String,
    sample_size: usize,
    signature: Signature,
}

impl AnnotateColumn {
    /// `annotate_column`, answering in the model's first CTA namespace.
    pub fn new(annotator: Annotator) -> Result<Self, ArrowError> {
        let namespace = annotator
            .model()
            .space
            .list(Task::Cta)
            .first()
            .map(|n| n.name.clone())
            .ok_or_else(|| {
                ArrowError::Annotate(colswarm_model::ModelError::UnknownNamespace(
                    "the model has no CTA namespace".into(),
                ))
            })?;
        Ok(AnnotateColumn {
            annotator,
            name: "annotate_column".into(),
            namespace,
            sample_size: DEFAULT_SAMPLE_SIZE,
            signature: Signature::any(1, Volatility::Immutable),
        })
    }

    /// Answers in CTA namespace `namespace` (one of the model's training sets).
    pub fn namespace(mut self, namespace: &str) -> Result<Self, ArrowError> {
        let names: Vec<String> = self
            .annotator
            .model()
            .space
            .list(Task::Cta)
            .iter()
            .map(|n| n.name.clone())
            .collect();
        if !names.iter().any(|n| n == namespace) {
            return Err(ArrowError::Annotate(
                colswarm_model::ModelError::UnknownNamespace(format!(
                    "the model has no CTA namespace `{namespace}` (it has: {})",
                    names.join(", ")
                )),
            ));
        }
        self.namespace = namespace.to_string();
        Ok(self)
    }

    /// The SQL name (default `annotate_column`).
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Distinct values kept per column (default [`DEFAULT_SAMPLE_SIZE`]; at least 1).
    pub fn sample_size(mut self, values: usize) -> Self {
        self.sample_size = values.max(1);
        self
    }

    /// The DataFusion function.
    pub fn into_udaf(self) -> AggregateUDF {
        AggregateUDF::from(self)
    }

    fn result_fields() -> Fields {
        Fields::from(vec![
            Field::new("label", DataType::Utf8, false),
            Field::new("confidence", DataType::Float32, false),
        ])
    }
}

// DataFusion compares functions to deduplicate expressions: two are equal when they answer the
// same question (name, namespace, sample size) with the same loaded model.
impl PartialEq for AnnotateColumn {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.namespace == other.namespace
            && self.sample_size == other.sample_size
            && std::ptr::eq(self.annotator.model(), other.annotator.model())
    }
}

impl Eq for AnnotateColumn {}

impl Hash for AnnotateColumn {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.namespace.hash(state);
        self.sample_size.hash(state);
    }
}

impl AggregateUDFImpl for AnnotateColumn {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Struct(Self::result_fields()))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let header = args
            .expr_fields
            .first()
            .map(|f| f.name().clone())
            .unwrap_or_default();
        Ok(Box::new(ColumnAccumulator {
            annotator: self.annotator.clone(),
            namespace: self.namespace.clone(),
            header,
            sample: ColumnSample::new(self.sample_size),
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[values]", args.name),
            DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            true,
        ))])
    }
}

/// 64-bit FNV-1a of a text: stable across platforms, runs and Rust versions.
fn fnv1a(text: &str) -> u64 {
    colswarm_tables::fnv1a(text.as_bytes())
}

/// The `capacity` distinct values with the smallest hashes seen so far (ties by text). Adding
/// values in any order, or merging samples of any split of the input, gives the same sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSample {
    capacity: usize,
    kept: BTreeSet<(u64, String)>,
}

impl ColumnSample {
    /// An empty sample keeping at most `capacity` values.
    pub fn new(capacity: usize) -> Self {
        ColumnSample {
            capacity: capacity.max(1),
            kept: BTreeSet::new(),
        }
    }

    /// Offers one value.
    pub fn insert(&mut self, value: &str) {
        let hash = fnv1a(value);
        if self.kept.len() == self.capacity
            && let Some((largest, text)) = self.kept.last()
            && (hash, value) >= (*largest, text.as_str())
        {
            return;
        }
        self.kept.insert((hash, value.to_string()));
        if self.kept.len() > self.capacity {
            self.kept.pop_last();
        }
    }

    /// The kept values, in hash order.
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.kept.iter().map(|(_, text)| text.as_str())
    }

    /// Number of kept values.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether nothing was kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

#[derive(Debug)]
struct ColumnAccumulator {
    annotator: Annotator,
    namespace: String,
    header: String,
    sample: ColumnSample,
}

impl ColumnAccumulator {
    fn null_result() -> Result<ScalarValue> {
        ScalarValue::try_from(&DataType::Struct(AnnotateColumn::result_fields()))
    }
}

impl Accumulator for ColumnAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(array) = values.first() else {
            return Ok(());
        };
        let format = FormatOptions::default();
        let formatter = ArrayFormatter::try_new(array.as_ref(), &format)?;
        let mut text = String::new();
        for row in 0..array.len() {
            if array.is_null(row) {
                continue;
            }
            text.clear();
            formatter
                .value(row)
                .write(&mut text)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            self.sample.insert(&text);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(lists) = states.first() else {
            return Ok(());
        };
        let lists = lists.as_list::<i32>();
        for row in 0..lists.len() {
            if lists.is_null(row) {
                continue;
            }
            let values = lists.value(row);
            for text in values.as_string::<i32>().iter().flatten() {
                self.sample.insert(text);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let mut builder = ListBuilder::new(StringBuilder::new());
        for text in self.sample.values() {
            builder.values().append_value(text);
        }
        builder.append(true);
        Ok(vec![ScalarValue::List(Arc::new(builder.finish()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.sample.is_empty() {
            return Self::null_result();
        }
        let cells = self.sample.values().map(Cell::new).collect();
        let mut table = Table::new(
            format!("column:{}", self.header),
            vec![Column::new(Some(self.header.clone()), cells)],
        );
        table.context.has_header_row = true;
        let annotation = self
            .annotator
            .annotate(&table)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let best = annotation
            .columns
            .first()
            .and_then(|c| c.types.iter().find(|t| t.namespace == self.namespace))
            .and_then(|t| t.labels.first());
        let Some(best) = best else {
            return Self::null_result();
        };
        let result = StructArray::new(
            AnnotateColumn::result_fields(),
            vec![
                Arc::new(StringArray::from(vec![best.label.clone()])) as ArrayRef,
                Arc::new(Float32Array::from(vec![best.confidence])) as ArrayRef,
            ],
            None,
        );
        Ok(ScalarValue::Struct(Arc::new(result)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self
                .sample
                .values()
                .map(|t| t.len() + std::mem::size_of::<(u64, String)>())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_of<'a>(values: impl IntoIterator<Item = &'a str>, capacity: usize) -> ColumnSample {
        let mut sample = ColumnSample::new(capacity);
        for v in values {
            sample.insert(v);
        }
        sample
    }

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_sample_ignores_order_duplicates_and_splits() {
        let values: Vec<String> = (0..500).map(|i| format!("value {}", i * 7 % 311)).collect();
        let forward = sample_of(values.iter().map(String::as_str), 40);
        let backward = sample_of(values.iter().rev().map(String::as_str), 40);
        assert_eq!(forward, backward);
        assert_eq!(forward.len(), 40);
        // Split in three, sample each part, merge the samples: the same 40 values.
        let mut merged = ColumnSample::new(40);
        for part in values.chunks(170) {
            let partial = sample_of(part.iter().map(String::as_str), 40);
            for v in partial.values() {
                merged.insert(v);
            }
        }
        assert_eq!(merged, forward);
        // They are the 40 smallest hashes of the 311 distinct values.
        let mut all: Vec<(u64, String)> = (0..311)
            .map(|i| format!("value {i}"))
            .map(|v| (fnv1a(&v), v))
            .collect();
        all.sort();
        let expected: Vec<&str> = all[..40].iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(forward.values().collect::<Vec<_>>(), expected);
    }
}
